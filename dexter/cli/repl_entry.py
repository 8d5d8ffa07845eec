"""Entry point for ``dexter`` with no command (the interactive session)."""

from __future__ import annotations

from pathlib import Path


def start_repl(*, model: str | None, config: Path | None, no_memory: bool) -> int:
    """Open the interactive research session; returns the exit code."""
    from dexter.repl.main import start

    return start(model=model, config=config, no_memory=no_memory)
