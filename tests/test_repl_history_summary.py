"""Older turns become real summaries, written in the background by the fast model.

Unit tests drive ``Conversation`` with a ``ScriptedModel`` as the fast model; the REPL
tests drive the whole session through the pipe-input harness against the fake LLM.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterable
from pathlib import Path

import pytest

from dexter.agent.conversation import (
    FOLD_HEADER,
    SHORTENED_MARK,
    SUMMARY_MARK,
    SUMMARY_MAX_TOKENS,
    SUMMARY_UNAVAILABLE,
    Conversation,
    Turn,
    fold_earlier,
)
from dexter.agent.loop import Agent
from dexter.context.tokens import estimate_text_tokens
from dexter.messages import AssistantMessage, UserMessage
from dexter.providers.base import ModelRequest, ModelResponse
from dexter.providers.errors import ProviderError
from dexter.testing.fakellm import FakeLLM, Reply
from dexter.testing.scripted import Reply as ScriptedReply
from dexter.testing.scripted import ScriptedModel
from tests.repl_harness import Driver, make_settings, running_repl

LONG = " ".join(["NVIDIA's fiscal 2025 revenue was $130.5B, up 114% year over year."] * 6)
assert len(LONG) > 300
SUMMARY_1 = "FY2025 revenue was $130.5B, up 114%; data center was $115.2B."


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("DEXTER_MODEL", raising=False)
    monkeypatch.chdir(tmp_path)


class GatedModel(ScriptedModel):
    """A fast model that answers only once ``gate`` is set (a slow summary)."""

    def __init__(self, replies: Iterable[ScriptedReply] = ()) -> None:
        super().__init__(replies, model="fast-gated")
        self.gate = asyncio.Event()
        self.started = asyncio.Event()
        self.finished = False
        self.cancelled = False

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.started.set()
        try:
            await self.gate.wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        response = await super().complete(request)
        self.finished = True
        return response


def long_turns(n: int) -> list[Turn]:
    return [Turn(f"q{i}", f"answer {i}: {LONG}", "ok") for i in range(1, n + 1)]


def summarizing_first_of(n: int, fast: ScriptedModel,
                         history: Conversation | None = None,
                         ) -> tuple[Conversation, list[Turn], asyncio.Task[None]]:
    """A history of ``n`` long turns whose first turn is being summarized by ``fast``."""
    history = Conversation() if history is None else history
    turns = long_turns(n)
    for turn in turns:
        history.add(turn)
    task = history.summarize_later(turns[0], fast)
    assert task is not None
    return history, turns, task


def answer_of(history: Conversation, query: str) -> str:
    """The assistant message that follows ``query`` in the next request's history."""
    messages = history.messages()
    for i, message in enumerate(messages):
        if isinstance(message, UserMessage) and message.content == query:
            follower = messages[i + 1]
            assert isinstance(follower, AssistantMessage)
            return follower.text
    raise AssertionError(f"{query!r} is not in the history")


# -- summaries of turns in the window ------------------------------------------------------------


async def test_a_ready_summary_replaces_the_cut_answer_of_an_older_turn() -> None:
    fast = ScriptedModel([SUMMARY_1])
    history, turns, task = summarizing_first_of(4, fast)
    await task
    assert turns[0].summary == SUMMARY_1
    assert answer_of(history, "q1") == SUMMARY_MARK + SUMMARY_1
    # the newest three keep their whole answer whatever happens
    assert answer_of(history, "q2") == turns[1].answer
    request = fast.requests[0]
    assert request.tools == () and request.max_tokens == SUMMARY_MAX_TOKENS
    assert "every figure" in request.system
    sent = request.messages[0]
    assert isinstance(sent, UserMessage)
    assert "q1" in sent.content and "$130.5B, up 114%" in sent.content


async def test_the_cut_answer_stands_in_until_the_summary_is_ready() -> None:
    fast = GatedModel([SUMMARY_1])
    history, _turns, task = summarizing_first_of(4, fast)
    await fast.started.wait()
    cut = answer_of(history, "q1")
    assert cut.endswith(SHORTENED_MARK) and len(cut) < 320
    assert history.pending_summaries == 1
    fast.gate.set()
    await task
    assert answer_of(history, "q1") == SUMMARY_MARK + SUMMARY_1
    assert history.pending_summaries == 0


@pytest.mark.parametrize("failure", [
    ProviderError("auth", "The OpenAI key was rejected."),
    RuntimeError("the fast model's client broke"),
    "   ",  # an empty reply is no summary either
])
async def test_a_failing_summary_keeps_the_cut_answer_and_marks_the_turn(
        failure: ScriptedReply) -> None:
    history, turns, task = summarizing_first_of(4, ScriptedModel([failure]))
    await task  # never raises
    assert turns[0].summary is None and turns[0].summary_failed
    assert answer_of(history, "q1").endswith(SHORTENED_MARK)


