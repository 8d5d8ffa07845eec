"""manageContextThreshold: flush, then compaction, then truncation, in that order."""

from __future__ import annotations

import functools
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from dexter.config import ContextSettings
from dexter.context.compaction import CompactionError, CompactionResult, compact
from dexter.context.continuation import Continuation
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
from dexter.messages import AssistantMessage, Message, SystemMessage, ToolCall, UserMessage
from dexter.providers.base import ToolSpec
from dexter.scratchpad import ToolResultRecord
from dexter.testing.scripted import ScriptedModel
from tests.context_builders import head, rounds, tool_round

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
    system, query, continuation = outcome.messages
    assert system == SystemMessage("You are dexter.")
    assert query == UserMessage("NVDA growth?", kind="query")
    assert isinstance(continuation, UserMessage) and continuation.kind == "summary"
    assert SUMMARY in continuation.content and "NVDA growth?" not in continuation.content
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
    assert len(outcome.messages) == 3


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
    assert len(outcome.messages) == 3
    summary = outcome.messages[2].content  # type: ignore[union-attr]
    assert "revenue 60.92B" in summary and "<analysis>" not in summary and "draft" not in summary
    assert items[1] == MemoryFlush(phase="end", files_written=[])


# ---------------------------------------------------------------------------------------
# side requests as a continuation of the conversation
# ---------------------------------------------------------------------------------------

COMBINED = ("<memory>\n- Holds NVDA for the long term\n</memory>\n<analysis>draft</analysis>"
            "<summary>\n## 6. Numerical Data\n- revenue 60.92B [S1]\n</summary>")
SPECS = (ToolSpec("get_financials", "Financial data", {"type": "object", "properties": {}}),)


@dataclass
class RecordsScratchpad(FakeScratchpad):
    records: tuple[ToolResultRecord, ...] = ()

    def active_results(self) -> tuple[ToolResultRecord, ...]:
        return self.records


async def _run_continued(messages: list[Message], calls: Calls, model: ScriptedModel,
                         tmp_path: Path, *, reported: int = 96_000, flush: bool = True,
                         window: int = WINDOW, state: ThresholdState | None = None,
                         scratchpad: FakeScratchpad | None = None,
                         ) -> tuple[list[Event], ThresholdOutcome, ThresholdState]:
    state = state or ThresholdState()
    cont = Continuation(model=model, tools=SPECS, window=window, memory_dir=tmp_path / "memory",
                        now=lambda: datetime(2025, 3, 14, 9, 26))
    items = [item async for item in threshold_stage(
        messages, query="What was NVDA's revenue growth?", cfg=CFG, window=window,
        scratchpad=scratchpad or RecordsScratchpad(), compactor=calls.compact_ok, state=state,
        flush=calls.flush if flush else None, continuation=cont, last_reported_input=reported,
        compaction_model="fast", trace=calls.trace)]
    *events, outcome = items
    assert isinstance(outcome, ThresholdOutcome)
    return events, outcome, state  # type: ignore[return-value]


def _phases(events: list[Event]) -> list[str]:
    return [type(e).__name__ + ":" + getattr(e, "phase", "") for e in events]


async def test_flush_and_compaction_go_as_one_continuation_of_the_conversation(
        tmp_path: Path) -> None:
    calls, model = Calls(), ScriptedModel([COMBINED], model="main-model")
    view = head() + rounds(8)
    events, outcome, state = await _run_continued(view, calls, model, tmp_path)
    assert _phases(events) == ["MemoryFlush:start", "Compaction:start", "MemoryFlush:end",
                               "Compaction:end"]
    assert (calls.flushes, calls.compactions) == (0, 0)  # the separate forms were not needed
    [request] = model.requests
    assert request.continuation and request.tools == SPECS
    assert request.system == "You are dexter." and request.messages[:-1] == tuple(view[1:])
    assert events[2] == MemoryFlush(phase="end", files_written=["2025-03-14.md"])
    end = events[3]
    assert isinstance(end, Compaction) and end.success and end.model == "main-model"
    assert events[1] == Compaction(phase="start", pre_tokens=96_000, model="main-model")
    system, query, summary = outcome.messages
    assert system is view[0] and query is view[1] and isinstance(summary, UserMessage) and summary.kind == "summary"
    assert "revenue 60.92B [S1]" in summary.content and "<memory>" not in summary.content
    assert "Holds NVDA" not in summary.content
    assert (state.compaction_failures, state.flushed) == (0, False)
    assert [t[0] for t in calls.traces] == ["flush", "compact"]
    assert outcome.usage.input_tokens > 0  # the combined call's usage is the run's


