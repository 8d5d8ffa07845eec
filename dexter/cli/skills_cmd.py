"""``dexter skills``: the skills dexter can load, what each does and where it came from."""

from __future__ import annotations

from pathlib import Path

from dexter.frontend import EXIT_OK, EXIT_USAGE, CliError, print_error, print_warning, settings_for


def run_skills(config: Path | None) -> int:
    """Print the skills table, the problems found, and where skills are looked for."""
    from rich.table import Table
    from rich.text import Text

    from dexter.frontend import stdout_console
    from dexter.skills.catalog import load_catalog, locations_text, skill_rows

    try:
        settings = settings_for(config)
    except CliError as exc:
        print_error(str(exc))
        return EXIT_USAGE
    cwd = Path.cwd()
    catalog = load_catalog(settings.home_path, cwd)
    for warning in catalog.warnings:
        print_warning(warning)
    console = stdout_console()
    if not catalog.skills:
        console.print("No skills found.", markup=False)
    else:
        table = Table(title="Skills", title_justify="left")
        for column in ("Name", "Description", "From"):
            table.add_column(column, overflow="fold")
        for row in skill_rows(catalog, cwd):
            table.add_row(*(Text(cell) for cell in row))
        console.print(table)
        console.print("Use one with: dexter ask --skill NAME \"...\" (the agent also loads "
                      "them itself when a question calls for one).", markup=False)
    console.print(locations_text(catalog), markup=False)
    return EXIT_OK
