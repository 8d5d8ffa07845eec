"""Start the interactive session: settings, the saved choices, then the right front-end."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from pathlib import Path

from dexter.config_trust import ConfigWatch
from dexter.frontend import (
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    CliError,
    confirm_on_terminal,
    open_settings,
    print_error,
)

DUMB_TERMINALS = frozenset({"dumb", "unknown", "emacs"})


def start(*, model: str | None, config: Path | None, no_memory: bool,
          continue_: bool = False, resume: str | None = None,
          trust_workspace: bool = False) -> int:
    """Open the session; returns the exit code.

    On a terminal: the prompt-toolkit REPL (plain lines on a dumb terminal); a workspace
    file that sets widening options is asked about first. When stdin or stdout is not a
    terminal: one question per input line, plain output, nobody asked (such a file's
    widening options are ignored unless trusted or ``trust_workspace``). ``continue_``
    reopens the latest saved session, ``resume`` the one with that id (``""``: pick one).
    """
    from rich.console import Console

    from dexter.repl.app import Repl
    from dexter.repl.terminal import typed_lines_unechoed

    interactive = sys.stdin.isatty() and sys.stdout.isatty()
    try:
        resolved = open_settings(config, {"model": model,
                                          **({"memory.enabled": False} if no_memory else {})},
                                 trust_workspace=trust_workspace,
                                 confirm=confirm_on_terminal if interactive else None)
    except CliError as exc:
        print_error(str(exc))
        return EXIT_USAGE
    settings, watch = resolved.settings, ConfigWatch(resolved)
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
        if not interactive:
            console = Console(force_terminal=False, color_system=None, highlight=False,
                              soft_wrap=True)
            repl = Repl(settings, console=console, fancy=False, color=False, interactive=False,
                        resume=record, watch=watch)
            return asyncio.run(repl.run_lines(sys.stdin))
        dumb = os.environ.get("TERM", "").lower() in DUMB_TERMINALS
        color = not dumb and not os.environ.get("NO_COLOR")
        console = Console(highlight=False, no_color=not color)
        # A dumb terminal has no prompt open while anything prints (see Repl._follow_run),
        # and patch_stdout's delayed writes would land after the next prompt there.
        repl = Repl(settings, console=console, fancy=not dumb, color=color,
                    use_patch_stdout=not dumb, handle_sigint=True, resume=record, watch=watch)
        with typed_lines_unechoed() if dumb else contextlib.nullcontext():
            return asyncio.run(repl.run())
    except KeyboardInterrupt:
        sys.stderr.write("\nInterrupted.\n")
        return EXIT_INTERRUPTED
