"""Strip old thinking: older tool-calling turns keep their calls, not their prose."""

from __future__ import annotations

import pytest

from dexter.context.thinking import strip_old_thinking
from dexter.messages import AssistantMessage, Message, ThinkingBlock, ToolResultMessage
from tests.context_builders import call, head


def _turn(n: int) -> list[Message]:
    return [
        AssistantMessage(text=f"plan {n}", thinking=(ThinkingBlock(f"think {n}", "sig"),),
                         tool_calls=(call(f"c{n}"),)),
        ToolResultMessage(f"c{n}", "get_financials", "data"),
    ]


def _assistants(messages: list[Message]) -> list[AssistantMessage]:
    return [m for m in messages if isinstance(m, AssistantMessage)]


def test_all_but_the_two_most_recent_lose_text_and_thinking_but_keep_calls() -> None:
    messages = head() + _turn(1) + _turn(2) + _turn(3) + _turn(4)
    stripped = _assistants(strip_old_thinking(messages, keep=2))
    assert [(a.text, len(a.thinking)) for a in stripped] == [
        ("", 0), ("", 0), ("plan 3", 1), ("plan 4", 1)]
    assert [a.tool_calls[0].id for a in stripped] == ["c1", "c2", "c3", "c4"]


def test_nothing_to_strip_returns_the_same_list() -> None:
    messages = head() + _turn(1) + _turn(2)
    assert strip_old_thinking(messages, keep=2) is messages
    answered = [*head(), AssistantMessage("an earlier answer"), *_turn(1)]
    assert strip_old_thinking(answered, keep=0) is not answered  # c1's plan goes
    only_answers = [*head(), AssistantMessage("answer one"), AssistantMessage("answer two")]
    assert strip_old_thinking(only_answers, keep=0) is only_answers


def test_last_assistant_keeps_its_thinking_blocks_even_with_keep_zero() -> None:
    messages = head() + _turn(1) + _turn(2)
    last = _assistants(strip_old_thinking(messages, keep=0))[-1]
    assert last.text == ""
    assert last.thinking == (ThinkingBlock("think 2", "sig"),)


def test_negative_keep_is_rejected() -> None:
    with pytest.raises(ValueError, match="keep"):
        strip_old_thinking(head(), keep=-1)


def test_batched_stripping_waits_until_enough_turns_are_due_then_strips_them_all() -> None:
    messages = head() + _turn(1) + _turn(2) + _turn(3) + _turn(4)
    assert strip_old_thinking(messages, keep=2, batch=3) is messages  # two due: wait
    five = messages + _turn(5)
    stripped = _assistants(strip_old_thinking(five, keep=2, batch=3))
    assert [a.text for a in stripped] == ["", "", "", "plan 4", "plan 5"]


def test_batched_stripping_keeps_the_request_prefix_between_batches() -> None:
    """Turn by turn, the view changes only once per batch (what a prompt cache needs)."""
    view: list[Message] = head()
    changes = []
    for n in range(1, 15):
        view = view + _turn(n)
        new = strip_old_thinking(view, keep=2, batch=4)
        changes.append(new is not view)
        view = new
    assert changes.count(True) == 3  # turns 6, 10 and 14, not every turn from turn 3
    assert [n for n, changed in enumerate(changes, 1) if changed] == [6, 10, 14]
