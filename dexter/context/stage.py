"""The one shape every context stage has, as the loop sees it.

A stage takes the view (the messages of the next request) and is an async generator: it
yields the events of what it did, as it does them, and last one :class:`StageResult` with
the new view. The loop drives every stage the same way (``Agent._apply``): events go to
the caller, the result replaces the view. The work itself stays in small pure functions
in each stage's module (``microcompact``, ``cap_tool_result``, ``truncate_rounds``...),
which the tests call directly; the stage functions below only give them this shape.

See docs/architecture.md, "The context stages".
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from pathlib import Path

from dexter.config import ContextSettings
from dexter.context import microcompact as micro
from dexter.context import overflow as overflow_mod
from dexter.context import results as results_mod
from dexter.events import Event, Microcompact
from dexter.messages import Message, ToolResultMessage, Usage


@dataclass(frozen=True, slots=True)
class StageResult:
    """The last item of a stage: the view after it ran."""

    messages: list[Message]
    """The new view: the same list object when the stage changed nothing."""
    usage: Usage = field(default_factory=Usage)
    """Token usage of any model calls the stage made (flush, compaction)."""
    cleared_ids: tuple[str, ...] = ()
    """Tool calls whose results the stage cleared (the scratchpad marks them)."""

    def changed(self, before: list[Message]) -> bool:
        """Whether the stage replaced the view it was given."""
        return self.messages is not before


Stage = AsyncGenerator[Event | StageResult, None]
"""What a stage function returns."""


async def microcompact_stage(messages: list[Message], cfg: ContextSettings,
                             compactable: micro.Compactable) -> Stage:
    """Before a request: clear old re-fetchable results (``microcompact.microcompact``)."""
    new, report = micro.microcompact(messages, cfg, compactable)
    if report is None:
        yield StageResult(messages)
        return
    yield Microcompact(cleared=report.cleared, tokens_saved=report.tokens_saved,
                       trigger=report.trigger)
    yield StageResult(new, cleared_ids=report.tool_call_ids)


async def overflow_stage(messages: list[Message], cfg: ContextSettings,
                         retries_so_far: int) -> Stage:
    """After the provider refused the request as too long: truncate hard
    (``overflow.handle_overflow``). An unchanged view means: give up."""
    new, event = overflow_mod.handle_overflow(messages, cfg, retries_so_far)
    if event is not None:
        yield event
    yield StageResult(new)


async def budget_stage(messages: list[Message], turn_size: int, cfg: ContextSettings,
                       store: Path) -> Stage:
    """After the tools: cap each of the last ``turn_size`` results (the turn's), then keep
    the turn within its budget (``results.cap_tool_result``, ``results.apply_turn_budget``).
    Oversized text goes to ``store``; the view keeps a preview naming the file."""
    if not cfg.enabled or turn_size <= 0:
        yield StageResult(messages)
        return
    head, turn = messages[:-turn_size], messages[-turn_size:]
    results = [m for m in turn if isinstance(m, ToolResultMessage)]
    assert len(results) == len(turn), "the turn's tail must be its tool results"
    capped = []
    for result in results:
        content, _info = results_mod.cap_tool_result(result.content, result.tool_call_id,
                                                     cfg, store)
        capped.append(result if content is result.content else
                      ToolResultMessage(result.tool_call_id, result.name, content,
                                        is_error=result.is_error))
    budgeted, _report = results_mod.apply_turn_budget(capped, cfg, store)
    if all(a is b for a, b in zip(budgeted, results, strict=True)):
        yield StageResult(messages)
        return
    yield StageResult([*head, *budgeted])
