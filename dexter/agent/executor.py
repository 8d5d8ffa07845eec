"""Runs a turn's tool calls: read-parallel, write-serialized, results in call order.

Consecutive concurrency-safe calls form one batch and run together (at most
``max_concurrency`` at once); any other call runs alone, after its approval gate. Events
from parallel calls are yielded as they happen. Every failure (unknown tool, bad JSON,
invalid arguments, a raised exception, a denial) becomes an error result the model can
read and correct; nothing here ends the run.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from dexter.context.results import result_file_stem
from dexter.events import (
    ApprovalChoice,
    Event,
    SandboxAlert,
    SubagentStatus,
    ToolApproval,
    ToolDenied,
    ToolEnd,
    ToolError,
    ToolLimit,
    ToolProgress,
    ToolStart,
)
from dexter.evidence.ledger import Source, SourceLedger
from dexter.evidence.tables import tables_from_json_text
from dexter.messages import ToolCall, ToolResultMessage
from dexter.permissions.base import PermissionDecision, PermissionEngine
from dexter.sandbox.policy import Grants
from dexter.secrets import scrub, scrub_output, scrub_output_value
from dexter.tools.base import Tool, ToolContext, ToolFailure, ToolOutput

DEFAULT_MAX_CONCURRENCY = 10


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """A call waiting for the user's decision."""

    tool: str
    args: dict[str, Any]
    decision: PermissionDecision
    tool_call_id: str
    preview: str = ""
    """What the call would change (a diff, a new file's content), or ''."""
    preview_path: str = ""
    """Where the whole preview is saved when it is long (the dialog shows its head)."""


Approver = Callable[[ApprovalRequest], Awaitable[ApprovalChoice]]
PREVIEW_LINES = 40
"""Lines of a change an approval shows; a longer one is saved whole to a file it names."""


class ToolLog(Protocol):
    """Where results are recorded and soft limits checked (the scratchpad)."""

    def check_tool_limit(self, tool: str, args: dict[str, Any]) -> str | None: ...

    def note_tool_call(self, tool: str, args: dict[str, Any]) -> None: ...

    def add_tool_result(self, tool: str, args: dict[str, Any], result: str, *,
                        duration_ms: int, is_error: bool, tool_call_id: str,
                        source_urls: tuple[str, ...] = (), source_id: str = "",
                        title: str = "") -> int: ...


async def deny_all(_request: ApprovalRequest) -> ApprovalChoice:
    """The approver used when nobody can answer: every ask is denied."""
    return "deny"


@dataclass
class TurnResults:
    """The executor's final item: one result per call, in call order."""

    results: list[ToolResultMessage]
    denied: list[str] = field(default_factory=list)


DENIED_TEMPLATE = (
    "Denied: {reason} The call was not run. Do not retry the same call; continue with the "
    "tools you can use, or tell the user what you could not do and why."
)


