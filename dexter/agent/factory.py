"""Builds an ``Agent`` from settings: model, fast model, tools, permissions, prompt."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dexter.agent.executor import Approver, deny_all
from dexter.agent.loop import Agent, AgentSetup
from dexter.agent.mcp_setup import McpPlan, plan_mcp, start_mcp
from dexter.agent.prompts import build_system_prompt
from dexter.agent.queue import MessageQueue
from dexter.config import ConfigError, Settings
from dexter.context.trace import TraceFn
from dexter.events import MemoryRecalled
from dexter.permissions.engine import build_permission_engine, noninteractive_engine
from dexter.sandbox.runner import SandboxRunner
from dexter.tools.base import Tool, UserInputFn
from dexter.tools.mcp_client import McpManager


@dataclass
class Session:
    """What a CLI command holds for its lifetime: the agent and what was loaded for it."""

    agent: Agent
    model_name: str
    provider_name: str
    recalled: MemoryRecalled | None = None
    memory_text: str = ""
    """The recalled memory as put in the system prompt (reused by a rebuild: see ``recall``)."""
    mcp: McpManager | None = None
    """The session's MCP servers (stopped by ``aclose``), None when none are configured."""
    mcp_plan: McpPlan | None = None

    async def aclose(self) -> None:
        """Close the model clients' HTTP connections and stop the MCP servers (errors while
        closing are ignored)."""
        if self.mcp is not None:
            manager, self.mcp = self.mcp, None
            with contextlib.suppress(Exception):
                await asyncio.to_thread(manager.close)
        seen: set[int] = set()
        for model in (self.agent.setup.model, self.agent.setup.fast_model):
            if id(model) not in seen:
                seen.add(id(model))
                with contextlib.suppress(Exception):
                    await model.aclose()


def check_scratchpad_dir(settings: Settings) -> None:
    """Raise ``ConfigError`` naming the folder and the setting when no run could write its
    scratchpad there (a read-only mount, a file in its place): a configuration problem,
    found before any model call. A full disk is not one: runs report it themselves."""
    from dexter.scratchpad import folder_problem

    folder = settings.scratchpad_path
    problem = folder_problem(folder)
    if problem is not None:
        raise ConfigError(
            f"The scratchpad folder {folder} cannot be written: {problem}. Every run keeps "
            "its record there; set scratchpad_dir in the config file or DEXTER_SCRATCHPAD_DIR "
            "to a folder dexter can write.")


