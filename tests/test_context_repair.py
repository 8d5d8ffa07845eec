"""Transcript repair: every call paired with exactly one result."""

from __future__ import annotations

from dexter.context.repair import INTERRUPTED_RESULT, repair_transcript
from dexter.messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from tests.context_builders import call, head, results_of, tool_round


def test_well_formed_transcript_is_returned_as_the_same_list() -> None:
    messages = head() + tool_round("c1") + tool_round("c2") + [AssistantMessage("done")]
    repaired, report = repair_transcript(messages)
    assert repaired is messages
    assert not report.changed


def test_call_without_result_gets_an_interrupted_error_after_the_other_results() -> None:
    assistant = AssistantMessage(tool_calls=(call("a"), call("b"), call("c")))
    note = UserMessage("usage note", kind="note")
    messages = [*head(), assistant, ToolResultMessage("a", "get_financials", "A"), note]
    repaired, report = repair_transcript(messages)
    assert report.interrupted == 2
    assert [type(m).__name__ for m in repaired[2:]] == [
        "AssistantMessage", "ToolResultMessage", "ToolResultMessage", "ToolResultMessage",
        "UserMessage",
    ]
    synthetic = results_of(repaired)[1:]
    assert [r.tool_call_id for r in synthetic] == ["b", "c"]
    assert all(r.content == INTERRUPTED_RESULT and r.is_error for r in synthetic)
    assert synthetic[0].name == "get_financials"


def test_trailing_calls_after_a_cancel_are_closed() -> None:
    messages = [*head(), AssistantMessage(tool_calls=(call("x"),))]
    repaired, report = repair_transcript(messages)
    assert report.interrupted == 1
    assert results_of(repaired)[0].tool_call_id == "x"


def test_result_whose_call_is_gone_is_dropped() -> None:
    messages = [*head(), ToolResultMessage("ghost", "web_search", "?"), *tool_round("c1"),
                ToolResultMessage("other", "web_search", "?")]
    repaired, report = repair_transcript(messages)
    assert report.orphans_dropped == 2
    assert [r.tool_call_id for r in results_of(repaired)] == ["c1"]


def test_duplicate_results_keep_the_first() -> None:
    messages = [*head(), *tool_round("c1", "first"), ToolResultMessage("c1", "get_financials", "second")]
    repaired, report = repair_transcript(messages)
    assert report.duplicates_dropped == 1
    assert [r.content for r in results_of(repaired)] == ["first"]


def test_result_after_a_user_note_is_moved_before_it() -> None:
    assistant = AssistantMessage(tool_calls=(ToolCall("a", "web_search", {"query": "q"}),))
    note = UserMessage("typed while waiting", kind="queued")
    result = ToolResultMessage("a", "web_search", "R")
    repaired, report = repair_transcript([*head(), assistant, note, result])
    assert report.changed
    assert repaired[2:] == [assistant, result, note]
