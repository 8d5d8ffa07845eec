"""What the REPL itself draws, rendered on a recorded console (also at 40 columns)."""

from __future__ import annotations

import io
import random
from pathlib import Path

import pytest
from prompt_toolkit.formatted_text import fragment_list_to_text, to_formatted_text
from rich.console import Console, RenderableType

from dexter.agent.conversation import Turn
from dexter.agent.executor import ApprovalRequest
from dexter.config import Settings
from dexter.events import Done, RunStart, StreamProgress, ToolStart
from dexter.permissions.base import PermissionDecision
from dexter.providers.registry import ModelInfo
from dexter.render.live import LiveRenderer
from dexter.repl.app import Repl
from dexter.repl.context_report import ContextReport
from dexter.repl.cost import CostTracker
from dexter.repl.dialogs import ApprovalDialog, QuestionDialog, answered_lines
from dexter.repl.handlers import build_registry
from dexter.repl.view import (
    IntroInfo,
    context_view,
    cost_view,
    help_view,
    history_view,
    intro,
    key_problem,
    render_ansi,
)

WIDTHS = [100, 40]


def render(renderable: RenderableType, width: int) -> list[str]:
    console = Console(record=True, width=width, file=io.StringIO(), color_system=None)
    console.print(renderable)
    lines = [line.rstrip() for line in console.export_text().splitlines()]
    assert all(len(line) <= width for line in lines), "a line is wider than the console"
    return lines


def joined(renderable: RenderableType, width: int) -> str:
    return " ".join(" ".join(render(renderable, width)).split())


INFO = IntroInfo(version="0.1.0", model="claude-sonnet-4-6", model_display="Sonnet 4.6",
                 provider="Anthropic", home="/home/u/.dexter", scratchpads="/home/u/scratchpads")


@pytest.mark.parametrize("width", WIDTHS)
def test_intro_shows_version_model_provider_and_where_state_lives(width: int) -> None:
    lines = render(intro(INFO), width)
    assert lines[0].startswith("dexter v0.1.0")
    text = joined(intro(INFO), width)
    assert "Model Sonnet 4.6 (claude-sonnet-4-6) · Anthropic" in text
    assert "State /home/u/.dexter" in text and "Runs /home/u/scratchpads" in text
    assert "/help for commands" in text


@pytest.mark.parametrize("width", WIDTHS)
def test_intro_guides_when_the_key_is_missing(width: int) -> None:
    problem = key_problem("No API key for Anthropic", "ANTHROPIC_API_KEY")
    text = joined(_with_problem(problem), width)
    assert "ANTHROPIC_API_KEY is not set" in text
    assert "ANTHROPIC_API_KEY=your-key-here" in text
    assert ".env" in text and "/model" in text
    assert "dexter data statements AAPL" in text


def _with_problem(problem: str) -> RenderableType:
    return intro(IntroInfo(INFO.version, INFO.model, INFO.model_display, INFO.provider,
                           INFO.home, INFO.scratchpads, problem))


@pytest.mark.parametrize("width", WIDTHS)
def test_help_lists_every_command_and_the_keys(width: int) -> None:
    text = joined(help_view(build_registry()), width)
    for name in build_registry().names():
        assert f"/{name}" in text
    for key in ("alt+enter, ctrl+j", "esc, ctrl+c", "ctrl+c twice, ctrl+d"):
        assert key in text


@pytest.mark.parametrize("width", WIDTHS)
def test_context_view(width: int) -> None:
    report = ContextReport(tokens=47_500, threshold=95_000, window=128_000, action="nothing",
                           detail="Nothing to do: 47,500 tokens left before the threshold.")
    lines = render(context_view(report, model="gpt-4.1", source="estimated"), width)
    text = " ".join(" ".join(lines).split())
    assert "50%" in text and "█" * 15 + "░" * 15 in "".join(lines)
    assert "47,500 tokens in use (estimated) · threshold 95,000 · window 128,000" in text
    assert "Next stage: nothing" in text


@pytest.mark.parametrize("width", WIDTHS)
def test_cost_view(width: int) -> None:
    tracker = CostTracker()
    assert joined(cost_view(tracker, "gpt-4.1", True), width) == "No runs yet in this session."
    tracker.add("gpt-4.1", {"input_tokens": 1_000_000, "output_tokens": 250_000},
                _priced())
    text = joined(cost_view(tracker, "gpt-4.1", True), width)
    assert "1 run · 1m in / 250k out (1,000,000 / 250,000 tokens)" in text
    assert "Estimated cost: ~$4.00" in text
    tracker.add("local", {"input_tokens": 5, "output_tokens": 5}, None)
    assert "no price known for local" in joined(cost_view(tracker, "local", False), width)


def _priced() -> ModelInfo:
    return ModelInfo("gpt-4.1", "GPT-4.1", 1_047_576, 2.0, 8.0)