async def test_a_summary_slower_than_the_timeout_is_given_up() -> None:
    fast = GatedModel([SUMMARY_1])
    _history, turns, task = summarizing_first_of(1, fast, Conversation(summary_timeout=0.05))
    await task
    assert turns[0].summary_failed and fast.cancelled


@pytest.mark.parametrize(("length", "summarized"), [(300, False), (301, True)])
async def test_only_answers_longer_than_the_cut_are_summarized(length: int, summarized: bool) -> None:
    history = Conversation()
    turn = Turn("q", "x" * length, "ok")
    history.add(turn)
    fast = ScriptedModel(["short"])
    task = history.summarize_later(turn, fast)
    assert (task is not None) is summarized
    if task is not None:
        await task
    assert len(fast.requests) == (1 if summarized else 0)


def test_interrupted_failed_and_modelless_turns_are_not_summarized() -> None:
    history = Conversation()
    fast = ScriptedModel()
    assert history.summarize_later(Turn("q", "", "interrupted"), fast) is None
    assert history.summarize_later(Turn("q", LONG, "error"), fast) is None
    assert history.summarize_later(Turn("q", LONG, "ok"), None) is None
    assert fast.requests == []


# -- turns beyond the window ---------------------------------------------------------------------


async def test_turns_beyond_the_window_are_folded_with_their_summaries() -> None:
    history, turns, task = summarizing_first_of(12, ScriptedModel([SUMMARY_1]))
    await task
    turns[1].summary_failed = True
    first = history.messages()[0]
    assert isinstance(first, UserMessage) and first.kind == "history"
    lines = first.content.splitlines()
    assert lines[0] == FOLD_HEADER
    assert lines[1] == f"- q1 → {SUMMARY_1}"
    assert lines[2].startswith("- q2 → answer 2: NVIDIA") and lines[2].endswith(SHORTENED_MARK)
    assert len(lines) == 3
    # the window itself is the last ten turns
    queries = [m.content for m in history.messages()[1:] if isinstance(m, UserMessage)]
    assert queries == [f"q{i}" for i in range(3, 13)]


def test_ten_turns_need_no_fold() -> None:
    history = Conversation()
    for turn in long_turns(10):
        history.add(turn)
    assert not any(FOLD_HEADER in m.content for m in history.messages()
                   if isinstance(m, UserMessage))


@pytest.mark.parametrize(("slack", "kept"), [(0, ["- old", "- new"]), (-1, ["- new"])])
def test_the_fold_drops_the_oldest_line_when_one_token_over_budget(
        slack: int, kept: list[str]) -> None:
    lines = ["- old", "- new"]
    exact = estimate_text_tokens(FOLD_HEADER + "\n" + "\n".join(lines))
    folded = fold_earlier(lines, exact + slack)
    assert folded == FOLD_HEADER + "\n" + "\n".join(kept)
    assert folded is not None and estimate_text_tokens(folded) <= exact + slack


def test_the_session_fold_stays_within_its_budget_oldest_dropped_first() -> None:
    history = Conversation(fold_budget=1_500)
    for turn in long_turns(60):  # 50 folded lines of ~100 tokens each
        history.add(turn)
    folded = history.messages()[0]
    assert isinstance(folded, UserMessage) and folded.content.startswith(FOLD_HEADER)
    assert estimate_text_tokens(folded.content) <= 1_500
    queries = [line.split(" → ")[0] for line in folded.content.splitlines()[1:]]
    assert queries[-1] == "- q50"  # the newest folded turn is kept ...
    assert "- q1" not in queries  # ... the oldest went first
    assert queries == sorted(queries, key=lambda q: int(q[3:]))


def test_nothing_is_folded_when_no_line_fits() -> None:
    assert fold_earlier(["- " + "word " * 400], 50) is None
    assert fold_earlier([], 1_500) is None


def test_an_interrupted_turn_beyond_the_window_folds_to_one_line() -> None:
    history = Conversation(max_turns=1)
    history.add(Turn("a long report\non AAPL", "", "interrupted"))
    history.add(Turn("next", "fine", "ok"))
    folded = history.messages()[0]
    assert isinstance(folded, UserMessage)
    assert folded.content == (f"{FOLD_HEADER}\n- a long report on AAPL → "
                              "(interrupted before it was answered)")


# -- cancelling ----------------------------------------------------------------------------------


