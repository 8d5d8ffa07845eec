"""The rich live view, driven on a recorded console."""

from __future__ import annotations

import io
import random
import re
import threading

import pytest
from rich.console import Console

from dexter.events import (
    AnswerDelta,
    Compaction,
    Done,
    Event,
    MemoryFlush,
    MemoryRecalled,
    RunStart,
    StreamProgress,
    ToolEnd,
    ToolProgress,
    ToolStart,
)
from dexter.render import ScrubbingRenderer, choose_renderer
from dexter.render.demo import ANSWER, sample_events
from dexter.render.jsonl import JsonRenderer
from dexter.render.live import VERBS, LiveRenderer
from dexter.render.plain import PlainRenderer

STATS = "✻ 12s · 4 tool calls · 3 iterations · 12k in / 1.1k out · 45 tok/s · context 20k/95k"
NVDA = {"query": "NVIDIA revenue"}
AMD = {"query": "AMD revenue"}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def console(width: int = 100, terminal: bool = False) -> Console:
    return Console(record=True, width=width, force_terminal=terminal, color_system=None,
                   file=io.StringIO())


def play(con: Console, events: list[Event], clock: Clock | None = None) -> LiveRenderer:
    renderer = LiveRenderer(con, clock=clock or Clock(), rng=random.Random(7))
    try:
        for event in events:
            renderer.handle(event)
    finally:
        renderer.close()
    return renderer


def text_lines(con: Console) -> list[str]:
    return [line.rstrip() for line in con.export_text().splitlines()]


def render_text(renderable: object) -> str:
    """What ``renderable`` looks like on a 100-column terminal, as plain text."""
    con = console()
    con.print(renderable)
    return con.export_text()


def refresh_threads() -> list[threading.Thread]:
    """rich's redraw threads still running (a stopped one exits within a moment)."""
    threads = [t for t in threading.enumerate() if type(t).__name__ == "_RefreshThread"]
    for thread in threads:
        thread.join(timeout=2)
    return [t for t in threads if t.is_alive()]


def test_full_run_shows_every_part_and_ends_with_answer_and_stats() -> None:
    con = console()
    renderer = play(con, sample_events())
    lines = text_lines(con)
    out = "\n".join(lines)
    assert not renderer.is_live
    assert "❯ How did NVIDIA's and AMD's revenue grow from FY2022 to FY2024?" in out
    assert "I'll fetch both companies' income statements, then compute the growth." in out
    assert '⏺ Financials ("NVIDIA annual revenue FY2022 to FY2024")' in lines
    assert "  ⎿  [S1] Received 4 items in 1.2s" in lines
    assert ('  ⎿  ("AMD annual revenue FY2022 to FY2024") [S2] Received 2 fields · 2 sources'
            " in 870ms") in lines
    assert "⏺ Calculator (expression=60922 / 26974 - 1)" in lines
    assert "  ⎿  [S3] = 1.258545 in 4ms" in lines
    assert "  ⎿  Error: HTTP 404 Not Found: the page does not exist" in lines
    assert "✓ Approved for this session: Write File (path=notes/nvda.md)" in lines
    assert "✗ Denied Write File (path=/etc/hosts)" in lines
    assert "  ⎿  The user did not approve this call." in lines
    assert "  ! You are approaching the suggested limit for 'get_financials' (3 calls)." in lines
    assert "⏺ Microcompact: cleared 6 old tool results (~42k tokens)" in lines
    assert "⏺ Memory flush: wrote 2025-01-02.md" in lines
    assert "⏺ Memory recalled: MEMORY.md (~1.3k tokens)" in lines
    assert "⏺ Context compacted: 120k → 8k tokens (93% smaller) with gpt-4.1-mini" in lines
    assert "⏺ Context cleared: removed 12 old messages, kept 5 rounds" in lines
    assert "⟳ retrying (rate limited) in 2.0s (attempt 1)" in lines
    assert "⏺ Picked up 1 queued message: also compare Intel" in lines
    assert "Revenue growth, FY2022 → FY2024" in out
    assert "|---|" not in out  # the table is drawn, not shown as markdown source
    assert [line for line in lines if line][-1] == STATS


def test_full_run_on_a_terminal_leaves_no_live_display_running() -> None:
    con = console(terminal=True)
    renderer = play(con, sample_events())
    assert not renderer.is_live
    assert refresh_threads() == []


def test_close_mid_run_stops_the_live_display_and_marks_running_tools() -> None:
    con = console()
    renderer = LiveRenderer(con, clock=Clock())
    with pytest.raises(KeyboardInterrupt):
        try:
            renderer.handle(RunStart("q", "m", "p"))
            renderer.handle(ToolStart("web_fetch", {"url": "https://x.example"}, "c1"))
            assert renderer.is_live
            raise KeyboardInterrupt
        finally:
            renderer.close()
    assert not renderer.is_live
    assert refresh_threads() == []
    assert text_lines(con)[-2:] == ["⏺ Web Fetch (url=https://x.example)", "  ⎿  Interrupted"]
    renderer.close()  # a second close is harmless


