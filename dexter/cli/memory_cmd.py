"""``dexter memory list|search|show|reindex``."""

from __future__ import annotations

from pathlib import Path

from dexter.frontend import EXIT_USAGE, CliError, print_error, settings_for, stdout_console


def run_memory(action: str, config: Path | None, arg: str = "", *,
               no_memory: bool = False) -> int:
    """Run one memory subcommand; returns the exit code. ``no_memory`` (``dexter
    --no-memory memory ...``) turns memory off, as for every other command."""
    from dexter.memory import cli as memory_cli
    from dexter.memory.manager import MemoryManager

    try:
        settings = settings_for(config, **({"memory.enabled": False} if no_memory else {}))
    except CliError as exc:
        print_error(str(exc))
        return EXIT_USAGE
    manager = MemoryManager(settings)
    console = stdout_console()
    try:
        if action == "list":
            return memory_cli.list_command(manager, console)
        if action == "search":
            return memory_cli.search_command(manager, console, arg)
        if action == "show":
            return memory_cli.show_command(manager, console, arg)
        return memory_cli.reindex_command(manager, console)
    finally:
        manager.close()
