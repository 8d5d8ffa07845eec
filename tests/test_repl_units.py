"""The REPL's pure parts: history bounds, commands, dialogs, saved settings, context, cost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from dexter.agent.conversation import (
    INTERRUPTED_ANSWER,
    SHORTENED_MARK,
    Conversation,
    Turn,
    shorten,
)
from dexter.agent.executor import ApprovalRequest
from dexter.config import ContextSettings, Settings, load_settings
from dexter.events import Done
from dexter.messages import (
    AssistantMessage,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from dexter.permissions.base import PermissionDecision
from dexter.providers.registry import ModelInfo
from dexter.repl.commands import CommandRegistry, split_command
from dexter.repl.completion import ReplCompleter
from dexter.repl.context_report import context_report
from dexter.repl.cost import CostTracker, format_cost, model_price, stats_with_cost, usage_cost
from dexter.repl.dialog_host import _apply_line
from dexter.repl.dialogs import (
    ABORT,
    ApprovalDialog,
    Option,
    QuestionDialog,
    QuestionError,
    SelectDialog,
)
from dexter.repl.handlers import build_registry
from dexter.repl.settings_store import (
    SettingsStoreError,
    apply_saved_choices,
    load_saved_model,
    save_setting,
    settings_file,
)
from dexter.repl.view import ToolbarState, toolbar_text

# -- history -----------------------------------------------------------------------------------


def turns(n: int, answer: str = "answer") -> list[Turn]:
    return [Turn(f"q{i}", f"{answer} {i}", "ok") for i in range(1, n + 1)]


def test_history_keeps_the_last_ten_turns_and_full_answers_for_the_last_three() -> None:
    history = Conversation()
    long_answer = "word " * 100  # 500 characters
    for turn in turns(11, long_answer):
        history.add(turn)
    messages = history.messages()
    queries = [m.content for m in messages if isinstance(m, UserMessage)]
    # q1 fell out of the window: it is folded into one line of the first message
    assert queries[0].startswith("Earlier in this session:\n- q1 → word word")
    assert queries[1:] == [f"q{i}" for i in range(2, 12)]
    messages = messages[1:]
    answers = [m.text for m in messages if isinstance(m, AssistantMessage)]
    assert all(a.endswith(SHORTENED_MARK) for a in answers[:7])
    assert not any(a.endswith(SHORTENED_MARK) for a in answers[7:])
    assert all(m.kind == "history" for m in messages if isinstance(m, UserMessage))


@pytest.mark.parametrize(("length", "cut"), [(300, False), (301, True)])
def test_shorten_boundary(length: int, cut: bool) -> None:
    text = "x" * length
    assert shorten(text, 300).endswith(SHORTENED_MARK) is cut
    assert shorten(text, 300).startswith("x" * 150)


def test_shorten_cuts_at_a_word_boundary() -> None:
    assert shorten("alpha beta gamma delta", 12) == "alpha beta" + SHORTENED_MARK


def test_error_turns_are_not_sent_and_an_interrupted_turn_keeps_its_transcript_while_latest() -> None:
    history = Conversation()
    call = ToolCall("c1", "calculator", {"expression": "1+1"})
    transcript = (UserMessage("long report", kind="query"), AssistantMessage(tool_calls=(call,)),
                  ToolResultMessage("c1", "calculator", "[Interrupted: no result]", True))
    history.add(Turn("first", "first answer", "ok"))
    history.add(Turn("broken", "", "error"))
    history.add(Turn("long report", "", "interrupted", transcript=transcript))
    messages = history.messages()
    assert [type(m).__name__ for m in messages] == [
        "UserMessage", "AssistantMessage", "UserMessage", "AssistantMessage", "ToolResultMessage"]
    assert messages[2] == UserMessage("long report", kind="history")
    history.add(Turn("next", "next answer", "ok"))
    collapsed = history.messages()
    assert AssistantMessage(INTERRUPTED_ANSWER) in collapsed
    assert not any(isinstance(m, ToolResultMessage) for m in collapsed)


def test_clear_and_compact_replace_the_history() -> None:
    history = Conversation()
    for turn in turns(2):
        history.add(turn)
    history.replace_with_summary("they asked about NVDA")
    messages = history.messages()
    assert len(messages) == 1 and messages[0].kind == "summary"  # type: ignore[union-attr]
    assert "they asked about NVDA" in messages[0].content  # type: ignore[union-attr]
    history.clear()
    assert history.messages() == []


# -- commands and completion --------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ("/model gpt-4.1", ("model", "gpt-4.1")),
    ("  /HELP  ", ("help", "")),
    ("/rules add keep it short", ("rules", "add keep it short")),
    ("/usr/bin/python is slow", None),
    ("/", None),
    ("what is /model", None),
])
def test_split_command(text: str, expected: tuple[str, str] | None) -> None:
    assert split_command(text) == expected


@pytest.mark.parametrize(("typed", "nearest"), [
    ("hepl", "help"), ("modle", "model"), ("comp", "compact"), ("scratch", "scratchpad"),
    ("xyzzy", None),
])
def test_unknown_commands_suggest_the_nearest(typed: str, nearest: str | None) -> None:
    assert build_registry().suggest(typed) == nearest


def test_registry_has_every_command_of_the_issue() -> None:
    names = set(build_registry().names())
    assert names == {"help", "model", "models", "search", "clear", "history", "context",
                     "compact", "memory", "rules", "scratchpad", "skills", "cost", "budget", "mcp",
                     "export", "chart", "exit"}
    read_only = {c.name for c in build_registry() if c.read_only}
    assert {"help", "context", "cost", "scratchpad", "history", "skills", "chart"} <= read_only
    assert not read_only & {"model", "clear", "compact", "rules", "search", "export"}


def complete(text: str, tmp: Path | None = None) -> list[str]:
    registry = build_registry()
    completer = ReplCompleter(registry, lambda cmd: ["gpt-4.1", "gpt-4.1-mini", "o3"]
                              if cmd == "model" else [])
    return [c.text for c in completer.get_completions(Document(text), CompleteEvent())]


def test_completion_of_commands_model_names_and_paths(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    assert complete("/mo") == ["/model", "/models"]
    assert complete("/model gpt-4.1-") == ["gpt-4.1-mini"]
    assert complete("/rules e") == ["edit"]
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "nvda.csv").write_text("x")
    monkeypatch.chdir(tmp_path)
    assert complete("summarize ./data/nv") == ["da.csv"]
    assert complete("just words") == []


def test_registry_is_ordered_and_replaceable() -> None:
    registry = CommandRegistry()
    registry.add(next(iter(build_registry())))
    assert len(registry) == 1 and registry.get("/HELP") is not None


# -- dialogs --------------------------------------------------------------------------------------


def request(proposed: str | None = "Bash(git log:*)", cacheable: bool = True,
            key: str = "bash:git log") -> ApprovalRequest:
    decision = PermissionDecision("ask", "Runs a shell command.", session_key=key,
                                  proposed_rule=proposed, cacheable=cacheable)
    return ApprovalRequest("bash", {"command": "git log -5"}, decision, "call_1")


def test_approval_offers_always_only_with_a_rule_and_session_only_when_cacheable() -> None:
    full = [o.value for o in ApprovalDialog(request()).options]
    assert full == ["allow-once", "allow-session", "allow-always", "deny"]
    assert [o.value for o in ApprovalDialog(request(proposed=None)).options] == [
        "allow-once", "allow-session", "deny"]
    assert [o.value for o in ApprovalDialog(request(None, cacheable=False)).options] == [
        "allow-once", "deny"]


@pytest.mark.parametrize(("keys", "choice"), [
    (["enter"], "allow-once"), (["2"], "allow-session"), (["3"], "allow-always"),
    (["4"], "deny"), (["escape"], "deny"), (["down", "down", "enter"], "allow-always"),
    (["up", "enter"], "deny"), (["9", "enter"], "allow-once"), (["abort"], "deny"),
])
def test_approval_keys(keys: list[str], choice: str) -> None:
    dialog = ApprovalDialog(request())
    for key in keys:
        dialog.handle(key)
    assert dialog.done and dialog.choice == choice
    assert (dialog.result == ABORT) is (keys == ["abort"])


def test_select_dialog_text_option() -> None:
    dialog = SelectDialog[str]([], [Option("a", "a"), Option("Type…", "type")], escape_value=None,
                               text_option=1)
    dialog.handle("2")
    assert dialog.text_mode and not dialog.done
    dialog.handle("text-enter", "   ")
    assert not dialog.done  # blank text is not an answer
    dialog.handle("text-escape")
    assert not dialog.text_mode
    dialog.handle("2")
    dialog.handle("text-enter", "llama3.2")
    assert dialog.done and dialog.result == "llama3.2"


def test_select_dialog_numbers_past_nine_move_the_cursor_and_enter_confirms() -> None:
    options = [Option(str(n), n) for n in range(1, 13)]
    dialog = SelectDialog[int]([], options, escape_value=None)
    dialog.handle("1")
    assert not dialog.done and dialog.cursor == 0
    dialog.handle("2")
    assert dialog.cursor == 11          # "12"
    dialog.handle("3")
    assert dialog.cursor == 2           # "123" is too big: starts again at "3"
    dialog.handle("down")
    dialog.handle("1")
    dialog.handle("0")
    assert dialog.cursor == 9           # a key in between started a fresh number
    dialog.handle("enter")
    assert dialog.done and dialog.result == 10


@pytest.mark.parametrize(("count", "done"), [(9, True), (10, False)])
def test_select_dialog_digit_picks_at_once_up_to_nine_options(count: int, done: bool) -> None:
    dialog = SelectDialog[int]([], [Option(str(n), n) for n in range(1, count + 1)],
                               escape_value=None)
    dialog.handle("3")
    assert dialog.done is done and dialog.cursor == 2


def test_select_dialog_whole_number_typed_as_a_line_picks() -> None:
    dialog = SelectDialog[int]([], [Option(str(n), n) for n in range(1, 13)], escape_value=None,
                               selected=4)
    assert dialog.cursor == 4
    dialog.handle("11")
    assert dialog.done and dialog.result == 11


@pytest.mark.parametrize("line", ["deny", "cancel", "yes please", "0", "5", "1 2"])
def test_a_typed_line_that_is_not_an_answer_changes_nothing(line: str) -> None:
    dialog = ApprovalDialog(request())
    assert _apply_line(dialog, line) is False
    assert not dialog.done  # never falls through to the highlighted "Yes"


@pytest.mark.parametrize(("line", "choice"), [("", "allow-once"), ("4", "deny"), ("n", "deny"),
                                              ("esc", "deny"), (" 2 ", "allow-session")])
def test_a_typed_answer_line_decides_the_approval(line: str, choice: str) -> None:
    dialog = ApprovalDialog(request())
    assert _apply_line(dialog, line.strip()) is True
    assert dialog.done and dialog.choice == choice


def test_a_typed_number_past_nine_picks_that_option() -> None:
    dialog = SelectDialog[int]([], [Option(str(n), n) for n in range(1, 17)], escape_value=None)
    assert _apply_line(dialog, "7") and dialog.done and dialog.result == 7
    dialog = SelectDialog[int]([], [Option(str(n), n) for n in range(1, 17)], escape_value=None)
    assert _apply_line(dialog, "16") and dialog.result == 16
    dialog = SelectDialog[int]([], [Option(str(n), n) for n in range(1, 17)], escape_value=None)
    assert not _apply_line(dialog, "17") and not dialog.done


QUESTIONS = [
    {"question": "Which period?", "header": "Period",
     "options": [{"label": "Annual"}, {"label": "Quarterly"}]},
    {"question": "Which metrics?", "header": "Metrics", "multi_select": True,
     "options": [{"label": "Revenue"}, {"label": "EPS"}]},
]


def test_questions_single_multi_and_other() -> None:
    dialog = QuestionDialog(QUESTIONS)
    dialog.handle("1")
    assert dialog.index == 1 and not dialog.done
    dialog.handle("down")
    dialog.handle("space")          # EPS
    dialog.handle("3")              # Other
    dialog.handle("text-enter", "FCF margin")
    assert not dialog.done          # multi-select waits for enter
    dialog.handle("enter")
    assert dialog.result == {"declined": False, "answers": [
        {"header": "Period", "question": "Which period?", "selected": ["Annual"]},
        {"header": "Metrics", "question": "Which metrics?", "selected": ["EPS"],
         "other_text": "FCF margin"}]}


def test_questions_can_be_answered_out_of_order_and_declined() -> None:
    dialog = QuestionDialog(QUESTIONS)
    dialog.handle("right")
    dialog.handle("enter")          # multi with nothing picked: picks the cursor's option
    assert dialog.index == 0
    dialog.handle("2")
    assert dialog.result["answers"][0]["selected"] == ["Quarterly"]  # type: ignore[index]
    assert dialog.result["answers"][1]["selected"] == ["Revenue"]  # type: ignore[index]
    declined = QuestionDialog(QUESTIONS)
    declined.handle("escape")
    assert declined.result == {"answers": [], "declined": True}


def test_questions_without_text_are_refused() -> None:
    with pytest.raises(QuestionError, match="Question 1 has no text"):
        QuestionDialog([{"question": " ", "options": []}])
    with pytest.raises(QuestionError, match="at least one question"):
        QuestionDialog([])


# -- saved settings -------------------------------------------------------------------------------


def test_saving_keeps_the_permission_rules(tmp_path: Path) -> None:
    settings = Settings(home=str(tmp_path))
    path = settings_file(settings)
    path.write_text(json.dumps({"permissions": {"allow": ["Bash(git log:*)"]}}))
    save_setting(path, "model", "claude-sonnet-4-6")
    assert json.loads(path.read_text()) == {"permissions": {"allow": ["Bash(git log:*)"]},
                                            "model": "claude-sonnet-4-6"}
    assert load_saved_model(settings) == "claude-sonnet-4-6"


def test_broken_settings_file_is_reported_not_clobbered(tmp_path: Path) -> None:
    settings = Settings(home=str(tmp_path))
    path = settings_file(settings)
    path.write_text("{not json")
    with pytest.raises(SettingsStoreError, match="not valid JSON"):
        save_setting(path, "model", "gpt-4.1")
    assert path.read_text() == "{not json"
    assert load_saved_model(settings) is None


@pytest.mark.parametrize(("flag", "env", "expected"), [
    (None, {}, "saved-model"),
    ("flag-model", {}, "default"),
    (None, {"DEXTER_MODEL": "env-model"}, "default"),
])
def test_saved_model_applies_unless_chosen_for_this_run(
        tmp_path: Path, flag: str | None, env: dict[str, str], expected: str) -> None:
    settings = Settings(home=str(tmp_path), model="default")
    save_setting(settings_file(settings), "model", "saved-model")
    save_setting(settings_file(settings), "web_search_provider", "tavily")
    apply_saved_choices(settings, model_flag=flag, env=env)
    assert settings.model == expected
    assert settings.tools.web_search_provider == "tavily"


# -- context report -------------------------------------------------------------------------------


def view_of(chars: int) -> list[SystemMessage | UserMessage]:
    return [SystemMessage("s"), UserMessage("x" * chars)]


def test_context_report_acts_only_above_the_threshold() -> None:
    cfg = ContextSettings()
    view = view_of(4000)
    from dexter.context.tokens import estimate_message_tokens

    used = estimate_message_tokens(view)
    at = context_report(view, cfg=cfg, threshold=used, window=used * 2, compactable=set(),
                        memory_on=True, active_results=5)
    assert at.action == "nothing" and at.percent == 100
    over = context_report(view, cfg=cfg, threshold=used - 1, window=used * 2, compactable=set(),
                          memory_on=True, active_results=5)
    assert over.action == "flush+compact"
    few = context_report(view, cfg=cfg, threshold=used - 1, window=used * 2, compactable=set(),
                         memory_on=False, active_results=cfg.min_tool_results_for_compaction - 1)
    assert few.action == "truncate" and "last 5 rounds" in few.detail
    off = context_report(view, cfg=ContextSettings(enabled=False), threshold=1, window=2,
                         compactable=set(), memory_on=False, active_results=0)
    assert off.action == "off"


def test_context_report_names_microcompact_first() -> None:
    cfg = ContextSettings()
    messages: list[object] = [SystemMessage("s"), UserMessage("q")]
    for i in range(cfg.microcompact_count_trigger + 1):
        call = ToolCall(f"c{i}", "web_search", {"query": f"q{i}"})
        messages += [AssistantMessage(tool_calls=(call,)),
                     ToolResultMessage(f"c{i}", "web_search", "result " * 50)]
    report = context_report(messages, cfg=cfg, threshold=10**6, window=2 * 10**6,  # type: ignore[arg-type]
                            compactable={"web_search"}, memory_on=False, active_results=9)
    assert report.action == "microcompact"
    assert "clear 5 old tool result(s)" in report.detail


# -- cost and toolbar -----------------------------------------------------------------------------

PRICED = ModelInfo("m", "M", 1000, 2.0, 8.0)


def test_cached_prompt_tokens_cost_what_the_provider_bills_for_them() -> None:
    gpt5 = model_price("gpt-5", load_settings(env={}))
    sonnet = model_price("claude-sonnet-4-6", load_settings(env={}))
    assert gpt5 is not None and sonnet is not None
    # 1M prompt tokens of which 900k were served from OpenAI's cache at a tenth of $1.25:
    # 100k x 1.25 + 900k x 0.125 = $0.2375, where the full price would be $1.25
    usage = {"input_tokens": 1_000_000, "output_tokens": 0, "cache_read_tokens": 900_000}
    assert usage_cost(usage, gpt5) == pytest.approx(0.2375)
    # Anthropic: 200k fresh, 300k written to the cache (x1.25), 500k read from it (x0.1),
    # at $3: 0.6 + 1.125 + 0.15 = $1.875
    usage = {"input_tokens": 1_000_000, "output_tokens": 0, "cache_read_tokens": 500_000,
             "cache_write_tokens": 300_000}
    assert usage_cost(usage, sonnet) == pytest.approx(1.875)
    # a model without known cache prices pays the input price for every prompt token
    assert usage_cost({"input_tokens": 1_000_000, "output_tokens": 0,
                       "cache_read_tokens": 900_000}, PRICED) == pytest.approx(2.0)
    # counts that do not add up never make a negative or inflated cost
    assert usage_cost({"input_tokens": 10, "output_tokens": 0, "cache_read_tokens": 50,
                       "cache_write_tokens": 50}, sonnet) == pytest.approx(10 * 0.1 * 3 / 1e6)


def test_cost_of_a_run_and_the_closing_line() -> None:
    usage = {"input_tokens": 1_000_000, "output_tokens": 250_000}
    assert usage_cost(usage, PRICED) == pytest.approx(4.0)
    assert usage_cost(usage, ModelInfo("m", "M", 1000)) is None
    done = Done(answer="a", total_time_ms=1500, token_usage=usage)
    assert stats_with_cost(done, PRICED).endswith("· ~$4.00")
    assert "$" not in stats_with_cost(done, None)


@pytest.mark.parametrize(("usd", "text"), [(0.0099, "$0.0099"), (0.01, "$0.01"), (1234.5, "$1,234.50")])
def test_format_cost(usd: float, text: str) -> None:
    assert format_cost(usd) == text


def test_cost_tracker_names_unpriced_models() -> None:
    tracker = CostTracker()
    tracker.add("gpt-4.1", {"input_tokens": 10, "output_tokens": 0}, PRICED)
    tracker.add("mystery", {"input_tokens": 10, "output_tokens": 5}, None)
    assert tracker.runs == 2 and tracker.input_tokens == 20
    assert tracker.unpriced_models == {"mystery"}


def test_toolbar_hints() -> None:
    idle = toolbar_text(ToolbarState("gpt-4.1", 12_000, 95_000, busy=False, queued=0))
    assert idle == " gpt-4.1 · 12k/95k tokens · / for commands · alt+enter for a new line"
    busy = toolbar_text(ToolbarState("gpt-4.1", 0, 95_000, busy=True, queued=2))
    assert busy.endswith("esc to interrupt · 2 messages queued")
    one = toolbar_text(ToolbarState("gpt-4.1", 0, 0, busy=True, queued=1))
    assert one == " gpt-4.1 · esc to interrupt · 1 message queued"


@pytest.mark.parametrize(("width", "expected"), [
    (69, " gpt-4.1 · 12k/95k tokens · / for commands · alt+enter for a new line"),
    (68, " gpt-4.1 · 12k/95k tokens"),
    (20, " gpt-4.1"),
])
def test_toolbar_drops_hints_then_tokens_when_narrow(width: int, expected: str) -> None:
    state = ToolbarState("gpt-4.1", 12_000, 95_000, busy=False, queued=0)
    assert toolbar_text(state, width) == expected


def test_busy_toolbar_keeps_the_interrupt_hint_when_narrow() -> None:
    state = ToolbarState("gpt-4.1", 12_000, 95_000, busy=True, queued=2)
    assert toolbar_text(state, 40) == " gpt-4.1 · esc to interrupt · 2 messages queued"


def test_loop_reports_of_cancelled_futures_are_dropped_others_pass_through() -> None:
    import asyncio

    from dexter.repl.terminal import quiet_cancelled

    seen: list[str] = []
    handler = quiet_cancelled(lambda _loop, context: seen.append(context["message"]))
    loop = asyncio.new_event_loop()
    try:
        handler(loop, {"message": "cancelled gather", "exception": asyncio.CancelledError()})
        handler(loop, {"message": "real bug", "exception": ValueError("x")})
    finally:
        loop.close()
    assert seen == ["real bug"]


def test_run_part_takes_what_the_run_added() -> None:
    from dexter.agent.conversation import run_part

    system = SystemMessage("s")
    history = [UserMessage("old q", kind="history"), AssistantMessage("old a")]
    query = UserMessage("new\n\nquestion", kind="query")
    call = AssistantMessage(tool_calls=(ToolCall("c1", "calculator", {}),))
    assert run_part([system, *history, query, call], history, "new\n\nquestion") == (query, call)
    # a run cancelled before it began leaves the previous run's transcript: not this run's
    assert run_part([system, *history, UserMessage("older")], history, "new\n\nquestion") == ()
    summary = UserMessage("q\n\nSummary: ...", kind="summary")
    assert run_part([system, summary, call], history, "q") == (summary, call)
    # a compaction in the run dropped the history: the query, then the summary after it
    compacted = [system, UserMessage("q", kind="query"), summary, call]
    assert run_part(compacted, history, "q") == tuple(compacted[1:])
    # another run's query before a summary is not this run's
    assert run_part([system, UserMessage("other", kind="query"), summary], history, "q") == ()


# -- how the REPL's modules depend on each other ---------------------------------------------------


def test_repl_like_lists_exactly_what_the_handlers_use() -> None:
    import ast

    from dexter.repl import handlers
    from dexter.repl.protocol import Output, ReplLike

    tree = ast.parse(Path(handlers.__file__).read_text(encoding="utf-8"))
    used = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name) and node.value.id == "repl"}
    declared = {name for cls in (Output, ReplLike) for name in vars(cls)
                if not name.startswith("_")} | set(ReplLike.__annotations__)
    assert used == declared


def test_the_handlers_and_the_session_load_without_the_app_the_terminal_or_the_cli() -> None:
    import subprocess
    import sys

    code = ("import sys, dexter.repl.session, dexter.repl.handlers\n"
            "print(sorted({m.split('.')[0] if m.startswith('prompt_toolkit') else m\n"
            "              for m in sys.modules if m == 'dexter.repl.app'\n"
            "              or m.startswith(('prompt_toolkit', 'dexter.cli'))}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
