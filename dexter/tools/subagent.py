"""``spawn_subagent``: hand one self-contained sub-task to a worker agent and get its report.

The worker is a fresh ``Agent`` on the parent's model with its own scratchpad, no chat
history, no memory, no user (no approval prompts, no questions) and a tool allowlist chosen
by ``subagent_type``. ``spawn_subagent`` itself, ``ask_user_question`` and ``bash`` are never
in a worker's list, so a worker cannot spawn workers (depth 1, by construction).

Several calls in one turn run in parallel (the tool is concurrency-safe). While a worker
runs, its progress reaches the UI as a ``SubagentStatus`` in ``ToolProgress.subagent``
(tool uses, tokens, activity, done): once at the start, on each of the worker's tool starts
and tool errors, and once at the end. The worker itself is run by the agent layer through
``ToolContext.run_worker``, under the session's sandbox and rules.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from dexter.events import (
    Done,
    Event,
    ScratchpadError,
    StreamProgress,
    SubagentStatus,
    ToolError,
    ToolStart,
)
from dexter.messages import Usage
from dexter.providers.base import ModelRequest, ModelResponse, StreamChunk
from dexter.tools.base import Tool, ToolContext, ToolFailure, WorkerSpec

if TYPE_CHECKING:
    from dexter.providers.base import ChatModel

SubagentType = Literal["general-purpose", "research", "analysis"]

SUBAGENT_TOOL_NAME = "spawn_subagent"
MAX_SUBAGENT_ITERATIONS = 8
DISALLOWED_TOOLS = frozenset({SUBAGENT_TOOL_NAME, "ask_user_question", "bash"})
MCP_NAMES = ("mcp__", "mcp_search")
"""Names of MCP tools (``dexter.tools.mcp``): workers get the read-only ones."""
ALLOWLISTS: dict[str, tuple[str, ...]] = {
    "general-purpose": (
        "get_financials", "get_market_data", "read_filings", "stock_screener", "web_search",
        "web_fetch", "read_file", "calculator", "memory_search", "memory_get",
    ),
    "research": ("web_search", "web_fetch", "read_filings", "get_market_data"),
    "analysis": ("get_financials", "get_market_data", "stock_screener", "read_filings",
                 "calculator"),
}
SEARCH_TOOLS = frozenset({"web_search", "x_search", "stock_screener"})
READ_TOOLS = frozenset({"read_filings", "read_file", "web_fetch"})

WORKER_PROMPT = """\
You are a worker agent inside dexter, a financial research agent. The lead agent gave you \
one sub-task. You cannot see its conversation with the user, you cannot ask the user \
anything, and you cannot hand work to other agents: do the sub-task yourself with your tools.

Your final message is returned verbatim to the lead agent as your whole result, so make it \
complete and self-contained:
- State the findings directly; no preamble about what you are going to do.
- Give every figure with its period (fiscal year or quarter) and its source, and list the \
source URLs you used.
- Get numbers from tools, never from memory; use the calculator for arithmetic when you \
have it.
- Say plainly what you could not find or verify. Never invent a number or a source.
- Finish within a few tool rounds; you have at most {limit} model turns."""

TYPE_FOCUS: dict[str, str] = {
    "general-purpose": "Use whichever of your tools fits the sub-task best.",
    "research": ("Your focus is research: find and cross-check information on the web and in "
                 "filings, and attribute each claim to its source."),
    "analysis": ("Your focus is analysis: pull the financial data, compute the metrics the task "
                 "asks for, and explain what the numbers show."),
}

DESCRIPTION = (
    "Delegate one self-contained research sub-task to a worker agent that works on its own, "
    "with a fresh context, and returns a written report. Use it to split broad work into "
    "independent parts (for example one company or one question each): several "
    "spawn_subagent calls in the same turn run in parallel. The worker cannot see this "
    "conversation, so put everything it needs in `task` (and background in `context`). "
    "Types: general-purpose (finance, web, files, calculator), research (web and filings), "
    "analysis (financial data, screener, filings, calculator); all get read-only MCP "
    "tools. Do not use it for a single "
    "quick lookup; call that tool directly. Check the reports before you rely on them."
)


class SubagentParams(BaseModel):
    """Arguments of ``spawn_subagent``."""

    model_config = ConfigDict(str_strip_whitespace=True)

    description: str = Field(min_length=1, description="A 3-5 word label shown to the user.")
    task: str = Field(min_length=1, description=(
        "The complete, self-contained instruction: what to find or compute, for which "
        "companies and periods, and what the report must contain."))
    subagent_type: SubagentType = Field(default="general-purpose", description=(
        "general-purpose (all research tools), research (web and filings) or analysis "
        "(financial data and calculations)."))
    context: str = Field(default="", description=(
        "Optional background the worker needs (what is already known, constraints)."))


def subagent_query(task: str, context: str = "") -> str:
    """The worker's query: the background (when given), a rule, then the task."""
    if context.strip():
        return f"{context}\n\n---\n\nTask: {task}"
    return task


