"""Which tools a run gets. One place that lists them, in the order the model sees them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dexter.tools.base import Tool

if TYPE_CHECKING:
    from dexter.config import Settings
    from dexter.memory.manager import MemoryManager
    from dexter.skills.catalog import SkillCatalog


def build_tools(
    settings: Settings,
    *,
    memory: MemoryManager | None = None,
    interactive: bool = False,
    skills: SkillCatalog | None = None,
) -> list[Tool[Any]]:
    """The tools for a run: finance, web, files, calculator, memory, shell, subagents.

    ``interactive`` adds the tools that need a person at the terminal
    (``ask_user_question``); ``bash`` is offered everywhere but always goes through the
    permission engine. ``spawn_subagent`` comes last: its workers draw their tools from
    the ones above. ``skills`` (default: found from ``DEXTER_HOME`` and the working
    directory) adds the ``skill`` tool when there is any, and lets ``read_file`` read
    the skills' folders.
    """
    from pathlib import Path

    from dexter.skills.catalog import load_catalog
    from dexter.tools.bash import shell_tools
    from dexter.tools.calculator import CalculatorTool
    from dexter.tools.files import file_tools
    from dexter.tools.finance import finance_tools
    from dexter.tools.skill import SkillTool
    from dexter.tools.subagent import SubagentTool
    from dexter.tools.web_fetch import web_tools

    tools: list[Tool[Any]] = []
    tools.extend(finance_tools(settings))
    tools.extend(web_tools())
    catalog = skills if skills is not None else load_catalog(settings.home_path, Path.cwd())
    tools.extend(file_tools(read_roots=catalog.folders()))
    tools.append(CalculatorTool())
    if catalog.skills:
        tools.append(SkillTool(catalog))
    if memory is not None and memory.enabled:
        from dexter.tools.memory import memory_tools

        tools.extend(memory_tools(memory))
    tools.extend(t for t in shell_tools() if interactive or t.name != "ask_user_question")
    tools.append(SubagentTool(tools))
    return tools


def tool_names(settings: Settings, *, interactive: bool = False) -> set[str]:
    """The names of the built-in tools a session with ``settings`` offers (the memory tools
    when memory is on), found without building one: ``--allow`` is checked against them
    before a missing key could stop the command."""
    names = {tool.name for tool in build_tools(settings, interactive=interactive)}
    if settings.memory.enabled:
        from dexter.tools.memory import MEMORY_TOOLS

        names |= {cls.name for cls in MEMORY_TOOLS}
    return names
