"""The agent loop and the tool executor, driven by a scripted in-process model."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel

from dexter.agent.conversation import Conversation
from dexter.agent.executor import ApprovalRequest, ToolExecutor, TurnResults
from dexter.agent.loop import Agent, AgentSetup
from dexter.agent.queue import MessageQueue
from dexter.config import Settings
from dexter.events import (
    ApprovalChoice,
    Compaction,
    ContextCleared,
    Done,
    Event,
    QueueDrain,
    Thinking,
    ToolDenied,
    ToolEnd,
    ToolError,
    ToolLimit,
    ToolStart,
)
from dexter.messages import AssistantMessage, ToolCall, ToolResultMessage, Usage, UserMessage
from dexter.permissions.base import DefaultPermissions
from dexter.providers.base import ModelResponse
from dexter.providers.errors import ProviderError
from dexter.testing.scripted import ScriptedModel
from dexter.tools.base import Tool, ToolContext, ToolFailure
from dexter.tools.calculator import CalculatorTool


class SleepArgs(BaseModel):
    seconds: float = 0.2
    label: str = ""


class SleepTool(Tool[SleepArgs]):
    """A concurrency-safe tool that waits, to prove batches overlap."""

    name: ClassVar[str] = "sleepy_read"
    description: ClassVar[str] = "Wait, then return the label."
    params: ClassVar[type[BaseModel]] = SleepArgs
    concurrency_safe: ClassVar[bool] = True
    compactable: ClassVar[bool] = True
    log: ClassVar[list[tuple[str, str, float]]] = []

    async def run(self, args: SleepArgs, ctx: ToolContext) -> str:
        SleepTool.log.append(("start", args.label, time.monotonic()))
        ctx.progress(f"waiting {args.seconds}s")
        await asyncio.sleep(args.seconds)
        SleepTool.log.append(("end", args.label, time.monotonic()))
        return f"slept {args.label}"


class WriteArgs(BaseModel):
    text: str


class WriteTool(Tool[WriteArgs]):
    """A serial tool that needs approval."""

    name: ClassVar[str] = "fake_write"
    description: ClassVar[str] = "Pretend to write."
    params: ClassVar[type[BaseModel]] = WriteArgs
    needs_approval: ClassVar[bool] = True

    async def run(self, args: WriteArgs, ctx: ToolContext) -> str:
        return f"wrote {args.text}"


class BoomTool(Tool[WriteArgs]):
    name: ClassVar[str] = "boom"
    description: ClassVar[str] = "Always fails."
    params: ClassVar[type[BaseModel]] = WriteArgs
    concurrency_safe: ClassVar[bool] = True

    async def run(self, args: WriteArgs, ctx: ToolContext) -> str:
        if args.text == "expected":
            raise ToolFailure("nothing found for that ticker")
        raise RuntimeError("kaboom")


def call(name: str, call_id: str, **args: Any) -> ToolCall:
    return ToolCall(call_id, name, args)


def settings_for(tmp_path: Path, **context: Any) -> Settings:
    settings = Settings(home=str(tmp_path / "home"), scratchpad_dir=str(tmp_path / "pads"))
    for key, value in context.items():
        setattr(settings.context, key, value)
    settings.memory.enabled = False
    return settings


def make_agent(tmp_path: Path, model: ScriptedModel, tools: list[Tool[Any]] | None = None,
               **kwargs: Any) -> Agent:
    settings = kwargs.pop("settings", None) or settings_for(tmp_path)
    return Agent(AgentSetup(
        settings=settings, model=model, fast_model=kwargs.pop("fast_model", model),
        context_window=kwargs.pop("window", 128_000), fast_context_window=128_000,
        tools=tools if tools is not None else [CalculatorTool(), SleepTool(), WriteTool(), BoomTool()],
        system_prompt="You are a test agent.", cwd=tmp_path, **kwargs,
    ))


async def collect(agent: Agent, query: str = "question") -> list[Event]:
    return [event async for event in agent.run(query)]


def ctx_for(tmp_path: Path) -> ToolContext:
    return ToolContext(settings=settings_for(tmp_path), cwd=tmp_path, home=tmp_path / "home")


# ---------------------------------------------------------------- executor


async def run_executor(executor: ToolExecutor, calls: list[ToolCall]) -> tuple[list[Event], TurnResults]:
    events: list[Event] = []
    final: TurnResults | None = None
    async for item in executor.execute(calls):
        if isinstance(item, TurnResults):
            final = item
        else:
            events.append(item)
    assert final is not None
    return events, final


async def test_parallel_batch_overlaps_and_keeps_call_order(tmp_path: Path) -> None:
    SleepTool.log.clear()
    executor = ToolExecutor([SleepTool()], ctx_for(tmp_path), permissions=DefaultPermissions())
    calls = [call("sleepy_read", f"c{i}", seconds=0.3 - i * 0.1, label=str(i)) for i in range(3)]
    events, final = await run_executor(executor, calls)
    order = [kind for kind, _, _ in SleepTool.log]
    assert order[:3] == ["start"] * 3, f"the calls did not overlap: {SleepTool.log}"
    assert [r.tool_call_id for r in final.results] == ["c0", "c1", "c2"]
    assert [r.content for r in final.results] == ["slept 0", "slept 1", "slept 2"]
    # the shortest call finished first: events are yielded as they happen
    ends = [e.tool_call_id for e in events if isinstance(e, ToolEnd)]
    assert ends == ["c2", "c1", "c0"]
    assert any(e.type == "tool_progress" for e in events)


def test_partition_runs_unsafe_calls_alone(tmp_path: Path) -> None:
    executor = ToolExecutor([SleepTool(), WriteTool()], ctx_for(tmp_path), permissions=DefaultPermissions())
    calls = [call("sleepy_read", "a"), call("sleepy_read", "b"), call("fake_write", "c", text="x"),
             call("sleepy_read", "d"), call("nope", "e"), call("sleepy_read", "f")]
    batches = [[c.id for c in batch] for batch in executor.partition(calls)]
    assert batches == [["a", "b"], ["c"], ["d"], ["e"], ["f"]]


async def test_concurrency_cap_is_respected(tmp_path: Path) -> None:
    SleepTool.log.clear()
    executor = ToolExecutor([SleepTool()], ctx_for(tmp_path), permissions=DefaultPermissions(),
                            max_concurrency=2)
    calls = [call("sleepy_read", f"c{i}", seconds=0.05, label=str(i)) for i in range(6)]
    await run_executor(executor, calls)
    running = peak = 0
    for kind, _label, _t in sorted(SleepTool.log, key=lambda e: e[2]):
        running += 1 if kind == "start" else -1
        peak = max(peak, running)
    assert peak == 2


async def test_tool_exceptions_become_error_results(tmp_path: Path) -> None:
    executor = ToolExecutor([BoomTool()], ctx_for(tmp_path), permissions=DefaultPermissions())
    events, final = await run_executor(executor, [call("boom", "x", text="expected"),
                                                  call("boom", "y", text="bug")])
    assert [r.is_error for r in final.results] == [True, True]
    assert final.results[0].content == "Error: nothing found for that ticker"
    assert "RuntimeError: kaboom" in final.results[1].content
    assert [type(e) for e in events].count(ToolError) == 2


async def test_denied_call_gets_a_clear_result_and_others_still_run(tmp_path: Path) -> None:
    asked: list[ApprovalRequest] = []

    async def deny(request: ApprovalRequest) -> ApprovalChoice:
        asked.append(request)
        return "deny"

    executor = ToolExecutor([WriteTool(), SleepTool()], ctx_for(tmp_path),
                            permissions=DefaultPermissions(), approver=deny)
    events, final = await run_executor(executor, [call("fake_write", "w", text="memo"),
                                                  call("sleepy_read", "r", seconds=0.0)])
    assert asked and asked[0].tool == "fake_write"
    assert final.denied == ["w"]
    assert final.results[0].is_error and "Denied" in final.results[0].content
    assert final.results[1].content == "slept "
    assert any(isinstance(e, ToolDenied) for e in events)


async def test_session_approval_is_remembered(tmp_path: Path) -> None:
    answers: list[ApprovalChoice] = ["allow-session"]

    async def approver(request: ApprovalRequest) -> ApprovalChoice:
        return answers.pop(0)

    executor = ToolExecutor([WriteTool()], ctx_for(tmp_path), permissions=DefaultPermissions(),
                            approver=approver)
    _, first = await run_executor(executor, [call("fake_write", "a", text="1")])
    _, second = await run_executor(executor, [call("fake_write", "b", text="2")])
    assert first.results[0].content == "wrote 1"
    assert second.results[0].content == "wrote 2"  # no second question: answers is empty


# ---------------------------------------------------------------- loop


async def test_tool_round_then_answer(tmp_path: Path) -> None:
    model = ScriptedModel([
        AssistantMessage(text="I will compute it.",
                         tool_calls=(call("calculator", "c1", expression="6*7"),)),
        "The answer is 42.",
    ])
    agent = make_agent(tmp_path, model)
    events = await collect(agent)
    done = events[-1]
    assert isinstance(done, Done) and done.status == "ok" and done.answer == "The answer is 42."
    assert any(isinstance(e, Thinking) and e.message == "I will compute it." for e in events)
    assert done.iterations == 2 and len(done.tool_calls) == 1
    second = model.requests[1]
    results = [m for m in second.messages if isinstance(m, ToolResultMessage)]
    assert '"result": 42' in results[0].content
    assert {t.name for t in second.tools} >= {"calculator", "sleepy_read"}


async def test_max_iterations_ends_with_the_best_answer_so_far(tmp_path: Path) -> None:
    model = ScriptedModel([*(AssistantMessage(tool_calls=(call("calculator", f"c{i}",
                                                               expression="1+1"),))
                             for i in range(3)),
                           AssistantMessage(text="So far: 1+1 is 2 [S1]; more was not checked.")])
    settings = settings_for(tmp_path)
    settings.max_iterations = 3
    events = await collect(make_agent(tmp_path, model, settings=settings))
    done = events[-1]
    assert isinstance(done, Done) and done.status == "max_iterations"
    assert done.answer == "So far: 1+1 is 2 [S1]; more was not checked."
    assert len(model.requests) == 4  # three research steps, then one request for the answer
    last = model.requests[-1].messages[-1]
    assert isinstance(last, UserMessage) and "used all 3 research steps" in last.content


async def test_max_iterations_without_a_last_answer_stops_with_a_message(tmp_path: Path) -> None:
    model = ScriptedModel([*(AssistantMessage(tool_calls=(call("calculator", f"c{i}",
                                                               expression="1+1"),))
                             for i in range(3)),
                           ProviderError("server", "The server failed.")])
    settings = settings_for(tmp_path)
    settings.max_iterations = 3
    events = await collect(make_agent(tmp_path, model, settings=settings))
    done = events[-1]
    assert isinstance(done, Done) and done.status == "max_iterations"
    assert "maximum of 3 iterations" in done.answer


async def test_provider_error_ends_the_run_with_its_message(tmp_path: Path) -> None:
    model = ScriptedModel([ProviderError("auth", "OpenAI rejected the API key in OPENAI_API_KEY.")])
    done = (await collect(make_agent(tmp_path, model)))[-1]
    assert isinstance(done, Done) and done.status == "error" and done.error_kind == "auth"
    assert "OPENAI_API_KEY" in done.answer


async def test_overflow_truncates_and_retries_then_reports(tmp_path: Path) -> None:
    overflow = ProviderError("context_overflow", "The request is too long for the model.")
    rounds = [AssistantMessage(tool_calls=(call("calculator", f"c{i}", expression=f"{i}+1"),))
              for i in range(5)]
    model = ScriptedModel([*rounds, overflow, "Answer after trimming."])
    events = await collect(make_agent(tmp_path, model))
    cleared = [e for e in events if isinstance(e, ContextCleared)]
    assert len(cleared) == 1 and cleared[0].reason == "overflow"
    assert isinstance(events[-1], Done) and events[-1].status == "ok"
    # the retry request kept at most 3 rounds (3 assistant messages with tool calls)
    retry = model.requests[-1]
    assert sum(isinstance(m, AssistantMessage) for m in retry.messages) <= 3
    # a request never holds a tool result without its call
    for request in model.requests:
        ids = {c.id for m in request.messages if isinstance(m, AssistantMessage) for c in m.tool_calls}
        assert all(m.tool_call_id in ids for m in request.messages if isinstance(m, ToolResultMessage))


async def test_overflow_twice_more_is_reported(tmp_path: Path) -> None:
    overflow = ProviderError("context_overflow", "The request is too long for the model.")
    rounds = [AssistantMessage(tool_calls=(call("calculator", f"c{i}", expression=f"{i}+1"),))
              for i in range(6)]
    model = ScriptedModel([*rounds, overflow, overflow, overflow])
    events = await collect(make_agent(tmp_path, model))
    assert sum(isinstance(e, ContextCleared) for e in events) == 2
    done = events[-1]
    assert isinstance(done, Done) and done.status == "error" and done.error_kind == "context_overflow"


async def test_queued_messages_are_drained_between_rounds(tmp_path: Path) -> None:
    queue = MessageQueue()
    queue.push("also check AMD")

    model = ScriptedModel([
        AssistantMessage(tool_calls=(call("calculator", "c1", expression="1+1"),)),
        "Both done.",
    ])
    events = await collect(make_agent(tmp_path, model, queue=queue))
    drains = [e for e in events if isinstance(e, QueueDrain)]
    assert drains and drains[0].merged_text == "also check AMD"
    sent = model.requests[1].messages
    assert any(isinstance(m, UserMessage) and m.content == "also check AMD" for m in sent)


async def test_denial_does_not_end_the_turn(tmp_path: Path) -> None:
    model = ScriptedModel([
        AssistantMessage(tool_calls=(call("fake_write", "w1", text="memo"),)),
        "I could not save the memo because writing was not approved.",
    ])
    events = await collect(make_agent(tmp_path, model))
    assert any(isinstance(e, ToolDenied) for e in events)
    done = events[-1]
    assert isinstance(done, Done) and done.status == "ok" and "not approved" in done.answer
    denial = next(m for m in model.requests[1].messages if isinstance(m, ToolResultMessage))
    assert denial.is_error and "Denied" in denial.content


async def test_repeated_calls_warn_and_the_note_reaches_the_model(tmp_path: Path) -> None:
    replies: list[Any] = [AssistantMessage(tool_calls=(call("sleepy_read", f"s{i}", seconds=0,
                                                             label="NVDA revenue quarterly"),))
                          for i in range(4)]
    model = ScriptedModel([*replies, "done"])
    events = await collect(make_agent(tmp_path, model))
    assert any(isinstance(e, ToolLimit) for e in events)
    notes = [m for r in model.requests for m in r.messages
             if isinstance(m, UserMessage) and m.kind == "note"]
    assert notes, "the soft-limit warning never reached the model"


async def test_scratchpad_holds_every_result_in_full(tmp_path: Path) -> None:
    big = "x" * 60_000
    model = ScriptedModel([AssistantMessage(tool_calls=(call("sleepy_read", "s1", seconds=0, label=big),)),
                           "ok"])
    agent = make_agent(tmp_path, model)
    await collect(agent)
    assert agent.scratchpad is not None
    assert big in agent.scratchpad.path.read_text(encoding="utf-8")
    sent = next(m for m in model.requests[1].messages if isinstance(m, ToolResultMessage))
    assert len(sent.content) < 5_000 and "read_file" in sent.content


async def test_cancel_mid_run_keeps_the_scratchpad(tmp_path: Path) -> None:
    model = ScriptedModel([AssistantMessage(tool_calls=(call("sleepy_read", "s1", seconds=5, label="slow"),))])
    agent = make_agent(tmp_path, model)
    conversation = Conversation()
    seen: list[Event] = []

    async def consume() -> None:
        async for event in agent.run("slow question", conversation):
            seen.append(event)

    task = asyncio.create_task(consume())
    while not any(isinstance(e, ToolStart) for e in seen):
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert agent.scratchpad is not None
    text = agent.scratchpad.path.read_text(encoding="utf-8")
    assert "slow question" in text
    last = json.loads(text.splitlines()[-1])  # the loop recorded how the run ended
    assert (last["type"], last["status"]) == ("done", "interrupted")
    # the next run starts from a repaired transcript: the unanswered call gets a result
    from dexter.context.repair import INTERRUPTED_RESULT

    turn = conversation.latest
    assert turn is not None and turn.status == "interrupted" and turn.query == "slow question"
    results = [m for m in turn.transcript if isinstance(m, ToolResultMessage)]
    assert [(r.tool_call_id, r.content, r.is_error) for r in results] == \
        [("s1", INTERRUPTED_RESULT, True)]


# ---------------------------------------------------------------- threshold basis


def _reported(reply: AssistantMessage | str, input_tokens: int) -> ModelResponse:
    message = reply if isinstance(reply, AssistantMessage) else AssistantMessage(text=reply)
    return ModelResponse(message=message, usage=Usage(input_tokens=input_tokens, output_tokens=5))


async def test_closing_the_stream_records_an_interrupted_run_once(tmp_path: Path) -> None:
    model = ScriptedModel([AssistantMessage(tool_calls=(call("sleepy_read", "s1", seconds=5, label="slow"),))])
    agent = make_agent(tmp_path, model)
    events = agent.run("closed early")
    async for event in events:
        if isinstance(event, ToolStart):
            break
    await events.aclose()  # what `dexter ask` does on Ctrl-C or a closed pipe
    assert agent.scratchpad is not None
    entries = [json.loads(line) for line in agent.scratchpad.path.read_text().splitlines()]
    assert [e["status"] for e in entries if e["type"] == "done"] == ["interrupted"]


# The last round's call and result are added to the reported count as an estimate (a few
# dozen tokens), so "under" sits just below the 95,000 threshold.
@pytest.mark.parametrize(("last_reported", "compacts"), [(94_900, False), (95_001, True)])
async def test_threshold_uses_the_last_calls_count_not_the_running_total(
        tmp_path: Path, last_reported: int, compacts: bool) -> None:
    # Four calls of 60,000 input tokens sum to 240,000, far over the 95,000 threshold of a
    # 128,000 window: only the last call's own count may decide.
    rounds = [_reported(AssistantMessage(tool_calls=(call("calculator", f"c{i}", expression=f"{i}+1"),)),
                        60_000) for i in range(3)]
    last = _reported(AssistantMessage(tool_calls=(call("calculator", "c3", expression="3+1"),)),
                     last_reported)
    fast = ScriptedModel(["<summary>Numerical Data: 1, 2, 3</summary>"], model="fast")
    model = ScriptedModel([*rounds, last, "The answer."])
    events = await collect(make_agent(tmp_path, model, fast_model=fast))
    done = events[-1]
    assert isinstance(done, Done) and done.status == "ok"
    assert done.token_usage["input_tokens"] >= 3 * 60_000 + last_reported  # the running total
    assert any(isinstance(e, Compaction) for e in events) is compacts
    assert len(fast.requests) == (1 if compacts else 0)


class LateArgs(BaseModel):
    pass


class LateTool(Tool[LateArgs]):
    """A tool whose definition is only sent once the calculator has run (as an MCP tool
    in search mode is bound once mcp_search selects it)."""

    name: ClassVar[str] = "late_tool"
    description: ClassVar[str] = "Bound late."
    params: ClassVar[type[BaseModel]] = LateArgs
    selected = False

    def bound(self) -> bool:
        return LateTool.selected

    async def run(self, args: LateArgs, ctx: ToolContext) -> str:
        return "late"


class SelectingCalculator(CalculatorTool):
    async def run(self, args: Any, ctx: ToolContext) -> Any:
        LateTool.selected = True
        return await super().run(args, ctx)


SUMMARY_REPLY = "<summary>Numerical Data: 4</summary>"


@pytest.mark.parametrize(("form", "prompt_cache", "continued"), [
    ("auto", True, True), ("auto", False, False), ("separate", True, False),
    ("continuation", False, True)])
async def test_side_requests_continue_the_conversation_where_the_setting_and_provider_allow(
        tmp_path: Path, form: str, prompt_cache: bool, continued: bool) -> None:
    LateTool.selected = False
    fast = ScriptedModel([SUMMARY_REPLY], model="fast")
    model = ScriptedModel([
        _reported(AssistantMessage(tool_calls=(call("calculator", "c1", expression="1+1"),
                                               call("calculator", "c2", expression="2+2"),
                                               call("calculator", "c3", expression="3+1"))),
                  96_000),
        *([SUMMARY_REPLY] if continued else []),
        "The answer is 4.",
    ], model="main")
    agent = make_agent(tmp_path, model, tools=[SelectingCalculator(), LateTool()], fast_model=fast,
                       settings=settings_for(tmp_path, side_requests=form),
                       prompt_cache=prompt_cache)
    events = await collect(agent)
    [end] = [e for e in events if isinstance(e, Compaction) and e.phase == "end"]
    assert end.success and end.model == ("main" if continued else "fast")
    assert len(fast.requests) == (0 if continued else 1)
    if continued:
        first, side, after = model.requests
        assert side.continuation and side.messages[:len(first.messages)] == first.messages
        # the tool bound during the turn is not in the side request: it repeats the tools
        # of the request before; the next main request binds it
        assert [t.name for t in side.tools] == [t.name for t in first.tools] == ["calculator"]
        assert [t.name for t in after.tools] == ["calculator", "late_tool"]
    assert isinstance(events[-1], Done) and events[-1].status == "ok"


async def test_soft_limit_comes_from_the_context_settings(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, max_calls_per_tool=1)
    model = ScriptedModel([
        AssistantMessage(tool_calls=(call("calculator", "c1", expression="1+1"),)),
        AssistantMessage(tool_calls=(call("calculator", "c2", expression="2+3"),)),
        "done",
    ])
    events = await collect(make_agent(tmp_path, model, settings=settings))
    warnings = {e.tool_call_id: e.warning for e in events if isinstance(e, ToolLimit)}
    assert "last 'calculator' call" in warnings["c1"]  # a limit of 1: the first is the last
    assert "already been called once" in warnings["c2"]