class ToolExecutor:
    """Executes tool calls for one run (or one REPL session, to keep session grants)."""

    def __init__(
        self,
        tools: Sequence[Tool[Any]],
        ctx: ToolContext,
        *,
        permissions: PermissionEngine,
        approver: Approver = deny_all,
        log: ToolLog | None = None,
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
        session_grants: set[str] | None = None,
        ledger: SourceLedger | None = None,
    ) -> None:
        self.tools = {tool.name: tool for tool in tools}
        self.ctx = ctx
        self.permissions = permissions
        self.approver = approver
        self.log = log
        self.max_concurrency = max(1, max_concurrency)
        self.session_grants = session_grants if session_grants is not None else set()
        self.ledger = ledger

    def partition(self, calls: Sequence[ToolCall]) -> list[list[ToolCall]]:
        """Group calls into batches: runs of concurrency-safe calls, and single others."""
        batches: list[list[ToolCall]] = []
        for call in calls:
            tool = self.tools.get(call.name)
            safe = tool is not None and tool.concurrency_safe
            if safe and batches and batches[-1] and self._batch_is_parallel(batches[-1]):
                batches[-1].append(call)
            else:
                batches.append([call])
        return batches

    def _batch_is_parallel(self, batch: list[ToolCall]) -> bool:
        tool = self.tools.get(batch[0].name)
        return tool is not None and tool.concurrency_safe

    async def execute(self, calls: Sequence[ToolCall]) -> AsyncGenerator[Event | TurnResults, None]:
        """Run all calls; yield events as they happen, then one ``TurnResults``."""
        results: dict[str, ToolResultMessage] = {}
        denied: list[str] = []
        for batch in self.partition(calls):
            queue: asyncio.Queue[Event | None] = asyncio.Queue()
            semaphore = asyncio.Semaphore(self.max_concurrency)

            async def run_one(call: ToolCall, q: asyncio.Queue[Event | None] = queue,
                              sem: asyncio.Semaphore = semaphore) -> None:
                async with sem:
                    result, was_denied = await self._run_call(call, q.put_nowait)
                results[call.id] = result
                if was_denied:
                    denied.append(call.id)

            tasks = [asyncio.create_task(run_one(call)) for call in batch]
            waiter = asyncio.ensure_future(asyncio.gather(*tasks))
            waiter.add_done_callback(_closer(queue))
            try:
                while True:
                    item = await queue.get()
                    if item is None:
                        break
                    yield item
                await waiter
            finally:
                for task in tasks:
                    task.cancel()
                if not waiter.done():
                    waiter.cancel()
                    # Nobody awaits a cancelled batch: retrieve its outcome so asyncio does
                    # not report an exception that was never retrieved.
                    waiter.add_done_callback(_consume_outcome)
        ordered = [results[call.id] for call in calls if call.id in results]
        yield TurnResults(ordered, denied)

    async def _run_call(self, call: ToolCall, emit: Callable[[Event], None]) -> tuple[ToolResultMessage, bool]:
        tool = self.tools.get(call.name)
        args = dict(call.arguments)
        if tool is None:
            names = ", ".join(sorted(self.tools)) or "none"
            return self._error(call, args, f"Unknown tool '{call.name}'. Available tools: {names}.", emit), False
        if call.invalid_arguments is not None:
            snippet = call.invalid_arguments[:200]
            message = (f"The arguments for {call.name} were not a valid JSON object ({snippet!r}). "
                       "Send a JSON object that matches the tool's parameters.")
            return self._error(call, args, message, emit), False
        try:
            parsed = tool.parse_args(args)
        except ToolFailure as exc:
            return self._error(call, args, str(exc), emit), False

        denial, grants = await self._gate(tool, call, args, emit)
        if denial is not None:
            return denial, True

        if self.log is not None:
            warning = self.log.check_tool_limit(call.name, args)
            if warning:
                emit(ToolLimit(tool=call.name, warning=warning, tool_call_id=call.id))
            self.log.note_tool_call(call.name, args)

        emit(ToolStart(tool=call.name, args=scrub_output_value(args), tool_call_id=call.id))
        started = time.monotonic()

        def progress(message: str | SubagentStatus) -> None:
            if isinstance(message, SubagentStatus):
                emit(ToolProgress(tool=call.name, message=scrub_output(message.activity),
                                  tool_call_id=call.id, subagent=scrub_output_value(message)))
            else:  # a command's progress line names the command
                emit(ToolProgress(tool=call.name, message=scrub_output(message),
                                  tool_call_id=call.id))

        try:
            output = await tool.run(parsed, self.ctx.with_progress(progress, grants))
        except asyncio.CancelledError:
            raise
        except ToolFailure as exc:
            return self._error(call, args, str(exc), emit, started), False
        except Exception as exc:  # a tool bug must never crash the loop
            message = f"{call.name} failed: {type(exc).__name__}: {exc}"
            return self._error(call, args, message, emit, started), False
        if not isinstance(output, ToolOutput):
            output = ToolOutput(str(output))
        is_error, urls = output.is_error, tuple(dict.fromkeys(output.source_urls))
        # neither the model nor any writer sees a known secret, or a credential by its shape
        content = scrub_output(output.content)
        duration = _elapsed_ms(started)
        if is_error:
            emit(ToolError(tool=call.name, error=content, tool_call_id=call.id,
                           args=scrub_output_value(args), duration_ms=duration))
            self._record(call, args, content, duration, is_error, urls)
            return ToolResultMessage(call.id, call.name, content, is_error=True), False
        if output.alerts:
            emit(SandboxAlert(tool=call.name, findings=tuple(scrub(a) for a in output.alerts),
                              tool_call_id=call.id))
        source = self._register(tool, call.name, args, output, content, urls)
        sid, title = (source.id, source.title) if source is not None else ("", "")
        emit(ToolEnd(tool=call.name, args=scrub_output_value(args), result=content,
                     duration_ms=duration,
                     tool_call_id=call.id, source_urls=urls, source_id=sid, title=title))
        self._record(call, args, content, duration, is_error, urls, sid, title)
        # the id heads what the model reads, so it can cite the figures it takes from here
        shown = f"[{sid}] {content}" if sid else content
        return ToolResultMessage(call.id, call.name, shown, is_error=False), False

    def _register(self, tool: Tool[Any], name: str, args: dict[str, Any], output: ToolOutput,
                  content: str, urls: tuple[str, ...]) -> Source | None:
        """Add a successful result to the source ledger (None: no ledger, or not a source)."""
        if self.ledger is None or tool.source_kind is None:
            return None
        evidence = tool.evidence(content)
        if not urls:
            urls = tuple(str(args[k]) for k in ("url", "path") if isinstance(args.get(k), str))
        expression = str(args.get("expression", "")) if tool.source_kind == "calculation" else ""
        tables = output.tables
        if not tables and tool.source_kind == "data":
            tables = tuple(tables_from_json_text(scrub_output(output.title) or name, content))
        tables = tuple(t.map_text(scrub_output) for t in tables)
        return self.ledger.add(name, args, evidence, title=scrub_output(output.title), urls=urls,
                               kind=tool.source_kind, expression=expression, tables=tables,
                               documents=tuple(d.map_text(scrub_output) for d in output.documents))

    async def _gate(self, tool: Tool[Any], call: ToolCall, args: dict[str, Any],
                    emit: Callable[[Event], None]) -> tuple[ToolResultMessage | None, Grants | None]:
        """Apply the permission decision: (the denial result or None to run, the sandbox
        grants the approved call runs with)."""
        try:
            decision = self.permissions.evaluate(call.name, args, tool.needs_approval)
        except Exception as exc:  # fail closed: an engine error is a denial
            decision = PermissionDecision("deny", f"The permission check failed ({exc}).")
        if decision.behavior == "allow":
            return None, decision.grants
        if decision.behavior == "ask":
            key = decision.session_key or call.name
            if decision.cacheable and key in self.session_grants:
                return None, decision.grants
            preview, saved = self._preview(tool, call, args)
            # the dialog shows the call with credentials masked; the approved call runs as
            # written
            choice = await self.approver(ApprovalRequest(
                call.name, scrub_output_value(args), decision, call.id, preview, saved))
            emit(ToolApproval(tool=call.name, args=scrub_output_value(args), decision=choice,
                              tool_call_id=call.id))
            if choice == "allow-session" and decision.cacheable:
                self.session_grants.add(key)
            if choice == "allow-always" and decision.proposed_rule:
                self.permissions.add_rule("allow", decision.proposed_rule)
            if choice != "deny":
                return None, decision.grants
            reason = "The user did not approve this call."
        else:
            reason = decision.reason or "A permission rule denies this call."
        emit(ToolDenied(tool=call.name, args=scrub_output_value(args), reason=reason,
                        tool_call_id=call.id))
        content = DENIED_TEMPLATE.format(reason=reason.rstrip(".") + ".")
        self._record(call, args, content, 0, True)
        return ToolResultMessage(call.id, call.name, content, is_error=True), None

    def _preview(self, tool: Tool[Any], call: ToolCall, args: dict[str, Any]) -> tuple[str, str]:
        """The change the call would make, and where the whole of a long one is saved.
        A preview that cannot be made (bad arguments) is left out: the call will say why."""
        try:
            text = tool.preview(tool.params.model_validate(args), self.ctx)
        except Exception:
            return "", ""
        if not text:
            return "", ""
        text = scrub_output(text)
        if text.count("\n") <= PREVIEW_LINES:
            return text, ""
        path = self.ctx.home / "previews" / f"{result_file_stem(call.id)}.diff"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        except OSError:
            return text, ""
        return text, str(path)

    def _error(self, call: ToolCall, args: dict[str, Any], message: str,
               emit: Callable[[Event], None], started: float | None = None) -> ToolResultMessage:
        duration = _elapsed_ms(started) if started is not None else 0
        message = scrub_output(message)
        emit(ToolError(tool=call.name, error=message, tool_call_id=call.id,
                       args=scrub_output_value(args), duration_ms=duration))
        content = f"Error: {message}"
        self._record(call, args, content, duration, True)
        return ToolResultMessage(call.id, call.name, content, is_error=True)

    def _record(self, call: ToolCall, args: dict[str, Any], content: str, duration: int,
                is_error: bool, source_urls: tuple[str, ...] = (), source_id: str = "",
                title: str = "") -> None:
        if self.log is not None:
            self.log.add_tool_result(call.name, scrub_output_value(args), content,
                                     duration_ms=duration,
                                     is_error=is_error, tool_call_id=call.id,
                                     source_urls=source_urls, source_id=source_id,
                                     title=title)


def _closer(queue: asyncio.Queue[Event | None]) -> Callable[[asyncio.Future[Any]], None]:
    """A done-callback that ends the event stream of a batch."""

    def close(_future: asyncio.Future[Any]) -> None:
        queue.put_nowait(None)

    return close


def _consume_outcome(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


def _elapsed_ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
