"""One-line notices for the events that are not tool rows: context defenses, retries, queue.

Every view prints these the same way (a symbol, then the text); only styling differs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from dexter.events import (
    Compaction,
    ContextCleared,
    Done,
    Event,
    MemoryFlush,
    MemoryRecalled,
    Microcompact,
    ProviderRetry,
    QueueDrain,
    ScratchpadError,
    Verification,
)
from dexter.render.format import format_tokens, one_line, plural, reduction_percent, truncate

Tone = Literal["info", "muted", "warning", "error"]


@dataclass(frozen=True, slots=True)
class Notice:
    """A symbol, the text after it, and how loud it should look."""

    symbol: str
    text: str
    tone: Tone = "info"

    def __str__(self) -> str:
        return f"{self.symbol} {self.text}"


def _compaction(event: Compaction) -> Notice | None:
    if event.phase != "end":
        return None
    if not event.success:
        reason = one_line(event.error) or "unknown error"
        return Notice("⏺", f"Compaction failed: {truncate(reason, 120)}; falling back to truncation",
                      "warning")
    text = (
        f"Context compacted: {format_tokens(event.pre_tokens)} → {format_tokens(event.post_tokens)}"
        f" tokens ({reduction_percent(event.pre_tokens, event.post_tokens)}% smaller)"
    )
    return Notice("⏺", f"{text} with {event.model}" if event.model else text)


def _memory_flush(event: MemoryFlush) -> Notice | None:
    if event.phase != "end":
        return None
    if event.error:
        return Notice("⏺", f"Memory flush failed: {truncate(one_line(event.error), 120)}",
                      "warning")
    if not event.files_written:
        return Notice("⏺", "Memory flush: nothing to keep", "muted")
    return Notice("⏺", "Memory flush: wrote " + ", ".join(event.files_written))


def _verification(event: Verification) -> Notice | None:
    if event.final:
        return None  # the final check is shown under the answer
    problems = []
    if event.unsupported:
        shown = [str(u.get("reason") or f"{u.get('text', '')} is in no source")
                 for u in event.unsupported[:3] if isinstance(u, dict)]
        more = len(event.unsupported) - 3
        problems.append(f"{plural(len(event.unsupported), 'figure')} "
                        f"{'does' if len(event.unsupported) == 1 else 'do'} not check out ("
                        + "; ".join(shown) + (f"; +{more}" if more > 0 else "") + ")")
    if event.unknown_citations:
        problems.append("citations to no source: " + ", ".join(event.unknown_citations))
    return Notice("⏺", f"Checking the answer: {'; '.join(problems)}; asking the model to "
                       "fix it", "warning")


def record_notice(done: Done) -> Notice | None:
    """The closing warning of a run whose scratchpad is incomplete; None when it is whole."""
    if done.record_complete:
        return None
    why = one_line(done.record_error) or "a write to the scratchpad failed"
    return Notice("⚠", f"The record of this run is incomplete: {why}", "warning")


def notice_for(event: Event) -> Notice | None:
    """The notice line for a context, retry, queue, verification or scratchpad event; None
    for every other event."""
    match event:
        case ScratchpadError(message=message):
            return Notice("⚠", f"{one_line(message)}. The run goes on, but its record will be "
                               "incomplete.", "warning")
        case Verification():
            return _verification(event)
        case Microcompact(cleared=cleared, tokens_saved=saved):
            return Notice("⏺", f"Microcompact: cleared {plural(cleared, 'old tool result')}"
                               f" (~{format_tokens(saved)} tokens)")
        case Compaction():
            return _compaction(event)
        case MemoryFlush():
            return _memory_flush(event)
        case MemoryRecalled(files=files, tokens=tokens):
            if not files:
                return None
            return Notice("⏺", f"Memory recalled: {truncate(', '.join(files), 80)}"
                               f" (~{format_tokens(tokens)} tokens)", "muted")
        case ContextCleared(cleared_count=cleared, kept_count=kept, reason=reason):
            why = " after a context overflow" if reason == "overflow" else ""
            return Notice("⏺", f"Context cleared{why}: removed {plural(cleared, 'old message')},"
                               f" kept {plural(kept, 'round')}")
        case ProviderRetry(attempt=attempt, delay_s=delay, reason=reason):
            why = f" ({one_line(reason)})" if reason.strip() else ""
            return Notice("⟳", f"retrying{why} in {delay:.1f}s (attempt {attempt})", "warning")
        case QueueDrain(message_count=count, merged_text=text):
            shown = truncate(one_line(text), 80)
            label = f"Picked up {plural(count, 'queued message')}"
            return Notice("⏺", f"{label}: {shown}" if shown else label)
    return None
