"""The system prompt: who dexter is, today's date, its tools, and how to answer."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any

from dexter.skills.catalog import Skill
from dexter.tools.base import Tool

IDENTITY = (
    "You are dexter, a research agent for deep financial research, working in the user's "
    "terminal. You plan, call tools to get real data, check your numbers, and answer with "
    "sources."
)

TOOL_POLICY = """\
## How to use tools
- Get numbers from tools, never from memory. Quote figures exactly as the tools return them
  (or rounded), with their period (fiscal year or quarter) and source id.
- The finance tools take a full natural-language request; ask for everything you need from
  one tool in one call (several companies and periods at once) instead of many small calls.
- Call independent tools in the same turn: read-only tools run in parallel.
- For a broad question with independent parts (several companies, several angles), you may
  hand each part to spawn_subagent in the same turn; the workers run in parallel and each
  returns a self-contained report. Check their figures before you rely on them.
- Use the calculator for any arithmetic (growth rates, margins, ratios, sums). Do not do
  mental math on figures you will report.
- A result that says it was saved to a file holds the full data: use read_file with
  offset/limit to read the part you need.
- A result marked "[Old tool result content cleared]" was removed to save space; its
  retrieval clue tells you how to fetch it again if you still need it.
- If a tool call is denied or fails, do not repeat the same call. Use another approach, or
  say plainly what you could not get.
- Answer directly, without tools, only for definitions, stable facts, or conversation."""

ANSWER_FORMAT = """\
## How to answer
- Lead with the answer. Keep it short; this is a terminal.
- For comparisons use a compact markdown table (a few columns, abbreviations such as Rev,
  Op Inc, Net Inc, FCF, GM, OM, EPS; compact numbers such as 102.5B).
- Every tool result starts with its source id, such as [S3]. Cite it right after each
  figure you take from it: "Revenue was $391.0B in FY2024 [S3]." For a figure you computed,
  cite the calculator result's id. In a table, put the ids in a last Source column. Cite
  only ids you were shown; dexter lists the cited
  sources under the answer, so do not write your own source list.
- Name the period of every figure. Every figure in the answer is checked against the
  fetched data and the calculator results: one found in neither is flagged to the user.
- If the data is missing or uncertain, say so; never invent a number or a source. If you
  answer without fetching any data, say that the answer rests on no fetched data."""


def build_system_prompt(
    tools: Sequence[Tool[Any]],
    *,
    today: date | None = None,
    memory_text: str = "",
    memory_enabled: bool = False,
    rules: str = "",
    skills: Sequence[Skill] = (),
    active_skill: Skill | None = None,
) -> str:
    """Assemble the system prompt for one run. Everything in it is stable for the session.

    ``skills`` are listed by name and description only (their bodies come from the
    ``skill`` tool, so the list is shown only when that tool is there); ``active_skill``
    (``dexter ask --skill``) has its whole body included as instructions for the run.
    """
    day = today or date.today()
    parts = [IDENTITY, f"Current date: {day.strftime('%A, %B')} {day.day}, {day.year}"]
    if tools:
        lines = [f"- **{tool.name}**: {_first_sentence(tool.description)}" for tool in tools
                 if tool.bound()]
        parts.append("## Tools\n" + "\n".join(lines))
    parts.append(TOOL_POLICY)
    if skills and any(tool.name == "skill" for tool in tools):
        parts.append(skills_section(skills))
    if active_skill is not None:
        parts.append(f"## Skill loaded for this run: {active_skill.name}\nFollow these "
                     f"instructions for the user's request.\n\n{active_skill.body.strip()}")
    if memory_enabled:
        memory = (
            "## Memory\nYou keep notes about the user across sessions (goals, holdings, risk "
            "tolerance, decisions). Search them with memory_search before personalised advice, "
            "and save durable facts with memory_update."
        )
        if memory_text.strip():
            memory += "\n\n### What you remember\n" + memory_text.strip()
        parts.append(memory)
    if rules.strip():
        parts.append("## Research rules set by the user\nFollow these on every query.\n\n"
                     + rules.strip())
    parts.append(ANSWER_FORMAT)
    return "\n\n".join(parts)


def skills_section(skills: Sequence[Skill]) -> str:
    """The Skills section: one line per skill, its name and description (never its body)."""
    lines = [f"- **{skill.name}**: {skill.description}" for skill in skills]
    return ("## Skills\nSkills are step-by-step instructions for kinds of tasks. When a "
            "request matches one, load it first with the skill tool ({\"name\": ...}) and "
            "follow it.\n" + "\n".join(lines))


def _first_sentence(text: str) -> str:
    text = " ".join(text.split())
    end = text.find(". ")
    return text if end == -1 else text[: end + 1]
