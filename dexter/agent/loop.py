"""The agent loop: an async generator of events.

One iteration follows the order of docs/architecture.md ("One turn, in order"):
repair → microcompact → strip old thinking → call the model (overflow retry) → answer or
run tools → per-result cap and per-turn budget → manageContextThreshold → usage note and
queue drain. Each stage is a function in ``dexter.context`` with one shape (it takes the
view, yields its events and then a ``StageResult``: ``dexter.context.stage``); this module
only drives them, in order, with ``Agent._apply``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dexter.agent.budget import Spend, over_budget
from dexter.agent.conversation import Conversation, Turn, now_iso, run_part
from dexter.agent.executor import Approver, ToolExecutor, TurnResults, deny_all
from dexter.agent.queue import MessageQueue
from dexter.config import Settings
from dexter.context import compaction, continuation, flush, repair, results, thinking, threshold
from dexter.context.limits import context_threshold, tokens_in_use
from dexter.context.stage import (
    Stage,
    StageResult,
    budget_stage,
    microcompact_stage,
    overflow_stage,
)
from dexter.context.tokens import (
    MessageTokenCache,
    estimate_tool_specs_tokens,
)
from dexter.context.trace import TraceFn
from dexter.events import (
    INTERRUPTED_TEXT,
    AnswerDelta,
    Done,
    Event,
    MemoryRecalled,
    ProviderRetry,
    QueueDrain,
    RunStart,
    RunStatus,
    ScratchpadError,
    StreamProgress,
    Thinking,
)
from dexter.evidence.ledger import SourceLedger
from dexter.evidence.report import verification_event
from dexter.evidence.verify import AnswerCheck, repair_note, verify_answer
from dexter.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    Usage,
    UserMessage,
)
from dexter.permissions.base import DefaultPermissions, PermissionEngine
from dexter.providers.base import ChatModel, ModelResponse, StreamChunk, ToolSpec
from dexter.providers.call import generate
from dexter.providers.errors import ProviderError
from dexter.providers.pricing import model_price, usage_cost
from dexter.reports.sourcing import answer_citations
from dexter.sandbox.runner import SandboxRunner
from dexter.scratchpad import Scratchpad
from dexter.secrets import register_pasted_keys
from dexter.text import clean
from dexter.tools.base import Tool, ToolContext, UserInputFn, WorkerRunner, WorkerSpec

LIMIT_NOTE = (
    "You have used all {limit} research steps of this run: no more tool calls will run. "
    "Answer now from what you have gathered, citing sources as usual, and say plainly what "
    "you could not get or check."
)

_MODE_FOR_CHUNK = {"text": "responding", "thinking": "thinking", "tool_input": "tool_input"}


@dataclass(frozen=True)
class AgentSetup:
    """Everything one agent needs, fixed for its life. Built by ``dexter.agent.factory``;
    what changes between runs lives in the :class:`Conversation` passed to ``run``."""

    settings: Settings
    model: ChatModel
    fast_model: ChatModel
    context_window: int
    fast_context_window: int
    tools: Sequence[Tool[Any]]
    system_prompt: str
    permissions: PermissionEngine = field(default_factory=DefaultPermissions)
    approver: Approver = deny_all
    queue: MessageQueue | None = None
    memory_dir: Path | None = None
    request_user_input: UserInputFn | None = None
    interactive: bool = False
    trace: TraceFn | None = None
    cwd: Path = field(default_factory=Path.cwd)
    recalled: MemoryRecalled | None = None
    shell_sandbox: SandboxRunner | None = None
    answer_at_limit: bool = True
    """At the iteration limit, ask once more for the best answer so far (a sub-agent's
    worker stops instead: its hard turn limit is the parent's protection)."""
    rerun_of: Path | None = None
    """The scratchpad whose recorded tool results this agent's tools answer from
    (``dexter rerun``): each run's scratchpad names it in its ``init`` line."""
    prompt_cache: bool = False
    """The main model's provider bills a repeated prompt prefix at a cached rate, so with
    ``[context] side_requests = "auto"`` the memory flush and compaction continue the
    conversation (``dexter.context.continuation``)."""


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
    repairs: int = 0
    threshold: threshold.ThresholdState = field(default_factory=threshold.ThresholdState)


class Agent:
    """Runs queries against one setup. The state a session keeps between runs (turns,
    grants) is the :class:`Conversation` passed to :meth:`run`; the agent itself only
    keeps its last run's view and scratchpad, for ``/context`` and the closing line."""

    def __init__(self, setup: AgentSetup) -> None:
        self.setup = setup
        self.settings = setup.settings
        self._messages: list[Message] = []
        self.scratchpad: Scratchpad | None = None
        self.compactable = frozenset(t.name for t in setup.tools if t.compactable)
        self._all_specs = tuple(
            ToolSpec(t.name, t.description, t.json_schema()) for t in setup.tools
        )
        self.threshold = context_threshold(setup.context_window, self.settings.context)
        self._specs_tokens = estimate_tool_specs_tokens(self._tool_specs)
        self._token_cache = MessageTokenCache()
        self._repair = repair.TranscriptRepairer()
        self._last_stage = StageResult([])
        self._partial = ""
        self._response: ModelResponse | None = None
        self._sent_tools: tuple[ToolSpec, ...] | None = None
        """The tool definitions of the last main request (a side request repeats them)."""

    @property
    def _tool_specs(self) -> tuple[ToolSpec, ...]:
        """The definitions sent with the next request: those of the bound tools (an MCP
        tool in search mode is bound once ``mcp_search`` selects it)."""
        return tuple(s for s, t in zip(self._all_specs, self.setup.tools, strict=True)
                     if t.bound())

    @property
    def messages(self) -> list[Message]:
        """A copy of the current (or last) run's view: what its next request holds."""
        return list(self._messages)

    async def run(self, query: str,
                  conversation: Conversation | None = None) -> AsyncGenerator[Event, None]:
        """Answer one query, yielding every step as an event; the last one is ``Done``.

        The run starts from ``conversation``'s history and adds its turn to it when it
        ends: answered, failed, or cut short. A run cut short (the task cancelled, or the
        caller closing the stream on Ctrl-C) keeps its repaired transcript as the turn, so
        the next question can continue from it, and leaves an interrupted ``done`` entry in
        its scratchpad. Without a conversation the run starts fresh (``dexter ask``).
        """
        conv = conversation if conversation is not None else Conversation()
        history = tuple(conv.messages())
        register_pasted_keys(clean(query))  # before any of it is written anywhere
        query = self._fit_question(clean(query))
        started = time.monotonic()
        drained: list[str] = []
        done: Done | None = None
        try:
            async with aclosing(self._run(query, conv, history)) as events:
                async for event in events:
                    if isinstance(event, QueueDrain):
                        drained.append(event.merged_text)
                    elif isinstance(event, Done):
                        done = event
                    yield event
        except (asyncio.CancelledError, GeneratorExit, KeyboardInterrupt):
            if done is None:
                self._record_interrupted(started, conv, history, clean(query), drained)
            raise
        finally:
            conv.record_spend(done.token_usage if done is not None else {},
                              model_price(self.setup.model.model, self.settings))
            if done is not None:
                conv.add(Turn(query=_turn_query(clean(query), drained),
                              answer=done.answer if done.status != "error" else "",
                              status=done.status, timestamp=now_iso()))

    def _record_interrupted(self, started: float, conv: Conversation,
                            history: Sequence[Message], query: str, drained: list[str]) -> None:
        self._messages, _report = repair.repair_transcript(self._messages)
        conv.add(Turn(query=_turn_query(query, drained), answer="", status="interrupted",
                      timestamp=now_iso(), transcript=run_part(self._messages, history, query)))
        pad = self.scratchpad
        if pad is None:
            return
        with contextlib.suppress(Exception):  # recording must never mask the interrupt
            pad.record_event(Done(
                answer=self._partial.strip() or INTERRUPTED_TEXT, status="interrupted",
                tool_calls=pad.tool_call_records(),
                total_time_ms=int((time.monotonic() - started) * 1000),
                model=self.setup.model.model, **_record_state(pad)))

    async def _run(self, query: str, conv: Conversation,
                   history: Sequence[Message]) -> AsyncGenerator[Event, None]:
        settings = self.settings
        query = clean(query)  # argv and pasted text can hold undecodable bytes
        register_pasted_keys(query)  # a key pasted into the question is scrubbed everywhere
        pad = Scratchpad(settings.scratchpad_path, query, model=self.setup.model.model,
                         provider=self.setup.model.provider_id,
                         max_calls_per_tool=settings.context.max_calls_per_tool,
                         similarity_threshold=settings.context.similarity_threshold,
                         rerun_of=self.setup.rerun_of)
        self.scratchpad = pad
        state = RunState(query=query)
        self._messages = [SystemMessage(self.setup.system_prompt), *history,
                          UserMessage(query, kind="query")]
        conv.grants.new_query()
        start = RunStart(query=query, model=self.setup.model.model,
                         provider=self.setup.model.provider_id, scratchpad=str(pad.path))
        yield start
        failure = _write_failure(pad)
        if failure is not None:
            yield failure
        if self.setup.recalled is not None and not conv.recall_reported:
            # The memory loaded into the system prompt: reported once per session.
            conv.recall_reported = True
            pad.record_event(self.setup.recalled)
            yield self.setup.recalled
        executor = self._executor(pad, conv)

        # Every nested generator is closed explicitly (aclosing): when the consumer stops
        # early (a closed pipe, a break), the open model stream is released right away
        # instead of by the garbage collector racing the event loop's shutdown.
        async with aclosing(self._iterate(state, pad, executor, conv)) as events:
            async for event in events:
                if not isinstance(event, StreamProgress | AnswerDelta):
                    pad.record_event(event)
                failure = _write_failure(pad)  # the record failed: say so at once
                if failure is not None:
                    yield failure
                if isinstance(event, Done) and event.record_complete and not pad.complete:
                    event = dataclasses.replace(event, **_record_state(pad))
                yield event

    async def _iterate(self, state: RunState, pad: Scratchpad, executor: ToolExecutor,
                       conv: Conversation) -> AsyncGenerator[Event, None]:
        cfg = self.settings.context
        for iteration in range(1, self.settings.max_iterations + 1):
            state.iterations = iteration
            self._messages, _ = self._repair(self._messages)
            if cfg.enabled:
                before_micro = self._messages
                micro = microcompact_stage(self._messages, cfg, self.compactable)
                async with aclosing(self._apply(micro, pad, trace="micro")) as stage_events:
                    async for event in stage_events:
                        yield event
                # in batches, so the request prefix (the prompt cache) changes rarely; for
                # free in a turn where microcompact already changed the view
                batch = 1 if self._messages is not before_micro else thinking.STRIP_BATCH
                self._messages = thinking.strip_old_thinking(self._messages, cfg.keep_thinking,
                                                             batch=batch)

            stop = self._over_budget(state, conv)
            if stop is not None:
                yield self._done(state, pad, stop, "budget")
                return
            try:
                async with aclosing(self._respond(state, pad)) as model_events:
                    async for event in model_events:
                        yield event
            except ProviderError as err:
                yield self._done(state, pad, err.message, "error", err.kind)
                return
            assert self._response is not None
            reply = self._response.message

            if not reply.tool_calls:
                self._messages.append(reply)
                answer = reply.text.strip()
                check = self._verify(answer, state, conv)
                if check is not None and self._wants_repair(check, state):
                    state.repairs += 1
                    yield verification_event(check, final=False)
                    self._messages.append(UserMessage(repair_note(check), kind="note"))
                    continue
                if check is not None:
                    yield verification_event(check, final=True)
                yield self._done(state, pad, answer, "ok", check=check, ledger=conv.ledger)
                return

            self._messages.append(reply)
            self._partial = ""  # text written beside tool calls is a plan, not the answer
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
            self._messages.extend(turn.results)
            store = self.settings.home_path / "tool-results"
            budget = budget_stage(self._messages, len(turn.results), cfg, store)
            async with aclosing(self._apply(budget, pad, trace="budget")) as stage_events:
                async for event in stage_events:
                    yield event

            if cfg.enabled:
                async with aclosing(self._manage_threshold(state, pad)) as stage_events:
                    async for event in stage_events:
                        yield event

            # Right after a compaction the view is the system prompt, the query and the
            # summary alone (docs/architecture.md, "The threshold step"); the warnings stay
            # pending until the next turn's note.
            note = None if self._just_compacted() else pad.usage_note()
            if note:
                self._messages.append(UserMessage(note, kind="note"))
            if self.setup.queue is not None:
                queued = self.setup.queue.drain()
                if queued:
                    merged = "\n\n".join(queued)
                    self._messages.append(UserMessage(merged, kind="queued"))
                    yield QueueDrain(message_count=len(queued), merged_text=merged)

        async with aclosing(self._last_answer(state, pad, conv)) as last:
            async for event in last:
                yield event

    async def _last_answer(self, state: RunState, pad: Scratchpad,
                           conv: Conversation) -> AsyncGenerator[Event, None]:
        """At the iteration limit: one more request for the best answer from what was
        gathered (checked like any answer), so the run ends with something to read."""
        limit = self.settings.max_iterations
        stopped = (f"Stopped after reaching the maximum of {limit} iterations before finishing "
                   "the research. Ask again with a narrower question, or raise the limit with "
                   "--max-iterations.")
        if not self.setup.answer_at_limit:
            yield self._done(state, pad, stopped, "max_iterations")
            return
        self._messages.append(UserMessage(LIMIT_NOTE.format(limit=limit), kind="note"))
        try:
            async with aclosing(self._respond(state, pad)) as model_events:
                async for event in model_events:
                    yield event
        except ProviderError:
            self._response = None
        response = self._response
        text = response.message.text.strip() if response is not None else ""
        if response is None or not text:
            yield self._done(state, pad, stopped, "max_iterations")
            return
        self._messages.append(AssistantMessage(text))  # its tool calls, if any, are not run
        check = self._verify(text, state, conv)
        if check is not None:
            yield verification_event(check, final=True)
        yield self._done(state, pad, text, "max_iterations", check=check, ledger=conv.ledger)

    def _executor(self, pad: Scratchpad, conv: Conversation) -> ToolExecutor:
        setup = self.setup
        ctx = ToolContext(
            settings=self.settings, cwd=setup.cwd, home=self.settings.home_path,
            fast_model=setup.fast_model, model=setup.model,
            request_user_input=setup.request_user_input, interactive=setup.interactive,
            shell_sandbox=setup.shell_sandbox,
            context_window=setup.context_window,
            fast_context_window=setup.fast_context_window,
            run_worker=worker_runner(setup.cwd, setup.shell_sandbox, conv.ledger),
        )
        return ToolExecutor(setup.tools, ctx, permissions=setup.permissions,
                            approver=setup.approver, log=pad,
                            session_grants=conv.grants, ledger=conv.ledger)

    async def _apply(self, stage: Stage, pad: Scratchpad,
                     trace: str = "") -> AsyncGenerator[Event, None]:
        """Drive one context stage: pass its events on, then take its view (see
        ``dexter.context.stage``). Returns the stage's result through ``_last_stage``."""
        before = self._estimate() if trace else 0
        async with aclosing(stage) as items:
            async for item in items:
                if isinstance(item, StageResult):
                    self._last_stage = item
                    if item.cleared_ids:
                        pad.mark_cleared(item.cleared_ids)
                    if item.changed(self._messages):
                        self._messages = item.messages
                        if trace:
                            self._trace(trace, before, self._estimate())
                else:
                    yield item

    async def _respond(self, state: RunState, pad: Scratchpad) -> AsyncGenerator[Event, None]:
        """One model call: its events pass on, its response lands in ``_response``."""
        self._response = None
        async with aclosing(self._call_model(state, pad)) as items:
            async for item in items:
                if isinstance(item, ModelResponse):
                    self._response = item
                else:
                    yield item

    async def _call_model(self, state: RunState,
                          pad: Scratchpad) -> AsyncGenerator[Event | ModelResponse, None]:
        while True:
            self._partial = ""  # the text of this call so far (kept if the run is cut short)
            # the side requests repeat this request byte for byte (context.continuation)
            request = continuation.main_request(self._messages, self._tool_specs,
                                                self.settings.max_output_tokens)
            self._sent_tools = request.tools
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
                                self._partial += item.text
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
                before = self._messages
                retry = overflow_stage(self._messages, self.settings.context,
                                       state.overflow_retries)
                async with aclosing(self._apply(retry, pad, trace="truncate")) as stage_events:
                    async for event in stage_events:
                        yield event
                if self._messages is before:
                    raise  # nothing left to cut: the run ends with the provider's error
                state.overflow_retries += 1
                state.last_input_tokens = None
                state.reported_basis = None
                state.threshold.flushed = False

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

        inputs = threshold.ThresholdInputs(
            query=state.query, cfg=self.settings.context, window=setup.context_window,
            scratchpad=pad, compactor=compactor,
            flush=flusher if setup.memory_dir is not None else None,
            continuation=self._continuation(),
            last_reported_input=state.last_input_tokens, reported_basis=state.reported_basis,
            extra_tokens=self._specs_tokens, compaction_model=setup.fast_model.model,
            trace=setup.trace, estimate_view=self._token_cache.estimate,
        )
        before = self._messages
        stage = threshold.manage_context_threshold(self._messages, inputs, state.threshold)
        async with aclosing(self._apply(stage, pad)) as stage_events:
            async for event in stage_events:
                yield event
        state.usage = state.usage + self._last_stage.usage
        if self._messages is not before:
            state.last_input_tokens = None
            state.reported_basis = None

    def _continuation(self) -> continuation.Continuation | None:
        """What the side requests continue the conversation with, when they may
        (``[context] side_requests``: ``auto`` for a provider that caches prompts)."""
        form = self.settings.context.side_requests
        if form == "separate" or (form == "auto" and not self.setup.prompt_cache):
            return None
        # the tools of the request before, not those bound since (mcp_search may bind
        # more during the turn): the side request repeats that request's prefix
        tools = self._sent_tools if self._sent_tools is not None else self._tool_specs
        return continuation.Continuation(model=self.setup.model, tools=tools,
                                         window=self.setup.context_window,
                                         memory_dir=self.setup.memory_dir)

    def _just_compacted(self) -> bool:
        last = self._messages[-1] if self._messages else None
        return isinstance(last, UserMessage) and last.kind == "summary"

    def _estimate(self) -> int:
        return self._token_cache.estimate(self._messages) + self._specs_tokens

    def context_tokens(self, state: RunState | None = None) -> int:
        """Tokens the next request will hold: the provider's count when known, else the estimate."""
        if state is None:
            return self._estimate()
        used, _source = tokens_in_use(state.last_input_tokens, self._estimate(), state.reported_basis)
        return used

    def _trace(self, stage: str, before: int, after: int) -> None:
        if self.setup.trace is not None:
            self.setup.trace(stage, before, after)

    def _fit_question(self, query: str) -> str:
        """The question, or (when it alone would take over half the context threshold, a
        huge paste) its start and the file holding all of it."""
        cfg = self.settings.context
        if not cfg.enabled:
            return query
        return results.fit_question(query, self.threshold // 2, cfg.preview_chars,
                                    self.settings.home_path / "tool-results")

    def _over_budget(self, state: RunState, conv: Conversation) -> str | None:
        """The message to stop with when the next request would pass a spending limit."""
        limits = self.settings.limits
        if not (limits.max_tokens or limits.max_cost_usd):
            return None
        price = model_price(self.setup.model.model, self.settings)
        run_cost = usage_cost(state.usage.to_dict(), price)
        spent = Spend(tokens=conv.spent_tokens + state.usage.input_tokens
                      + state.usage.output_tokens,
                      usd=None if run_cost is None else conv.spent_usd + run_cost)
        return over_budget(limits, spent, self.context_tokens(state), price,
                           self.setup.model.model)

    def _verify(self, answer: str, state: RunState, conv: Conversation) -> AnswerCheck | None:
        """The deterministic check of the answer's figures (None when it is off)."""
        if not self.settings.verify.enabled:
            return None
        return verify_answer(answer, conv.ledger, state.query)

    def _wants_repair(self, check: AnswerCheck, state: RunState) -> bool:
        failed = bool(check.unsupported or check.unknown_citations)
        return failed and state.repairs < max(self.settings.verify.repair_turns, 0)

    def _done(self, state: RunState, pad: Scratchpad, answer: str, status: RunStatus,
              error_kind: str = "", *, check: AnswerCheck | None = None,
              ledger: SourceLedger | None = None) -> Done:
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
            citations=answer_citations(answer, ledger) if ledger is not None else [],
            verification=check.to_dict() if check is not None else None,
            **_record_state(pad),
        )


