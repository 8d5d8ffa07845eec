"""ask_user_question: answered, declined, no user, and argument limits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dexter.config import Settings
from dexter.tools.ask_user import DECLINED, NO_ANSWERS, NO_USER, AskUserQuestionTool
from dexter.tools.base import ToolContext, ToolFailure

QUESTIONS = [
    {"question": "Which fiscal year should the DCF use?", "header": "Fiscal year",
     "options": [{"label": "FY2025 (Recommended)", "description": "latest 10-K"},
                 {"label": "FY2024", "description": "audited and restated"}]},
    {"question": "Which segments matter?", "header": "Segments", "multi_select": True,
     "options": [{"label": "Sensors"}, {"label": "Software"}, {"label": "Services"}]},
]


def make_ctx(tmp_path: Path, reply: Any = None, present: bool = True) -> tuple[ToolContext, list[Any]]:
    asked: list[Any] = []

    async def request(questions: list[dict[str, Any]]) -> dict[str, Any] | None:
        asked.append(questions)
        return reply

    ctx = ToolContext(settings=Settings(), cwd=tmp_path, home=tmp_path,
                      request_user_input=request if present else None, interactive=present)
    return ctx, asked


async def ask(ctx: ToolContext, questions: list[dict[str, Any]]) -> str:
    tool = AskUserQuestionTool()
    result = await tool.run(tool.parse_args({"questions": questions}), ctx)
    assert isinstance(result, str)
    return result


async def test_answers_are_formatted_per_question(tmp_path: Path) -> None:
    reply = {"declined": False, "answers": [
        {"header": "Fiscal year", "question": QUESTIONS[0]["question"], "selected": ["FY2024"],
         "notes": "use restated numbers"},
        {"header": "Segments", "question": QUESTIONS[1]["question"], "selected": ["Sensors", "Software"],
         "other_text": "and the new robotics unit"},
    ]}
    ctx, asked = make_ctx(tmp_path, reply)
    out = await ask(ctx, QUESTIONS)
    assert out == (
        "Q (Fiscal year): Which fiscal year should the DCF use?\n  Answer: FY2024\n"
        "  Notes: use restated numbers\n\n"
        "Q (Segments): Which segments matter?\n"
        "  Answer: Sensors, Software, Other: and the new robotics unit"
    )
    sent = asked[0]
    assert [q["header"] for q in sent] == ["Fiscal year", "Segments"]
    assert sent[1]["multi_select"] is True and sent[0]["multi_select"] is False
    assert sent[0]["options"][0] == {"label": "FY2025 (Recommended)", "description": "latest 10-K"}


async def test_empty_selection_and_no_answers(tmp_path: Path) -> None:
    ctx, _ = make_ctx(tmp_path, {"answers": [{"header": "H", "question": "Q?", "selected": []}]})
    assert (await ask(ctx, QUESTIONS[:1])).endswith("Answer: (no selection)")
    ctx, _ = make_ctx(tmp_path, {"answers": [], "declined": False})
    assert await ask(ctx, QUESTIONS[:1]) == NO_ANSWERS


async def test_declined_means_do_not_ask_again(tmp_path: Path) -> None:
    ctx, _ = make_ctx(tmp_path, {"answers": [], "declined": True})
    out = await ask(ctx, QUESTIONS)
    assert out == DECLINED and "Do not ask again" in out


async def test_no_user_present(tmp_path: Path) -> None:
    ctx, _ = make_ctx(tmp_path, present=False)
    assert await ask(ctx, QUESTIONS) == NO_USER
    ctx, asked = make_ctx(tmp_path, reply=None)
    assert await ask(ctx, QUESTIONS) == NO_USER and len(asked) == 1
    assert "state the assumptions" in NO_USER


@pytest.mark.parametrize(("questions", "field"), [
    ([], "questions"),
    ([QUESTIONS[0]] * 5, "questions"),
    ([{**QUESTIONS[0], "header": "Thirteen char"}], "header"),
    ([{**QUESTIONS[0], "options": [{"label": "only one"}]}], "options"),
    ([{**QUESTIONS[0], "options": [{"label": str(i)} for i in range(5)]}], "options"),
])
def test_argument_limits(questions: list[dict[str, Any]], field: str) -> None:
    with pytest.raises(ToolFailure, match=field):
        AskUserQuestionTool().parse_args({"questions": questions})


def test_boundaries_that_are_allowed() -> None:
    tool = AskUserQuestionTool()
    tool.parse_args({"questions": [{**QUESTIONS[0], "header": "Twelve chars"}] * 4})
    tool.parse_args({"questions": [{**QUESTIONS[0], "options": [{"label": str(i)} for i in range(4)]}]})
