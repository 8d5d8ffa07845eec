"""The MCP client: connects to the configured ``[mcp.servers.NAME]`` and keeps them open.

Every server runs in one background thread with its own event loop, so the connection
(an anyio task group inside the SDK) lives as long as the session whatever event loop the
caller uses (``dexter ask``, the REPL, ``dexter mcp list``). A server that fails to start
is reported once (``report``) and marked failed; calls to its tools then fail with a
message naming it. A server that dies after it started is reported once too, and the next
call of one of its tools restarts it (once per session); when the restart fails, or it dies
again, its tools stay unavailable with a message saying so. Nothing here raises past
``McpError``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from dexter.config import McpServerSettings, McpSettings
from dexter.secrets import credential_values, scrub, secret_values
from dexter.text import escape_controls
from dexter.tools.mcp_log import CURRENT, ServerLog, route_sdk_logs

Status = Literal["not started", "running", "failed", "stopped"]
MAX_RESTARTS = 1
"""How often a server that died is started again in one session."""
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class McpError(Exception):
    """An MCP server could not be used; the message names the server and says why."""


@dataclass(frozen=True)
class McpToolInfo:
    """One tool a server offers, as listed by ``tools/list``."""

    server: str
    name: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool
    title: str = ""


@dataclass
class ServerState:
    """What dexter knows about one configured server."""

    name: str
    config: McpServerSettings
    status: Status = "not started"
    error: str = ""
    tools: list[McpToolInfo] = field(default_factory=list)
    not_offered: list[tuple[str, str]] = field(default_factory=list)
    """Listed tools dexter does not offer, each with the reason (a task-only tool)."""
    notes: list[str] = field(default_factory=list)
    """What the server did that the user should know, each said once (a non-MCP line)."""
    log: ServerLog | None = None
    reported: bool = False
    was_running: bool = False
    """It started once, so a failure now means it died (and may be restarted)."""
    restarts: int = 0
    restart_lock: asyncio.Lock | None = None
    session: Any = None
    ready: asyncio.Event | None = None
    stop: asyncio.Event | None = None
    task: asyncio.Task[None] | None = None

    @property
    def transport(self) -> str:
        """``stdio`` or ``http``."""
        return "http" if self.config.url else "stdio"

    @property
    def running(self) -> bool:
        """Connected and its tools listed."""
        return self.status == "running"

    @property
    def restartable(self) -> bool:
        """It died after starting and has not been restarted yet."""
        return self.status == "failed" and self.was_running and self.restarts < MAX_RESTARTS


def expand_vars(value: str, env: dict[str, str] | os._Environ[str]) -> str:
    """``${NAME}`` in an env or header value becomes the variable's value ('' when unset),
    so keys stay in the environment rather than the config file."""
    return _VAR.sub(lambda m: env.get(m.group(1), ""), value)


def _describe(exc: BaseException) -> str:
    """A one-line reason from an exception (the first leaf of an exception group)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class McpManager:
    """The configured MCP servers of one session: started together by :meth:`start`,
    stopped by :meth:`close`.

    ``report`` gets the one line about a server that failed or died; ``notify`` (default:
    ``report``) a line about what a running server did wrong. Both, and every reason kept
    in ``servers``, are scrubbed of secrets (the environment's and those the servers'
    ``env`` and ``headers`` carry) and have their control characters escaped."""

    def __init__(self, settings: McpSettings, *, log_dir: Path | None = None,
                 report: Callable[[str], None] | None = None,
                 notify: Callable[[str], None] | None = None,
                 env: dict[str, str] | None = None,
                 writable: Sequence[Path] = ()) -> None:
        """``writable``: the folders commands may write; a server's program given by name
        is never one found there on ``PATH`` (:mod:`dexter.sandbox.programs`)."""
        self.settings = settings
        self._writable = tuple(writable)
        self.servers = {name: ServerState(name, cfg) for name, cfg in settings.servers.items()}
        self._log_dir = log_dir
        self._report = report or (lambda line: print(line, file=sys.stderr))
        self._notify = notify or self._report
        self._env = dict(os.environ) if env is None else dict(env)
        self._secrets = secret_values(self._env, self._configured_secrets())
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        for state in self.servers.values():
            path = log_dir / f"{state.name}.log" if log_dir is not None else None
            state.log = ServerLog(path, self._scrubbed)

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> None:
        """Connect to every server and list its tools (in parallel, each within
        ``startup_timeout``). Failures are reported and kept in ``servers``; never raises."""
        with self._lock:
            if self._loop is not None or not self.servers:
                return
            route_sdk_logs()
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(target=self._loop.run_forever, name="dexter-mcp",
                                            daemon=True)
            self._thread.start()
        timeout = self.settings.startup_timeout
        future = asyncio.run_coroutine_threadsafe(self._start_all(timeout), self._loop)
        try:
            future.result(timeout + 5)
        except Exception as exc:  # the start itself went wrong: every server is unusable
            for state in self.servers.values():
                if state.status == "not started":
                    self._fail(state, _describe(exc))

    def close(self) -> None:
        """Stop every server (closing stdio processes and HTTP sessions) and the thread."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = None
        if loop is None:
            return
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self._stop_all(), loop).result(15)
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(5)
        for state in self.servers.values():
            if state.log is not None:
                state.log.close()

    @property
    def tools(self) -> list[McpToolInfo]:
        """The tools of the running servers, in configuration order."""
        return [t for s in self.servers.values() if s.status == "running" for t in s.tools]

    # -- calls ---------------------------------------------------------------------------

    async def call(self, server: str, tool: str, arguments: dict[str, Any]) -> Any:
        """Call a tool from any event loop; returns the SDK's ``CallToolResult``.

        Raises ``McpError`` naming the server when it is not running, the call times out
        or the connection fails (the server is then marked failed and reported once).
        """
        state = self.servers.get(server)
        loop = self._loop
        if state is None or loop is None or (state.status != "running"
                                             and not state.restartable):
            raise McpError(self.unavailable(server))
        future = asyncio.run_coroutine_threadsafe(self._call(state, tool, arguments), loop)
        return await asyncio.wrap_future(future)

    def unavailable(self, server: str) -> str:
        """Why a server's tools cannot be called, as a tool error says it."""
        state = self.servers.get(server)
        if state is None:
            return f"MCP server '{server}' is not configured."
        why = state.error or state.status
        return f"MCP server '{server}' is unavailable ({why}); its tools cannot be used."

    async def _call(self, state: ServerState, tool: str, arguments: dict[str, Any]) -> Any:
        if state.status != "running":
            await self._restart(state)
        timeout = self.settings.call_timeout
        try:
            return await asyncio.wait_for(state.session.call_tool(tool, arguments), timeout)
        except TimeoutError:
            raise McpError(f"MCP server '{state.name}': {tool} did not answer within "
                           f"{timeout:g} seconds.") from None
        except Exception as exc:
            from mcp.shared.exceptions import MCPError
            from mcp_types import CONNECTION_CLOSED

            if isinstance(exc, MCPError) and exc.code != CONNECTION_CLOSED:
                # the server answered with an error: it is still alive
                raise McpError(self.clean(f"MCP server '{state.name}': {tool} failed: "
                                          f"{exc}")) from None
            why = f"the connection failed: {_describe(exc)}{self._log_tail(state)}"
            self._fail(state, why)
            if state.restartable:
                raise McpError(f"MCP server '{state.name}' stopped during {tool} "
                               f"({state.error}). It is restarted once when one of its tools "
                               f"is called again; {tool} was not retried.") from None
            raise McpError(self.unavailable(state.name)) from None

    async def _restart(self, state: ServerState) -> None:
        """Start a server that died once more (one caller at a time); ``McpError`` when it
        may not be restarted or does not come back."""
        if state.restart_lock is None:
            state.restart_lock = asyncio.Lock()
        async with state.restart_lock:
            if state.status == "running":
                return  # another call restarted it meanwhile
            if not state.restartable:
                raise McpError(self.unavailable(state.name))
            state.restarts += 1
            died = state.error
            await self._end_task(state)
            state.status, state.error = "not started", ""
            state.ready, state.stop = asyncio.Event(), asyncio.Event()
            state.task = asyncio.create_task(self._serve(state))
            timeout = self.settings.startup_timeout
            try:
                await asyncio.wait_for(state.ready.wait(), timeout)
            except TimeoutError:
                await self._end_task(state)
            if not state.running:  # _serve set the status while we waited
                again = state.error or f"it did not start within {timeout:g} seconds"
                state.status = "failed"
                state.error = f"it stopped ({died}), and the restart failed: {again}"
                raise McpError(self.unavailable(state.name))

    @staticmethod
    async def _end_task(state: ServerState) -> None:
        """Let the server's task finish (its connection is gone), cancelling it if needed."""
        task = state.task
        if task is None or task.done():
            return
        if state.stop is not None:
            state.stop.set()
        _, pending = await asyncio.wait([task], timeout=5)
        for left in pending:
            left.cancel()
            with contextlib.suppress(BaseException):
                await left

    # -- inside the thread ----------------------------------------------------------------

    async def _start_all(self, timeout: float) -> None:
        for state in self.servers.values():
            state.ready, state.stop = asyncio.Event(), asyncio.Event()
            state.task = asyncio.create_task(self._serve(state))

        async def wait(state: ServerState) -> None:
            assert state.ready is not None and state.task is not None
            try:
                await asyncio.wait_for(state.ready.wait(), timeout)
            except TimeoutError:
                state.task.cancel()
                self._fail(state, f"did not start within {timeout:g} seconds"
                                  f"{self._log_tail(state)}")

        await asyncio.gather(*(wait(s) for s in self.servers.values()))

    async def _stop_all(self) -> None:
        tasks = []
        for state in self.servers.values():
            if state.stop is not None:
                state.stop.set()
            if state.task is not None and not state.task.done():
                tasks.append(state.task)
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=10)
            for task in pending:
                task.cancel()
        for state in self.servers.values():
            if state.status == "running":
                state.status = "stopped"

    async def _serve(self, state: ServerState) -> None:
        """Open the connection, list the tools, then hold it open until told to stop."""
        from mcp.client.session import ClientSession

        assert state.ready is not None and state.stop is not None
        log = state.log
        CURRENT.set(log)  # the SDK's records from this task (and those it starts) go there
        if log is not None:
            log.start(self.clean(state.config.url or " ".join(
                [state.config.command, *state.config.args])))
        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport(state))
                if log is not None:
                    log.release_sink()  # the process runs: it holds its own stderr
                session = await stack.enter_async_context(ClientSession(
                    read, write, message_handler=self._on_message(state),
                    logging_callback=self._on_server_log(state)))
                await session.initialize()
                state.tools, state.not_offered = await self._list_tools(state.name, session)
                state.session, state.status = session, "running"
                state.was_running = True
                state.ready.set()
                await state.stop.wait()
        except asyncio.CancelledError:
            if state.status == "not started":
                self._fail(state, "start cancelled")
        except BaseException as exc:  # a server problem is never a crash
            if state.status in ("not started", "running"):
                self._fail(state, f"{_describe(exc)}{self._log_tail(state)}")
        finally:
            state.session = None
            if state.status == "running":
                state.status = "stopped"
            state.ready.set()

    def _on_message(self, state: ServerState) -> Any:
        """What the session hands over besides replies: a transport fault (a line on the
        server's stdout that is not JSON-RPC) is said once; the SDK logged the details."""
        async def handle(message: Any) -> None:
            if isinstance(message, Exception):
                where = f" (see {state.log.path})" if state.log and state.log.path else ""
                self._note(state, f"MCP server '{state.name}' wrote something that is not "
                                  f"MCP to its stdout; dexter ignored it{where}.")
        return handle

    @staticmethod
    def _on_server_log(state: ServerState) -> Any:
        async def handle(params: Any) -> None:
            if state.log is not None:
                state.log.write(f"[server log, {params.level}] {params.data}")
        return handle

    def _transport(self, state: ServerState) -> contextlib.AbstractAsyncContextManager[Any]:
        cfg = state.config
        if cfg.url:
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client

            headers = {k: expand_vars(v, self._env) for k, v in cfg.headers.items()}
            return streamable_http_client(cfg.url, http_client=create_mcp_http_client(headers))
        from mcp.client.stdio import StdioServerParameters, stdio_client

        env = {k: expand_vars(v, self._env) for k, v in cfg.env.items()}
        params = StdioServerParameters(command=self._program(cfg.command), args=list(cfg.args),
                                       env=env or None)
        log = state.log
        errlog = log.stderr_sink() if log is not None and log.path is not None \
            else open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 (the child's)
        return stdio_client(params, errlog=errlog)

    def _program(self, command: str) -> str:
        """The program to start for ``command``: a path as given; a name looked up on
        ``PATH`` without the folders commands may write (a program a command planted in an
        activated project venv must not run outside the sandbox)."""
        if not command or "/" in command:
            return command
        from dexter.sandbox.programs import system_program

        path = self._env.get("PATH", os.defpath)
        found = system_program(command, self._writable, path)
        if found is not None:
            return found
        planted = shutil.which(command, path=path)
        if planted is not None:
            raise McpError(f"{command} is found on PATH only at {planted}, in a folder commands "
                           "dexter runs can write, so dexter does not start it; give the "
                           "program's full path in the config if that is the one you mean")
        return command

    async def _list_tools(self, server: str,
                          session: Any) -> tuple[list[McpToolInfo], list[tuple[str, str]]]:
        """The tools the server lists that dexter offers, and those it does not, with why:
        a tool whose ``execution.taskSupport`` is ``required`` answers a plain call only
        with -32601, and dexter does not make task-augmented calls."""
        from mcp_types import PaginatedRequestParams

        found: list[McpToolInfo] = []
        skipped: list[tuple[str, str]] = []
        cursor: str | None = None
        for _ in range(100):  # pages
            params = PaginatedRequestParams(cursor=cursor) if cursor else None
            listed = await session.list_tools(params=params)
            for tool in listed.tools:
                execution = getattr(tool, "execution", None)
                if getattr(execution, "task_support", None) == "required":
                    skipped.append((tool.name, TASK_ONLY))
                    continue
                notes = tool.annotations
                schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
                found.append(McpToolInfo(
                    server=server, name=tool.name, description=tool.description or "",
                    input_schema=dict(schema),
                    read_only=bool(notes is not None and notes.read_only_hint),
                    title=(notes.title if notes is not None and notes.title else tool.title) or ""))
            cursor = listed.next_cursor
            if not cursor:
                break
        return found, skipped

    # -- reporting ------------------------------------------------------------------------

    def _fail(self, state: ServerState, why: str) -> None:
        state.status, state.error = "failed", self.clean(why)
        if not state.reported:
            state.reported = True
            line = (f"MCP server '{state.name}' stopped: {state.error}; it is restarted once "
                    f"when its tools are next called." if state.restartable else
                    f"MCP server '{state.name}' {state.error}; its tools are unavailable.")
            with contextlib.suppress(Exception):
                self._report(line)

    def _note(self, state: ServerState, line: str) -> None:
        """Say ``line`` about a running server once per session."""
        line = self.clean(line)
        if line in state.notes:
            return
        state.notes.append(line)
        with contextlib.suppress(Exception):
            self._notify(line)

    def _log_tail(self, state: ServerState) -> str:
        """The last line the server wrote to stderr, as ``(stderr: ...)``, if any."""
        if state.log is None or state.config.url:
            return ""
        line = state.log.tail()
        return f" (stderr: {line[:200]})" if line else ""

    # -- secrets --------------------------------------------------------------------------

    def _configured_secrets(self) -> list[str]:
        """The secret values the servers are given (``env`` and ``headers``, expanded),
        and the token of an ``Authorization: Bearer ...`` header."""
        found: list[str] = []
        for state in self.servers.values():
            pairs = {**state.config.env, **state.config.headers}
            for name, raw in pairs.items():
                value = expand_vars(raw, self._env)
                found += credential_values(name, value)
                if name.lower() == "authorization" and " " in value.strip():
                    found += credential_values(name, value.split()[-1])
        return found

    def _scrubbed(self, text: str) -> str:
        return scrub(text, self._secrets, key_shaped=True)

    def clean(self, text: str) -> str:
        """``text`` from or about a server as dexter may print it: no secret (the
        environment's, the servers' configured ones, anything key-shaped), no control
        character but newline and tab."""
        return escape_controls(self._scrubbed(text))


TASK_ONLY = ("not offered: it must be called as a task (execution.taskSupport = required), "
             "which dexter does not do")
