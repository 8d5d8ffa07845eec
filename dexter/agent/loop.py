"""The agent loop: an async generator of events.

One iteration follows the order of docs/architecture.md ("One turn, in order"):
repair → microcompact → strip old thinking → call the model (overflow retry) → answer or
run tools → per-result cap and per-turn budget → manageContextThreshold → usage note and
queue drain. Each stage is a function in ``dexter.context``; this module only orchestrates
and turns what the stages report into events.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dexter.agent.executor import Approver, ToolExecutor, TurnResults, deny_all
from dexter.agent.queue import MessageQueue
from dexter.config import Settings
from dexter.context import compaction, flush, overflow, repair, results, thinking, threshold
from dexter.context import microcompact as micro
from dexter.context.limits import context_threshold, tokens_in_use
from dexter.context.tokens import (
    MessageTokenCache,
    estimate_text_tokens,
    estimate_tool_specs_tokens,
)
from dexter.context.trace import TraceFn
from dexter.events import (
    AnswerDelta,
    Done,
    Event,
    MemoryRecalled,
    Microcompact,
    ProviderRetry,
    QueueDrain,
    RunStart,
    RunStatus,
    StreamProgress,
    Thinking,
)
from dexter.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from dexter.permissions.base import DefaultPermissions, PermissionEngine
from dexter.providers.base import ChatModel, ModelRequest, ModelResponse, StreamChunk, ToolSpec
from dexter.providers.call import generate
from dexter.providers.errors import ProviderError
from dexter.sandbox.runner import SandboxRunner
from dexter.scratchpad import Scratchpad
from dexter.secrets import register_pasted_keys
from dexter.text import clean
from dexter.tools.base import Tool, ToolContext, UserInputFn, WorkerRunner, WorkerSpec

_MODE_FOR_CHUNK = {"text": "responding", "thinking": "thinking", "tool_input": "tool_input"}


@dataclass
class AgentSetup:
    """Everything one agent needs. Built by ``dexter.agent.factory``."""

    settings: Settings
    model: ChatModel
    fast_model: ChatModel
    context_window: int
    fast_context_window: int
    tools: Sequence[Tool[Any]]
    system_prompt: str
    permissions: PermissionEngine = field(default_factory=DefaultPermissions)
    approver: Approver = deny_all
    history: Sequence[Message] = ()
    queue: MessageQueue | None = None
    memory_dir: Path | None = None
    request_user_input: UserInputFn | None = None
    interactive: bool = False
    trace: TraceFn | None = None
    session_grants: set[str] = field(default_factory=set)
    cwd: Path = field(default_factory=Path.cwd)
    recalled: MemoryRecalled | None = None
    shell_sandbox: SandboxRunner | None = None


@dataclass
class RunState:
    """What one run accumulates."""

    query: str
    started: float = field(default_factory=time.monotonic)
    usage: Usage = field(default_factory=Usage)
    last_input_tokens: int | None = None
    reported_basis: int | None = None
    model_seconds: float = 0.0
    iterations: int = 0
    overflow_retries: int = 0
    threshold: threshold.ThresholdState = field(default_factory=threshold.ThresholdState)


class Agent:
    """Runs queries. Keep one per REPL session so session grants and settings persist."""

    def __init__(self, setup: AgentSetup) -> None:
        self.setup = setup
        self.settings = setup.settings
        self.messages: list[Message] = []
        self.scratchpad: Scratchpad | None = None
        self.compactable = frozenset(t.name for t in setup.tools if t.compactable)
        self._tool_specs = tuple(
            ToolSpec(t.name, t.description, t.json_schema()) for t in setup.tools
        )
        self.threshold = context_threshold(setup.context_window, self.settings.context)
        self._specs_tokens = estimate_tool_specs_tokens(self._tool_specs)
        self._token_cache = MessageTokenCache()

    # -- the conversation the next run starts from (the REPL's only way to change it) --------

    def use_history(self, history: Sequence[Message]) -> None:
        """The earlier turns the next run sends before its query."""
        self.setup.history = tuple(history)

    def forget(self) -> None:
        """Drop the conversation: earlier turns and the last run's messages (``/clear``)."""
        self.setup.history = ()
        self.messages = []

    def drop_last_run(self) -> None:
        """Forget the last run's messages (its turn was summarized into the history)."""
        self.messages = []

    def repaired_messages(self) -> list[Message]:
        """The last run's messages with every tool call paired with a result (after an
        interrupt); they become the agent's messages and are returned."""
        self.messages, _report = repair.repair_transcript(list(self.messages))
        return self.messages

    async def run(self, query: str) -> AsyncGenerator[Event, None]:
        """Answer one query, yielding every step as an event; the last one is ``Done``.

        A run cut short (the task cancelled, or the caller closing the stream on Ctrl-C)
        still leaves a record: an interrupted ``done`` entry in its scratchpad.
        """
        started = time.monotonic()
        finished = False
        try:
            async with aclosing(self._run(query)) as events:
                async for event in events:
                    finished = finished or isinstance(event, Done)
                    yield event
        except (asyncio.CancelledError, GeneratorExit, KeyboardInterrupt):
            if not finished:
                self._record_interrupted(started)
            raise

    def _record_interrupted(self, started: float) -> None:
        pad = self.scratchpad
        if pad is None:
            return
        with contextlib.suppress(Exception):  # recording must never mask the interrupt
            pad.record_event(Done(
                answer="Interrupted by the user.", status="interrupted",
                tool_calls=pad.tool_call_records(),
                total_time_ms=int((time.monotonic() - started) * 1000),
                model=self.setup.model.model))

    async def _run(self, query: str) -> AsyncGenerator[Event, None]:
        settings = self.settings
        query = clean(query)  # argv and pasted text can hold undecodable bytes
        register_pasted_keys(query)  # a key pasted into the question is scrubbed everywhere
        pad = Scratchpad(settings.scratchpad_path, query, model=self.setup.model.model,
                         provider=self.setup.model.provider_id,
                         max_calls_per_tool=settings.context.max_calls_per_tool,
                         similarity_threshold=settings.context.similarity_threshold)
        self.scratchpad = pad
        state = RunState(query=query)
        self.messages = [SystemMessage(self.setup.system_prompt), *self.setup.history,
                         UserMessage(query, kind="query")]
        start = RunStart(query=query, model=self.setup.model.model,
                         provider=self.setup.model.provider_id, scratchpad=str(pad.path))
        yield start
        if self.setup.recalled is not None:
            # The memory loaded into the system prompt: reported once per session.
            recalled, self.setup.recalled = self.setup.recalled, None
            pad.record_event(recalled)
            yield recalled
        executor = self._executor(pad)

        # Every nested generator is closed explicitly (aclosing): when the consumer stops
        # early (a closed pipe, a break), the open model stream is released right away
        # instead of by the garbage collector racing the event loop's shutdown.
        async with aclosing(self._iterate(state, pad, executor)) as events:
            async for event in events:
                if not isinstance(event, StreamProgress | AnswerDelta):
                    pad.record_event(event)
                yield event

    async def _iterate(self, state: RunState, pad: Scratchpad,
                       executor: ToolExecutor) -> AsyncGenerator[Event, None]:
        cfg = self.settings.context
        for iteration in range(1, self.settings.max_iterations + 1):
            state.iterations = iteration
            self.messages, _ = repair.repair_transcript(self.messages)
            if cfg.enabled:
                async with aclosing(self._microcompact(pad)) as micro_events:
                    async for event in micro_events:
                        yield event
                self.messages = thinking.strip_old_thinking(self.messages, cfg.keep_thinking)

            response: ModelResponse | None = None
            try:
                async with aclosing(self._call_model(state)) as model_items:
                    async for item in model_items:
                        if isinstance(item, ModelResponse):
                            response = item
                        else:
                            yield item
            except ProviderError as err:
                yield self._done(state, pad, err.message, "error", err.kind)
                return
            assert response is not None
            reply = response.message

            if not reply.tool_calls:
                self.messages.append(reply)
                yield self._done(state, pad, reply.text.strip(), "ok")
                return

            self.messages.append(reply)
            if reply.text.strip():
                yield Thinking(message=reply.text.strip())

            turn: TurnResults | None = None
            async with aclosing(executor.execute(reply.tool_calls)) as steps:
                async for step in steps:
                    if isinstance(step, TurnResults):
                        turn = step
                    else:
                        yield step
            assert turn is not None
            governed = self._govern_results(turn.results)
            self.messages.extend(governed)

            if cfg.enabled:
                async with aclosing(self._manage_threshold(state, pad)) as stage_events:
                    async for event in stage_events:
                        yield event

            # Right after a compaction the view must be the system prompt and the
            # continuation message alone (docs/architecture.md, "The threshold step"); the warnings stay pending until the
            # next turn's note.
            note = None if self._just_compacted() else pad.usage_note()
            if note:
                self.messages.append(UserMessage(note, kind="note"))
            if self.setup.queue is not None:
                queued = self.setup.queue.drain()
                if queued:
                    merged = "\n\n".join(queued)
                    self.messages.append(UserMessage(merged, kind="queued"))
                    yield QueueDrain(message_count=len(queued), merged_text=merged)

        limit = self.settings.max_iterations
        answer = (f"Stopped after reaching the maximum of {limit} iterations before finishing "
                  "the research. Ask again with a narrower question, or raise the limit with "
                  "--max-iterations.")
        yield self._done(state, pad, answer, "max_iterations")

    def _executor(self, pad: Scratchpad) -> ToolExecutor:
        setup = self.setup
        ctx = ToolContext(
            settings=self.settings, cwd=setup.cwd, home=self.settings.home_path,
            fast_model=setup.fast_model, model=setup.model,
            request_user_input=setup.request_user_input, interactive=setup.interactive,
            shell_sandbox=setup.shell_sandbox,
            context_window=setup.context_window,
            fast_context_window=setup.fast_context_window,
            run_worker=worker_runner(setup.cwd, setup.shell_sandbox),
        )
        return ToolExecutor(setup.tools, ctx, permissions=setup.permissions,
                            approver=setup.approver, log=pad,
                            session_grants=setup.session_grants)

    async def _microcompact(self, pad: Scratchpad) -> AsyncGenerator[Event, None]:
        before = self._estimate()
        new, report = micro.microcompact(self.messages, self.settings.context, self.compactable)
        if report is None:
            return
        self.messages = new
        pad.mark_cleared(report.tool_call_ids)
        self._trace("micro", before, self._estimate())
        yield Microcompact(cleared=report.cleared, tokens_saved=report.tokens_saved,
                           trigger=report.trigger)

    async def _call_model(self, state: RunState) -> AsyncGenerator[Event | ModelResponse, None]:
        while True:
            request = ModelRequest(
                system=self.messages[0].content if isinstance(self.messages[0], SystemMessage) else "",
                messages=tuple(m for m in self.messages if not isinstance(m, SystemMessage)),
                tools=self._tool_specs,
                max_tokens=self.settings.max_output_tokens,
            )
            started = time.monotonic()
            basis = self._estimate()
            try:
                async with aclosing(generate(self.setup.model, request,
                                             max_retries=self.settings.max_retries)) as items:
                    async for item in items:
                        if isinstance(item, StreamChunk):
                            yield StreamProgress(char_delta=len(item.text),
                                                 mode=_MODE_FOR_CHUNK[item.kind])  # type: ignore[arg-type]
                            if item.kind == "text":
                                yield AnswerDelta(text=item.text)
                        elif isinstance(item, ProviderRetry):
                            yield item
                        else:
                            state.model_seconds += time.monotonic() - started
                            state.usage = state.usage + item.usage
                            if item.usage.input_tokens:
                                state.last_input_tokens = item.usage.input_tokens
                                state.reported_basis = basis
                            yield item
                            return
            except ProviderError as err:
                if err.kind != "context_overflow" or not self.settings.context.enabled:
                    raise
                new, event = overflow.handle_overflow(self.messages, self.settings.context,
                                                      state.overflow_retries)
                if event is None:
                    raise
                before = self._estimate()
                state.overflow_retries += 1
                self.messages = new
                state.last_input_tokens = None
                state.reported_basis = None
                state.threshold.flushed = False
                self._trace("truncate", before, self._estimate())
                yield event

    def _govern_results(self, turn_results: list[ToolResultMessage]) -> list[ToolResultMessage]:
        cfg = self.settings.context
        if not cfg.enabled:
            return turn_results
        store = self.settings.home_path / "tool-results"
        before = sum(estimate_text_tokens(r.content) for r in turn_results)
        capped = []
        for result in turn_results:
            content, _info = results.cap_tool_result(result.content, result.tool_call_id, cfg, store)
            capped.append(result if content is result.content else
                          ToolResultMessage(result.tool_call_id, result.name, content,
                                            is_error=result.is_error))
        budgeted, _report = results.apply_turn_budget(capped, cfg, store)
        after = sum(estimate_text_tokens(r.content) for r in budgeted)
        if after != before:
            self._trace("budget", before, after)
        return budgeted

    async def _manage_threshold(self, state: RunState, pad: Scratchpad) -> AsyncGenerator[Event, None]:
        setup = self.setup

        async def compactor(query: str, material: Sequence[str]) -> compaction.CompactionResult:
            return await compaction.compact(setup.fast_model, query, material,
                                            fast_window=setup.fast_context_window)

        async def flusher(query: str, material: str) -> flush.FlushResult:
            assert setup.memory_dir is not None
            return await flush.memory_flush(setup.model, query, material,
                                            window=setup.context_window,
                                            memory_dir=setup.memory_dir)

        outcome: threshold.ThresholdOutcome | None = None
        inputs = threshold.ThresholdInputs(
            query=state.query, cfg=self.settings.context, window=setup.context_window,
            scratchpad=pad, compactor=compactor,
            flush=flusher if setup.memory_dir is not None else None,
            last_reported_input=state.last_input_tokens, reported_basis=state.reported_basis,
            extra_tokens=self._specs_tokens, compaction_model=setup.fast_model.model,
            trace=setup.trace, estimate_view=self._token_cache.estimate,
        )
        stage = threshold.manage_context_threshold(self.messages, inputs, state.threshold)
        async with aclosing(stage) as items:
            async for item in items:
                if isinstance(item, threshold.ThresholdOutcome):
                    outcome = item
                else:
                    yield item
        if outcome is not None:
            state.usage = state.usage + outcome.usage
            if outcome.messages is not self.messages:
                self.messages = outcome.messages
                state.last_input_tokens = None
                state.reported_basis = None

    def _just_compacted(self) -> bool:
        last = self.messages[-1] if self.messages else None
        return isinstance(last, UserMessage) and last.kind == "summary"

    def _estimate(self) -> int:
        return self._token_cache.estimate(self.messages) + self._specs_tokens

    def context_tokens(self, state: RunState | None = None) -> int:
        """Tokens the next request will hold: the provider's count when known, else the estimate."""
        if state is None:
            return self._estimate()
        used, _source = tokens_in_use(state.last_input_tokens, self._estimate(), state.reported_basis)
        return used

    def _trace(self, stage: str, before: int, after: int) -> None:
        if self.setup.trace is not None:
            self.setup.trace(stage, before, after)

    def _done(self, state: RunState, pad: Scratchpad, answer: str, status: RunStatus,
              error_kind: str = "") -> Done:
        elapsed = time.monotonic() - state.started
        out = state.usage.output_tokens
        tps = out / state.model_seconds if state.model_seconds > 0 else 0.0
        return Done(
            answer=answer,
            tool_calls=pad.tool_call_records(),
            iterations=state.iterations,
            total_time_ms=int(elapsed * 1000),
            token_usage=state.usage.to_dict(),
            tokens_per_second=round(tps, 1),
            status=status,
            context_tokens=self.context_tokens(state),
            context_threshold=self.threshold,
            model=self.setup.model.model,
            error_kind=error_kind,
        )


def assistant_text(messages: Sequence[Message]) -> str:
    """The last assistant text in a transcript (used by the REPL's history)."""
    for message in reversed(messages):
        if isinstance(message, AssistantMessage) and message.text.strip():
            return message.text
    return ""


def worker_runner(cwd: Path, shell_sandbox: SandboxRunner | None = None) -> WorkerRunner:
    """What ``spawn_subagent`` runs its workers with: a fresh agent per worker, with no
    user, history or memory, under this session's sandbox and rules (anything that would
    ask is denied: a worker has nobody to ask)."""

    async def run(spec: WorkerSpec) -> AsyncGenerator[Event, None]:
        from dexter.permissions.engine import build_permission_engine

        status = shell_sandbox.status if shell_sandbox is not None else None
        worker = Agent(AgentSetup(
            settings=spec.settings, model=spec.model, fast_model=spec.fast_model,
            context_window=spec.context_window, fast_context_window=spec.fast_context_window,
            tools=spec.tools, system_prompt=spec.system_prompt,
            permissions=build_permission_engine(spec.settings, cwd, status),
            cwd=cwd, shell_sandbox=shell_sandbox,
        ))
        async with aclosing(worker.run(spec.query)) as events:
            async for event in events:
                yield event

    return run
