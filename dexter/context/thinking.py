"""Strip old thinking: older tool-calling turns keep their calls, not their prose.

Cache-aware: rewriting an older assistant message changes the request from that message
on, so a prompt cache re-bills everything after it. The loop therefore strips in batches
(``STRIP_BATCH`` turns at once, or in a turn where microcompact changed the view anyway)
instead of one message every turn.
"""

from __future__ import annotations

from dexter.messages import AssistantMessage, Message

STRIP_BATCH = 4
"""Older turns that must be due before the loop strips them (all at once, down to
``keep_thinking``); between batches the prefix of the request stays the same."""


def strip_old_thinking(messages: list[Message], keep: int, *, batch: int = 1) -> list[Message]:
    """Drop the free text and thinking blocks of older assistant messages with tool calls.

    The ``keep`` most recent assistant messages are untouched; older ones that carry tool
    calls keep only the calls (their results still pair with them). Assistant messages
    without tool calls are answers (earlier-session history) and stay whole.

    Nothing changes until at least ``batch`` messages are due (``batch`` 1: strip whatever
    is due); then every due message is stripped at once, so the view changes once per
    ``batch`` turns rather than every turn.

    The thinking blocks of the last assistant message are always kept, even with
    ``keep == 0``: Anthropic rejects a tool-use continuation whose latest assistant turn
    lost its thinking blocks. Older turns' blocks may be dropped. Returns the same list when
    nothing changes.
    """
    if keep < 0:
        raise ValueError(f"keep must be 0 or more, got {keep}")
    positions = [i for i, m in enumerate(messages) if isinstance(m, AssistantMessage)]
    if not positions:
        return messages
    last = positions[-1]
    older = positions[: len(positions) - keep] if keep else positions
    due: list[tuple[int, AssistantMessage]] = []
    for i in older:
        message = messages[i]
        assert isinstance(message, AssistantMessage)
        if not message.tool_calls:
            continue
        thinking = message.thinking if i == last else ()
        if not message.text and thinking == message.thinking:
            continue
        due.append((i, AssistantMessage(text="", thinking=thinking, tool_calls=message.tool_calls)))
    if not due or len(due) < batch:
        return messages
    out = list(messages)
    for i, stripped in due:
        out[i] = stripped
    return out
