"""``ask_user_question``: ask the user 1-4 multiple-choice questions in the middle of a run.

The UI receives ``questions`` as plain dicts ``{question, header, multi_select, options:
[{label, description}]}`` through ``ToolContext.request_user_input`` and adds an "Other"
free-text choice itself. It answers ``{"answers": [{header, question, selected: [labels],
other_text?, notes?}], "declined": bool}``, or None when no one is there. With no user
(``dexter ask``, subagents) the tool says so and the model proceeds on stated assumptions.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from dexter.tools.base import Tool, ToolContext

NO_USER = ("No interactive user is present, so the question cannot be asked. Proceed with "
           "your best judgment and state the assumptions you made in your answer.")
DECLINED = ("The user dismissed the question without answering. Do not ask again; proceed "
            "with reasonable defaults and state them in your answer.")
NO_ANSWERS = "The user submitted no answers. Proceed with reasonable defaults and state them."


class Option(BaseModel):
    """One choice."""

    label: str = Field(min_length=1, description="Short choice text.")
    description: str = Field(default="", description="What choosing it means.")


class Question(BaseModel):
    """One multiple-choice question."""

    question: str = Field(min_length=1, description="The full question.")
    header: str = Field(min_length=1, max_length=12, description="A label of at most 12 characters.")
    multi_select: bool = Field(default=False, description="Whether several options may be chosen.")
    options: list[Option] = Field(min_length=2, max_length=4,
                                  description="2-4 options; put the recommended one first. "
                                              "Do not add an 'Other' option (the UI adds it).")


class AskUserParams(BaseModel):
    """Arguments of ``ask_user_question``."""

    questions: list[Question] = Field(min_length=1, max_length=4)


def _labels(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def format_answers(reply: dict[str, Any]) -> str:
    """The user's answers as text for the model."""
    if reply.get("declined"):
        return DECLINED
    answers = [a for a in reply.get("answers") or [] if isinstance(a, dict)]
    if not answers:
        return NO_ANSWERS
    blocks = []
    for answer in answers:
        chosen = _labels(answer.get("selected"))
        other = str(answer.get("other_text") or "").strip()
        if other:
            chosen.append(f"Other: {other}")
        lines = [f"Q ({answer.get('header', '')}): {answer.get('question', '')}",
                 f"  Answer: {', '.join(chosen) if chosen else '(no selection)'}"]
        notes = str(answer.get("notes") or "").strip()
        if notes:
            lines.append(f"  Notes: {notes}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


class AskUserQuestionTool(Tool[AskUserParams]):
    """Ask the user multiple-choice questions."""

    name: ClassVar[str] = "ask_user_question"
    source_kind: ClassVar[Literal["user"]] = "user"
    description: ClassVar[str] = (
        "Ask the user 1-4 multiple-choice questions (2-4 options each; the UI adds an 'Other' "
        "free-text choice) when a decision really needs them: scope, preferences, "
        "assumptions. Put the recommended option first. In non-interactive runs it answers "
        "that no user is present."
    )
    params: ClassVar[type[BaseModel]] = AskUserParams

    async def run(self, args: AskUserParams, ctx: ToolContext) -> str:
        if ctx.request_user_input is None:
            return NO_USER
        reply = await ctx.request_user_input([q.model_dump() for q in args.questions])
        if reply is None:
            return NO_USER
        return format_answers(reply)
