"""``spawn_subagent``: worker agents on a scripted model, their progress, and the group view."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel
from rich.console import Console

from dexter.agent.loop import Agent, AgentSetup, worker_runner
from dexter.config import Settings
from dexter.events import (
    Done,
    Event,
    RunStart,
    SubagentStatus,
    ToolEnd,
    ToolError,
    ToolProgress,
    ToolStart,
)
from dexter.messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from dexter.providers.base import ModelRequest
from dexter.providers.errors import ProviderError
from dexter.render.format import progress_text, subagent_header
from dexter.render.live import LiveRenderer
from dexter.render.plain import PlainRenderer
from dexter.testing.fakellm import Dynamic, FakeLLM, RecordedRequest, Reply, ToolCallSpec, Usage
from dexter.testing.scripted import Reply as ScriptedReply
from dexter.testing.scripted import ScriptedModel
from dexter.tools.base import Tool, ToolContext, ToolFailure
from dexter.tools.registry import build_tools
from dexter.tools.subagent import (
    MAX_SUBAGENT_ITERATIONS,
    SubagentParams,
    SubagentTool,
    TokenMeter,
    WorkerProgress,
    subagent_query,
    worker_tools,
)
from tests.cli_helpers import cli_env, run_cli

# -- fixtures -------------------------------------------------------------------------------


class QueryArgs(BaseModel):
    query: str = ""
    seconds: float = 0.0


class FakeTool(Tool[QueryArgs]):
    """A read-only stand-in for a real tool; ``name`` is set per subclass."""

    description: ClassVar[str] = "A stand-in."
    params: ClassVar[type[BaseModel]] = QueryArgs
    concurrency_safe: ClassVar[bool] = True
    log: ClassVar[list[tuple[str, str, float]]] = []

    async def run(self, args: QueryArgs, ctx: ToolContext) -> str:
        FakeTool.log.append(("start", args.query, time.monotonic()))
        await asyncio.sleep(args.seconds)
        FakeTool.log.append(("end", args.query, time.monotonic()))
        return json.dumps({"data": f"{self.name} found {args.query}"})


def fake_tool(tool_name: str, *, approval: bool = False) -> FakeTool:
    cls: type[FakeTool] = type(f"Fake_{tool_name}", (FakeTool,),
                               {"name": tool_name, "needs_approval": approval})
    return cls()


ALL_NAMES = ("get_financials", "get_market_data", "read_filings", "stock_screener", "web_search",
             "web_fetch", "read_file", "calculator", "memory_search", "memory_get",
             "memory_update", "bash", "ask_user_question")


def every_tool() -> list[Tool[Any]]:
    tools: list[Tool[Any]] = [fake_tool(name) for name in ALL_NAMES]
    tools.append(fake_tool("write_file", approval=True))
    return tools


def settings_for(tmp_path: Path) -> Settings:
    settings = Settings(home=str(tmp_path / "home"), scratchpad_dir=str(tmp_path / "pads"))
    settings.memory.enabled = False
    return settings


def context_for(tmp_path: Path, model: ScriptedModel, messages: list[Any] | None = None) -> ToolContext:
    sink = messages if messages is not None else []
    return ToolContext(settings=settings_for(tmp_path), cwd=tmp_path, home=tmp_path / "home",
                       progress=sink.append, model=model, fast_model=model,
                       run_worker=worker_runner(tmp_path))


def call(name: str, call_id: str, **arguments: Any) -> AssistantMessage:
    return AssistantMessage(tool_calls=(ToolCall(call_id, name, arguments),))


def is_worker(request: ModelRequest) -> bool:
    return request.system.startswith("You are a worker agent")


def worker_query(request: ModelRequest) -> str:
    first = request.messages[0]
    assert isinstance(first, UserMessage)
    return first.content


def tool_results(request: ModelRequest) -> list[ToolResultMessage]:
    return [m for m in request.messages if isinstance(m, ToolResultMessage)]


def params(**kwargs: Any) -> SubagentParams:
    return SubagentParams.model_validate({"description": "NVDA revenue", "task": "Find it.",
                                          **kwargs})


def payloads(messages: list[Any]) -> list[dict[str, Any]]:
    assert all(isinstance(m, SubagentStatus) for m in messages)  # typed, never a text protocol
    return [dataclasses.asdict(m) for m in messages]


# -- one worker -----------------------------------------------------------------------------


async def test_worker_runs_a_tool_then_answers_with_a_footer(tmp_path: Path) -> None:
    model = ScriptedModel([
        call("get_financials", "w1", query="NVDA revenue FY2024"),
        "NVIDIA revenue was $60.9B in FY2024 (income statement, financialdatasets.ai).",
    ])
    tool = SubagentTool([fake_tool("get_financials")])
    messages: list[str] = []
    args = params(task="Find NVIDIA's FY2024 revenue.", context="The user compares chip makers.")

    result = await tool.run(args, context_for(tmp_path, model, messages))

    answer, footer = result.rsplit("\n\n", 1)
    assert answer == "NVIDIA revenue was $60.9B in FY2024 (income statement, financialdatasets.ai)."
    assert footer.startswith("[general-purpose subagent · 1 tool use · ")
    assert footer.endswith(" tokens]")
    first = model.requests[0]
    assert worker_query(first) == ("The user compares chip makers.\n\n---\n\n"
                                   "Task: Find NVIDIA's FY2024 revenue.")
    assert "cannot see its conversation" in first.system
    assert "returned verbatim" in first.system
    assert [t.name for t in first.tools] == ["get_financials"]
    assert "NVDA revenue FY2024" in tool_results(model.requests[1])[0].content
    progress = payloads(messages)
    assert [p["activity"] for p in progress] == ["Starting", "Ran get_financials", "Done"]
    assert [p["done"] for p in progress] == [False, False, True]
    assert [p["tool_use_count"] for p in progress] == [0, 1, 1]
    assert progress[-1]["tokens"] > progress[1]["tokens"] > 0
    assert f"{progress[-1]['tokens']:,} tokens]" in footer


async def test_worker_has_its_own_scratchpad(tmp_path: Path) -> None:
    model = ScriptedModel(["Done: nothing to look up."])
    await SubagentTool([]).run(params(), context_for(tmp_path, model))
    pads = list((tmp_path / "pads").glob("*.jsonl"))
    assert len(pads) == 1
    assert "Find it." in pads[0].read_text()


def test_query_is_the_task_alone_without_context() -> None:
    assert subagent_query("Find it.") == "Find it."
    assert subagent_query("Find it.", "   ") == "Find it."
    assert subagent_query("Find it.", "bg") == "bg\n\n---\n\nTask: Find it."


def test_bad_arguments_are_named() -> None:
    tool = SubagentTool([])
    with pytest.raises(ToolFailure, match="description") as info:
        tool.parse_args({"description": "  ", "task": "x"})
    assert "task" not in str(info.value)
    with pytest.raises(ToolFailure, match="subagent_type"):
        tool.parse_args({"description": "x", "task": "y", "subagent_type": "coder"})
    assert tool.concurrency_safe and not tool.compactable and not tool.needs_approval


# -- allowlists and depth -------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "expected"), [
    ("general-purpose", ["get_financials", "get_market_data", "read_filings", "stock_screener",
                         "web_search", "web_fetch", "read_file", "calculator", "memory_search",
                         "memory_get"]),
    ("research", ["web_search", "web_fetch", "read_filings", "get_market_data"]),
    ("analysis", ["get_financials", "get_market_data", "stock_screener", "read_filings",
                  "calculator"]),
])
def test_each_type_gets_its_allowlist_and_never_bash_ask_spawn_or_writes(
        kind: str, expected: list[str]) -> None:
    tools = every_tool()
    tools.append(SubagentTool(tools))
    names = [t.name for t in worker_tools(tools, kind)]
    assert names == expected
    assert not {"bash", "ask_user_question", "spawn_subagent", "write_file",
                "memory_update"} & set(names)


def test_tools_that_are_not_registered_drop_out() -> None:
    tools = [t for t in every_tool() if not t.name.startswith("memory_")]
    names = [t.name for t in worker_tools(tools, "general-purpose")]
    assert "memory_search" not in names and "read_file" in names


async def test_worker_model_is_offered_only_the_allowlist(tmp_path: Path) -> None:
    tools = every_tool()
    model = ScriptedModel(["Research report."])
    await SubagentTool(tools).run(params(subagent_type="research"), context_for(tmp_path, model))
    offered = [spec.name for spec in model.requests[0].tools]
    assert offered == ["web_search", "web_fetch", "read_filings", "get_market_data"]
    assert "research" in model.requests[0].system


def test_registry_adds_spawn_subagent_last_and_never_inside_a_worker() -> None:
    tools = build_tools(Settings(), interactive=True)
    assert tools[-1].name == "spawn_subagent"
    spawner = tools[-1]
    assert isinstance(spawner, SubagentTool)
    inner = {t.name for t in spawner.tools}
    assert "spawn_subagent" not in inner and "bash" in inner  # filtered per worker, not here
    for kind in ("general-purpose", "research", "analysis"):
        assert not {"spawn_subagent", "bash", "ask_user_question"} & \
            {t.name for t in worker_tools(spawner.tools, kind)}


async def test_a_worker_calling_spawn_subagent_gets_an_unknown_tool_error(tmp_path: Path) -> None:
    model = ScriptedModel([
        call("spawn_subagent", "w1", description="nested", task="go deeper"),
        "I could not delegate, so here is what I know.",
    ])
    messages: list[str] = []
    result = await SubagentTool([]).run(params(), context_for(tmp_path, model, messages))
    assert "Unknown tool 'spawn_subagent'" in tool_results(model.requests[1])[0].content
    assert result.startswith("I could not delegate")
    progress = payloads(messages)
    assert progress[1]["activity"] == "spawn_subagent failed"
    assert progress[-1]["tool_use_count"] == 1


# -- limits and failures --------------------------------------------------------------------


@pytest.mark.parametrize(("tool_rounds", "ok"), [(MAX_SUBAGENT_ITERATIONS - 1, True),
                                                 (MAX_SUBAGENT_ITERATIONS, False)])
async def test_worker_stops_at_eight_model_turns(tmp_path: Path, tool_rounds: int, ok: bool) -> None:
    replies: list[ScriptedReply] = [call("web_search", f"w{i}", query=f"try {i}")
                                    for i in range(tool_rounds)]
    replies.append("Final report.")
    model = ScriptedModel(replies)
    messages: list[str] = []
    tool = SubagentTool([fake_tool("web_search")])
    ctx = context_for(tmp_path, model, messages)
    if ok:
        assert (await tool.run(params(), ctx)).startswith("Final report.")
    else:
        with pytest.raises(ToolFailure, match="limit of 8 model turns") as info:
            await tool.run(params(), ctx)
        assert "'NVDA revenue' (general-purpose)" in str(info.value)
        assert payloads(messages)[-1] == {**payloads(messages)[-1], "done": True,
                                          "failed": True, "activity": "Failed"}
    assert len(model.requests) == min(tool_rounds + 1, MAX_SUBAGENT_ITERATIONS)


async def test_provider_failure_is_a_clear_tool_failure(tmp_path: Path) -> None:
    model = ScriptedModel([ProviderError("auth", "The OpenAI key was rejected (401).")])
    with pytest.raises(ToolFailure) as info:
        await SubagentTool([]).run(params(), context_for(tmp_path, model))
    assert str(info.value) == ("Subagent 'NVDA revenue' (general-purpose) failed: The OpenAI key "
                               "was rejected (401).")


async def test_empty_answer_is_a_failure(tmp_path: Path) -> None:
    with pytest.raises(ToolFailure, match="without writing an answer"):
        await SubagentTool([]).run(params(), context_for(tmp_path, ScriptedModel(["  "])))


async def test_no_model_is_a_failure(tmp_path: Path) -> None:
    ctx = context_for(tmp_path, ScriptedModel())
    ctx.model = None
    with pytest.raises(ToolFailure, match="needs a model"):
        await SubagentTool([]).run(params(), ctx)


async def test_cancelling_the_call_cancels_the_worker_run(tmp_path: Path) -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    class Blocking(FakeTool):
        name: ClassVar[str] = "web_search"

        async def run(self, args: QueryArgs, ctx: ToolContext) -> str:
            started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.set()
                raise
            return "never"

    model = ScriptedModel([call("web_search", "w1", query="slow"), "never used"])
    task = asyncio.create_task(SubagentTool([Blocking()]).run(params(), context_for(tmp_path, model)))
    await asyncio.wait_for(started.wait(), 2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cancelled.is_set()
    assert len(model.requests) == 1 and len(model.replies) == 1


# -- parallel workers under a parent agent --------------------------------------------------


def parent_and_workers(worker_seconds: float) -> Callable[[ModelRequest], ScriptedReply]:
    """Answers every request from what it holds: the parent spawns two workers, each worker
    searches once and reports, then the parent answers from both reports."""

    def respond(request: ModelRequest) -> ScriptedReply:
        if is_worker(request):
            company = "NVDA" if "NVDA" in worker_query(request) else "AMD"
            if not tool_results(request):
                return call("web_search", f"s-{company}", query=company, seconds=worker_seconds)
            return f"{company} report: revenue grew."
        results = tool_results(request)
        if not results:
            return AssistantMessage(tool_calls=(
                ToolCall("a1", "spawn_subagent", {"description": "NVDA revenue",
                                                   "task": "NVDA growth",
                                                   "subagent_type": "research"}),
                ToolCall("a2", "spawn_subagent", {"description": "AMD revenue",
                                                   "task": "AMD growth",
                                                   "subagent_type": "research"}),
            ))
        return "Both grew. " + " | ".join(r.content.splitlines()[0] for r in results)

    return respond


async def test_two_workers_in_one_turn_run_in_parallel(tmp_path: Path) -> None:
    FakeTool.log.clear()
    model = ScriptedModel([parent_and_workers(0.3)] * 6)
    search = fake_tool("web_search")
    tools: list[Tool[Any]] = [search, SubagentTool([search])]
    agent = Agent(AgentSetup(settings=settings_for(tmp_path), model=model, fast_model=model,
                             context_window=100_000, fast_context_window=100_000, tools=tools,
                             system_prompt="lead", cwd=tmp_path))
    events: list[Event] = []
    async for event in agent.run("Compare NVDA and AMD"):
        events.append(event)

    done = events[-1]
    assert isinstance(done, Done) and done.status == "ok"
    assert done.answer == "Both grew. NVDA report: revenue grew. | AMD report: revenue grew."
    starts = [t for kind, _, t in FakeTool.log if kind == "start"]
    ends = [t for kind, _, t in FakeTool.log if kind == "end"]
    assert len(starts) == 2 and max(starts) < min(ends)  # both searches overlapped
    spawn_ends = [e for e in events if isinstance(e, ToolEnd) and e.tool == "spawn_subagent"]
    assert len(spawn_ends) == 2
    progress = [e.subagent for e in events if isinstance(e, ToolProgress)]
    assert all(p is not None for p in progress)
    assert sum(1 for p in progress if p is not None and p.done) == 2
    assert len(list((tmp_path / "pads").glob("*.jsonl"))) == 3  # the lead's and one per worker


# -- progress -------------------------------------------------------------------------------


def test_activity_rolls_up_searches_and_reads() -> None:
    progress = WorkerProgress(TokenMeter())
    activities = []
    for index, tool in enumerate(["get_financials", "web_search", "web_fetch", "web_search",
                                  "calculator"]):
        assert progress.observe(ToolStart(tool=tool, args={}, tool_call_id=str(index)))
        activities.append(progress.activity)
    assert activities == ["Ran get_financials", "Ran web_search", "1 search, 1 read",
                          "2 searches, 1 read", "Ran calculator"]
    assert not progress.observe(ToolEnd(tool="calculator", args={}, result="", duration_ms=1,
                                        tool_call_id="4"))
    assert progress.observe(ToolError(tool="web_fetch", error="404", tool_call_id="4"))
    assert progress.tool_use_count == 5  # the failed call had already started
    status = progress.status()
    assert (status.activity, status.tool_use_count, status.done) == ("web_fetch failed", 5, False)


def test_progress_status_reads_as_text_and_survives_json() -> None:
    from dexter.events import event_from_dict

    status = SubagentStatus("2 searches, 1 read", tool_use_count=3, tokens=3200)
    assert progress_text("ignored", status) == "2 searches, 1 read · 3 tool uses · 3.2k tokens"
    assert progress_text("Fetching page 2") == "Fetching page 2"
    event = ToolProgress("spawn_subagent", "2 searches, 1 read", "c1", status)
    assert event.to_dict()["subagent"]["tool_use_count"] == 3
    assert event_from_dict(json.loads(json.dumps(event.to_dict()))) == event


@pytest.mark.parametrize(("count", "running", "failed", "kind", "text"), [
    (1, True, 0, "", "Running 1 agent…"),
    (3, True, 0, "research", "Running 3 research agents…"),
    (2, False, 0, "", "2 agents finished"),
    (2, False, 1, "analysis", "2 analysis agents finished · 1 failed"),
])
def test_group_header(count: int, running: bool, failed: int, kind: str, text: str) -> None:
    assert subagent_header(count, running=running, failed=failed, kind=kind) == text


# -- the group on screen --------------------------------------------------------------------


def progress_event(call_id: str, uses: int, tokens: int, activity: str,
                   done: bool = False) -> ToolProgress:
    return ToolProgress(tool="spawn_subagent", tool_call_id=call_id, message=activity,
                        subagent=SubagentStatus(activity, uses, tokens, done))


def spawn(call_id: str, description: str, kind: str = "research") -> ToolStart:
    return ToolStart(tool="spawn_subagent", tool_call_id=call_id,
                     args={"description": description, "task": "long task text " * 20,
                           "subagent_type": kind})


GROUP_RUN: list[Event] = [
    spawn("a1", "NVDA revenue trend"),
    spawn("a2", "AMD revenue trend"),
    progress_event("a1", 0, 0, "Starting"),
    progress_event("a2", 0, 0, "Starting"),
    progress_event("a1", 3, 3200, "2 searches, 1 read"),
    progress_event("a2", 1, 880, "Ran get_financials"),
]
GROUP_END: list[Event] = [
    progress_event("a1", 4, 5100, "Done", done=True),
    ToolEnd(tool="spawn_subagent", args={"description": "NVDA revenue trend"}, result="r",
            duration_ms=12_300, tool_call_id="a1"),
    ToolError(tool="spawn_subagent", tool_call_id="a2", duration_ms=8_000,
              error="Subagent 'AMD revenue trend' (research) reached its limit of 8 model turns"),
]


def console(width: int) -> Console:
    return Console(record=True, width=width, color_system=None, file=io.StringIO())


def live_text(renderer: LiveRenderer, width: int) -> list[str]:
    con = console(width)
    con.print(renderer.live_region())
    return [line.rstrip() for line in con.export_text().splitlines()]


def group_renderer(con: Console) -> LiveRenderer:
    renderer = LiveRenderer(con, live=False, clock=lambda: 100.0, rng=random.Random(3))
    renderer.handle(RunStart(query="Compare NVDA and AMD", model="m", provider="p"))
    for event in GROUP_RUN:
        renderer.handle(event)
    return renderer


def test_running_group_shows_each_agent_with_its_progress() -> None:
    renderer = group_renderer(console(100))
    lines = live_text(renderer, 100)
    assert lines[:5] == [
        "⏺ Running 2 research agents…",
        "   ├─ NVDA revenue trend · 3 tool uses · 3.2k tokens",
        "   │  ⎿  2 searches, 1 read",
        "   └─ AMD revenue trend · 1 tool use · 880 tokens",
        "      ⎿  Ran get_financials",
    ]


def test_finished_group_is_printed_once_with_the_failure() -> None:
    con = console(100)
    renderer = group_renderer(con)
    renderer.handle(GROUP_END[0])
    renderer.handle(GROUP_END[1])
    assert "agents finished" not in con.export_text(clear=False)  # one agent still runs
    assert "Done in 12.3s" in "\n".join(live_text(renderer, 100))
    renderer.handle(GROUP_END[2])
    renderer.close()
    lines = [line.rstrip() for line in con.export_text().splitlines()]
    start = lines.index("⏺ 2 research agents finished · 1 failed")
    assert lines[start + 1:start + 5] == [
        "   ├─ NVDA revenue trend · 4 tool uses · 5.1k tokens",
        "   │  ⎿  Done in 12.3s",
        "   └─ AMD revenue trend · 1 tool use · 880 tokens",
        "      ⎿  Failed: Subagent 'AMD revenue trend' (research) reached its limit…",
    ]
    assert sum("agents finished" in line for line in lines) == 1
    assert not live_text(renderer, 100)


def test_group_wraps_under_its_tree_at_width_40() -> None:
    con = console(40)
    renderer = group_renderer(con)
    lines = live_text(renderer, 40)
    assert all(len(line) <= 40 for line in lines)
    assert lines[0] == "⏺ Running 2 research agents…"
    assert lines[1] == "   ├─ NVDA revenue trend · 3 tool uses ·"
    assert lines[2] == "      3.2k tokens"  # the wrap stays right of the tree
    assert lines[3] == "   │  ⎿  2 searches, 1 read"
    for event in GROUP_END:
        renderer.handle(event)
    renderer.close()
    printed = [line.rstrip() for line in con.export_text().splitlines()]
    assert all(len(line) <= 40 for line in printed)
    assert "⏺ 2 research agents finished · 1 failed" in printed
    assert "      ⎿  Failed: Subagent 'AMD revenue" in printed


def test_mixed_types_name_the_type_per_agent_and_interrupt_marks_the_rest() -> None:
    con = console(100)
    renderer = LiveRenderer(con, live=False, clock=lambda: 100.0)
    renderer.handle(RunStart(query="q", model="m", provider="p"))
    renderer.handle(spawn("a1", "Peers screen", kind="analysis"))
    renderer.handle(spawn("a2", "News scan", kind="general-purpose"))
    assert live_text(renderer, 100)[:2] == ["⏺ Running 2 agents…",
                                            "   ├─ Peers screen (analysis)"]
    renderer.close()
    out = con.export_text()
    assert "2 agents finished" in out and out.count("Interrupted") == 2


def test_plain_lines_name_each_agent() -> None:
    stream = io.StringIO()
    renderer = PlainRenderer(stream)
    for event in [*GROUP_RUN, *GROUP_END]:
        renderer.handle(event)
    assert stream.getvalue().splitlines() == [
        "→ Agent: NVDA revenue trend (research)",
        "→ Agent: AMD revenue trend (research)",
        "  ✓ NVDA revenue trend · 4 tool uses · 5.1k tokens (12.3s)",
        "  ✗ AMD revenue trend: Error: Subagent 'AMD revenue trend' (research) reached its limit "
        "of 8 model tur… (8.0s)",
    ]


# -- end to end -----------------------------------------------------------------------------


def _fake_step(request: RecordedRequest) -> Reply:
    """The whole conversation, answered from each request: lead or worker, and how far along."""
    body = request.body
    text = json.dumps(body)
    messages = body.get("messages", [])
    system = messages[0].get("content", "") if messages else ""
    has_results = any(m.get("role") == "tool" for m in messages)
    if "You are a worker agent" in str(system):
        company = "NVDA" if "NVDA growth" in text else "AMD"
        if not has_results:
            return Reply(tool_calls=[ToolCallSpec("calculator", {"expression": "2 + 2"})],
                         usage=Usage(500, 10))
        return Reply(text=f"{company} worker report: 4.", usage=Usage(600, 10))
    if not has_results:
        return Reply(text="Splitting the work.", usage=Usage(900, 30), tool_calls=[
            ToolCallSpec("spawn_subagent", {"description": "NVDA growth", "task": "NVDA growth",
                                            "subagent_type": "analysis"}),
            ToolCallSpec("spawn_subagent", {"description": "AMD growth", "task": "AMD growth",
                                            "subagent_type": "analysis"}),
        ])
    return Reply(text="Both reports say 4.", usage=Usage(1500, 10))


@pytest.mark.e2e
def test_ask_json_runs_two_subagents_end_to_end(tmp_path: Path) -> None:
    with FakeLLM() as fake:
        fake.enqueue(*[Dynamic(_fake_step) for _ in range(6)])
        result = run_cli(["ask", "--json", "--model", "gpt-5.6-sol", "Compare NVDA and AMD"],
                         cwd=tmp_path, env=cli_env(fake, tmp_path))
        assert result.code == 0, result.stderr
        fake.assert_no_violations()
        assert fake.remaining() == 0
        worker_requests = [r for r in fake.requests_for("openai")
                           if "You are a worker agent" in json.dumps(r.body)]
    assert len(worker_requests) == 4
    for request in worker_requests:
        names = {t["function"]["name"] for t in request.body["tools"]}
        assert names == {"get_financials", "get_market_data", "stock_screener", "read_filings",
                         "calculator"}
    events = result.events
    done = events[-1]
    assert done["type"] == "done" and done["answer"] == "Both reports say 4."
    spawn_ends = [e for e in events if e["type"] == "tool_end" and e["tool"] == "spawn_subagent"]
    assert sorted(e["result"].split("\n\n")[0] for e in spawn_ends) == [
        "AMD worker report: 4.", "NVDA worker report: 4."]
    assert all("[analysis subagent · 1 tool use · 1,120 tokens]" in e["result"]
               for e in spawn_ends)
    finals = [e["subagent"] for e in events if e["type"] == "tool_progress"]
    assert sum(1 for p in finals if p is not None and p["done"]) == 2
    assert len(result.scratchpads()) == 3


async def test_a_worker_whose_record_fails_says_so_in_its_result(tmp_path: Path) -> None:
    from dexter.events import ScratchpadError

    async def runner(_spec: Any) -> Any:
        yield ScratchpadError(path="/pads/worker.jsonl", message="No space left on device")
        yield Done(answer="Revenue was $60.9B.", status="ok")

    messages: list[Any] = []
    ctx = dataclasses.replace(context_for(tmp_path, ScriptedModel([])), run_worker=runner,
                              progress=messages.append)
    result = await SubagentTool([]).run(params(), ctx)
    assert result.startswith("Revenue was $60.9B.")
    assert result.endswith("[the worker's record is incomplete: /pads/worker.jsonl: "
                           "No space left on device]")
    assert "⚠ The worker's record is incomplete (/pads/worker.jsonl: No space left on device)." \
        in [m for m in messages if isinstance(m, str)]
