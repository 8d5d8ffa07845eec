"""What a terminal actually shows: the live view's output fed through a terminal emulator.

The live region is redrawn in place with cursor movements; these tests check that, once it
is gone, the screen holds exactly the finished output (no spinner line or half-drawn row
left behind) and that while a tool runs its row and the working line are on screen.
"""

from __future__ import annotations

import io
import random
import re
import time

import pytest
from rich.console import Console

from dexter.events import RunStart, ToolProgress, ToolStart
from dexter.render.demo import sample_events
from dexter.render.live import LiveRenderer

pyte = pytest.importorskip("pyte")

STATS = "✻ 12s · 4 tool calls · 3 iterations · 12k in / 1.1k out · 45 tok/s · context 20k/95k"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def console(width: int = 100, terminal: bool = False) -> Console:
    return Console(record=True, width=width, force_terminal=terminal, color_system=None,
                   file=io.StringIO())


def play(con: Console) -> None:
    renderer = LiveRenderer(con, clock=Clock(), rng=random.Random(7))
    try:
        for event in sample_events():
            renderer.handle(event)
    finally:
        renderer.close()


def finished_lines(width: int) -> list[str]:
    """The run printed on a console that is not a terminal (no live region at all)."""
    con = console(width=width)
    play(con)
    lines = [line.rstrip() for line in con.export_text().splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def screen_lines(con: Console, width: int = 100) -> list[str]:
    """What a terminal shows after receiving everything written to ``con``."""
    screen = pyte.Screen(width, 400)
    screen.set_mode(pyte.modes.LNM)  # a newline also returns the carriage, as a tty does
    stream = pyte.Stream(screen)
    assert isinstance(con.file, io.StringIO)
    stream.feed(con.file.getvalue())
    lines = [line.rstrip() for line in screen.display]
    while lines and not lines[-1]:
        lines.pop()
    return lines


@pytest.mark.parametrize("width", [100, 40])
def test_after_the_run_the_screen_holds_exactly_the_finished_output(width: int) -> None:
    con = console(width=width, terminal=True)
    play(con)
    lines = screen_lines(con, width)
    assert lines == finished_lines(width)
    assert not any(re.match(r"[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] ", line) for line in lines)
    if width == 100:
        assert lines[-1] == STATS


def test_interrupted_run_leaves_the_running_row_marked_and_nothing_else() -> None:
    con = console(terminal=True)
    renderer = LiveRenderer(con, clock=Clock())
    try:
        renderer.handle(RunStart("q", "m", "p"))
        renderer.handle(ToolStart("web_fetch", {"url": "https://x.example"}, "c1"))
    finally:
        renderer.close()
    assert screen_lines(con) == ["", "❯ q", "⏺ Web Fetch (url=https://x.example)",
                                 "  ⎿  Interrupted"]


def test_the_live_region_is_on_screen_while_a_tool_runs() -> None:
    con = console(terminal=True)
    clock = Clock()
    renderer = LiveRenderer(con, clock=clock, rng=random.Random(1))
    try:
        renderer.handle(RunStart("q", "m", "p"))
        renderer.handle(ToolStart("web_fetch", {"url": "https://x.example"}, "c1"))
        renderer.handle(ToolProgress("web_fetch", "Downloading", "c1"))
        clock.now += 5
        # the region redraws on its own, ~12 times a second; the deadline is a ceiling on
        # waiting for a loaded machine's redraw thread, not a speed requirement
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            lines = screen_lines(con)
            if lines[-1].endswith("(5s)"):
                break
            time.sleep(0.02)
        assert lines[-3:-1] == ["⏺ Web Fetch (url=https://x.example)", "  ⎿  Downloading"]
        assert re.fullmatch(r"[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] [\w-]+\.\.\. \(5s\)", lines[-1])
    finally:
        renderer.close()
    assert screen_lines(con)[-2:] == ["⏺ Web Fetch (url=https://x.example)", "  ⎿  Interrupted"]