def test_every_event_renders_at_width_40() -> None:
    con = console(width=40)
    play(con, sample_events())
    lines = text_lines(con)
    assert all(len(line) <= 40 for line in lines)
    assert "✻ 12s · 4 tool calls · 3 iterations ·" in lines
    assert any("NVIDIA" in line and "125.9%" in line for line in lines)


def test_parallel_rows_are_printed_in_call_order_when_the_first_finishes() -> None:
    con = console()
    renderer = LiveRenderer(con, clock=Clock())
    try:
        renderer.handle(RunStart("q", "m", "p"))
        renderer.handle(ToolStart("get_financials", NVDA, "c1"))
        renderer.handle(ToolStart("get_financials", AMD, "c2"))
        renderer.handle(ToolEnd("get_financials", AMD, '{"data": [1]}', 500, "c2"))
        assert "AMD" not in con.export_text(clear=False)
        renderer.handle(ToolEnd("get_financials", NVDA, '{"data": [1, 2]}', 900, "c1"))
        out = con.export_text(clear=False)
    finally:
        renderer.close()
    assert out.index("NVIDIA revenue") < out.index("AMD revenue")
    assert out.count("⏺ Financials") == 1  # grouped under one title


def test_a_different_tool_or_thinking_starts_a_new_group() -> None:
    con = console()
    play(con, [
        RunStart("q", "m", "p"),
        ToolStart("web_search", {"query": "a"}, "c1"),
        ToolEnd("web_search", {"query": "a"}, "x", 10, "c1"),
        ToolStart("read_file", {"path": "a.md"}, "c2"),
        ToolEnd("read_file", {"path": "a.md"}, "x", 10, "c2"),
        ToolStart("web_search", {"query": "b"}, "c3"),
        ToolEnd("web_search", {"query": "b"}, "x", 10, "c3"),
    ])
    assert con.export_text().count("⏺ Web Search") == 2


def test_working_line_shows_verb_elapsed_tokens_and_direction() -> None:
    clock = Clock()
    con = console()
    renderer = LiveRenderer(con, clock=clock, rng=random.Random(3))
    try:
        renderer.handle(RunStart("q", "m", "p"))
        renderer.handle(StreamProgress(12_800, "responding"))
        clock.now += 246
        region = console()
        region.print(renderer.live_region())
        line = region.export_text().strip()
        assert re.fullmatch(r"[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] (\w[\w-]*)\.\.\. \(4m 6s · ↓ 3\.2k tokens\)", line)
        assert line.split()[1].removesuffix("...") in VERBS
        renderer.handle(StreamProgress(0, "requesting"))
        region.print(renderer.live_region())
        assert "↑ 3.2k tokens" in region.export_text()
    finally:
        renderer.close()


def test_working_line_without_tokens_shows_only_elapsed_and_activity() -> None:
    clock = Clock()
    renderer = LiveRenderer(console(), clock=clock)
    try:
        renderer.handle(RunStart("q", "m", "p"))
        renderer.handle(Compaction("start"))
        clock.now += 22
        region = console()
        region.print(renderer.live_region())
        assert region.export_text().strip().endswith("Compacting context... (22s)")
        renderer.handle(Compaction("end", True, 100, 10))
        renderer.handle(MemoryFlush("start"))
        region.print(renderer.live_region())
        assert "Saving key facts to memory..." in region.export_text()
    finally:
        renderer.close()


def test_a_flush_and_compaction_in_one_side_request_keep_the_working_line_right() -> None:
    # one request does both: flush start, compaction start, flush end, compaction end; or,
    # when it fails, the separate compaction still runs after the flush has ended
    renderer = LiveRenderer(console(), clock=Clock())
    try:
        renderer.handle(RunStart("q", "m", "p"))
        renderer.handle(MemoryFlush("start"))
        renderer.handle(Compaction("start"))
        renderer.handle(MemoryFlush("end", ["2025-03-14.md"]))
        region = console()
        region.print(renderer.live_region())
        assert "Compacting context..." in region.export_text()
        renderer.handle(Compaction("end", True, 100, 10))
        region = console()
        region.print(renderer.live_region())
        assert "Compacting context" not in region.export_text()
        assert "Saving key facts" not in region.export_text()
    finally:
        renderer.close()


def test_active_tool_row_shows_its_progress_in_the_live_region() -> None:
    renderer = LiveRenderer(console(), clock=Clock())
    try:
        renderer.handle(RunStart("q", "m", "p"))
        renderer.handle(ToolStart("web_fetch", {"url": "https://x.example"}, "c1"))
        renderer.handle(ToolProgress("web_fetch", "Downloading page 2 of 3", "c1"))
        region = console()
        region.print(renderer.live_region())
        lines = [line.rstrip() for line in region.export_text().splitlines()]
        assert lines[0] == "⏺ Web Fetch (url=https://x.example)"
        assert lines[1] == "  ⎿  Downloading page 2 of 3"
    finally:
        renderer.close()


