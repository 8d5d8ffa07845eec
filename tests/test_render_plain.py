"""Plain-line output (stdout not a terminal): one readable line per event, no ANSI codes."""

from __future__ import annotations

import io

import pytest

from dexter.events import (
    EVENT_TYPES,
    AnswerDelta,
    Compaction,
    ContextCleared,
    Done,
    Event,
    MemoryFlush,
    MemoryRecalled,
    Microcompact,
    ProviderRetry,
    QueueDrain,
    RunStart,
    StreamProgress,
    Thinking,
    ToolApproval,
    ToolDenied,
    ToolEnd,
    ToolError,
    ToolLimit,
    ToolProgress,
    ToolStart,
)
from dexter.render.demo import sample_events
from dexter.render.plain import PlainRenderer


def render(*events: Event) -> str:
    stream = io.StringIO()
    renderer = PlainRenderer(stream)
    for event in events:
        renderer.handle(event)
    renderer.close()
    return stream.getvalue()


def test_sample_run_covers_every_event_type() -> None:
    assert {type(e).type for e in sample_events()} == set(EVENT_TYPES)


@pytest.mark.parametrize(("event", "line"), [
    (RunStart("What is NVDA's P/E?", "gpt-4.1", "openai"), "> Query: What is NVDA's P/E?"),
    (Thinking("  Let me fetch\nthe data.  "), "· Let me fetch the data."),
    (ToolStart("get_financials", {"query": "NVDA revenue"}, "c1"),
     '→ Financials("NVDA revenue")'),
    (ToolEnd("get_financials", {}, '{"data": [1, 2, 3, 4]}', 1200, "c1"),
     "  ✓ Received 4 items (1.2s)"),
    (ToolError("web_fetch", "HTTP 404", "c1", {}, 300), "  ✗ Error: HTTP 404 (300ms)"),
    (ToolError("web_fetch", "unknown tool", "c1"), "  ✗ Error: unknown tool"),
    (ToolLimit("web_search", "Tool 'web_search' has been called 3 times."),
     "  ! Tool 'web_search' has been called 3 times."),
    (ToolApproval("write_file", {"path": "a.md"}, "allow-once", "c1"),
     "  ✓ Approved once: Write File(path=a.md)"),
    (ToolApproval("write_file", {"path": "a.md"}, "allow-always", "c1"),
     "  ✓ Approved always: Write File(path=a.md)"),
    (ToolApproval("write_file", {"path": "a.md"}, "deny", "c1"),
     "  ✗ Denied Write File(path=a.md)"),
    (ToolDenied("bash", {"command": "ls"}, "Not allowed here.", "c9"),
     "  ✗ Denied Bash(command=ls): Not allowed here."),
    (Microcompact(6, 42_000, "count"),
     "⏺ Microcompact: cleared 6 old tool results (~42k tokens)"),
    (Microcompact(1, 900, "tokens"), "⏺ Microcompact: cleared 1 old tool result (~900 tokens)"),
    (MemoryFlush("end", ["2025-01-02.md", "MEMORY.md"]),
     "⏺ Memory flush: wrote 2025-01-02.md, MEMORY.md"),
    (MemoryFlush("end", []), "⏺ Memory flush: nothing to keep"),
    (MemoryFlush("end", [], "disk full"), "⏺ Memory flush failed: disk full"),
    (MemoryRecalled(["MEMORY.md"], 1_250), "⏺ Memory recalled: MEMORY.md (~1.3k tokens)"),
    (MemoryRecalled(["MEMORY.md", "2025-01-02.md"], 900),
     "⏺ Memory recalled: MEMORY.md, 2025-01-02.md (~900 tokens)"),
    (Compaction("end", True, 120_000, 8_000, "gpt-4.1-mini"),
     "⏺ Context compacted: 120k → 8k tokens (93% smaller) with gpt-4.1-mini"),
    (Compaction("end", False, 120_000, error="timeout"),
     "⏺ Compaction failed: timeout; falling back to truncation"),
    (ContextCleared(12, 5), "⏺ Context cleared: removed 12 old messages, kept 5 rounds"),
    (ContextCleared(3, 1, "overflow"),
     "⏺ Context cleared after a context overflow: removed 3 old messages, kept 1 round"),
    (ProviderRetry(2, 2.0, "rate limited"), "⟳ retrying (rate limited) in 2.0s (attempt 2)"),
    (QueueDrain(2, "also check\nINTC"), "⏺ Picked up 2 queued messages: also check INTC"),
])
def test_one_line_per_event(event: Event, line: str) -> None:
    assert render(event) == line + "\n"


@pytest.mark.parametrize("event", [
    StreamProgress(120, "responding"),
    AnswerDelta("partial answer"),
    ToolProgress("web_fetch", "page 2", "c1"),
    Compaction("start"),
    MemoryFlush("start"),
    MemoryRecalled([], 0),
    Thinking("   "),
])
def test_live_only_events_print_nothing(event: Event) -> None:
    assert render(event) == ""


def test_denial_after_a_deny_decision_prints_only_the_reason() -> None:
    out = render(
        ToolApproval("write_file", {"path": "a.md"}, "deny", "c1"),
        ToolDenied("write_file", {"path": "a.md"}, "The user did not approve this call.", "c1"),
    )
    assert out == ("  ✗ Denied Write File(path=a.md)\n"
                   "    The user did not approve this call.\n")


def test_done_prints_answer_as_is_then_stats_last() -> None:
    answer = "## Answer\n\n| A | B |\n|---|---|\n| x | 1 |"
    out = render(Done(answer, iterations=1, total_time_ms=3_000))
    assert answer in out
    assert out.rstrip("\n").splitlines()[-1] == "✻ 3s · 1 iteration"


def test_a_run_stopped_at_the_limit_shows_its_answer_and_why() -> None:
    out = render(Done("Best so far: revenue rose.", status="max_iterations", iterations=10,
                      total_time_ms=5_000))
    assert "Best so far: revenue rose." in out
    assert "⚠ Stopped at the iteration limit (10): the answer uses what was gathered." in out


@pytest.mark.parametrize(("status", "answer", "shown"), [
    ("error", "The server failed.", "Error: The server failed."),
    ("interrupted", "Interrupted by the user.", "Interrupted: Interrupted by the user."),
])
def test_failed_run_prints_error_instead_of_answer(status: str, answer: str, shown: str) -> None:
    out = render(Done(answer, status=status,  # type: ignore[arg-type]
                      total_time_ms=5_000))
    assert shown in out
    assert out.rstrip("\n").splitlines()[-1] == "✻ 5s"


def test_an_interrupted_answer_shows_what_it_had_written() -> None:
    out = render(Done("Revenue rose in each of", status="interrupted", total_time_ms=5_000))
    assert "Revenue rose in each of\n\nInterrupted: Interrupted by the user." in out


def test_full_sample_run_has_no_ansi_codes_and_ends_with_stats() -> None:
    out = render(*sample_events())
    assert "\x1b" not in out
    lines = out.rstrip("\n").splitlines()
    assert lines[0].startswith("> Query: How did NVIDIA")
    assert lines[-1] == ("✻ 12s · 4 tool calls · 3 iterations · 12k in / 1.1k out · 45 tok/s"
                         " · context 20k/95k")
    assert "| NVIDIA | $26.97B | $60.92B | 125.9% |" in out
    assert '  ✓ [S2] Received 2 fields · 2 sources (870ms)' in out
    assert "  ✓ [S3] = 1.258545 (4ms)" in out
