"""``dexter models``: providers, models, context windows, and which keys are set."""

from __future__ import annotations

from pathlib import Path

from dexter.frontend import EXIT_OK, EXIT_USAGE, CliError, print_error, settings_for


def run_models(config: Path | None, model: str | None = None) -> int:
    """Print the model table and the model a run would use (``model``: ``--model``).
    Keys are shown as set or missing, never their values."""
    from dexter.frontend import models_table, natural_width, stdout_console
    from dexter.providers.registry import model_rows

    try:
        settings = settings_for(config, model=model)
    except CliError as exc:
        print_error(str(exc))
        return EXIT_USAGE
    console = stdout_console()
    table = models_table(model_rows(settings), console)
    # A pipe imposes no width: every row on one line, every id whole.
    piped = not console.is_terminal
    if piped:
        console.width = max(console.width, natural_width(console, table))
    console.print(table)
    console.print(f"Current model: {settings.model}. Change it with --model, DEXTER_MODEL or "
                  "'model' in the config file.", markup=False, soft_wrap=piped)
    from dexter.sandbox.runner import detect_runner

    console.print(detect_runner(settings).status.describe() + " See 'dexter sandbox'.",
                  markup=False, soft_wrap=piped)
    return EXIT_OK