def bash_request() -> ApprovalRequest:
    decision = PermissionDecision("ask", "git push changes a remote repository.",
                                  session_key="bash:git push origin main",
                                  proposed_rule="Bash(git push origin main)")
    return ApprovalRequest("bash", {"command": "git push origin main"}, decision, "call_1")


@pytest.mark.parametrize("width", WIDTHS)
def test_approval_prompt_text(width: int) -> None:
    dialog = ApprovalDialog(bash_request(), width=width)
    lines = render(dialog.render(), width)
    assert lines[0] == "─" * width and lines[-1] == "─" * width
    text = " ".join(" ".join(lines).split())
    assert "Permission required" in text
    assert "Bash git push origin main" in text
    assert "git push changes a remote repository." in text
    assert "❯ 1. Yes" in text
    assert "2. Yes, and don't ask again for this command during this question" in text
    assert "3. Yes, and always allow Bash(git push origin main)" in text
    assert "4. No" in text and "enter to confirm · esc to deny" in text
    dialog.handle("down")
    moved = " ".join(render(dialog.render(), width))
    assert "❯ 2. Yes" in moved and "❯ 1." not in moved


def test_file_approval_says_all_edits_this_session() -> None:
    decision = PermissionDecision("ask", "", session_key="file:write", proposed_rule=None)
    dialog = ApprovalDialog(ApprovalRequest("write_file", {"path": "notes/a.md"}, decision, "c"))
    text = joined(dialog.render(), 100)
    assert "Write File notes/a.md" in text
    assert "2. Yes, allow all file edits this session" in text and "3. No" in text


@pytest.mark.parametrize("width", WIDTHS)
def test_question_prompt_text(width: int) -> None:
    dialog = QuestionDialog([
        {"question": "Which period?", "header": "Period",
         "options": [{"label": "Annual", "description": "fiscal years"}, {"label": "Quarterly"}]},
        {"question": "Which metrics?", "header": "Metrics", "multi_select": True,
         "options": [{"label": "Revenue"}, {"label": "EPS"}]},
    ])
    text = joined(dialog.render(), width)
    assert "☐ Period" in text and "☐ Metrics" in text
    assert "❯ 1. Annual fiscal years 2. Quarterly 3. Other (type your own answer)" in text
    dialog.handle("2")
    text = joined(dialog.render(), width)
    assert "☑ Period" in text and "1. ◯ Revenue" in text
    assert "space to toggle · enter to confirm" in text


def test_answered_block() -> None:
    lines = [line.plain for line in answered_lines({"answers": [
        {"question": "Which period?", "selected": ["Annual"], "header": "P"},
        {"question": "Which metrics?", "selected": [], "other_text": "FCF", "header": "M"}]})]
    assert lines == ["⏺ Answered:", "  ⎿  Which period? → Annual",
                     "  ⎿  Which metrics? → Other: FCF"]


@pytest.mark.parametrize("width", WIDTHS)
def test_history_view(width: int) -> None:
    assert joined(history_view([], None), width) == "No conversation yet in this session."
    text = joined(history_view([Turn("nvda revenue", "It was 130.5B.", "ok"),
                                Turn("long report", "", "interrupted")], None), width)
    assert "1. nvda revenue It was 130.5B. 2. long report (interrupted)" in text


def test_render_ansi_has_colour_only_when_asked() -> None:
    intro_block = intro(INFO)
    assert "\x1b[" in render_ansi(intro_block, 80, color=True)
    assert "\x1b[" not in render_ansi(intro_block, 80, color=False)


def test_the_live_region_is_part_of_the_prompt_message_during_a_run(tmp_path: Path) -> None:
    console = Console(record=True, width=60, file=io.StringIO(), color_system=None)
    repl = Repl(Settings(home=str(tmp_path)), console=console, color=False)
    assert _plain(repl) == "❯ "
    clock = [100.0]
    renderer = LiveRenderer(console, live=False, clock=lambda: clock[0], rng=random.Random(1))
    repl._renderer = renderer
    renderer.handle(RunStart(query="q", model="m", provider="openai"))
    renderer.handle(StreamProgress(char_delta=4000, mode="responding"))
    renderer.handle(ToolStart(tool="get_financials", args={"query": "NVDA revenue"},
                              tool_call_id="c1"))
    clock[0] += 12
    message = _plain(repl)
    assert not renderer.is_live  # rich's Live never takes the terminal in the REPL
    lines = message.splitlines()
    assert lines[0].startswith("⏺ Financials") and '"NVDA revenue"' in lines[0]
    assert "... (12s · ↓ 1k tokens)" in lines[1]
    assert lines[-1] == "❯ "
    renderer.handle(Done(answer="fine"))
    assert _plain(repl) == "❯ "


def _plain(repl: Repl) -> str:
    return fragment_list_to_text(to_formatted_text(repl._message()))
