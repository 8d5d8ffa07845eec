"""``dexter models``: providers, models, context windows, and which keys are set."""

from __future__ import annotations

from pathlib import Path

from dexter.frontend import EXIT_OK, EXIT_USAGE, CliError, print_error, settings_for


def run_models(config: Path | None, model: str | None = None) -> int:
    """Print the model table and the model a run would use (``model``: ``--model``).
    Keys are shown as set or missing, never their values."""
    from rich.table import Table

    from dexter.frontend import stdout_console
    from dexter.providers.registry import model_rows

    try:
        settings = settings_for(config, model=model)
    except CliError as exc:
        print_error(str(exc))
        return EXIT_USAGE
    table = Table(title="Models", title_justify="left")
    for column, justify in (("Provider", "left"), ("Model", "left"), ("Context", "right"),
                            ("Key", "left"), ("", "left")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for row in model_rows(settings):
        table.add_row(*row)
    console = stdout_console()
    console.print(table)
    console.print(f"Current model: {settings.model}. Change it with --model, DEXTER_MODEL or "
                  "'model' in the config file.")
    from dexter.sandbox.runner import detect_runner

    console.print(detect_runner(settings).status.describe() + " See 'dexter sandbox'.",
                  markup=False)
    return EXIT_OK
