"""``dexter replay FILE``: re-render a run from its scratchpad."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dexter.frontend import EXIT_OK, EXIT_USAGE, print_error, stdout_console


def run_replay(path: Path, *, json_out: bool = False) -> int:
    """Replay one scratchpad; corrupt lines are skipped and counted at the end."""
    from dexter.render import choose_renderer
    from dexter.render.replay import ReplayStats, replay_events
    from dexter.scratchpad import Scratchpad

    if not path.is_file():
        print_error(f"No scratchpad at {path}. Scratchpads are in ./scratchpads by default.")
        return EXIT_USAGE
    # A file that is not a scratchpad is bad input (exit 2), as for dexter rerun.
    try:
        log = Scratchpad.read(path)
    except OSError as exc:
        print_error(f"Cannot read {path}: {exc.strerror}.")
        return EXIT_USAGE
    if not log.entries:
        print_error(f"{path} holds no readable entries ({_lines(log.skipped)} corrupt); it is "
                    "not a scratchpad. Scratchpads are in ./scratchpads by default.")
        return EXIT_USAGE
    console = stdout_console(plain=json_out)
    renderer = choose_renderer(console, json=json_out, is_terminal=console.is_terminal and not json_out)
    stats = ReplayStats()
    example = (log.init or {}).get("example")
    if isinstance(example, str) and example.strip():
        _note(console, f"ⓘ {example.strip()}", json_out=json_out)
    if log.rerun_of:
        _note(console, f"↻ Rerun of {log.rerun_of} (its tools answered from that run's "
                       "recorded results)", json_out=json_out)
    try:
        for event in replay_events(log.entries, scratchpad=str(path), stats=stats):
            renderer.handle(event)
    finally:
        renderer.close()
    notes = []
    if log.skipped:
        notes.append(f"Skipped {_lines(log.skipped)} corrupt in {path}.")
    if stats.skipped_count:
        notes.append(f"Skipped {stats.skipped_count} entries of unknown or damaged shape.")
    if notes:
        import sys

        sys.stderr.write("\n".join(notes) + "\n")
    return EXIT_OK


def _note(console: Any, line: str, *, json_out: bool) -> None:
    """A line about the recording itself (a rerun, a scripted example) before its events,
    its control characters shown, not sent (it comes from the file); on stderr under
    --json, where stdout is JSON."""
    from dexter.text import escape_controls

    line = escape_controls(line)
    if json_out:
        import sys

        sys.stderr.write(line + "\n")
    else:
        from rich.text import Text

        console.print(Text(line, style="dim"), soft_wrap=True)


def _lines(count: int) -> str:
    return f"{count} line" if count == 1 else f"{count} lines"