def worker_prompt(subagent_type: str, today: date | None = None) -> str:
    """The worker's whole system prompt: the shared rules, its focus and today's date."""
    day = today or date.today()
    return "\n\n".join([
        WORKER_PROMPT.format(limit=MAX_SUBAGENT_ITERATIONS),
        TYPE_FOCUS[subagent_type],
        f"Current date: {day.strftime('%A, %B')} {day.day}, {day.year}",
    ])


def worker_tools(tools: Sequence[Tool[Any]], subagent_type: str) -> list[Tool[Any]]:
    """The tools a worker of ``subagent_type`` gets: its allowlist, in the allowlist's order.

    Names that are not registered (memory tools with memory off, say) drop out; tools that
    need approval are never given, since a worker has no one to ask. The read-only MCP
    tools follow the allowlist, for every type.
    """
    by_name = {tool.name: tool for tool in tools}
    listed = [by_name[name] for name in ALLOWLISTS[subagent_type]
              if name in by_name and name not in DISALLOWED_TOOLS
              and not by_name[name].needs_approval]
    # every type also gets the MCP servers' read-only tools (and mcp_search in search mode)
    mcp = [tool for tool in tools if tool.name.startswith(MCP_NAMES)
           and not tool.needs_approval and tool not in listed]
    return [*listed, *mcp]


class TokenMeter:
    """Counts a worker's tokens: the usage its model calls reported, plus what is streaming."""

    def __init__(self) -> None:
        self.usage = Usage()
        self.streaming_chars = 0

    @property
    def tokens(self) -> int:
        """Reported input + output tokens so far, with the reply in flight estimated at 4 chars
        a token."""
        return self.usage.total_tokens + round(self.streaming_chars / 4)

    def add_chunk(self, chunk: StreamChunk) -> None:
        self.streaming_chars += len(chunk.text)

    def add_response(self, response: ModelResponse) -> None:
        self.usage = self.usage + response.usage
        self.streaming_chars = 0


class MeteredModel:
    """A ``ChatModel`` that passes every call through to ``inner`` and counts its tokens.

    ``aclose`` does nothing: the worker borrows the parent's client, which the parent closes.
    """

    def __init__(self, inner: ChatModel, meter: TokenMeter) -> None:
        self._inner = inner
        self._meter = meter

    @property
    def model(self) -> str:
        return self._inner.model

    @property
    def provider_id(self) -> str:
        return self._inner.provider_id

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk | ModelResponse]:
        """The inner model's stream, counted as it passes."""
        items = self._inner.stream(request)
        try:
            async for item in items:
                if isinstance(item, ModelResponse):
                    self._meter.add_response(item)
                else:
                    self._meter.add_chunk(item)
                yield item
        finally:
            # An abandoned stream (a cancelled worker) releases its HTTP response now.
            aclose = getattr(items, "aclose", None)
            if aclose is not None:
                await aclose()

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """The inner model's reply, counted."""
        response = await self._inner.complete(request)
        self._meter.add_response(response)
        return response

    async def aclose(self) -> None:
        return None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@dataclass
