"""manageContextThreshold: flush memory, then compact, then truncate, once over the threshold.

Runs after every tool round. It is an async generator so the loop can pass its events on
as they happen (a compaction call takes seconds): it yields ``MemoryFlush``,
``Compaction`` and ``ContextCleared`` events and, last, exactly one ``ThresholdOutcome``
holding the new message list::

    async for item in manage_context_threshold(messages, ...):
        if isinstance(item, ThresholdOutcome):
            messages = item.messages
        else:
            yield item
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from dexter.config import ContextSettings
from dexter.context.compaction import CompactionResult, apply_compaction, continuation_message
from dexter.context.continuation import Continuation, SideKind, SideRequestError, restored_pieces
from dexter.context.flush import FlushResult, conversation_text
from dexter.context.limits import TokenSource, context_threshold, tokens_in_use
from dexter.context.stage import StageResult
from dexter.context.tokens import estimate_message_tokens
from dexter.context.trace import TraceFn
from dexter.context.truncate import truncate_rounds
from dexter.events import Compaction, ContextCleared, MemoryFlush
from dexter.messages import Message, Usage
from dexter.scratchpad import ToolResultRecord

Compactor = Callable[[str, Sequence[str]], Awaitable[CompactionResult]]
"""The separate compaction: ``(query, compaction input pieces) -> CompactionResult``;
raises on failure."""

Flusher = Callable[[str, str], Awaitable[FlushResult]]
"""The separate flush: ``(query, conversation) -> FlushResult``; raises on failure.
``conversation`` is ``flush.conversation_text`` of the view: this form never sees the raw
tool results."""


class ScratchpadView(Protocol):
    """What the threshold stage needs from the scratchpad."""

    def compaction_input(self) -> list[str]:
        """The same material as pieces, one per record, for compaction to chunk."""

    def active_results(self) -> Sequence[ToolResultRecord]:
        """The results recorded since the last compaction boundary."""

    def active_tool_result_count(self) -> int:
        """Results recorded since the last compaction boundary."""

    def set_compaction_summary(self, summary: str) -> None:
        """Record a compaction: the summary and a new boundary."""


@dataclass
class ThresholdState:
    """Carried across turns of one run; the stage updates it in place."""

    compaction_failures: int = 0
    """Consecutive failed compactions (reset by a success)."""
    flushed: bool = False
    """A memory flush ran since the last compaction or truncation."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ThresholdOutcome(StageResult):
    """The stage's result (its last item): the view, plus where it stands afterwards."""

    tokens: int
    """Tokens in use afterwards (the estimate once anything changed)."""
    source: TokenSource
    threshold: int

    @property
    def over_threshold(self) -> bool:
        return self.tokens > self.threshold


ThresholdItem = MemoryFlush | Compaction | ContextCleared | ThresholdOutcome


@dataclass(frozen=True)
class ThresholdInputs:
    """What the threshold step works with in one turn (besides the view and its state).

    ``flush`` is given when memory is on; ``continuation`` when the flush and compaction
    may be sent as a continuation of the conversation (``[context] side_requests``; the
    separate ``compactor`` and ``flush`` remain the fallback); ``last_reported_input`` is
    the provider's count for the last call and ``reported_basis`` the estimate of the view
    it was sent with;
    ``system`` counts only when the system prompt is not ``messages[0]``; ``extra_tokens``
    are the tool schemas; ``estimate_view(messages, system)`` estimates a view (the loop
    passes its cache).
    """

    query: str
    cfg: ContextSettings
    window: int
    scratchpad: ScratchpadView
    compactor: Compactor
    flush: Flusher | None = None
    continuation: Continuation | None = None
    last_reported_input: int | None = None
    reported_basis: int | None = None
    system: str = ""
    extra_tokens: int = 0
    compaction_model: str = ""
    trace: TraceFn | None = None
    estimate_view: Callable[[list[Message], str], int] = estimate_message_tokens


