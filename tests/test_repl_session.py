"""The REPL driven through prompt-toolkit's pipe input, against the fake LLM server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from dexter.repl.session import INTERRUPTED_LINE
from dexter.repl.settings_store import load_saved_model
from dexter.testing.fakellm import FakeLLM, Reply, Stall, ToolCallSpec, Usage
from dexter.tools.calculator import CalculatorTool
from dexter.tools.files import ReadFileTool
from tests.cli_helpers import HOLD
from tests.repl_harness import (
    CTRL_C,
    CTRL_D,
    DOWN,
    ENTER,
    ESC,
    AskTool,
    WriteNoteTool,
    make_settings,
    request_texts,
    running_repl,
)


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("DEXTER_MODEL", raising=False)
    monkeypatch.chdir(tmp_path)


async def reached(stall: Stall) -> None:
    assert await asyncio.to_thread(stall.reached.wait, 10), "the stream never stalled"


def user_contents(fake: FakeLLM, index: int) -> list[str]:
    """The user messages of request ``index`` (OpenAI wire format)."""
    body = fake.requests_for("openai")[index].body
    return [m["content"] for m in body["messages"] if m["role"] == "user"]


async def test_question_gets_an_answer_a_closing_line_and_a_log_entry(
        fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.enqueue(Reply(text="Revenue was **130.5B**.", usage=Usage(1_000_000, 100_000)))
    async with running_repl(make_settings(tmp_path)) as d:
        d.line("What was NVDA revenue?")
        text = await d.wait_for("130.5B")
        await d.wait_idle()
        assert await d.quit() == 0
    assert "❯ What was NVDA revenue?" in text
    # gpt-4.1 costs $2 in / $8 out per Mtok: 1M in + 0.1M out = $2.80
    assert "1m in / 100k out" in d.text and "~$2.80" in d.text
    log = (tmp_path / ".dexter" / "history" / "sessions.jsonl").read_text().splitlines()
    entry = json.loads(log[0])
    assert entry["query"] == "What was NVDA revenue?"
    assert entry["answer"] == "Revenue was **130.5B**."
    assert entry["timestamp"]
    assert (tmp_path / ".dexter" / "history" / "input").read_text().count("What was NVDA") == 1


async def test_slash_commands_run_and_unknown_ones_suggest_the_nearest(
        fake_llm: FakeLLM, tmp_path: Path) -> None:
    async with running_repl(make_settings(tmp_path)) as d:
        d.line("/help")
        text = await d.wait_for("Keys")
        assert "/model [NAME]" in text and "/context" in text and "esc, ctrl+c" in text
        d.line("/hepl")
        text = await d.wait_for("Unknown command /hepl. Did you mean /help?")
        d.line("/zzzzzz")
        await d.wait_for("Unknown command /zzzzzz. Type /help to see the commands.")
    assert fake_llm.requests == []


async def test_follow_up_typed_during_a_run_starts_the_next_turn_and_its_answer_is_shown(
        fake_llm: FakeLLM, tmp_path: Path) -> None:
    stall = Stall(after_chunks=2, reply=Reply(text="First answer about AAPL."))
    fake_llm.enqueue(stall, Reply(text="Second answer about MSFT."))
    async with running_repl(make_settings(tmp_path)) as d:
        d.line("Tell me about AAPL")
        await reached(stall)
        d.line("and MSFT too")
        await d.wait_for("❯ and MSFT too (queued)")
        assert len(d.repl.queue) == 1
        stall.gate.set()
        await d.wait_for("Second answer about MSFT.")
        await d.wait_idle()
    text = d.text
    assert text.index("First answer about AAPL.") < text.index("❯ and MSFT too\n")
    assert text.index("❯ and MSFT too\n") < text.index("Second answer about MSFT.")
    second = user_contents(fake_llm, 1)
    assert second == ["Tell me about AAPL", "and MSFT too"]
    assert "First answer about AAPL." in request_texts(fake_llm)[1]


async def test_follow_up_typed_before_a_tool_round_is_drained_into_the_run(
        fake_llm: FakeLLM, tmp_path: Path) -> None:
    stall = Stall(after_chunks=1, reply=Reply(
        tool_calls=[ToolCallSpec("calculator", {"expression": "2+2"})]))
    fake_llm.enqueue(stall, Reply(text="2+2 is 4, and in euros too."))
    async with running_repl(make_settings(tmp_path)) as d:
        d.line("add two and two")
        await reached(stall)
        d.line("also in euros")
        await d.wait_for("(queued)")
        stall.gate.set()
        await d.wait_for("2+2 is 4, and in euros too.")
        await d.wait_idle()
    assert "Picked up 1 queued message: also in euros" in d.text
    assert len(fake_llm.requests_for("openai")) == 2
    assert user_contents(fake_llm, 1)[-1] == "also in euros"
    turn = d.repl.conversation.turns[-1]
    assert turn.query == "add two and two\n\nalso in euros"


async def test_a_follow_up_echoed_between_two_calls_of_one_tool_starts_a_new_row(
        fake_llm: FakeLLM, tmp_path: Path) -> None:
    stall = Stall(after_chunks=1, reply=Reply(
        tool_calls=[ToolCallSpec("calculator", {"expression": "3*3"})]))
    fake_llm.enqueue(Reply(tool_calls=[ToolCallSpec("calculator", {"expression": "2+2"})]),
                     stall, Reply(text="Both done."))
    async with running_repl(make_settings(tmp_path)) as d:
        d.line("two sums")
        await reached(stall)
        d.line("and a third")
        await d.wait_for("(queued)")
        stall.gate.set()
        await d.ask("", "Both done.")
    after_echo = d.text.split("❯ and a third (queued)")[1]
    # the second call is not a bare detail line under a header above the echo
    assert "⏺ Calculator (expression=3*3)" in after_echo


async def test_the_toolbar_estimate_after_an_interrupt_counts_the_tool_definitions(
        fake_llm: FakeLLM, tmp_path: Path) -> None:
    stall = Stall(after_chunks=2, reply=Reply(text="This answer never finishes, sorry."),
                  timeout=HOLD)
    fake_llm.enqueue(stall)
    try:
        async with running_repl(make_settings(tmp_path)) as d:
            before = d.repl.context_tokens
            d.line("write a long report")
            await reached(stall)
            d.type(ESC)
            await d.wait_for(INTERRUPTED_LINE)
            await d.wait_idle()
            # the question was added, nothing was taken away
            assert d.repl.context_tokens > before
            assert d.repl.context_tokens == d.repl.agent.context_tokens()
    finally:
        stall.gate.set()


@pytest.mark.parametrize("key", [ESC, CTRL_C], ids=["esc", "ctrl-c"])
async def test_interrupt_mid_stream_returns_the_prompt_and_the_next_question_works(
        fake_llm: FakeLLM, tmp_path: Path, key: str) -> None:
    stall = Stall(after_chunks=2, reply=Reply(text="This answer never finishes, sorry."),
                  timeout=HOLD)
    fake_llm.enqueue(stall, Reply(text="Here is the short version."))
    try:
        async with running_repl(make_settings(tmp_path)) as d:
            d.line("write a long report")
            await reached(stall)
            d.type(key)
            await d.wait_for(INTERRUPTED_LINE)
            await d.wait_idle()
            await d.ask("just the short version", "Here is the short version.")
    finally:
        stall.gate.set()
    assert "This answer never finishes" not in d.text.split(INTERRUPTED_LINE)[1]
    # the interrupted question stays in the conversation the model sees
    assert user_contents(fake_llm, 1) == ["write a long report", "just the short version"]
    endings = sorted(json.loads(pad.read_text().splitlines()[-1])["status"]
                     for pad in (tmp_path / "pads").glob("*.jsonl"))
    assert endings == ["interrupted", "ok"]


async def test_messages_queued_before_an_interrupt_come_back_in_the_prompt(
        fake_llm: FakeLLM, tmp_path: Path) -> None:
    stall = Stall(after_chunks=2, reply=Reply(text="This answer never finishes, sorry."),
                  timeout=HOLD)
    fake_llm.enqueue(stall, Reply(text="AMD answer."))
    try:
        async with running_repl(make_settings(tmp_path)) as d:
            d.line("write a long report")
            await reached(stall)
            d.line("and also AMD")
            await d.wait_for("(queued)")
            d.type(ESC)
            await d.wait_for("Your queued messages are back in the prompt.")
            await d.wait_until(lambda: d.repl._prompt is not None and d.repl._prompt.app.is_running
                               and d.repl._prompt.default_buffer.text == "and also AMD",
                               "the queued text is in the prompt")
            assert len(d.repl.queue) == 0
            d.type(ENTER)
            await d.wait_for("AMD answer.")
            await d.wait_idle()
    finally:
        stall.gate.set()
    assert user_contents(fake_llm, 1) == ["write a long report", "and also AMD"]


async def test_interrupted_tool_call_is_repaired_before_the_next_request(
        fake_llm: FakeLLM, tmp_path: Path) -> None:
    note = WriteNoteTool()
    fake_llm.enqueue(Reply(tool_calls=[ToolCallSpec("write_note", {"text": "draft"})]),
                     Reply(text="Fine, no note."))
    async with running_repl(make_settings(tmp_path), tools=[note]) as d:
        d.line("save a note")
        await d.wait_dialog()
        d.type(CTRL_C)  # Ctrl-C in the dialog aborts the whole run
        await d.wait_for(INTERRUPTED_LINE)
        await d.wait_idle()
        d.line("never mind")
        await d.wait_for("Fine, no note.")
    assert note.written == []
    fake_llm.assert_no_violations()  # the unanswered call got a result before being resent
    assert "[Interrupted: no result]" in request_texts(fake_llm)[1]


@pytest.mark.parametrize(("keys", "choice", "runs"), [
    (ENTER, "allow-once", True),
    ("2", "allow-session", True),
    (DOWN + DOWN + ENTER, "allow-always", True),
    ("4", "deny", False),
    (ESC, "deny", False),
], ids=["enter-once", "2-session", "arrows-always", "4-deny", "esc-deny"])
async def test_approval_prompt_answered_each_way(
        fake_llm: FakeLLM, tmp_path: Path, keys: str, choice: str, runs: bool) -> None:
    note = WriteNoteTool()
    fake_llm.enqueue(Reply(tool_calls=[ToolCallSpec("write_note", {"text": "buy low"})]),
                     Reply(tool_calls=[ToolCallSpec("write_note", {"text": "sell high"})]),
                     Reply(text="Notes handled."))
    settings = make_settings(tmp_path)
    async with running_repl(settings, tools=[note]) as d:
        d.line("save two notes")
        await d.wait_dialog()
        d.type(keys)
        if choice in ("allow-once", "deny"):  # asked again for the second call
            await d.wait_dialog(count=2)
            d.type(keys)
        await d.wait_for("Notes handled.")
        await d.wait_idle()
    assert d.repl.dialogs_shown == (2 if choice in ("allow-once", "deny") else 1)
    assert note.written == (["buy low", "sell high"] if runs else [])
    saved = settings.home_path / "settings.json"
    if choice == "allow-always":
        assert json.loads(saved.read_text())["permissions"]["allow"] == ["write_note"]
    else:
        assert not saved.exists()
    if not runs:
        assert "Denied" in d.text
        assert "did not approve" in request_texts(fake_llm)[1]


async def test_clear_really_clears_the_history_sent_to_the_model(
        fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.enqueue(Reply(text="Apple makes iPhones."), Reply(text="Microsoft makes Windows."),
                     Reply(text="A fresh start."))
    async with running_repl(make_settings(tmp_path)) as d:
        await d.ask("what does apple make", "Apple makes iPhones.")
        await d.ask("and microsoft", "Microsoft makes Windows.")
        d.line("/clear")
        await d.wait_for("Started a fresh conversation")
        await d.ask("hello again", "A fresh start.")
    second, third = request_texts(fake_llm)[1:]
    # multi-turn history: the second question carries the first turn
    assert "what does apple make" in second and "Apple makes iPhones." in second
    assert user_contents(fake_llm, 2) == ["hello again"]
    assert "apple" not in third.lower() and "microsoft" not in third.lower()


async def test_answer_a_question_prompt_with_numbers_space_and_other(
        fake_llm: FakeLLM, tmp_path: Path) -> None:
    ask = AskTool()
    questions = [
        {"question": "Which period?", "header": "Period", "multi_select": False,
         "options": [{"label": "Annual", "description": "fiscal years"},
                     {"label": "Quarterly", "description": "last 8 quarters"}]},
        {"question": "Which metrics?", "header": "Metrics", "multi_select": True,
         "options": [{"label": "Revenue"}, {"label": "EPS"}, {"label": "FCF"}]},
    ]
    fake_llm.enqueue(Reply(tool_calls=[ToolCallSpec("ask_user_question", {"questions": questions})]),
                     Reply(text="Got your preferences."))
    async with running_repl(make_settings(tmp_path), tools=[ask]) as d:
        d.line("compare margins")
        await d.wait_dialog()
        d.type("2")                # Quarterly, moves on to the metrics question
        d.type(" ")                # toggle Revenue (cursor on the first option)
        d.type("3")                # toggle FCF
        d.type("4")                # Other: opens the text field
        await asyncio.sleep(0.2)
        d.type("gross margin" + ENTER)
        await asyncio.sleep(0.2)
        d.type(ENTER)              # confirms the multi-select question
        await d.wait_for("Got your preferences.")
        await d.wait_idle()
    assert ask.replies == [{"answers": [
        {"header": "Period", "question": "Which period?", "selected": ["Quarterly"]},
        {"header": "Metrics", "question": "Which metrics?", "selected": ["Revenue", "FCF"],
         "other_text": "gross margin"},
    ], "declined": False}]
    assert "Which metrics? → Revenue, FCF, Other: gross margin" in d.text
    assert "⏺ Ask" not in d.text  # the Answered block stands for the tool's row


async def test_question_prompt_escape_declines(fake_llm: FakeLLM, tmp_path: Path) -> None:
    ask = AskTool()
    questions = [{"question": "Which period?", "header": "Period",
                  "options": [{"label": "Annual"}, {"label": "Quarterly"}]}]
    fake_llm.enqueue(Reply(tool_calls=[ToolCallSpec("ask_user_question", {"questions": questions})]),
                     Reply(text="I will assume annual."))
    async with running_repl(make_settings(tmp_path), tools=[ask]) as d:
        d.line("compare margins")
        await d.wait_dialog()
        d.type(ESC)
        await d.wait_for("I will assume annual.")
    assert ask.replies == [{"answers": [], "declined": True}]


async def test_only_read_only_commands_run_while_busy(fake_llm: FakeLLM, tmp_path: Path) -> None:
    stall = Stall(after_chunks=2, reply=Reply(text="Done at last."))
    fake_llm.enqueue(stall)
    try:
        async with running_repl(make_settings(tmp_path)) as d:
            d.line("slow question")
            await reached(stall)
            d.line("/clear")
            await d.wait_for("/clear: busy, try after this run")
            d.line("/context")
            await d.wait_for("Next stage:")
            d.line("/scratchpad")
            await d.wait_for("This run's scratchpad:")
            stall.gate.set()
            await d.wait_for("Done at last.")
            await d.wait_idle()
    finally:
        stall.gate.set()
    assert "Started a fresh conversation" not in d.text


@pytest.mark.parametrize("keys", [CTRL_D, "exit" + ENTER, "quit" + ENTER, "/exit" + ENTER,
                                  CTRL_C + CTRL_C],
                         ids=["ctrl-d", "exit", "quit", "/exit", "ctrl-c-twice"])
async def test_ways_to_quit(fake_llm: FakeLLM, tmp_path: Path, keys: str) -> None:
    async with running_repl(make_settings(tmp_path)) as d:
        d.type(keys)
        assert await asyncio.wait_for(d.task, 5) == 0


async def test_one_ctrl_c_on_an_empty_prompt_does_not_quit(
        fake_llm: FakeLLM, tmp_path: Path) -> None:
    async with running_repl(make_settings(tmp_path)) as d:
        d.type(CTRL_C)
        await asyncio.sleep(0.3)
        assert not d.task.done()
        assert "press ctrl+c again to exit" in d.repl._toolbar()


async def test_model_command_switches_saves_and_the_next_session_starts_with_it(
        fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.enqueue(Reply(text="answer from mini"))
    settings = make_settings(tmp_path)
    async with running_repl(settings) as d:
        d.line("/model gpt-4.1-mini")
        await d.wait_for("saved for next sessions")
        await d.ask("hi", "answer from mini")
        d.line("/model nosuch:thing")
        await d.wait_for("Unknown provider 'nosuch'")
    assert fake_llm.requests_for("openai")[0].body["model"] == "gpt-4.1-mini"
    assert load_saved_model(make_settings(tmp_path)) == "gpt-4.1-mini"
    assert settings.model == "gpt-4.1-mini"


async def test_model_picker_dialog(fake_llm: FakeLLM, tmp_path: Path) -> None:
    async with running_repl(make_settings(tmp_path)) as d:
        d.line("/model")
        await d.wait_until(lambda: d.repl._prompt is not None and not d.repl._prompt.app.is_running,
                           "the picker replaced the prompt")
        await asyncio.sleep(0.2)
        d.type("1")      # OpenAI
        await asyncio.sleep(0.2)
        d.type("1" + "2" + ENTER)  # more than 9 models: digits move, enter confirms
        await d.wait_for("saved for next sessions")
    assert load_saved_model(make_settings(tmp_path)) == "o3"


async def test_model_picker_starts_on_the_current_provider_and_model(
        fake_llm: FakeLLM, tmp_path: Path) -> None:
    async with running_repl(make_settings(tmp_path, model="gpt-4.1-nano")) as d:
        d.line("/model")
        await d.wait_until(lambda: d.repl._prompt is not None and not d.repl._prompt.app.is_running,
                           "the picker replaced the prompt")
        await asyncio.sleep(0.2)
        d.type(ENTER)    # the cursor starts on OpenAI ✓
        await asyncio.sleep(0.2)
        d.type(ENTER)    # ... and on GPT-4.1 nano ✓
        await d.wait_for("saved for next sessions")
    assert load_saved_model(make_settings(tmp_path)) == "gpt-4.1-nano"


async def test_missing_key_still_opens_with_guidance(
        fake_llm: FakeLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    async with running_repl(make_settings(tmp_path, model="claude-sonnet-4-6")) as d:
        text = await d.wait_for("ANTHROPIC_API_KEY")
        assert "ANTHROPIC_API_KEY=your-key-here" in text and "/model" in text
        d.line("hello?")
        await d.wait_for("No API key", count=2)
        d.line("/model gpt-4.1")
        await d.wait_for("saved for next sessions")
    assert fake_llm.requests == []


async def test_compact_replaces_the_history_with_a_summary(
        fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.enqueue(Reply(text="NVDA revenue was 130.5B in FY2025."),
                     Reply(text="<analysis>notes</analysis><summary>User studies NVDA; "
                                "FY2025 revenue 130.5B.</summary>"),
                     Reply(text="Continuing."))
    async with running_repl(make_settings(tmp_path)) as d:
        await d.ask("nvda revenue", "130.5B in FY2025.")
        d.line("/compact")
        await d.wait_for("Conversation compacted")
        await d.ask("go on", "Continuing.")
    last = user_contents(fake_llm, 2)
    assert last[0].startswith("Summary of the earlier conversation")
    assert "FY2025 revenue 130.5B" in last[0]
    assert "nvda revenue" not in last  # the turn itself is gone, only its summary remains


async def test_rules_add_reaches_the_system_prompt(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.enqueue(Reply(text="Rule noted."))
    settings = make_settings(tmp_path)
    async with running_repl(settings) as d:
        d.line("/rules")
        await d.wait_for("No research rules yet")
        d.line("/rules add Always cite the 10-K page")
        await d.wait_for("Added to")
        d.line("/rules")
        await d.wait_for("- Always cite the 10-K page")
        d.line("question")
        await d.wait_for("Rule noted.")
    system = fake_llm.requests_for("openai")[0].body["messages"][0]["content"]
    assert "Always cite the 10-K page" in system
    assert (settings.home_path / "RULES.md").read_text() == "- Always cite the 10-K page\n"


async def test_cost_and_history_after_runs(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.enqueue(Reply(text="Answer one.", usage=Usage(500_000, 0)),
                     Reply(text="Answer two.", usage=Usage(500_000, 250_000)))
    async with running_repl(make_settings(tmp_path)) as d:
        # Each question once the run before has answered: typed while it runs, the second
        # would join the first run as a queued message and there would be one run, not two.
        await d.ask("first question", "Answer one.")
        await d.ask("second question", "Answer two.")
        d.line("/cost")
        text = await d.wait_for("Estimated cost")
        d.line("/history")
        await d.wait_for("2. second question")
    # 1M in x $2 + 0.25M out x $8 = $4.00
    assert "2 runs · 1m in / 250k out" in text and "~$4.00" in text


async def test_cost_counts_cached_prompt_tokens_at_the_cached_price(
        fake_llm: FakeLLM, tmp_path: Path) -> None:
    # the OpenAI wire reports 800k of the 1M prompt tokens as served from the cache
    fake_llm.enqueue(Reply(text="one", usage=Usage(1_000_000, 0, cached_tokens=800_000)))
    async with running_repl(make_settings(tmp_path)) as d:
        d.line("first question")
        await d.wait_for("✻")  # the run's closing line
        d.line("/cost")
        text = await d.wait_for("Estimated cost")
    # gpt-4.1 at $2 a million, cached input at a quarter: 200k x $2 + 800k x $0.50 = $0.80
    assert "~$0.80" in text


async def test_cost_of_anthropic_cache_reads_and_writes(fake_llm: FakeLLM,
                                                       tmp_path: Path) -> None:
    # Anthropic reports 200k fresh prompt tokens, 500k read from the cache, 300k written
    fake_llm.enqueue(Reply(text="one", usage=Usage(200_000, 0, cached_tokens=500_000,
                                                   written_tokens=300_000)))
    async with running_repl(make_settings(tmp_path, model="claude-sonnet-4-6")) as d:
        d.line("first question")
        await d.wait_for("✻")  # the run's closing line
        d.line("/cost")
        text = await d.wait_for("Estimated cost")
    # $3 a million: 200k x $3 + 300k x $3.75 + 500k x $0.30 = $1.875
    assert "1m in" in text and "~$1.88" in text


async def test_dumb_terminal_prints_plain_lines(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.enqueue(Reply(text="Plain answer.", tool_calls=[]))
    async with running_repl(make_settings(tmp_path), fancy=False) as d:
        await d.ask("plain please", "Plain answer.")
    assert "> Query: plain please" in d.text
    assert "✻" in d.text


async def test_tool_rows_and_calculator_round_trip(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.enqueue(Reply(text="Computing.",
                           tool_calls=[ToolCallSpec("calculator", {"expression": "6*7"})]),
                     Reply(text="It is 42."))
    async with running_repl(make_settings(tmp_path), tools=[CalculatorTool()]) as d:
        await d.ask("six times seven", "It is 42.")
    assert "Calculator" in d.text and "= 42" in d.text


async def test_dumb_terminal_asks_for_approval_with_a_typed_number(
        fake_llm: FakeLLM, tmp_path: Path) -> None:
    note = WriteNoteTool()
    fake_llm.enqueue(Reply(tool_calls=[ToolCallSpec("write_note", {"text": "a"})]),
                     Reply(tool_calls=[ToolCallSpec("write_note", {"text": "b"})]),
                     Reply(text="Both written."))
    async with running_repl(make_settings(tmp_path), tools=[note], fancy=False) as d:
        d.line("two notes")
        await d.wait_for("Do you want to allow this?")
        d.line("2")  # for this session: the second call is not asked
        await d.wait_for("Both written.")
        await d.wait_idle()
    assert note.written == ["a", "b"]
    assert d.text.count("Do you want to allow this?") == 1
    assert "Permission required" in d.text and "4. No" in d.text


async def test_search_models_and_memory_commands(fake_llm: FakeLLM, tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    async with running_repl(settings) as d:
        d.line("/search tavily")
        await d.wait_for("Web search: tavily first")
        d.line("/search bing")
        await d.wait_for("Unknown search provider 'bing'")
        d.line("/models")
        await d.wait_for("Current model: gpt-4.1")
        d.line("/memory")
        await d.wait_until(lambda: d.text.count("❯ /memory") == 1 and
                           len(d.text.split("❯ /memory")[1].strip()) > 0, "/memory printed")
    saved = json.loads((settings.home_path / "settings.json").read_text())
    assert saved == {"web_search_provider": "tavily"}
    assert settings.tools.web_search_provider == "tavily"
    assert "claude-sonnet-4-6" in d.text and "ANTHROPIC_API_KEY set" in d.text


async def test_memory_command_shows_the_files_and_what_this_session_loaded(
        fake_llm: FakeLLM, tmp_path: Path) -> None:
    settings = make_settings(tmp_path, **{"memory.enabled": True})
    memory = settings.home_path / "memory"
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").write_text("- Holds 200 NVDA shares.\n")
    fake_llm.enqueue(Reply(text="You hold NVDA."))
    async with running_repl(settings) as d:
        d.line("/memory")
        text = await d.wait_for("Loaded into this session:")
        assert "Loaded into this session: MEMORY.md (~" in text
        assert "Memory: available" in text and "MEMORY.md" in text.split("❯ /memory")[1]
        d.line("/memory search NVDA")
        await d.wait_for("Holds 200 NVDA shares.", count=1)
        text = await d.ask("what do I hold?", "You hold NVDA.")
    assert "Memory recalled: MEMORY.md" in text
    system = fake_llm.requests_for("openai")[0].body["messages"][0]["content"]
    assert "Holds 200 NVDA shares." in system


async def test_recalled_memory_stays_frozen_when_the_model_is_switched(
        fake_llm: FakeLLM, tmp_path: Path) -> None:
    settings = make_settings(tmp_path, **{"memory.enabled": True})
    memory = settings.home_path / "memory"
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").write_text("- Holds 200 NVDA shares.\n")
    fake_llm.enqueue(Reply(text="First."), Reply(text="Second."))
    async with running_repl(settings) as d:
        await d.ask("one", "First.")
        (memory / "MEMORY.md").write_text("- Holds 200 NVDA shares.\n- Sold all AMD.\n")
        d.line("/model gpt-4.1-mini")
        await d.wait_for("saved for next sessions")
        await d.ask("two", "Second.")
    first, second = (r.body["messages"][0]["content"] for r in fake_llm.requests_for("openai"))
    assert "Holds 200 NVDA shares." in second
    assert "Sold all AMD." not in second and "Sold all AMD." not in first
    assert d.text.count("Memory recalled: MEMORY.md") == 1


async def test_quitting_while_an_approval_is_open_ends_cleanly(
        fake_llm: FakeLLM, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    note = WriteNoteTool()
    fake_llm.enqueue(Reply(tool_calls=[ToolCallSpec("write_note", {"text": "x"})]))
    async with running_repl(make_settings(tmp_path), tools=[note]) as d:
        d.line("save a note")
        await d.wait_dialog()
        d.repl.request_quit()
        assert await asyncio.wait_for(d.task, 5) == 0
    assert note.written == []
    assert not [r for r in caplog.records if r.levelname == "ERROR"]


async def test_new_lines_with_ctrl_j_and_alt_enter(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.enqueue(Reply(text="Three lines received."))
    async with running_repl(make_settings(tmp_path)) as d:
        d.type("line one\nline two" + ESC + ENTER + "line three")
        await asyncio.sleep(0.3)
        assert not d.repl.busy  # nothing was sent yet
        await d.ask("", "Three lines received.")
    assert user_contents(fake_llm, 0) == ["line one\nline two\nline three"]


async def test_rules_edit_opens_the_editor(fake_llm: FakeLLM, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EDITOR", "sh -c 'echo \"- from the editor\" >> \"$0\"'")
    settings = make_settings(tmp_path)
    async with running_repl(settings) as d:
        d.line("/rules edit")
        await d.wait_for("Rules reloaded")
        d.line("/rules")
        await d.wait_for("- from the editor", count=1)
    assert (settings.home_path / "RULES.md").read_text() == "- from the editor\n"


async def test_the_repl_shows_sources_marks_and_the_check(fake_llm: FakeLLM,
                                                          tmp_path: Path) -> None:
    (tmp_path / "aapl.txt").write_text("(in millions)\nTotal net sales | 391,035 | 383,285\n",
                                       encoding="utf-8")
    invented = "Net sales were $391.0 billion [S1]; Services $96.2 billion [S1]."
    fake_llm.enqueue(Reply(tool_calls=[ToolCallSpec("read_file", {"path": "aapl.txt"})]),
                     Reply(text=invented), Reply(text=invented))
    settings = make_settings(tmp_path, **{"verify.enabled": True})
    async with running_repl(settings, tools=[ReadFileTool()]) as d:
        d.line("Apple sales?")
        await d.wait_for("figures does not check out")
        await d.wait_idle()
        assert await d.quit() == 0
    text = d.text
    assert "⎿  [S1] File: aapl.txt (lines 1-2 of 2)" in text  # the tool row carries the id
    assert "Checking the answer: 1 figure does not check out ($96.2 billion is in none" in text
    assert "$96.2 billion ⚠" in text
    assert "[S1] File: aapl.txt" in text and "read_file:" not in text  # Sources, in words
    assert "⚠ 1 of 2 figures does not check out (marked ⚠): $96.2 billion is in none" in text
    assert len(fake_llm.requests_for("openai")) == 3


async def test_budget_sets_a_session_limit_that_stops_the_next_run(fake_llm: FakeLLM,
                                                                   tmp_path: Path) -> None:
    fake_llm.enqueue(Reply(text="First.", usage=Usage(100_000, 1_000)),
                     Reply(text="Second, never sent."))
    async with running_repl(make_settings(tmp_path)) as d:
        d.line("/budget 0.21")
        await d.wait_for("Budget for this session: $0.21")
        await d.ask("one", "First.")  # $0.208 spent: the next request would pass $0.21
        d.line("two")
        await d.wait_for("past the budget of $0.21")
        await d.wait_idle()
        d.line("/budget")
        await d.wait_for("spent $0.21")
        d.line("/budget lots")
        await d.wait_for("Usage: /budget")
    assert len(fake_llm.requests_for("openai")) == 1
