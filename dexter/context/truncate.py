"""Truncation by rounds: drop the oldest work, never the query, never half a round.

A round is an assistant message with its tool results and any user notes after it. The
protected head (system prompt, earlier-session history, the query and the compaction
summary after it) is never dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

from dexter.messages import AssistantMessage, Message, UserMessage, head_length


@dataclass(frozen=True, slots=True)
class TruncateReport:
    """What ``truncate_rounds`` removed."""

    cleared_count: int
    """Messages removed."""
    kept_count: int
    """Rounds kept."""


def truncate_rounds(messages: list[Message], keep_rounds: int) -> tuple[list[Message], TruncateReport]:
    """Keep the protected head and the last ``keep_rounds`` rounds.

    The head runs up to and including the query and the compaction summary right after
    it (``messages.head_length``); without a query, up to the first summary or the first
    user message. Messages between the head and the first round are kept too. Because rounds start at an assistant message and hold its results, a cut
    never separates a tool call from its result. Queued user follow-ups inside dropped
    rounds are kept (they are the user's words, not the agent's work); the loop's own
    notes go with their round. Returns the same list when nothing is removed.
    """
    if keep_rounds < 0:
        raise ValueError(f"keep_rounds must be 0 or more, got {keep_rounds}")
    head_end = head_length(messages)
    starts = [i for i in range(head_end, len(messages)) if isinstance(messages[i], AssistantMessage)]
    if len(starts) <= keep_rounds:
        return messages, TruncateReport(0, len(starts))
    cut = starts[len(starts) - keep_rounds] if keep_rounds else len(messages)
    first_round = starts[0]
    kept_user = [
        m for m in messages[first_round:cut]
        if isinstance(m, UserMessage) and m.kind == "queued"
    ]
    out = messages[:first_round] + kept_user + messages[cut:]
    return out, TruncateReport(len(messages) - len(out), keep_rounds)