async def manage_context_threshold(
    messages: list[Message], inputs: ThresholdInputs, state: ThresholdState,
) -> AsyncGenerator[ThresholdItem, None]:
    """Bring the view under the threshold; yields events, then one ``ThresholdOutcome``.

    ``used`` is ``last_reported_input`` (plus what the view grew since ``reported_basis``,
    the estimate of the view that call was sent with), else the estimate of ``messages``
    plus ``system`` (only when the system prompt is not ``messages[0]``) plus
    ``extra_tokens`` (tool schemas). Nothing happens while ``used <= threshold`` or when
    ``cfg.enabled`` is false. Otherwise, in order:

    1. memory flush, when ``flush`` is given (memory on) and ``state.flushed`` is false.
       It does not shrink the view, so the next step always follows. A failed flush is
       reported in the end event and not retried before the next compaction/truncation.
    2. compaction, when ``state.compaction_failures < max_compaction_failures`` and the
       scratchpad has at least ``min_tool_results_for_compaction`` active results.
       Success: the view becomes system prompt, query and summary message, the scratchpad
       records the summary, failures reset, and the stage stops. Failure: failures + 1.
    3. truncation to the last ``truncate_keep_rounds`` rounds. If the view is still over
       the threshold, fewer rounds are kept, down to one (one ``ContextCleared`` event).

    With ``continuation`` the flush and compaction are sent as a continuation of the
    conversation wherever it fits the window, both in one request when both are due (the
    events still come as flush start, compaction start, flush end, compaction end); a
    continuation that fails, or one that does not fit, is the separate form instead.
    After a step that changed the view, its estimate replaces the provider's (stale) count.
    """
    query, cfg, window, scratchpad = inputs.query, inputs.cfg, inputs.window, inputs.scratchpad
    compactor, flush, trace, system = inputs.compactor, inputs.flush, inputs.trace, inputs.system
    last_reported_input, reported_basis = inputs.last_reported_input, inputs.reported_basis
    extra_tokens, compaction_model = inputs.extra_tokens, inputs.compaction_model
    estimate_view = inputs.estimate_view
    threshold = context_threshold(window, cfg)
    fixed = extra_tokens

    def estimate(view: list[Message]) -> int:
        return estimate_view(view, system) + fixed

    used, source = tokens_in_use(last_reported_input, estimate(messages), reported_basis)
    usage = Usage()
    if not cfg.enabled or used <= threshold:
        yield ThresholdOutcome(messages=messages, tokens=used, source=source, threshold=threshold)
        return

    flush_due = flush is not None and not state.flushed
    compact_due = (state.compaction_failures < cfg.max_compaction_failures
                   and scratchpad.active_tool_result_count() >= cfg.min_tool_results_for_compaction)
    estimated = used if source == "estimate" else used - (last_reported_input or 0)
    plan = _plan(inputs, messages, flush_due, compact_due, used, estimated)
    cont = inputs.continuation

    combined: tuple[FlushResult | Exception, CompactionResult | Exception] | None = None
    if plan.combined and cont is not None:
        yield MemoryFlush(phase="start")
        yield Compaction(phase="start", pre_tokens=used, model=cont.model.model)
        try:
            combined = await cont.flush_and_compact(messages, query, plan.restored)
        except SideRequestError as exc:
            combined = (exc, exc)

    if flush is not None and flush_due:
        if combined is None:
            yield MemoryFlush(phase="start")
        files: list[str] = []
        error = ""
        try:
            first = combined[0] if combined is not None else None
            flushed = await _flush(inputs, flush, messages, first,
                                   cont if plan.flush == "continuation" else None)
            files = list(flushed.files_written)
            usage = usage + flushed.usage
        except Exception as exc:
            error = str(exc) or type(exc).__name__
        state.flushed = True
        yield MemoryFlush(phase="end", files_written=files, error=error)
        _trace(trace, "flush", used, used)

    if compact_due:
        if combined is None:
            start_model = compaction_model
            if cont is not None and plan.compaction == "continuation":
                start_model = cont.model.model
            yield Compaction(phase="start", pre_tokens=used, model=start_model)
        try:
            first_summary = combined[1] if combined is not None else None
            result = await _compact(inputs, compactor, messages, first_summary,
                                    cont if plan.compaction == "continuation" else None,
                                    plan.restored)
        except Exception as exc:
            state.compaction_failures += 1
            yield Compaction(phase="end", success=False, pre_tokens=used,
                             model=compaction_model, error=str(exc) or type(exc).__name__)
            _trace(trace, "compact", used, used)
        else:
            usage = usage + result.usage
            compacted = apply_compaction(messages, query, continuation_message(result.summary))
            scratchpad.set_compaction_summary(result.summary)
            state.compaction_failures = 0
            state.flushed = False
            after = estimate(compacted)
            yield Compaction(phase="end", success=True, pre_tokens=used, post_tokens=after,
                             model=result.model or compaction_model)
            _trace(trace, "compact", used, after)
            yield ThresholdOutcome(messages=compacted, tokens=after, source="estimate",
                                   threshold=threshold, usage=usage)
            return

    truncated, kept = messages, 0
    keep = cfg.truncate_keep_rounds
    while True:
        truncated, report = truncate_rounds(messages, keep)
        kept = report.kept_count
        after = estimate(truncated)
        if after <= threshold or keep <= 1:
            break
        keep -= 1
    cleared = len(messages) - len(truncated)
    if cleared:
        state.flushed = False
        yield ContextCleared(cleared_count=cleared, kept_count=kept, reason="threshold")
        _trace(trace, "truncate", used, after)
        yield ThresholdOutcome(messages=truncated, tokens=after, source="estimate",
                               threshold=threshold, usage=usage)
        return
    _trace(trace, "truncate", used, used)
    yield ThresholdOutcome(messages=messages, tokens=used, source=source,
                           threshold=threshold, usage=usage)