def _write_failure(pad: Scratchpad) -> ScratchpadError | None:
    """The event for the scratchpad's first write failure, once; else None."""
    message = pad.take_write_error()
    return ScratchpadError(path=str(pad.path), message=message) if message else None


def _record_state(pad: Scratchpad) -> dict[str, Any]:
    """``done``'s ``record_complete`` and ``record_error`` for the scratchpad so far."""
    return {"record_complete": pad.complete, "record_error": pad.write_error or ""}


def assistant_text(messages: Sequence[Message]) -> str:
    """The last assistant text in a transcript (used by the REPL's history)."""
    for message in reversed(messages):
        if isinstance(message, AssistantMessage) and message.text.strip():
            return message.text
    return ""


def worker_runner(cwd: Path, shell_sandbox: SandboxRunner | None = None,
                  ledger: SourceLedger | None = None) -> WorkerRunner:
    """What ``spawn_subagent`` runs its workers with: a fresh agent per worker, with no
    user, history or memory, under this session's sandbox and rules (anything that would
    ask is denied: a worker has nobody to ask). Its sources join ``ledger`` (the parent's),
    so the parent can cite what its workers fetched; a worker's report is not verified
    itself: the parent's answer is."""

    async def run(spec: WorkerSpec) -> AsyncGenerator[Event, None]:
        from dexter.permissions.engine import build_permission_engine

        status = shell_sandbox.status if shell_sandbox is not None else None
        settings = dataclasses.replace(
            spec.settings, verify=dataclasses.replace(spec.settings.verify, enabled=False))
        worker = Agent(AgentSetup(
            settings=settings, model=spec.model, fast_model=spec.fast_model,
            context_window=spec.context_window, fast_context_window=spec.fast_context_window,
            tools=spec.tools, system_prompt=spec.system_prompt,
            permissions=build_permission_engine(settings, cwd, status),
            cwd=cwd, shell_sandbox=shell_sandbox, answer_at_limit=False,
        ))
        conversation = Conversation()
        if ledger is not None:
            conversation.ledger = ledger
        async with aclosing(worker.run(spec.query, conversation)) as events:
            async for event in events:
                yield event

    return run


def _turn_query(query: str, drained: Sequence[str]) -> str:
    """The turn's question as the history keeps it: the query and the messages queued
    into the run while it worked."""
    return "\n\n".join([query, *drained])
