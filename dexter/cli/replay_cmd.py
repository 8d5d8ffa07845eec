"""``dexter replay FILE``: re-render a run from its scratchpad."""

from __future__ import annotations

from pathlib import Path

from dexter.cli.common import EXIT_FAILED, EXIT_OK, EXIT_USAGE, print_error, stdout_console


def run_replay(path: Path, *, json_out: bool = False) -> int:
    """Replay one scratchpad; corrupt lines are skipped and counted at the end."""
    from dexter.render import choose_renderer
    from dexter.render.replay import replay_events
    from dexter.scratchpad import Scratchpad

    if not path.is_file():
        print_error(f"No scratchpad at {path}. Scratchpads are in ./scratchpads by default.")
        return EXIT_USAGE
    try:
        log = Scratchpad.read(path)
    except OSError as exc:
        print_error(f"Cannot read {path}: {exc.strerror}.")
        return EXIT_FAILED
    if not log.entries:
        print_error(f"{path} holds no readable entries ({log.skipped} corrupt lines).")
        return EXIT_FAILED
    console = stdout_console(plain=json_out)
    renderer = choose_renderer(console, json=json_out, is_terminal=False)
    try:
        for event in replay_events(log.entries):
            renderer.handle(event)
    finally:
        renderer.close()
    if log.skipped:
        import sys

        noun = "line" if log.skipped == 1 else "lines"
        sys.stderr.write(f"Skipped {log.skipped} corrupt {noun} in {path}.\n")
    return EXIT_OK
