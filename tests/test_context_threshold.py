"""manageContextThreshold: flush, then compaction, then truncation, in that order."""

from __future__ import annotations

import functools
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dexter.config import ContextSettings
from dexter.context.compaction import CompactionError, CompactionResult, compact
from dexter.context.flush import FlushResult, memory_flush
from dexter.context.threshold import (
    ThresholdInputs,
    ThresholdItem,
    ThresholdOutcome,
    ThresholdState,
    manage_context_threshold,
)
from dexter.context.tokens import estimate_message_tokens
from dexter.events import Compaction, ContextCleared, Event, MemoryFlush
from dexter.messages import Message, SystemMessage, UserMessage
from dexter.testing.scripted import ScriptedModel
from tests.context_builders import head, rounds

CFG = ContextSettings()
WINDOW = 128_000  # threshold 95,000
SUMMARY = "Summary:\n## 6. Numerical Data\nrevenue 60.92B"


def threshold_stage(messages: list[Message], *, state: ThresholdState,
                    **inputs: Any) -> AsyncGenerator[ThresholdItem, None]:
    """The stage with its inputs written as keywords, as the tests read best."""
    return manage_context_threshold(messages, ThresholdInputs(**inputs), state)


@dataclass
class FakeScratchpad:
    results: int = 5
    text: str = "### get_financials(query=NVDA)\nrevenue 60.92B"
    summaries: list[str] = field(default_factory=list)

    def tool_results_text(self) -> str:
        return self.text

    def compaction_input(self) -> list[str]:
        return [self.text]

    def active_tool_result_count(self) -> int:
        return self.results

    def set_compaction_summary(self, summary: str) -> None:
        self.summaries.append(summary)


@dataclass
class Calls:
    flushes: int = 0
    flushed_text: list[str] = field(default_factory=list)
    compactions: int = 0
    traces: list[tuple[str, int, int]] = field(default_factory=list)

    async def flush(self, query: str, text: str) -> FlushResult:
        self.flushes += 1
        self.flushed_text.append(text)
        return FlushResult(["2025-03-14.md"], "- holds NVDA")

    async def compact_ok(self, query: str, text: Sequence[str]) -> CompactionResult:
        self.compactions += 1
        return CompactionResult(SUMMARY, calls=1, model="fast")

    async def compact_fail(self, query: str, text: Sequence[str]) -> CompactionResult:
        self.compactions += 1
        raise CompactionError("Compaction returned an empty response.")

    def trace(self, stage: str, before: int, after: int) -> None:
        self.traces.append((stage, before, after))


async def _run(messages: list[Message], calls: Calls, *, state: ThresholdState | None = None,
               reported: int | None = 96_000, results: int = 5, fail: bool = False,
               flush: bool = True, cfg: ContextSettings = CFG,
               scratchpad: FakeScratchpad | None = None,
               ) -> tuple[list[Event], ThresholdOutcome, ThresholdState]:
    state = state or ThresholdState()
    items: list[ThresholdItem] = []
    async for item in threshold_stage(
        messages, query="NVDA growth?", cfg=cfg, window=WINDOW,
        scratchpad=scratchpad or FakeScratchpad(results=results),
        compactor=calls.compact_fail if fail else calls.compact_ok, state=state,
        flush=calls.flush if flush else None, last_reported_input=reported,
        compaction_model="fast", trace=calls.trace,
    ):
        items.append(item)
    *events, outcome = items
    assert isinstance(outcome, ThresholdOutcome)
    assert not any(isinstance(e, ThresholdOutcome) for e in events)
    return events, outcome, state  # type: ignore[return-value]


async def test_at_the_threshold_nothing_happens() -> None:
    calls = Calls()
    messages = head() + rounds(8)
    events, outcome, _ = await _run(messages, calls, reported=95_000)
    assert events == []
    assert outcome.messages is messages
    assert (outcome.tokens, outcome.source, outcome.threshold) == (95_000, "reported", 95_000)
    assert (calls.flushes, calls.compactions, calls.traces) == (0, 0, [])


async def test_over_the_threshold_flush_then_compaction_replaces_the_view() -> None:
    calls = Calls()
    scratchpad = FakeScratchpad()
    state = ThresholdState(compaction_failures=1)
    events, outcome, state = await _run(head() + rounds(8), calls, state=state,
                                        scratchpad=scratchpad)
    assert [type(e).__name__ + ":" + getattr(e, "phase", "") for e in events] == [
        "MemoryFlush:start", "MemoryFlush:end", "Compaction:start", "Compaction:end"]
    assert events[1] == MemoryFlush(phase="end", files_written=["2025-03-14.md"])
    end = events[3]
    assert isinstance(end, Compaction)
    assert (end.success, end.pre_tokens, end.model) == (True, 96_000, "fast")
    assert 0 < end.post_tokens < 1_000
    system, continuation = outcome.messages
    assert system == SystemMessage("You are dexter.")
    assert isinstance(continuation, UserMessage) and continuation.kind == "summary"
    assert continuation.content.startswith("NVDA growth?") and SUMMARY in continuation.content
    assert (outcome.tokens, outcome.source) == (end.post_tokens, "estimate")
    assert scratchpad.summaries == [SUMMARY]
    assert (state.compaction_failures, state.flushed) == (0, False)
    assert [t[0] for t in calls.traces] == ["flush", "compact"]
    # the flush saw the conversation (query, calls), not the tool results
    (flushed,) = calls.flushed_text
    assert "What was NVDA's revenue growth?" in flushed and "[called get_financials" in flushed
    assert "revenue 26.97B" not in flushed and "revenue 60.92B" not in flushed


