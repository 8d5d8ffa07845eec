"""``skill``: load a skill's instructions (progressive disclosure).

The system prompt lists only each skill's name and description; this tool returns the
body of one ``SKILL.md`` and the paths of the skill's resource files, which ``read_file``
may read (their folders are read roots of the file tools, see ``tools/files.py``). The
result is instructions, not evidence, so ``source_kind`` is None; it can be fetched again,
so old results are compactable.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, Field

from dexter.failures import ToolFailure
from dexter.skills.catalog import Skill, SkillCatalog
from dexter.tools.base import Tool, ToolContext

DESCRIPTION = (
    "Load a skill: step-by-step instructions for a kind of task (a DCF valuation, a comps "
    "table, an earnings review, a memo...). The skills available are listed in the system "
    "prompt under Skills. Call it with the skill's name before starting such a task, then "
    "follow the instructions; read its resource files with read_file when it points to them."
)


class SkillParams(BaseModel):
    """Arguments of the ``skill`` tool."""

    name: str = Field(description="The skill's name, as listed under Skills (e.g. 'dcf').")


class SkillTool(Tool[SkillParams]):
    """Returns one skill's instructions and lists its resource files."""

    name: ClassVar[str] = "skill"
    description: ClassVar[str] = DESCRIPTION
    params: ClassVar[type[BaseModel]] = SkillParams
    concurrency_safe: ClassVar[bool] = True
    compactable: ClassVar[bool] = True
    source_kind: ClassVar[None] = None

    def __init__(self, catalog: SkillCatalog) -> None:
        self.catalog = catalog

    async def run(self, args: SkillParams, ctx: ToolContext) -> str:
        """The skill's body, headed by its name and source, followed by its resources."""
        skill = self.catalog.get(args.name)
        if skill is None:
            names = ", ".join(self.catalog.names) or "(none are installed)"
            raise ToolFailure(f"No skill is called {args.name!r}. Available skills: {names}.")
        return skill_text(skill)


def skill_text(skill: Skill) -> str:
    """What the model reads for a loaded skill: header, instructions, resource files."""
    # The first line is what the tool row shows under the call.
    lines = [f"Skill {skill.name} ({skill.source}) loaded: follow these instructions.",
             f"File: {skill.path}"]
    if skill.allowed_tools:
        lines.append(f"Tools this skill uses: {', '.join(skill.allowed_tools)}")
    lines += ["", skill.body.rstrip()]
    resources = skill.resources()
    if resources:
        lines += ["", "## Resource files of this skill (read them with read_file)"]
        for path in resources:
            try:
                size = f" ({path.stat().st_size:,} bytes)"
            except OSError:
                size = ""
            lines.append(f"- {path}{size}")
    return "\n".join(lines) + "\n"
