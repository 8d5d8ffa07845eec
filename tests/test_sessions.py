"""Saved sessions: the conversation's round trip, and the store (atomic, locked, scrubbed,
readable errors)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dexter.agent.conversation import Conversation, Turn
from dexter.agent.sessions import (
    SessionError,
    SessionRecord,
    SessionStore,
    first_question,
    resume_line,
)
from dexter.evidence.ledger import SourceLedger, source_from_dict, source_to_dict
from dexter.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ThinkingBlock,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    message_from_dict,
    message_to_dict,
)

FILING = "https://www.sec.gov/Archives/edgar/data/320193/000032019324000123/aapl-20240928.htm"


def conversation_with_everything() -> Conversation:
    """Turns of every status, a summary, an interrupted transcript, and a ledger."""
    conversation = Conversation()
    conversation.add(Turn("What was Apple's FY2024 revenue?", "Revenue was $391.0 billion [S1].",
                          "ok", "2025-01-02T10:00:00+00:00", summary="Revenue $391.0 billion."))
    conversation.add(Turn("And margins?", "", "error", "2025-01-02T10:01:00+00:00"))
    conversation.add(Turn("Compare with MSFT", "", "interrupted", "2025-01-02T10:02:00+00:00",
                          transcript=(
                              UserMessage("Compare with MSFT"),
                              AssistantMessage("Fetching.", thinking=(ThinkingBlock("hm", "sig"),),
                                               tool_calls=(ToolCall("c1", "get_financials",
                                                                    {"ticker": "MSFT"}),)),
                              ToolResultMessage("c1", "get_financials",
                                                "[Interrupted: no result]", is_error=True))))
    conversation.ledger.add("get_financials", {"ticker": "AAPL"},
                            "Revenue 391,035 (millions) FY2024", urls=[FILING])
    conversation.ledger.add("calculator", {"expression": "391.035/365"}, "1.0713",
                            kind="calculation", expression="$391.035 billion / 365")
    return conversation


def test_a_conversation_comes_back_as_the_model_saw_it() -> None:
    original = conversation_with_everything()
    data = json.loads(json.dumps(original.to_dict()))
    restored = Conversation.from_dict(data)

    assert restored.messages() == original.messages()
    assert restored.to_dict() == original.to_dict()
    assert [t.status for t in restored.turns] == ["ok", "error", "interrupted"]
    assert restored.turns[0].summary == "Revenue $391.0 billion."


def test_the_ledger_keeps_ids_numbers_and_the_next_id() -> None:
    restored = Conversation.from_dict(json.loads(json.dumps(
        conversation_with_everything().to_dict()))).ledger

    source = restored.get("S1")
    assert source is not None and source.url == FILING
    assert source.accession == "0000320193-24-000123"
    assert restored.find(391_034.5, 391_035.5) == "S1"
    calculation = restored.get("S2")
    assert calculation is not None and calculation.kind == "calculation"
    assert [claim.text for claim in calculation.inputs] == ["$391.035 billion", "365"]
    assert restored.add("web_search", {"query": "x"}, "7 things").id == "S3"


def test_a_compacted_conversation_keeps_its_summary() -> None:
    conversation = Conversation()
    conversation.replace_with_summary("Apple: revenue $391.0 billion.")
    restored = Conversation.from_dict(conversation.to_dict())
    assert restored.messages() == conversation.messages()
    first = restored.messages()[0]
    assert isinstance(first, UserMessage) and first.content.endswith("Apple: revenue $391.0 billion.")


def test_grants_and_the_recall_notice_are_not_kept() -> None:
    conversation = conversation_with_everything()
    conversation.grants.add("file:write")
    conversation.recall_reported = True
    restored = Conversation.from_dict(conversation.to_dict())
    assert not restored.grants and not restored.recall_reported


def test_every_message_reads_back() -> None:
    messages: list[Message] = [
        SystemMessage("You are dexter."),
        UserMessage("q", kind="history"),
        AssistantMessage("a", thinking=(ThinkingBlock("", None, "opaque"),),
                         tool_calls=(ToolCall("c", "bash", {}, invalid_arguments="{oops"),)),
        ToolResultMessage("c", "bash", "out"),
    ]
    assert [message_from_dict(message_to_dict(m)) for m in messages] == messages


@pytest.mark.parametrize("data", [
    None, [], {"role": "wizard"}, {"role": "user", "kind": "shout", "content": "x"},
    {"role": "user", "content": 3}, {"role": "assistant", "tool_calls": [{"arguments": []}]},
    {"role": "tool", "content": "x", "is_error": "yes"},
])
def test_a_damaged_message_is_a_value_error(data: object) -> None:
    with pytest.raises(ValueError):
        message_from_dict(data)


@pytest.mark.parametrize("data", [
    {"turns": "nope"}, {"turns": [{"status": "bored"}]}, {"summary": 3},
    {"turns": [{"status": "ok", "query": 1}]}, {"sources": [{"id": "S2", "tool": "x"}]},
    {"sources": [{"tool": "x"}]}, {"sources": [{"id": "S1", "tool": "x", "numbers": ["a"]}]},
])
def test_a_damaged_conversation_is_a_value_error(data: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        Conversation.from_dict(data)


def test_a_source_reads_back() -> None:
    ledger = conversation_with_everything().ledger
    assert [source_from_dict(source_to_dict(s)) for s in ledger] == ledger.sources
    assert SourceLedger.restore(ledger).sources == ledger.sources


# -- the store ------------------------------------------------------------------------------


def saved(store: SessionStore, query: str = "What was Apple's FY2024 revenue?",
          answer: str = "Revenue was $391.0 billion.") -> SessionRecord:
    record = store.new("gpt-4.1")
    record.conversation.add(Turn(query, answer, "ok"))
    assert store.save(record) is None
    return record


def test_a_saved_session_opens_by_id_or_prefix(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    record = saved(store)
    path = tmp_path / "sessions" / f"{record.id}.json"
    assert path.is_file() and oct(path.stat().st_mode & 0o777) == "0o600"

    for prefix in (record.id, record.id[:3], record.id.upper()):
        again = store.open(prefix)
        assert again.id == record.id and again.model == "gpt-4.1" and again.revision == 1
        assert again.conversation.messages() == record.conversation.messages()
        assert first_question(again) == "What was Apple's FY2024 revenue?"
    assert resume_line(again, "gpt-4.1") == f"Resumed session {record.id} · 1 earlier turn · gpt-4.1"


def test_unknown_ambiguous_and_odd_ids_are_clear_errors(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    first = saved(store)
    with pytest.raises(SessionError, match="No session matches 'fffffffff'"):
        store.open("fffffffff")
    with pytest.raises(SessionError, match="is not a session id"):
        store.open("../settings")
    twin = store.new("gpt-4.1")
    twin.id = first.id[:4] + "0000" if first.id[4:] != "0000" else first.id[:4] + "1111"
    twin.conversation.add(Turn("q", "a", "ok"))
    store.save(twin)
    with pytest.raises(SessionError, match="matches 2 sessions"):
        store.open(first.id[:4])


def test_a_session_without_a_turn_is_not_saved(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    assert not store.new("gpt-4.1").worth_saving()
    assert store.listing().records == []


def test_secrets_never_reach_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-test-sessions-0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    record = saved(SessionStore(tmp_path), query=f"is {secret} my key?", answer=f"It is {secret}.")
    text = (tmp_path / "sessions" / f"{record.id}.json").read_text()
    assert secret not in text and "***" in text


def test_a_failed_write_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = SessionStore(tmp_path)
    record = saved(store)
    path = store.path_for(record.id)
    before = path.read_bytes()
    record.conversation.add(Turn("second", "answer", "ok"))

    def full_disk(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(SessionError, match="No space left on device"):
        store.save(record)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left
    assert store.save(record) is None
    assert store.open(record.id).turns == 2


def test_a_session_saved_elsewhere_meanwhile_is_not_overwritten(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    record = saved(store)
    here, there = store.open(record.id), store.open(record.id)
    there.conversation.add(Turn("asked in the other terminal", "yes", "ok"))
    assert store.save(there) is None
    here.conversation.add(Turn("asked here", "no", "ok"))

    notice = store.save(here)

    assert notice is not None and record.id in notice and here.id in notice
    assert here.id != record.id
    assert [t.query for t in store.open(record.id).conversation.turns][-1] == \
        "asked in the other terminal"
    assert [t.query for t in store.open(here.id).conversation.turns][-1] == "asked here"


@pytest.mark.parametrize(("content", "reason"), [
    (b"{not json", "not valid JSON"),
    (b"\xff\xfe", "not UTF-8 text"),
    (b'{"format": "something-else"}', "not a dexter session"),
    (b'{"format": "dexter-session", "version": 99}', "newer dexter"),
    (b'{"format": "dexter-session", "version": 1, "id": "abc", "conversation": {"turns": 3}}',
     "must be lists"),
])
def test_unreadable_files_are_skipped_with_a_reason(tmp_path: Path, content: bytes,
                                                    reason: str) -> None:
    store = SessionStore(tmp_path)
    good = saved(store)
    (tmp_path / "sessions" / "abc.json").write_bytes(content)

    listing = store.listing()

    assert [r.id for r in listing.records] == [good.id]
    assert len(listing.skipped) == 1 and reason in listing.skipped[0].message()
    with pytest.raises(SessionError, match=reason):
        store.open("abc")


def test_the_listing_is_newest_first(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    older, newer = saved(store, "first session"), saved(store, "second session")
    assert [r.id for r in store.listing().records] == [newer.id, older.id]
    older.conversation.add(Turn("back to the first", "ok", "ok"))
    store.save(older)
    assert [r.id for r in store.listing().records] == [older.id, newer.id]
    latest, skipped = store.latest()
    assert latest is not None and latest.id == older.id and skipped == []
    assert store.listing(limit=1).total == 2