async def test_a_tool_call_in_reply_runs_no_tool_and_the_separate_forms_follow(
        tmp_path: Path) -> None:
    calls = Calls()
    calling = AssistantMessage(text="One more file first.",
                               tool_calls=(ToolCall("x1", "get_financials", {"query": "AMD"}),))
    model = ScriptedModel([calling], model="main-model")
    events, outcome, state = await _run_continued(head() + rounds(8), calls, model, tmp_path)
    assert len(model.requests) == 1
    assert (calls.flushes, calls.compactions) == (1, 1)  # both redone in the separate form
    assert _phases(events) == ["MemoryFlush:start", "Compaction:start", "MemoryFlush:end",
                               "Compaction:end"]
    assert events[2] == MemoryFlush(phase="end", files_written=["2025-03-14.md"])
    end = events[3]
    assert isinstance(end, Compaction) and end.success and end.model == "fast"
    assert len(outcome.messages) == 3 and state.compaction_failures == 0
    # the tool call went nowhere: the view holds no call x1
    assert not any(isinstance(m, AssistantMessage) and m.tool_calls
                   and m.tool_calls[0].id == "x1" for m in outcome.messages)


async def test_a_window_that_cannot_hold_both_sends_what_fits_as_a_continuation(
        tmp_path: Path) -> None:
    # 120,000 of 128,000 in use: the flush's continuation (2,048 output) fits, the
    # combined one (10,240) and the compaction's (8,192) do not
    calls, model = Calls(), ScriptedModel(["- Holds NVDA"], model="main-model")
    events, outcome, _ = await _run_continued(head() + rounds(8), calls, model, tmp_path,
                                              reported=120_000)
    assert _phases(events) == ["MemoryFlush:start", "MemoryFlush:end", "Compaction:start",
                               "Compaction:end"]
    [flush_request] = model.requests
    assert flush_request.continuation and "<summary>" not in flush_request.messages[-1].content  # type: ignore[union-attr]
    assert (calls.flushes, calls.compactions) == (0, 1)
    start = events[2]
    assert isinstance(start, Compaction) and start.model == "fast"
    assert len(outcome.messages) == 3


async def test_a_window_that_holds_no_continuation_gets_the_separate_forms(tmp_path: Path) -> None:
    calls, model = Calls(), ScriptedModel([], model="main-model")
    events, _, _ = await _run_continued(head() + rounds(8), calls, model, tmp_path,
                                        reported=127_000)
    assert model.requests == [] and (calls.flushes, calls.compactions) == (1, 1)
    assert _phases(events) == ["MemoryFlush:start", "MemoryFlush:end", "Compaction:start",
                               "Compaction:end"]


async def test_memory_off_compacts_as_a_continuation_with_the_results_the_view_lost(
        tmp_path: Path) -> None:
    view = [*head(), *tool_round("c1", "[Old tool result content cleared] tool=get_financials"),
            *rounds(7, prefix="k")]
    lost = ToolResultRecord(index=0, tool="get_financials", args={"query": "NVDA"},
                            result="revenue 26.97B", duration_ms=1, is_error=False,
                            tool_call_id="c1", source_id="S1")
    scratchpad = RecordsScratchpad(records=(lost,))
    calls = Calls()
    model = ScriptedModel(["<summary>revenue 26.97B [S1]</summary>"], model="main-model")
    events, outcome, _ = await _run_continued(view, calls, model, tmp_path, flush=False,
                                              scratchpad=scratchpad)
    assert _phases(events) == ["Compaction:start", "Compaction:end"]
    instruction = model.requests[0].messages[-1].content  # type: ignore[union-attr]
    assert '### [S1] get_financials(query="NVDA")\nrevenue 26.97B' in instruction
    assert scratchpad.summaries == ["Summary:\nrevenue 26.97B [S1]"]
    assert calls.compactions == 0 and len(outcome.messages) == 3


async def test_a_failed_memory_write_in_the_combined_request_is_not_redone(tmp_path: Path) -> None:
    (tmp_path / "memory").write_text("not a folder", encoding="utf-8")
    calls, model = Calls(), ScriptedModel([COMBINED], model="main-model")
    events, _, _ = await _run_continued(head() + rounds(8), calls, model, tmp_path)
    flush_end = events[2]
    assert isinstance(flush_end, MemoryFlush) and "Could not write the memory file" in flush_end.error
    assert calls.flushes == 0 and len(model.requests) == 1
    assert isinstance(events[3], Compaction) and events[3].success
