"""Strip old thinking: older tool-calling turns keep their calls, not their prose."""

from __future__ import annotations

from dexter.messages import AssistantMessage, Message


def strip_old_thinking(messages: list[Message], keep: int) -> list[Message]:
    """Drop the free text and thinking blocks of older assistant messages with tool calls.

    The ``keep`` most recent assistant messages are untouched; older ones that carry tool
    calls keep only the calls (their results still pair with them). Assistant messages
    without tool calls are answers (earlier-session history) and stay whole.

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
    out: list[Message] | None = None
    for i in older:
        message = messages[i]
        assert isinstance(message, AssistantMessage)
        if not message.tool_calls:
            continue
        thinking = message.thinking if i == last else ()
        if not message.text and thinking == message.thinking:
            continue
        if out is None:
            out = list(messages)
        out[i] = AssistantMessage(text="", thinking=thinking, tool_calls=message.tool_calls)
    return messages if out is None else out
