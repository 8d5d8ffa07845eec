"""Entry point for ``dexter`` with no command (the interactive session)."""

from __future__ import annotations

from pathlib import Path


def start_repl(*, model: str | None, config: Path | None, no_memory: bool,
               continue_: bool = False, resume: str | None = None,
               trust_workspace: bool = False) -> int:
    """Open the interactive research session (a saved one with ``continue_`` or
    ``resume``, see :mod:`dexter.repl.resume`); returns the exit code."""
    from dexter.repl.main import start

    return start(model=model, config=config, no_memory=no_memory, continue_=continue_,
                 resume=resume, trust_workspace=trust_workspace)
