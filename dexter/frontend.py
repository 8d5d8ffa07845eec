"""What the two front ends (the `dexter` commands in cli/ and the REPL in repl/) share:
settings with friendly errors, error and warning lines, the output console, exit codes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dexter.config import ConfigError, Settings, load_dotenv_file, load_settings

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class CliError(Exception):
    """A usage or configuration problem: printed as one clear line, exit code 2."""


def settings_for(config: Path | None, **overrides: Any) -> Settings:
    """Load ``.env`` and the layered settings; configuration errors become ``CliError``."""
    load_dotenv_file()
    try:
        return load_settings(config, overrides={k: v for k, v in overrides.items() if v is not None})
    except ConfigError as exc:
        raise CliError(str(exc)) from None


def print_error(message: str) -> None:
    """Print an error to stderr (red on a terminal)."""
    from rich.console import Console
    from rich.text import Text

    # The message is plain text: a "[context]" in it must print as written, not as markup.
    Console(stderr=True, highlight=False, soft_wrap=True).print(
        Text("Error: ", style="bold red") + Text(message))


def print_warning(message: str) -> None:
    """Print a warning to stderr (yellow on a terminal)."""
    from rich.console import Console
    from rich.text import Text

    Console(stderr=True, highlight=False, soft_wrap=True).print(
        Text("Warning: ", style="bold yellow") + Text(message))


def stdout_console(plain: bool = False) -> Any:
    """The console for run output; plain when asked or when stdout is not a terminal."""
    from rich.console import Console

    if plain:
        return Console(force_terminal=False, color_system=None, highlight=False, soft_wrap=True)
    return Console(highlight=False)