def test_paused_takes_the_region_off_screen_and_brings_it_back() -> None:
    renderer = LiveRenderer(console(terminal=True), clock=Clock())
    try:
        renderer.handle(RunStart("q", "m", "p"))
        with renderer.paused():
            assert not renderer.is_live
        assert renderer.is_live
    finally:
        renderer.close()
    assert not renderer.is_live


@pytest.mark.parametrize(("status", "answer", "text"), [
    ("error", "The OpenAI key in OPENAI_API_KEY was rejected.",
     "Error: The OpenAI key in OPENAI_API_KEY was rejected."),
    ("interrupted", "Interrupted by the user.", "Interrupted: Interrupted by the user."),
])
def test_failed_run_shows_the_error_instead_of_an_answer(status: str, answer: str,
                                                          text: str) -> None:
    con = console()
    play(con, [RunStart("q", "m", "p"),
               Done(answer, status=status,  # type: ignore[arg-type]
                    total_time_ms=1_500)])
    lines = [line for line in text_lines(con) if line]
    assert lines[-2:] == [text, "✻ 1s"]


def test_a_replayed_interrupted_answer_shows_what_was_written() -> None:
    con = console()
    play(con, [RunStart("q", "m", "p"),
               Done("Revenue rose in each of", status="interrupted", total_time_ms=1_500)])
    lines = [line for line in text_lines(con) if line]
    assert lines[-3:] == ["Revenue rose in each of", "Interrupted: Interrupted by the user.",
                          "✻ 1s"]


def test_the_answer_streams_under_the_rows_and_stays_when_interrupted() -> None:
    con = console(terminal=True)
    renderer = LiveRenderer(con, live=False)
    renderer.handle(RunStart("q", "m", "p"))
    renderer.handle(AnswerDelta("Let me look."))
    renderer.handle(ToolStart("calculator", {"expression": "1+1"}, "c1"))
    renderer.handle(AnswerDelta("Revenue **rose** in each"))
    renderer.handle(AnswerDelta(" quarter"))
    region = render_text(renderer.live_region())
    assert "Revenue rose in each quarter" in region  # rendered as markdown, not as source
    assert "Let me look." not in region  # the text before the tool call was a plan
    renderer.close()  # Esc / Ctrl-C
    assert "Revenue rose in each quarter" in "\n".join(text_lines(con))


def test_events_outside_a_run_are_printed_without_a_working_line() -> None:
    con = console(terminal=True)
    renderer = LiveRenderer(con, clock=Clock())
    try:
        renderer.handle(MemoryRecalled(["MEMORY.md"], 2_000))
        assert not renderer.is_live
        assert "⏺ Memory recalled: MEMORY.md (~2k tokens)" in con.export_text(clear=False)
        renderer.handle(StreamProgress(40, "responding"))  # work without a run_start
        assert renderer.is_live
    finally:
        renderer.close()
    assert not renderer.is_live


def test_two_runs_on_one_renderer_each_show_their_answer() -> None:
    con = console()
    play(con, [RunStart("first", "m", "p"), Done("Answer one", total_time_ms=1000),
               RunStart("second", "m", "p"), Done("Answer two", total_time_ms=2000)])
    out = con.export_text()
    assert out.index("Answer one") < out.index("❯ second") < out.index("Answer two")


def test_no_color_leaves_out_colour_codes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    stream = io.StringIO()
    con = Console(file=stream, force_terminal=True, width=100)
    play(con, sample_events())
    assert not re.search(r"\x1b\[[0-9;]*(3[0-9]|38;)[0-9;]*m", stream.getvalue())
    assert "Revenue growth" in stream.getvalue()


def test_answer_table_numbers_are_right_aligned() -> None:
    con = console()
    play(con, [RunStart("q", "m", "p"), Done(ANSWER, total_time_ms=1000)])
    lines = text_lines(con)
    nvda = next(line for line in lines if "125.9%" in line)
    amd = next(line for line in lines if "-3.9%" in line)
    assert nvda.index("NVIDIA") == amd.index("AMD")
    assert nvda.index("125.9%") + len("125.9%") == amd.index("-3.9%") + len("-3.9%")


def test_choose_renderer_picks_the_view_for_the_output() -> None:
    con = console()

    def view(renderer: object) -> object:
        assert isinstance(renderer, ScrubbingRenderer)  # no view is ever handed a secret
        return renderer.inner

    assert isinstance(view(choose_renderer(con, json=True, is_terminal=True)), JsonRenderer)
    assert isinstance(view(choose_renderer(con, json=False, is_terminal=False)), PlainRenderer)
    live = choose_renderer(con, json=False, is_terminal=True)
    assert isinstance(view(live), LiveRenderer)
    live.close()
    stream = io.StringIO()
    plain = choose_renderer(stream, json=False, is_terminal=False)
    plain.handle(RunStart("q", "m", "p"))
    assert stream.getvalue() == "> Query: q\n"