@pytest.mark.parametrize("forget", ["clear", "compact"])
async def test_clear_and_compact_cancel_pending_summaries(forget: str) -> None:
    fast = GatedModel([SUMMARY_1])
    history, (turn,), task = summarizing_first_of(1, fast)
    await fast.started.wait()
    if forget == "clear":
        history.clear()
    else:
        history.replace_with_summary("they asked about NVDA")
    with pytest.raises(asyncio.CancelledError):
        await task
    assert fast.cancelled and history.pending_summaries == 0
    assert turn.summary is None


# -- the REPL ------------------------------------------------------------------------------------


def use_fast_model(d: Driver, fast: ScriptedModel) -> None:
    session = d.repl.session
    assert session is not None
    # the setup is frozen: the test swaps in an agent whose fast model it controls
    session.agent = Agent(dataclasses.replace(session.agent.setup, fast_model=fast))


async def test_a_slow_summary_does_not_delay_the_next_answer(
        fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.enqueue(Reply(text=LONG), Reply(text="Margins were 75%."))
    fast = GatedModel([SUMMARY_1])
    async with running_repl(make_settings(tmp_path)) as d:
        use_fast_model(d, fast)
        await d.ask("NVDA revenue?", "114% year over year")
        await asyncio.wait_for(fast.started.wait(), 5)
        assert d.repl.conversation.pending_summaries == 1
        await d.ask("and margins?", "Margins were 75%.")
        # the second run asked the model and answered while the summary still waited
        assert len(fake_llm.requests_for("openai")) == 2 and not fast.finished
        fast.gate.set()
        first = d.repl.conversation.turns[0]
        await d.wait_until(lambda: first.summary is not None, "the summary is ready")
        d.line("/history")
        await d.wait_for(SUMMARY_1)
    assert first.summary == SUMMARY_1


async def test_a_failing_summary_shows_no_error_only_a_note_in_history(
        fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.enqueue(Reply(text=LONG))
    fast = ScriptedModel([ProviderError("auth", "The key for the fast model was rejected.")])
    async with running_repl(make_settings(tmp_path)) as d:
        use_fast_model(d, fast)
        await d.ask("NVDA revenue?", "114% year over year")
        turn = d.repl.conversation.turns[0]
        await d.wait_until(lambda: turn.summary_failed, "the summary failed")
        d.line("/history")
        await d.wait_for(SUMMARY_UNAVAILABLE)
    assert "Error" not in d.text and "rejected" not in d.text
    assert d.text.count(SUMMARY_UNAVAILABLE) == 1


async def test_clear_and_exit_cancel_pending_summaries_in_the_repl(
        fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.enqueue(Reply(text=LONG), Reply(text=LONG))
    at_clear, at_exit = GatedModel([SUMMARY_1]), GatedModel([SUMMARY_1])
    async with running_repl(make_settings(tmp_path)) as d:
        use_fast_model(d, at_clear)
        await d.ask("NVDA revenue?", "114% year over year")
        await asyncio.wait_for(at_clear.started.wait(), 5)
        d.line("/clear")
        await d.wait_until(lambda: at_clear.cancelled, "/clear cancelled the summary")
        assert d.repl.conversation.pending_summaries == 0
        use_fast_model(d, at_exit)
        await d.ask("NVDA revenue again?", "114% year over year")
        await asyncio.wait_for(at_exit.started.wait(), 5)
        assert await d.quit() == 0
    assert at_exit.cancelled and not at_exit.finished


async def test_the_fifth_request_holds_the_summary_of_the_first_turn(
        fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.enqueue(Reply(text=LONG), Reply(text=SUMMARY_1),
                     *(Reply(text=f"Short answer {n}.") for n in range(2, 6)))
    async with running_repl(make_settings(tmp_path)) as d:
        session = d.repl.session
        assert session is not None
        fast_name = session.agent.setup.fast_model.model
        await d.ask("What was NVDA's FY2025 revenue?", "114% year over year")
        first = d.repl.conversation.turns[0]
        await d.wait_until(lambda: first.summary is not None, "turn 1 is summarized")
        for n in range(2, 6):
            await d.ask(f"question {n}", f"Short answer {n}.")
    requests = fake_llm.requests_for("openai")
    assert len(requests) == 6
    summary_request = requests[1].body
    assert summary_request["model"] == fast_name and not summary_request.get("tools")
    turn5 = requests[5].body["messages"]
    assert turn5[-1] == {"role": "user", "content": "question 5"}
    assert {"role": "assistant", "content": SUMMARY_MARK + SUMMARY_1} in turn5
    assert all(LONG not in str(m.get("content")) for m in turn5)
    # in turn 4 the first answer was still among the three newest: whole
    assert any(m.get("content") == LONG for m in requests[4].body["messages"])
    fake_llm.assert_no_violations()