class WorkerProgress:
    """What the UI is told about a running worker."""

    meter: TokenMeter
    tool_use_count: int = 0
    searches: int = 0
    reads: int = 0
    activity: str = "Starting"
    record_problem: str = ""
    """Why the worker's scratchpad is incomplete ('' when it is whole)."""
    _started: set[str] = field(default_factory=set)

    def observe(self, event: Event) -> bool:
        """Update from one of the worker's events; True when the UI should hear about it."""
        if isinstance(event, ToolStart):
            self._started.add(event.tool_call_id)
            self.tool_use_count += 1
            self.searches += event.tool in SEARCH_TOOLS
            self.reads += event.tool in READ_TOOLS
            looked = event.tool in SEARCH_TOOLS or event.tool in READ_TOOLS
            self.activity = self.rollup() if looked and self.searches + self.reads >= 2 \
                else f"Ran {event.tool}"
            return True
        if isinstance(event, ToolError):
            if event.tool_call_id not in self._started:
                self.tool_use_count += 1  # rejected before it started (unknown tool, bad args)
            self.activity = f"{event.tool} failed"
            return True
        return False

    def rollup(self) -> str:
        """``3 searches, 2 reads``: what the worker has looked at so far."""
        parts = []
        if self.searches:
            parts.append(f"{self.searches} search{'es' if self.searches != 1 else ''}")
        if self.reads:
            parts.append(f"{self.reads} read{'s' if self.reads != 1 else ''}")
        return ", ".join(parts)

    def status(self, *, done: bool = False, failed: bool = False) -> SubagentStatus:
        """What the worker is doing now, for ``ToolProgress.subagent``."""
        return SubagentStatus(activity=self.activity, tool_use_count=self.tool_use_count,
                              tokens=self.meter.tokens, done=done, failed=failed)


def result_text(answer: str, subagent_type: str, progress: WorkerProgress) -> str:
    """The worker's answer as the parent sees it, with a one-line footer."""
    uses = progress.tool_use_count
    footer = (f"[{subagent_type} subagent · {uses} tool use{'s' if uses != 1 else ''} · "
              f"{progress.meter.tokens:,} tokens]")
    if progress.record_problem:
        footer += f"\n[the worker's record is incomplete: {progress.record_problem}]"
    return f"{answer}\n\n{footer}"


def failure_text(done: Done, description: str, subagent_type: str) -> str | None:
    """Why a finished worker has no usable answer, or None when it has one."""
    label = f"Subagent '{description}' ({subagent_type})"
    if done.status == "max_iterations":
        return (f"{label} reached its limit of {MAX_SUBAGENT_ITERATIONS} model turns before "
                "finishing. Give it a narrower task, split the task across several "
                "subagents, or do this part yourself.")
    if done.status != "ok":
        reason = done.answer.strip() or "it stopped without saying why"
        return f"{label} failed: {reason}"
    if not done.answer.strip():
        return (f"{label} finished without writing an answer. Retry with a clearer task, or "
                "do this part yourself.")
    return None