def build_session(
    settings: Settings,
    *,
    approver: Approver = deny_all,
    interactive: bool = False,
    queue: MessageQueue | None = None,
    request_user_input: UserInputFn | None = None,
    trace: TraceFn | None = None,
    env: Mapping[str, str] | None = None,
    tools: Sequence[Tool[Any]] | None = None,
    memory_enabled: bool | None = None,
    recall: tuple[MemoryRecalled | None, str] | None = None,
    preapproved: tuple[Sequence[str], bool] | None = None,
    rerun_of: Path | None = None,
    wrap_tools: Callable[[list[Tool[Any]]], list[Tool[Any]]] | None = None,
    skill: str | None = None,
) -> Session:
    """Resolve the model and build the agent. Raises ``ConfigError`` for a missing key.

    ``recall``: the session's memory recall (event, text) to reuse instead of reading the
    memory files again, so a rebuild mid-session (another model, new rules) keeps it frozen.
    ``preapproved``: ``(--allow values, --yes)`` for a run with nobody to ask; every ask is
    then decided by them (``NonInteractivePermissions``).
    ``rerun_of``: the recorded scratchpad the ``tools`` answer from (``dexter rerun``,
    ``dexter.rerun.recorded_tools``); the runs' scratchpads name it. MCP servers are not
    started for it unless ``wrap_tools`` is given.
    ``wrap_tools``: applied to the whole tool list, the MCP tools included (``dexter
    rerun`` wraps them all to answer from the recording).
    ``skill``: the name of a skill whose instructions go into the system prompt
    (``dexter ask --skill``); an unknown name is a ``ConfigError``.
    """
    from dexter.providers.call import create_chat_model
    from dexter.providers.registry import resolve_model

    env = os.environ if env is None else env
    check_scratchpad_dir(settings)
    from dexter.skills.catalog import load_catalog

    catalog = load_catalog(settings.home_path, Path.cwd())
    active_skill = catalog.get(skill) if skill is not None else None
    if skill is not None and active_skill is None:
        names = ", ".join(catalog.names) or "none are installed"
        raise ConfigError(f"No skill is called {skill!r} (available: {names}). "
                          "'dexter skills' lists them.")
    resolved = resolve_model(settings.model, settings)
    model = create_chat_model(resolved, settings, env=env)
    fast, fast_window = model, resolved.context_window
    if resolved.fast_model != resolved.name:
        try:
            fast = create_chat_model(resolved, settings, env=env, fast=True)
            fast_window = resolve_model(resolved.fast_model, settings).context_window
        except ConfigError:
            # The fast model's provider has no key: summaries use the main model instead.
            fast, fast_window = model, resolved.context_window

    use_memory = settings.memory.enabled if memory_enabled is None else memory_enabled
    memory = _open_memory(settings, env) if use_memory else None
    if tools is None:
        from dexter.tools.registry import build_tools

        tools = build_tools(settings, memory=memory, interactive=interactive, skills=catalog)
    mcp, mcp_plan = None, None
    if (rerun_of is None or wrap_tools is not None) and settings.mcp.servers:
        mcp = start_mcp(settings)  # reports a server that fails; never raises
        mcp_plan = plan_mcp(mcp, settings, resolved.context_window)
        tools = [*tools, *mcp_plan.tools]
        from dexter.tools.subagent import SubagentTool

        for tool in tools:
            if isinstance(tool, SubagentTool):
                tool.add_tools(mcp_plan.tools)  # workers get the read-only MCP tools
    if wrap_tools is not None:
        tools = wrap_tools(list(tools))

    runner = shell_sandbox(settings)
    recalled, memory_text = recall if recall is not None and memory is not None \
        else _recall(memory, settings)
    prompt = build_system_prompt(tools, memory_text=memory_text,
                                 memory_enabled=memory is not None, rules=_rules(settings),
                                 skills=catalog.skills, active_skill=active_skill)
    setup = AgentSetup(
        settings=settings, model=model, fast_model=fast,
        context_window=resolved.context_window, fast_context_window=fast_window,
        tools=tools, system_prompt=prompt,
        permissions=(build_permission_engine(settings, Path.cwd(), runner.status)
                     if preapproved is None else
                     noninteractive_engine(settings, Path.cwd(), runner.status, *preapproved)),
        shell_sandbox=runner,
        approver=approver, queue=queue,
        memory_dir=(settings.home_path / "memory") if memory is not None else None,
        request_user_input=request_user_input, interactive=interactive, trace=trace,
        recalled=recalled, rerun_of=rerun_of, prompt_cache=resolved.provider.caches_prompts,
    )
    return Session(Agent(setup), resolved.model, resolved.provider.display_name, recalled,
                   memory_text, mcp=mcp, mcp_plan=mcp_plan)


def shell_notice(session: Session) -> str:
    """The one-time start-up warning when the bash tool runs without a sandbox, or in one
    that cannot give every protection on this machine ('' if none)."""
    setup = session.agent.setup
    runner = setup.shell_sandbox
    if runner is None or not any(t.name == "bash" for t in setup.tools):
        return ""
    if runner.status.active:
        # a sandbox that cannot give every protection here says which, once
        return f"{runner.status.describe()} See 'dexter sandbox'." if runner.status.weaker else ""
    return (f"{runner.status.describe()} Shell commands run with your full rights: each one "
            "that is not provably read-only asks first, and --yes does not approve them. "
            "See 'dexter sandbox'.")


def shell_sandbox(settings: Settings) -> SandboxRunner:
    """The OS sandbox for the bash tool (probed once per process and setting)."""
    from dexter.sandbox.runner import detect_runner

    return detect_runner(settings)


def _open_memory(settings: Settings, env: Mapping[str, str]) -> Any:
    from dexter.memory.manager import MemoryManager

    return MemoryManager(settings, env)


def _recall(memory: Any, settings: Settings) -> tuple[MemoryRecalled | None, str]:
    if memory is None:
        return None, ""
    try:
        recall = memory.recall(budget_tokens=settings.memory.max_session_context_tokens)
    except Exception:  # memory problems never stop a run; /memory reports them
        return None, ""
    if not recall.files:
        return None, ""
    return MemoryRecalled(files=list(recall.files), tokens=recall.tokens), recall.text


def _rules(settings: Settings) -> str:
    path: Path = settings.home_path / "RULES.md"
    try:  # bytes that are not UTF-8 (a file saved as Latin-1) become U+FFFD
        return path.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return ""
