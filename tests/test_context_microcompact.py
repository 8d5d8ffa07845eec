"""Microcompact: old re-fetchable results become placeholders with a retrieval clue."""

from __future__ import annotations

from pathlib import Path

from dexter.config import ContextSettings
from dexter.context.microcompact import (
    CLEARED_PREFIX,
    DEFAULT_COMPACTABLE_TOOLS,
    compactable_tools,
    microcompact,
)
from dexter.context.results import persist_result
from dexter.context.tokens import estimate_text_tokens
from dexter.messages import AssistantMessage, Message, ToolResultMessage
from tests.context_builders import call, head, results_of, rounds, tool_round

CFG = ContextSettings()


def _cleared(messages: list[Message]) -> list[str]:
    return [r.tool_call_id for r in results_of(messages) if r.content.startswith(CLEARED_PREFIX)]


def test_eight_compactable_results_stay() -> None:
    messages = head() + rounds(8)
    out, report = microcompact(messages, CFG)
    assert out is messages
    assert report is None


def test_nine_compactable_results_clear_all_but_the_four_newest() -> None:
    messages = head() + rounds(9)
    out, report = microcompact(messages, CFG)
    assert report is not None
    assert report.trigger == "count"
    assert report.cleared == 5
    assert report.tool_call_ids == ("c1", "c2", "c3", "c4", "c5")
    assert _cleared(out) == ["c1", "c2", "c3", "c4", "c5"]
    assert [r.content for r in results_of(out)[5:]] == ["revenue 26.97B"] * 4


def test_token_trigger_boundary_80000_vs_80001() -> None:
    quarter = "x" * 64_000  # exactly 16,000 estimated tokens
    assert estimate_text_tokens(quarter) == 16_000
    at_limit = head() + [m for n in range(5) for m in tool_round(f"t{n}", quarter)]
    out, report = microcompact(at_limit, CFG)
    assert (out, report) == (at_limit, None)

    over = [*at_limit[:-1], ToolResultMessage("t4", "get_financials", quarter + "x")]
    out, report = microcompact(over, CFG)
    assert report is not None
    assert (report.trigger, report.cleared, report.tool_call_ids) == ("tokens", 1, ("t0",))
    assert report.tokens_saved > 15_900


def test_error_results_are_never_cleared_and_do_not_count() -> None:
    errors = [m for n in range(3) for m in tool_round(f"e{n}", "Error: 429", is_error=True)]
    messages = head() + errors + rounds(8)
    out, report = microcompact(messages, CFG)
    assert (out, report) == (messages, None)

    messages = head() + errors + rounds(9)
    out, report = microcompact(messages, CFG)
    assert report is not None and report.cleared == 5
    assert [r.content for r in results_of(out)[:3]] == ["Error: 429"] * 3


def test_write_tools_and_user_answers_are_not_compactable() -> None:
    messages = head()
    for n in range(6):
        messages += tool_round(f"w{n}", "wrote file", tool="write_file", path=f"f{n}.md")
        messages += tool_round(f"a{n}", "user said yes", tool="ask_user_question", question="ok?")
    assert microcompact(messages, CFG) == (messages, None)


def test_already_cleared_results_do_not_count_again() -> None:
    out, _ = microcompact(head() + rounds(9), CFG)
    again, report = microcompact(out, CFG)
    assert again is out
    assert report is None


def test_results_the_model_has_not_seen_yet_are_never_cleared() -> None:
    # One round of six parallel calls after four older results: the count trigger fires
    # (10 > 8), but the six new results are the latest round, so only the old ones go.
    calls = tuple(call(f"n{k}") for k in range(6))
    latest = [AssistantMessage(tool_calls=calls),
              *(ToolResultMessage(c.id, c.name, f"fresh {k}") for k, c in enumerate(calls))]
    out, report = microcompact(head() + rounds(4) + latest, CFG)
    assert report is not None and report.trigger == "count"
    assert report.tool_call_ids == ("c1", "c2", "c3", "c4")
    assert [r.content for r in results_of(out)[4:]] == [f"fresh {k}" for k in range(6)]

    seen_round = [*latest, AssistantMessage(text="thinking it over")]
    out, report = microcompact(head() + rounds(4) + seen_round, CFG)
    assert report is not None and report.cleared == 6
    assert _cleared(out)[-2:] == ["n0", "n1"]


def test_placeholder_keeps_pairing_and_carries_a_retrieval_clue() -> None:
    messages = head()
    messages += tool_round("q", "data", tool="get_financials", query="NVDA quarterly revenue")
    messages += tool_round("p", "text", tool="read_file", path="reports/nvda.md")
    messages += tool_round("u", "page", tool="web_fetch", url="https://example.com/a b")
    messages += tool_round("s", "rows", tool="stock_screener", criteria="pe < 15", limit=5)
    messages += rounds(5, prefix="z")
    out, _ = microcompact(messages, CFG)
    cleared = {r.tool_call_id: r for r in results_of(out) if r.content.startswith(CLEARED_PREFIX)}
    assert cleared["q"].content.startswith(
        '[Old tool result content cleared] tool=get_financials query="NVDA quarterly revenue"')
    assert "tool=read_file path=reports/nvda.md" in cleared["p"].content
    assert 'url="https://example.com/a b"' in cleared["u"].content
    assert 'criteria="pe < 15"' in cleared["s"].content
    assert (cleared["q"].role, cleared["q"].name, cleared["q"].is_error) == (
        "tool", "get_financials", False)


def test_placeholder_of_a_persisted_result_points_at_the_saved_file(tmp_path: Path) -> None:
    preview, info = persist_result("y" * 60_000, "big", 2_000, tmp_path)
    messages = head() + tool_round("big", preview, tool="web_fetch", url="https://x.test")
    messages += rounds(8)
    out, _ = microcompact(messages, CFG)
    first = results_of(out)[0]
    assert first.content.startswith(CLEARED_PREFIX)
    assert f"read_file path={info.path}" in first.content


def test_caller_decides_what_is_compactable() -> None:
    messages = head() + rounds(9, tool="x_search")
    assert microcompact(messages, CFG) == (messages, None)
    _, by_set = microcompact(messages, CFG, compactable_tools(["x_search"]))
    _, by_predicate = microcompact(messages, CFG, lambda name: name.endswith("_search"))
    assert by_set is not None and by_predicate is not None
    assert by_set.cleared == by_predicate.cleared == 5
    assert "x_search" not in DEFAULT_COMPACTABLE_TOOLS


def test_disabled_defenses_clear_nothing() -> None:
    messages = head() + rounds(12)
    assert microcompact(messages, ContextSettings(enabled=False)) == (messages, None)


def test_clearing_comes_in_batches_so_the_request_prefix_changes_rarely() -> None:
    """One result per turn: once a trigger is crossed everything but the keep count is
    cleared, and the view then stays as it is until the trigger is crossed again (a
    prompt cache keeps its prefix), never one more result per turn."""
    view: list[Message] = head()
    changed_at = []
    for n in range(1, 24):
        view = view + tool_round(f"c{n}")
        new, report = microcompact(view, CFG)
        if report is not None:
            changed_at.append((n, report.cleared))
        view = new
    # 9 results: clear 5 (4 stay); then 5 more turns until 9 again, and so on
    assert changed_at == [(9, 5), (14, 5), (19, 5)]
