"""The REPL and saved sessions: saved after every turn, resumed with the earlier turns on
screen and in the next request, ``/clear`` going on in a new session (pipe-input harness)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from dexter.agent.conversation import Turn
from dexter.agent.loop import Agent
from dexter.agent.sessions import SessionStore
from dexter.testing.fakellm import FakeLLM, Reply
from dexter.testing.scripted import ScriptedModel
from tests.repl_harness import make_settings, running_repl

LONG = " ".join(["NVIDIA's fiscal 2025 revenue was $130.5B, up 114% year over year."] * 6)
SUMMARY = "FY2025 revenue was $130.5B, up 114%."


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("DEXTER_MODEL", raising=False)
    monkeypatch.chdir(tmp_path)


def user_and_assistant(fake: FakeLLM, index: int) -> list[tuple[str, str]]:
    body = fake.requests_for("openai")[index].body
    return [(m["role"], m["content"]) for m in body["messages"] if m["role"] != "system"]


async def test_every_turn_is_saved_and_a_resumed_session_goes_on(
        fake_llm: FakeLLM, tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    store = SessionStore(settings.home_path)
    fake_llm.enqueue(Reply(text="Revenue was $130.5B."), Reply(text="Margins were 75%."))
    async with running_repl(settings) as d:
        await d.ask("NVDA revenue?", "Revenue was $130.5B.")
        session_id = d.repl.core.record.id
        # saved as soon as the turn ended, before the session closes
        assert store.open(session_id).conversation.turns[0].answer == "Revenue was $130.5B."
    assert "Resumed session" not in d.text

    async with running_repl(settings, resume=store.open(session_id)) as d:
        await d.wait_for(f"Resumed session {session_id} · 1 earlier turn · gpt-4.1")
        assert "1. NVDA revenue?" in d.text and "Revenue was $130.5B." in d.text
        await d.ask("and margins?", "Margins were 75%.")

    assert user_and_assistant(fake_llm, 1) == [
        ("user", "NVDA revenue?"), ("assistant", "Revenue was $130.5B."),
        ("user", "and margins?")]
    saved = store.open(session_id)
    assert [t.query for t in saved.conversation.turns] == ["NVDA revenue?", "and margins?"]
    assert len(saved.scratchpads) == 2 and all(Path(p).is_file() for p in saved.scratchpads)
    assert [r.id for r in store.listing().records] == [session_id]


async def test_clear_goes_on_in_a_new_session_and_keeps_the_old_one(
        fake_llm: FakeLLM, tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    store = SessionStore(settings.home_path)
    fake_llm.enqueue(Reply(text="First answer."), Reply(text="Second answer."))
    async with running_repl(settings) as d:
        await d.ask("first question", "First answer.")
        first_id = d.repl.core.record.id
        d.line("/clear")
        await d.wait_for("Started a fresh conversation")
        await d.ask("second question", "Second answer.")
        second_id = d.repl.core.record.id
    assert first_id != second_id
    assert [t.query for t in store.open(first_id).conversation.turns] == ["first question"]
    assert [t.query for t in store.open(second_id).conversation.turns] == ["second question"]


async def test_a_summary_written_later_is_saved_and_resumed(
        fake_llm: FakeLLM, tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    store = SessionStore(settings.home_path)
    fake_llm.enqueue(Reply(text=LONG))
    async with running_repl(settings) as d:
        session = d.repl.session
        assert session is not None
        session.agent = Agent(dataclasses.replace(
            session.agent.setup, fast_model=ScriptedModel([SUMMARY], model="fast")))
        await d.ask("NVDA revenue?", "114% year over year")
        session_id = d.repl.core.record.id

        def saved_summary() -> bool:
            turns = json.loads(store.path_for(session_id).read_text())["conversation"]["turns"]
            return bool(turns[0]["summary"] == SUMMARY)

        await d.wait_until(saved_summary, "the summary is saved")
    resumed = store.open(session_id)
    assert resumed.conversation.turns[0].summary == SUMMARY


async def test_a_session_that_cannot_be_saved_is_a_note(
        fake_llm: FakeLLM, tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    settings.home_path.mkdir(parents=True, exist_ok=True)
    (settings.home_path / "sessions").write_text("not a folder")
    fake_llm.enqueue(Reply(text="Still answered."))
    async with running_repl(settings) as d:
        await d.ask("a question", "Still answered.")
        await d.wait_for("Could not save session")
        assert d.repl.busy is False
    assert "Traceback" not in d.text


async def test_a_resumed_interrupted_turn_keeps_its_transcript(
        fake_llm: FakeLLM, tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    store = SessionStore(settings.home_path)
    record = store.new("gpt-4.1")
    record.conversation.add(Turn("write a long report", "", "interrupted"))
    store.save(record)
    fake_llm.enqueue(Reply(text="Short answer."))
    async with running_repl(settings, resume=store.open(record.id)) as d:
        await d.wait_for("(interrupted)")
        await d.ask("short version", "Short answer.")
    assert user_and_assistant(fake_llm, 0)[-1] == ("user", "short version")
    assert ("user", "write a long report") in user_and_assistant(fake_llm, 0)