class SubagentTool(Tool[SubagentParams]):
    """Runs a worker agent on one sub-task and returns its report."""

    name: ClassVar[str] = SUBAGENT_TOOL_NAME
    source_kind: ClassVar[None] = None  # its workers' own results are the sources
    description: ClassVar[str] = DESCRIPTION
    params: ClassVar[type[BaseModel]] = SubagentParams
    concurrency_safe: ClassVar[bool] = True
    compactable: ClassVar[bool] = False

    def __init__(self, tools: Sequence[Tool[Any]], *, context_window: int | None = None,
                 fast_context_window: int | None = None) -> None:
        """``tools``: the parent's tools, from which each worker's allowlist is taken.

        Context windows not given here are resolved from the settings' model when a worker
        starts (as the agent factory does for the parent).
        """
        self.tools = [tool for tool in tools if tool.name != SUBAGENT_TOOL_NAME]
        self.context_window = context_window
        self.fast_context_window = fast_context_window

    def add_tools(self, tools: Sequence[Tool[Any]]) -> None:
        """Tools that join the session after the registry (its MCP servers' tools)."""
        have = {tool.name for tool in self.tools}
        self.tools.extend(t for t in tools if t.name != SUBAGENT_TOOL_NAME and t.name not in have)

    async def run(self, args: SubagentParams, ctx: ToolContext) -> str:
        """Run the worker to its final answer; raise ``ToolFailure`` when it has none."""
        if ctx.model is None:
            raise ToolFailure("spawn_subagent needs a model, and none is configured for this "
                              "run. Do the sub-task yourself with your own tools.")
        meter = TokenMeter()
        progress = WorkerProgress(meter)
        if ctx.run_worker is None:
            raise ToolFailure("spawn_subagent cannot run here (no worker runner in this "
                              "session). Do the sub-task yourself with your own tools.")
        spec = self._worker(args, ctx, meter)
        ctx.progress(progress.status())
        done: Done | None = None
        record_problem = ""
        async with aclosing(ctx.run_worker(spec)) as events:
            async for event in events:
                if isinstance(event, Done):
                    done = event
                elif isinstance(event, StreamProgress):
                    continue
                elif isinstance(event, ScratchpadError):
                    record_problem = f"{event.path}: {event.message}"
                    ctx.progress(f"⚠ The worker's record is incomplete ({record_problem}).")
                elif progress.observe(event):
                    ctx.progress(progress.status())
        if done is None:
            done = Done(answer="the worker's run ended without a result", status="error")
        failure = failure_text(done, args.description, args.subagent_type)
        progress.activity = "Failed" if failure else "Done"
        ctx.progress(progress.status(done=True, failed=failure is not None))
        if record_problem:
            progress.record_problem = record_problem
        if failure is not None:
            raise ToolFailure(failure)
        return result_text(done.answer.strip(), args.subagent_type, progress)

    def _worker(self, args: SubagentParams, ctx: ToolContext, meter: TokenMeter) -> WorkerSpec:
        assert ctx.model is not None
        parent_fast = ctx.fast_model or ctx.model
        window, fast_window = self._windows(ctx, same_fast=parent_fast is ctx.model)
        model = MeteredModel(ctx.model, meter)
        fast = model if parent_fast is ctx.model else MeteredModel(parent_fast, meter)
        settings = dataclasses.replace(
            ctx.settings, max_iterations=MAX_SUBAGENT_ITERATIONS,
            memory=dataclasses.replace(ctx.settings.memory, enabled=False),
        )
        return WorkerSpec(
            settings=settings, model=model, fast_model=fast, context_window=window,
            fast_context_window=fast_window,
            tools=tuple(worker_tools(self.tools, args.subagent_type)),
            system_prompt=worker_prompt(args.subagent_type),
            query=subagent_query(args.task, args.context),
        )

    def _windows(self, ctx: ToolContext, *, same_fast: bool) -> tuple[int, int]:
        window = self.context_window or ctx.context_window
        fast_window = self.fast_context_window or ctx.fast_context_window
        if isinstance(window, int) and isinstance(fast_window, int):
            return window, fast_window
        resolved_window, resolved_fast = _resolved_windows(ctx, same_fast=same_fast)
        return (window if isinstance(window, int) else resolved_window,
                fast_window if isinstance(fast_window, int) else resolved_fast)


def _resolved_windows(ctx: ToolContext, *, same_fast: bool) -> tuple[int, int]:
    """The context windows of the configured model and its fast model."""
    from dexter.config import ConfigError
    from dexter.providers.registry import DEFAULT_CONTEXT_WINDOW, resolve_model

    try:
        resolved = resolve_model(ctx.settings.model, ctx.settings)
    except ConfigError:
        return DEFAULT_CONTEXT_WINDOW, DEFAULT_CONTEXT_WINDOW
    if same_fast or resolved.fast_model == resolved.name:
        return resolved.context_window, resolved.context_window
    try:
        fast_window = resolve_model(resolved.fast_model, ctx.settings).context_window
    except ConfigError:
        fast_window = resolved.context_window
    return resolved.context_window, fast_window
