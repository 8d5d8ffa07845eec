"""Start the interactive session: settings, the saved choices, then the right front-end."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from dexter.frontend import EXIT_INTERRUPTED, EXIT_USAGE, CliError, print_error, settings_for

DUMB_TERMINALS = frozenset({"dumb", "unknown", "emacs"})


def start(*, model: str | None, config: Path | None, no_memory: bool,
          continue_: bool = False, resume: str | None = None) -> int:
    """Open the session; returns the exit code.

    On a terminal: the prompt-toolkit REPL (plain lines on a dumb terminal). When stdin or
    stdout is not a terminal: one question per input line, plain output. ``continue_``
    reopens the latest saved session, ``resume`` the one with that id (``""``: pick one).
    """
    from rich.console import Console

    from dexter.repl.app import Repl

    try:
        settings = settings_for(config, model=model,
                                **({"memory.enabled": False} if no_memory else {}))
    except CliError as exc:
        print_error(str(exc))
        return EXIT_USAGE
    record = None
    if continue_ or resume is not None:
        from dexter.repl.resume import ResumeError, choose_session

        try:
            record = choose_session(settings, latest=continue_, prefix=resume, model_flag=model)
        except ResumeError as exc:
            print_error(str(exc))
            return EXIT_USAGE
        if record is None:
            sys.stderr.write("No session chosen.\n")
            return 0
    try:
        if not (sys.stdin.isatty() and sys.stdout.isatty()):
            console = Console(force_terminal=False, color_system=None, highlight=False,
                              soft_wrap=True)
            repl = Repl(settings, console=console, fancy=False, color=False, interactive=False,
                        resume=record)
            return asyncio.run(repl.run_lines(sys.stdin))
        dumb = os.environ.get("TERM", "").lower() in DUMB_TERMINALS
        color = not dumb and not os.environ.get("NO_COLOR")
        console = Console(highlight=False, no_color=not color)
        # A dumb terminal has no prompt open while anything prints (see Repl._follow_run),
        # and patch_stdout's delayed writes would land after the next prompt there.
        repl = Repl(settings, console=console, fancy=not dumb, color=color,
                    use_patch_stdout=not dumb, handle_sigint=True, resume=record)
        return asyncio.run(repl.run())
    except KeyboardInterrupt:
        sys.stderr.write("\nInterrupted.\n")
        return EXIT_INTERRUPTED
