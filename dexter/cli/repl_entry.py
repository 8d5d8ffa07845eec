"""Entry point for ``dexter`` with no command (the interactive session)."""

from __future__ import annotations

from pathlib import Path

from dexter.cli.common import EXIT_OK


def start_repl(*, model: str | None, config: Path | None, no_memory: bool) -> int:
    """Open the interactive session. Until the REPL lands, print how to use dexter."""
    from dexter import __version__

    print(
        f"dexter {__version__}: a terminal research agent for deep financial research.\n\n"
        "The interactive session arrives soon. For now:\n"
        "  dexter ask \"compare NVDA and AMD's last four quarters\"\n"
        "  dexter replay scratchpads/<file>.jsonl\n"
        "  dexter models\n"
        "  dexter --help"
    )
    return EXIT_OK
