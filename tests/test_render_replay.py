"""Replaying scratchpad entries as events, and re-rendering them."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from dexter.events import (
    Compaction,
    Done,
    Microcompact,
    RunStart,
    Thinking,
    ToolApproval,
    ToolDenied,
    ToolEnd,
    ToolError,
    ToolStart,
)
from dexter.render.plain import PlainRenderer
from dexter.render.replay import UNFINISHED_MESSAGE, ReplayStats, replay_events

TS = "2025-01-02T10:15:00+00:00"


def entry(kind: str, timestamp: str = TS, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "timestamp": timestamp, **fields}


INIT = entry("init", query="NVDA revenue?", model="gpt-4.1", provider="openai", version="0.1.0")
FIN_RESULT = {"data": [{"period": "FY2024", "revenue": 60922}], "source_urls": ["https://x"]}
DONE = entry("done", "2025-01-02T10:15:09+00:00", answer="Revenue was $60.9B.",
             tool_calls=[{"tool": "get_financials"}], iterations=2, total_time_ms=9000,
             token_usage={"input_tokens": 900, "output_tokens": 80}, tokens_per_second=20.0,
             status="ok", context_tokens=0, context_threshold=0, model="gpt-4.1", error_kind="")
ENTRIES = [
    INIT,
    entry("thinking", message="Fetching the income statement."),
    entry("tool_result", tool="get_financials", args={"query": "NVDA revenue"},
          result=FIN_RESULT, duration_ms=1200, is_error=False, tool_call_id="c1"),
    entry("tool_result", tool="web_fetch", args={"url": "https://x"}, result="HTTP 404",
          duration_ms=300, is_error=True, tool_call_id="c2"),
    entry("tool_approval", tool="write_file", args={"path": "a.md"}, decision="deny",
          tool_call_id="c3"),
    entry("tool_denied", tool="write_file", args={"path": "a.md"},
          reason="The user did not approve this call.", tool_call_id="c3"),
    entry("microcompact", cleared=6, tokens_saved=42000, trigger="count"),
    entry("compaction", phase="end", success=True, pre_tokens=120000, post_tokens=8000,
          model="gpt-4.1-mini", error=""),
    DONE,
]


def test_entries_become_the_run_events_in_order() -> None:
    events = list(replay_events(ENTRIES, scratchpad="scratchpads/x.jsonl"))
    assert events == [
        RunStart("NVDA revenue?", "gpt-4.1", "openai", "scratchpads/x.jsonl"),
        Thinking("Fetching the income statement."),
        ToolStart("get_financials", {"query": "NVDA revenue"}, "c1"),
        ToolEnd("get_financials", {"query": "NVDA revenue"}, json.dumps(FIN_RESULT), 1200, "c1"),
        ToolStart("web_fetch", {"url": "https://x"}, "c2"),
        ToolError("web_fetch", "HTTP 404", "c2", {"url": "https://x"}, 300),
        ToolApproval("write_file", {"path": "a.md"}, "deny", "c3"),
        ToolDenied("write_file", {"path": "a.md"}, "The user did not approve this call.", "c3"),
        Microcompact(6, 42000, "count"),
        Compaction("end", True, 120000, 8000, "gpt-4.1-mini"),
        Done("Revenue was $60.9B.", [{"tool": "get_financials"}], 2, 9000,
             {"input_tokens": 900, "output_tokens": 80}, 20.0, "ok", 0, 0, "gpt-4.1"),
    ]


def test_a_json_result_is_serialized_back_to_text() -> None:
    end = list(replay_events(ENTRIES))[3]
    assert isinstance(end, ToolEnd)
    assert json.loads(end.result) == FIN_RESULT


def test_unknown_and_broken_entries_are_skipped_and_counted() -> None:
    stats = ReplayStats()
    entries = [INIT, entry("mystery", x=1), entry("microcompact", cleared=1),
               {"timestamp": TS}, entry("microcompact", bogus=1),
               entry("microcompact", cleared="six", tokens_saved=1, trigger="count"),
               entry("compaction", phase="middle"), DONE]
    events = list(replay_events(entries, stats=stats))
    assert [type(e) for e in events] == [RunStart, Done]
    assert stats.skipped == {"mystery": 1, "microcompact": 3, "compaction": 1, "(no type)": 1}
    assert stats.skipped_count == 6


def test_optional_and_float_fields_accept_their_json_forms() -> None:
    entries = [INIT, entry("compaction", phase="start", success=None),
               entry("provider_retry", attempt=1, delay_s=2, reason="rate limited"), DONE]
    assert [e.type for e in replay_events(entries)] == [
        "run_start", "compaction", "provider_retry", "done"]


def test_live_only_and_duplicate_entries_are_ignored() -> None:
    entries = [INIT, entry("run_start", query="dup", model="m", provider="p"),
               entry("stream_progress", char_delta=5, mode="responding"),
               entry("answer_delta", text="x"),
               entry("tool_start", tool="get_financials", args={}, tool_call_id="c1"),
               ENTRIES[2], DONE]
    kinds = [e.type for e in replay_events(entries)]
    assert kinds == ["run_start", "tool_start", "tool_end", "done"]


def test_tool_events_are_used_when_there_are_no_tool_results() -> None:
    entries = [INIT,
               entry("tool_start", tool="read_file", args={"path": "a"}, tool_call_id="c1"),
               entry("tool_end", tool="read_file", args={"path": "a"}, result="text",
                     duration_ms=5, tool_call_id="c1"),
               DONE]
    assert [e.type for e in replay_events(entries)] == [
        "run_start", "tool_start", "tool_end", "done"]


def test_a_run_without_done_is_reported_as_unfinished() -> None:
    entries = [INIT, ENTRIES[1], ENTRIES[2],
               entry("thinking", "2025-01-02T10:16:05+00:00", message="Next step.")]
    events = list(replay_events(entries))
    last = events[-1]
    assert isinstance(last, Done)
    assert last.status == "interrupted"
    assert last.error_kind == "unfinished"
    assert last.answer == UNFINISHED_MESSAGE
    assert len(last.tool_calls) == 1
    assert last.total_time_ms == 65_000
    stream = io.StringIO()
    renderer = PlainRenderer(stream)
    for event in events:
        renderer.handle(event)
    out = stream.getvalue()
    assert "Interrupted: The run did not finish" in out
    assert out.rstrip().splitlines()[-1] == "✻ 1m 5s · 1 tool call"


def test_a_scratchpad_written_by_the_agent_replays(tmp_path: Path) -> None:
    from dexter.scratchpad import Scratchpad

    pad = Scratchpad(tmp_path, "AMD margins?", model="claude-sonnet-4-5", provider="anthropic")
    pad.record_event(Thinking("Looking up AMD."))
    pad.add_tool_result("get_financials", {"query": "AMD gross margin"},
                        json.dumps({"data": {"gross_margin": 0.5}}), duration_ms=800,
                        is_error=False, tool_call_id="t1")
    pad.record_event(Done("AMD's gross margin is 50%.", iterations=1, total_time_ms=2000))
    log = Scratchpad.read(pad.path)
    stream = io.StringIO()
    renderer = PlainRenderer(stream)
    for event in replay_events(log.entries, scratchpad=str(pad.path)):
        renderer.handle(event)
    assert stream.getvalue().splitlines() == [
        "> Query: AMD margins?",
        "· Looking up AMD.",
        '→ Financials("AMD gross margin")',
        "  ✓ Received 1 field (800ms)",
        "",
        "AMD's gross margin is 50%.",
        "",
        "✻ 2s · 1 iteration",
    ]
