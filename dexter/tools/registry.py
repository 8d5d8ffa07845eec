"""Which tools a run gets. One place that lists them, in the order the model sees them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dexter.tools.base import Tool

if TYPE_CHECKING:
    from dexter.config import Settings
    from dexter.memory.manager import MemoryManager


def build_tools(
    settings: Settings,
    *,
    memory: MemoryManager | None = None,
    interactive: bool = False,
) -> list[Tool[Any]]:
    """The tools for a run: finance, web, files, calculator, memory, shell, subagents.

    ``interactive`` adds the tools that need a person at the terminal
    (``ask_user_question``); ``bash`` is offered everywhere but always goes through the
    permission engine. ``spawn_subagent`` comes last: its workers draw their tools from
    the ones above.
    """
    from dexter.tools.bash import shell_tools
    from dexter.tools.calculator import CalculatorTool
    from dexter.tools.files import file_tools
    from dexter.tools.finance import finance_tools
    from dexter.tools.subagent import SubagentTool
    from dexter.tools.web_fetch import web_tools

    tools: list[Tool[Any]] = []
    tools.extend(finance_tools(settings))
    tools.extend(web_tools())
    tools.extend(file_tools())
    tools.append(CalculatorTool())
    if memory is not None and memory.enabled:
        from dexter.tools.memory import memory_tools

        tools.extend(memory_tools(memory))
    tools.extend(t for t in shell_tools() if interactive or t.name != "ask_user_question")
    tools.append(SubagentTool(tools))
    return tools
