"""``/context``: how full the context is and what the next stage would do about it.

Pure: it runs the context module's own checks (microcompact's triggers, the threshold,
compaction's preconditions) on a copy of the transcript and reports, changing nothing.
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from dataclasses import dataclass
from typing import Literal

from dexter.config import ContextSettings
from dexter.context import microcompact as micro
from dexter.context.tokens import estimate_message_tokens
from dexter.messages import Message

Action = Literal["off", "nothing", "microcompact", "flush+compact", "compact", "flush+truncate",
                 "truncate"]


@dataclass(frozen=True, slots=True)
class ContextReport:
    """Tokens in use, the threshold, and the next stage's action with a readable reason."""

    tokens: int
    threshold: int
    window: int
    action: Action
    detail: str

    @property
    def percent(self) -> int:
        """Share of the threshold in use, in whole percent."""
        return round(self.tokens * 100 / self.threshold) if self.threshold > 0 else 0


def context_report(
    messages: Sequence[Message],
    *,
    cfg: ContextSettings,
    threshold: int,
    window: int,
    compactable: Set[str],
    memory_on: bool,
    active_results: int,
    extra_tokens: int = 0,
) -> ContextReport:
    """What the next request would hold and which stage would act on it.

    ``active_results`` is the scratchpad's count of tool results since the last compaction
    (compaction needs ``min_tool_results_for_compaction``); ``extra_tokens`` the tool specs.
    """
    view = list(messages)
    tokens = estimate_message_tokens(view) + extra_tokens
    if not cfg.enabled:
        return ContextReport(tokens, threshold, window, "off",
                             "Context defenses are off ([context] enabled = false).")
    _after, report = micro.microcompact(view, cfg, compactable)
    if report is not None:
        return ContextReport(
            tokens, threshold, window, "microcompact",
            f"Microcompact would clear {report.cleared} old tool result(s) "
            f"(~{report.tokens_saved:,} tokens) before the next model call.")
    if tokens <= threshold:
        room = threshold - tokens
        return ContextReport(tokens, threshold, window, "nothing",
                             f"Nothing to do: {room:,} tokens left before the threshold.")
    can_compact = active_results >= cfg.min_tool_results_for_compaction
    if can_compact:
        action: Action = "flush+compact" if memory_on else "compact"
        detail = ("Over the threshold: the next tool round would "
                  + ("save key facts to memory, then " if memory_on else "")
                  + "summarize the research with the fast model.")
    else:
        action = "flush+truncate" if memory_on else "truncate"
        detail = ("Over the threshold with too few tool results to summarize "
                  f"(< {cfg.min_tool_results_for_compaction}): the next tool round would "
                  + ("save key facts to memory, then " if memory_on else "")
                  + f"keep only the last {cfg.truncate_keep_rounds} rounds.")
    return ContextReport(tokens, threshold, window, action, detail)