Form = Literal["continuation", "separate"]


@dataclass(frozen=True, slots=True)
class SidePlan:
    """How this step sends its side requests."""

    flush: Form | None = None
    compaction: Form | None = None
    combined: bool = False
    """The flush and the compaction go as one continuation request."""
    restored: tuple[str, ...] = ()
    """Pieces of results the view holds only in part, for a continuation's summary."""


def _plan(inputs: ThresholdInputs, messages: list[Message], flush_due: bool, compact_due: bool,
          used: int, estimated: int) -> SidePlan:
    """Each due side request as a continuation where it fits the window, else separate."""
    cont = inputs.continuation
    flush_due = flush_due and inputs.flush is not None
    if cont is None or not (flush_due or compact_due):
        return SidePlan("separate" if flush_due else None, "separate" if compact_due else None)
    restored = (tuple(restored_pieces(messages, inputs.scratchpad.active_results()))
                if compact_due else ())

    def form(kind: SideKind) -> Form:
        return "continuation" if cont.fits(kind, inputs.query, restored, used, estimated) \
            else "separate"

    if flush_due and compact_due and form("flush+compaction") == "continuation":
        return SidePlan("continuation", "continuation", combined=True, restored=restored)
    return SidePlan(form("flush") if flush_due else None,
                    form("compaction") if compact_due else None, restored=restored)


async def _flush(inputs: ThresholdInputs, flush: Flusher, messages: list[Message],
                 first: FlushResult | Exception | None,
                 cont: Continuation | None) -> FlushResult:
    """The flush: the combined request's part (``first``) when it succeeded, else the
    continuation when planned, else (or when either failed as a request) the separate form."""
    if isinstance(first, FlushResult):
        return first
    if isinstance(first, Exception) and not isinstance(first, SideRequestError):
        raise first
    if first is None and cont is not None:
        try:
            return await cont.flush(messages, inputs.query)
        except SideRequestError:
            pass  # the separate form follows
    return await flush(inputs.query, conversation_text(messages))


async def _compact(inputs: ThresholdInputs, compactor: Compactor, messages: list[Message],
                   first: CompactionResult | Exception | None, cont: Continuation | None,
                   restored: Sequence[str]) -> CompactionResult:
    """The compaction, as ``_flush`` decides the flush."""
    if isinstance(first, CompactionResult):
        return first
    if first is None and cont is not None:
        try:
            return await cont.compact(messages, inputs.query, restored)
        except SideRequestError:
            pass  # the separate form follows
    return await compactor(inputs.query, inputs.scratchpad.compaction_input())


def _trace(trace: TraceFn | None, stage: str, before: int, after: int) -> None:
    if trace is not None:
        trace(stage, before, after)
