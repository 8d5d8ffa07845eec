"""Transcript repair: every tool call gets exactly one result, right after its call.

Provider protocols reject a request in which an assistant's tool call has no result, or a
tool result answers no call. A cancelled run or a crashed tool can leave either behind.
"""

from __future__ import annotations

from dataclasses import dataclass

from dexter.messages import AssistantMessage, Message, ToolResultMessage

INTERRUPTED_RESULT = "[Interrupted: no result]"


@dataclass(frozen=True, slots=True)
class RepairReport:
    """What ``repair_transcript`` changed."""

    interrupted: int = 0
    """Synthetic results added for calls that had none."""
    orphans_dropped: int = 0
    """Results dropped because no call (in the assistant message before them) asked for them."""
    duplicates_dropped: int = 0
    """Second and later results for the same call, dropped."""
    reordered: int = 0
    """Spans in which results were moved before the user messages that preceded them."""

    @property
    def changed(self) -> bool:
        return bool(self.interrupted or self.orphans_dropped or self.duplicates_dropped
                    or self.reordered)


def repair_transcript(messages: list[Message], *, start: int = 0) -> tuple[list[Message], RepairReport]:
    """Pair every tool call with exactly one result.

    A result belongs to the assistant message before it (up to the next assistant message).
    Within that span: a call without a result gets ``INTERRUPTED_RESULT`` (an error result),
    placed after the call's other results; a result for a call that is not there is dropped;
    a second result for the same call is dropped; results that came after a user message
    in the span are moved before it. Returns the same list when nothing changes.
    ``start``: ``messages[:start]`` is known to need no repair and ends where a span
    begins (``TranscriptRepairer``); only the rest is checked.
    """
    out: list[Message] = messages[:start]
    interrupted = orphans = duplicates = reordered = 0
    index = start
    count = len(messages)
    while index < count:
        message = messages[index]
        index += 1
        if isinstance(message, ToolResultMessage):
            orphans += 1  # a result before any assistant message answers nothing
            continue
        out.append(message)
        if not isinstance(message, AssistantMessage):
            continue
        end = index
        while end < count and not isinstance(messages[end], AssistantMessage):
            end += 1
        span = messages[index:end]
        index = end
        results, others, stats = _repair_span(message, span)
        interrupted += stats[0]
        orphans += stats[1]
        duplicates += stats[2]
        if _results_after_others(span):
            reordered += 1
        out.extend(results)
        out.extend(others)
    report = RepairReport(interrupted, orphans, duplicates, reordered)
    if not report.changed:
        return messages, report
    return out, report


def _repair_span(
    assistant: AssistantMessage, span: list[Message]
) -> tuple[list[Message], list[Message], tuple[int, int, int]]:
    """Results (kept and synthetic, in order) and other messages of one assistant's span."""
    call_ids = {call.id for call in assistant.tool_calls}
    seen: set[str] = set()
    results: list[Message] = []
    others: list[Message] = []
    orphans = duplicates = 0
    for message in span:
        if not isinstance(message, ToolResultMessage):
            others.append(message)
        elif message.tool_call_id not in call_ids:
            orphans += 1
        elif message.tool_call_id in seen:
            duplicates += 1
        else:
            seen.add(message.tool_call_id)
            results.append(message)
    missing = 0
    for call in assistant.tool_calls:
        if call.id not in seen:
            seen.add(call.id)
            missing += 1
            results.append(ToolResultMessage(call.id, call.name, INTERRUPTED_RESULT, is_error=True))
    return results, others, (missing, orphans, duplicates)


def _results_after_others(span: list[Message]) -> bool:
    """True when some tool result in the span comes after a non-result message."""
    saw_other = False
    for message in span:
        if isinstance(message, ToolResultMessage):
            if saw_other:
                return True
        else:
            saw_other = True
    return False


class TranscriptRepairer:
    """``repair_transcript`` for a transcript that grows at its end, checked once per turn.

    The spans before the last assistant message of the previous (repaired) view are
    complete: new messages can only join the last span. When the new view starts with the
    same message objects up to there, only the rest is checked, so a turn costs an identity
    comparison per earlier message instead of a full repair pass. Any other change (a
    replaced or removed earlier message) checks the whole view. Results equal
    ``repair_transcript(messages)``.
    """

    def __init__(self) -> None:
        # the previous view up to and including its last assistant message
        self._closed: list[Message] = []

    def __call__(self, messages: list[Message]) -> tuple[list[Message], RepairReport]:
        """Repair ``messages``; see the class docstring."""
        closed = self._closed
        start = len(closed) - 1  # the last assistant message: its span is checked again
        if start < 0 or len(closed) > len(messages) or any(
                a is not b for a, b in zip(closed, messages, strict=False)):
            start = 0
        out, report = repair_transcript(messages, start=start)
        last = len(out) - 1
        while last >= 0 and not isinstance(out[last], AssistantMessage):
            last -= 1
        self._closed = out[:last + 1]
        return out, report