async def test_two_active_results_skip_compaction_three_run_it() -> None:
    calls = Calls()
    events, outcome, _ = await _run(head() + rounds(8), calls, results=2, flush=False)
    assert calls.compactions == 0
    assert events == [ContextCleared(cleared_count=6, kept_count=5, reason="threshold")]
    assert outcome.messages == head() + rounds(8)[-10:]

    events, outcome, _ = await _run(head() + rounds(8), calls, results=3, flush=False)
    assert calls.compactions == 1
    assert len(outcome.messages) == 2


async def test_third_consecutive_failure_falls_back_and_then_the_model_is_not_called() -> None:
    calls = Calls()
    state = ThresholdState(compaction_failures=2)
    events, outcome, state = await _run(head() + rounds(8), calls, state=state, fail=True,
                                        flush=False)
    assert calls.compactions == 1
    assert state.compaction_failures == 3
    failed = events[1]
    assert isinstance(failed, Compaction)
    assert (failed.phase, failed.success) == ("end", False)
    assert "empty response" in failed.error
    assert isinstance(events[2], ContextCleared)
    assert outcome.messages == head() + rounds(8)[-10:]

    events, _, state = await _run(head() + rounds(8), calls, state=state, fail=True, flush=False)
    assert calls.compactions == 1  # not called a fourth time
    assert [type(e) for e in events] == [ContextCleared]


async def test_flush_runs_once_per_cycle_and_a_failed_flush_does_not_stop_compaction() -> None:
    calls = Calls()
    state = ThresholdState(flushed=True)
    events, _, _ = await _run(head() + rounds(8), calls, state=state)
    assert calls.flushes == 0
    assert not any(isinstance(e, MemoryFlush) for e in events)

    async def broken_flush(query: str, text: str) -> FlushResult:
        raise OSError("read-only file system")

    state = ThresholdState()
    items = [item async for item in threshold_stage(
        head() + rounds(8), query="q", cfg=CFG, window=WINDOW, scratchpad=FakeScratchpad(),
        compactor=calls.compact_ok, state=state, flush=broken_flush, last_reported_input=96_000)]
    flush_end = items[1]
    assert isinstance(flush_end, MemoryFlush) and flush_end.error == "read-only file system"
    assert isinstance(items[3], Compaction) and items[3].success


async def test_truncation_resets_the_flush_flag_and_keeps_fewer_rounds_if_still_over() -> None:
    calls = Calls()
    huge = head() + rounds(8, content="word " * 20_000)  # ~25,000 tokens per round
    state = ThresholdState(compaction_failures=3)
    events, outcome, state = await _run(huge, calls, state=state, reported=None)
    cleared = events[-1]
    assert isinstance(cleared, ContextCleared)
    assert cleared.kept_count == 3
    assert outcome.tokens <= outcome.threshold
    assert state.flushed is False
    assert calls.traces[-1][0] == "truncate"


async def test_growth_since_the_reported_call_counts() -> None:
    calls = Calls()
    messages = head() + rounds(2)
    grown = estimate_message_tokens(messages)
    items = [item async for item in threshold_stage(
        messages, query="q", cfg=CFG, window=WINDOW, scratchpad=FakeScratchpad(results=0),
        compactor=calls.compact_ok, state=ThresholdState(), last_reported_input=94_990,
        reported_basis=0, trace=calls.trace)]
    outcome = items[-1]
    assert isinstance(outcome, ThresholdOutcome)
    assert (outcome.tokens, outcome.source) == (94_990 + grown, "reported+estimate")
    assert outcome.over_threshold
    assert calls.traces == [("truncate", 94_990 + grown, 94_990 + grown)]
    assert outcome.messages is messages  # two rounds: nothing to drop


async def test_disabled_defenses_do_nothing() -> None:
    calls = Calls()
    messages = head() + rounds(8)
    events, outcome, _ = await _run(messages, calls, reported=500_000,
                                    cfg=ContextSettings(enabled=False))
    assert events == [] and outcome.messages is messages


async def test_with_the_real_stages_the_compaction_call_has_no_tools(tmp_path: Path) -> None:
    fast = ScriptedModel(["<analysis>draft</analysis><summary>revenue 60.92B</summary>"])
    main = ScriptedModel(["NO_MEMORY_TO_FLUSH"])
    state = ThresholdState()
    items = [item async for item in threshold_stage(
        head() + rounds(8), query="NVDA growth?", cfg=CFG, window=WINDOW,
        scratchpad=FakeScratchpad(), state=state, last_reported_input=120_000,
        compactor=functools.partial(compact, fast, fast_window=128_000),
        flush=functools.partial(memory_flush, main, window=WINDOW, memory_dir=tmp_path),
    )]
    outcome = items[-1]
    assert isinstance(outcome, ThresholdOutcome)
    assert fast.requests[0].tools == () and main.requests[0].tools == ()
    assert len(outcome.messages) == 2
    summary = outcome.messages[1].content  # type: ignore[union-attr]
    assert "revenue 60.92B" in summary and "<analysis>" not in summary and "draft" not in summary
    assert items[1] == MemoryFlush(phase="end", files_written=[])
