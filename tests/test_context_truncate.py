"""Truncation by rounds: the head is never dropped and a round is never split."""

from __future__ import annotations

import pytest

from dexter.context.truncate import truncate_rounds
from dexter.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from tests.context_builders import head, rounds, tool_round


def _history_head() -> list[Message]:
    return [
        SystemMessage("sys"),
        UserMessage("earlier question", kind="history"),
        AssistantMessage("earlier answer"),
        UserMessage("NVDA margins?", kind="query"),
    ]


def _multi_round(n: int) -> list[Message]:
    calls = tuple(ToolCall(f"r{n}-{k}", "web_search", {"query": f"q{n}{k}"}) for k in range(3))
    return [
        AssistantMessage(text=f"round {n}", tool_calls=calls),
        *(ToolResultMessage(c.id, c.name, f"result {c.id}") for c in calls),
        UserMessage(f"usage note {n}", kind="note"),
    ]


def _pairing_holds(messages: list[Message]) -> bool:
    calls = {c.id for m in messages if isinstance(m, AssistantMessage) for c in m.tool_calls}
    results = {m.tool_call_id for m in messages if isinstance(m, ToolResultMessage)}
    return calls == results


def test_keeps_head_and_the_last_rounds() -> None:
    messages = _history_head() + rounds(8)
    truncated, report = truncate_rounds(messages, 5)
    assert truncated[:4] == messages[:4]
    assert truncated[4:] == messages[-10:]
    assert (report.cleared_count, report.kept_count) == (6, 5)


@pytest.mark.parametrize("keep", [0, 1, 2, 3, 5, 7])
def test_rounds_are_never_split(keep: int) -> None:
    messages = _history_head() + [m for n in range(6) for m in _multi_round(n)]
    truncated, report = truncate_rounds(messages, keep)
    assert _pairing_holds(truncated)
    assert truncated[:4] == messages[:4]
    kept_rounds = [m for m in truncated if isinstance(m, AssistantMessage)][1:]
    assert len(kept_rounds) == min(keep, 6)
    assert report.cleared_count == len(messages) - len(truncated)


def test_nothing_to_remove_returns_the_same_list() -> None:
    messages = head() + rounds(3)
    truncated, report = truncate_rounds(messages, 5)
    assert truncated is messages
    assert (report.cleared_count, report.kept_count) == (0, 3)


def test_compaction_summary_is_protected_like_the_query() -> None:
    messages = [SystemMessage("sys"), UserMessage("query + summary", kind="summary"), *rounds(4)]
    truncated, _ = truncate_rounds(messages, 1)
    assert truncated[:2] == messages[:2]
    assert truncated[2:] == messages[-2:]


def test_queued_user_messages_in_dropped_rounds_are_kept() -> None:
    queued = UserMessage("also check AMD", kind="queued")
    messages = [*head(), *tool_round("c1"), queued, *tool_round("c2"), *tool_round("c3")]
    truncated, report = truncate_rounds(messages, 1)
    assert truncated == [*head(), queued, *tool_round("c3")]
    assert report.cleared_count == 4


def test_negative_keep_is_rejected() -> None:
    with pytest.raises(ValueError, match="keep_rounds"):
        truncate_rounds(head(), -1)


def test_the_query_and_the_compaction_summary_after_it_are_the_head() -> None:
    summary = UserMessage("Summary:\nrevenue 60.92B", kind="summary")
    messages = [*head(), summary, *rounds(4)]
    truncated, report = truncate_rounds(messages, 1)
    assert truncated == [*head(), summary, *rounds(4)[-2:]]
    assert report.kept_count == 1


def test_a_session_summary_at_the_start_of_history_does_not_end_the_head() -> None:
    # /compact leaves a summary-kind message first in the history; the head still runs
    # to this run's query, so truncation never drops the query or the history after it
    earlier = UserMessage("Summary of the earlier conversation in this session: ...",
                          kind="summary")
    messages = [SystemMessage("sys"), earlier, UserMessage("older q", kind="history"),
                AssistantMessage("older answer"), UserMessage("NVDA margins?", kind="query"),
                *rounds(4)]
    truncated, _ = truncate_rounds(messages, 1)
    assert truncated[:5] == messages[:5]
    assert truncated[5:] == messages[-2:]
