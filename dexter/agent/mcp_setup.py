"""A session's MCP tools: start the servers, weigh their schemas, choose bound or search mode.

The schemas of every MCP tool are bound when they take at most ``[mcp] max_schema_share``
of the model's context window; otherwise only ``mcp_search`` is bound and the model binds
the tools it picks (``dexter.tools.mcp``). ``McpPlan`` says what was chosen and how many
tokens search mode saves each request (shown by ``dexter mcp list`` and ``/mcp``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dexter.config import Settings
from dexter.context.tokens import estimate_tool_specs_tokens
from dexter.providers.base import ToolSpec
from dexter.tools.base import Tool
from dexter.tools.mcp_client import McpManager


@dataclass(frozen=True)
class McpPlan:
    """The MCP tools a session binds and what their definitions cost."""

    tools: list[Tool[Any]]
    schema_tokens: int
    """Estimated tokens of every MCP tool definition together."""
    budget_tokens: int
    """``max_schema_share`` of the context window."""
    search_mode: bool
    bound_tokens: int
    """What is bound at the start: every schema, or only ``mcp_search`` in search mode."""

    @property
    def saved_tokens(self) -> int:
        """Tokens per request that search mode saves (0 when every schema is bound)."""
        return max(0, self.schema_tokens - self.bound_tokens) if self.search_mode else 0

    def describe(self) -> str:
        """One line: the mode and the token cost."""
        if not self.tools:
            return "no MCP tools"
        if self.search_mode:
            return (f"search mode: the MCP schemas ({self.schema_tokens:,} tokens) exceed "
                    f"{self.budget_tokens:,} tokens; mcp_search binds tools on demand, saving "
                    f"{self.saved_tokens:,} tokens per request")
        return (f"all MCP schemas bound: {self.schema_tokens:,} tokens (budget "
                f"{self.budget_tokens:,})")


def tool_tokens(tool: Tool[Any]) -> int:
    """Estimated tokens of one tool's definition."""
    return estimate_tool_specs_tokens([ToolSpec(tool.name, tool.description, tool.json_schema())])


def start_mcp(settings: Settings, report: Callable[[str], None] | None = None,
              notify: Callable[[str], None] | None = None) -> McpManager | None:
    """Start the configured servers (None when there are none). Never raises: a server
    that fails is reported through ``report`` and left out; what a running one does wrong
    goes to ``notify`` (default: ``report``)."""
    if not settings.mcp.servers:
        return None
    from dexter.sandbox.programs import writable_folders

    manager = McpManager(settings.mcp, log_dir=settings.home_path / "mcp-logs", report=report,
                         notify=notify,
                         writable=writable_folders(Path.cwd(), settings.bash.allow_write))
    manager.start()
    return manager


def plan_mcp(manager: McpManager | None, settings: Settings, context_window: int) -> McpPlan:
    """Bind every MCP tool, or only ``mcp_search`` when their schemas pass the share."""
    window = settings.context.context_window or context_window
    budget = int(window * settings.mcp.max_schema_share)
    if manager is None:
        return McpPlan([], 0, budget, False, 0)
    from dexter.tools.mcp import McpSearchTool, mcp_tools  # only with servers configured

    every = mcp_tools(manager, search_mode=False)
    total = sum(tool_tokens(t) for t in every)
    if total <= budget or not every:
        return McpPlan(every, total, budget, False, total)
    tools = mcp_tools(manager, search_mode=True)
    bound = sum(tool_tokens(t) for t in tools if isinstance(t, McpSearchTool))
    return McpPlan(tools, total, budget, True, bound)


def report_lines(manager: McpManager | None, plan: McpPlan | None) -> list[str]:
    """What ``dexter mcp list`` and ``/mcp`` print: each server (transport, status, tools
    with their token cost and whether they ask first), then the mode and the tokens saved."""
    if manager is None or not manager.servers:
        return ["No MCP servers are configured. Add [mcp.servers.NAME] tables to the config "
                "file (see docs/mcp.md)."]
    by_name = {t.name: t for t in (plan.tools if plan else [])}
    lines: list[str] = []
    for state in manager.servers.values():
        where = manager.clean(state.config.url
                              or " ".join([state.config.command, *state.config.args]))
        head = f"{state.name} ({state.transport}: {where}): {state.status}"
        if state.error:
            head += f": {state.error}"
        elif state.status == "running":
            head += f", {len(state.tools)} tool{'s' if len(state.tools) != 1 else ''}"
        lines.append(head)
        for info in state.tools if state.status == "running" else []:
            from dexter.tools.mcp import tool_name

            name = tool_name(info.server, info.name)
            tool = by_name.get(name)
            cost = f"{tool_tokens(tool):,} tokens" if tool is not None else "not loaded"
            kind = "read-only" if info.read_only else "asks first"
            lines.append(f"  {name}  {kind}, {cost}")
        if state.status == "running":
            from dexter.tools.mcp import tool_name

            lines += [f"  {tool_name(state.name, name)}  {why}" for name, why in state.not_offered]
        lines += [f"  note: {note}" for note in state.notes]
    if plan is not None:
        lines.append(plan.describe())
    return lines
