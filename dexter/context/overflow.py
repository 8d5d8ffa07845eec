"""The context-overflow retry: truncate hard and try the call again, a bounded number of times."""

from __future__ import annotations

from dexter.config import ContextSettings
from dexter.context.truncate import truncate_rounds
from dexter.events import ContextCleared
from dexter.messages import Message


def handle_overflow(
    messages: list[Message], cfg: ContextSettings, retries_so_far: int
) -> tuple[list[Message], ContextCleared | None]:
    """The view to retry with after the provider said the request was too long.

    Keeps the last ``overflow_keep_rounds`` rounds on the first retry and one round fewer on
    each later retry (never fewer than one, unless configured as 0), so a second retry is not a repeat of the
    first. Returns ``(messages, None)`` (the same list) when ``retries_so_far`` has reached
    ``max_overflow_retries``, when the defenses are off, or when truncation removed
    nothing: the loop then ends the run with a clear error.
    """
    if not cfg.enabled or retries_so_far >= cfg.max_overflow_retries:
        return messages, None
    keep = max(cfg.overflow_keep_rounds - retries_so_far, min(cfg.overflow_keep_rounds, 1))
    truncated, report = truncate_rounds(messages, keep)
    if not report.cleared_count:
        return messages, None
    return truncated, ContextCleared(
        cleared_count=report.cleared_count, kept_count=report.kept_count, reason="overflow"
    )
