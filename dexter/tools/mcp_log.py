"""Each MCP server's log file, ``DEXTER_HOME/mcp-logs/NAME.log``: nothing of a server, or
of the MCP SDK about it, reaches the terminal.

The file gets, scrubbed of secrets line by line: what the server writes to stderr (through a
pipe dexter reads, so a server that prints its key does not put it in the file), the SDK's
own log records about that server (its warnings and tracebacks: a line on stdout that is not
JSON-RPC, an HTTP session that could not be ended), and the server's MCP log notifications.
Every start appends a separator line, so a restarted server's log keeps the reason the
previous one died; past about 1 MB the file is moved to ``NAME.log.1`` at the next start.

The SDK logs through the ``mcp`` logger from inside each server's tasks: :func:`route_sdk_logs`
gives that logger one handler that writes each record to the log of the server whose task
logged it (a context variable set by ``McpManager._serve``) and never passes it on.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime as dt
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

SEPARATOR = "----- dexter started MCP server"
"""Starts the line written at every start of a server."""
MAX_LOG_BYTES = 1_000_000


class ServerLog:
    """One server's log. ``path`` None: nothing is kept (no ``DEXTER_HOME`` given)."""

    def __init__(self, path: Path | None, scrub: Callable[[str], str]) -> None:
        self.path = path
        self._scrub = scrub
        self._file: TextIO | None = None
        self._lock = threading.Lock()
        self._reader: threading.Thread | None = None
        self._sink: TextIO | None = None
        self.last_stderr = ""
        """The last line the server wrote to stderr since it was last started."""

    def start(self, what: str) -> None:
        """A new start of the server (``what``: its command or URL): open the file for
        appending (moving a large one aside first) and write the separator line."""
        self.close()
        self.last_stderr = ""
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            if self.path.stat().st_size > MAX_LOG_BYTES:
                os.replace(self.path, self.path.with_name(self.path.name + ".1"))
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 (closed in close())
        stamp = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        self.write(f"{SEPARATOR} at {stamp}: {what} -----")

    def write(self, text: str) -> None:
        """Append ``text`` (scrubbed), a line at a time."""
        if self._file is None:
            return
        lines = self._scrub(text).rstrip("\n").split("\n")
        with self._lock, contextlib.suppress(OSError, ValueError):
            self._file.write("".join(line + "\n" for line in lines))
            self._file.flush()

    def stderr_sink(self) -> TextIO:
        """A file to give the server as its stderr: the write end of a pipe whose lines a
        thread scrubs into the log. Call :meth:`release_sink` once the process runs."""
        read_fd, write_fd = os.pipe()
        self._sink = os.fdopen(write_fd, "w", encoding="utf-8")
        self._reader = threading.Thread(target=self._read, args=(read_fd,),
                                        name="dexter-mcp-stderr", daemon=True)
        self._reader.start()
        return self._sink

    def release_sink(self) -> None:
        """Close dexter's copy of the pipe's write end (the server keeps its own), so the
        reader sees the end of the stream when the server exits."""
        sink, self._sink = self._sink, None
        if sink is not None:
            with contextlib.suppress(OSError):
                sink.close()

    def _read(self, fd: int) -> None:
        with open(fd, "rb") as pipe:
            for raw in pipe:
                line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
                if line.strip():
                    self.last_stderr = self._scrub(line.strip())
                self.write(line)

    def tail(self, wait: float = 2.0) -> str:
        """The last line the server wrote to stderr since this start, once the stream has
        ended (a dead server's last words arrive through the pipe after its exit), waiting
        at most ``wait`` seconds for that (a live server's stream does not end)."""
        reader = self._reader
        if reader is not None:
            self.release_sink()
            reader.join(wait)
        return self.last_stderr

    def close(self) -> None:
        """Stop writing (the reader ends with the server's stderr)."""
        self.release_sink()
        with self._lock:
            file, self._file = self._file, None
        if file is not None:
            with contextlib.suppress(OSError):
                file.close()


CURRENT: contextvars.ContextVar[ServerLog | None] = contextvars.ContextVar("mcp_server_log",
                                                                          default=None)
"""The log of the server whose task is running (set at the start of its task)."""


class _SdkRecords(logging.Handler):
    """Writes an ``mcp`` log record to the log of the server whose task logged it; a record
    from outside any server's task is dropped (it would otherwise reach the terminal)."""

    def emit(self, record: logging.LogRecord) -> None:
        log = CURRENT.get()
        if log is None:
            return
        # a log line must never break a call, nor print "--- Logging error ---" instead
        with contextlib.suppress(Exception):
            log.write(f"[mcp sdk] {self.format(record)}")


_handler = _SdkRecords()
_handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))


def route_sdk_logs() -> None:
    """Send the MCP SDK's log records to the servers' logs only (idempotent)."""
    sdk = logging.getLogger("mcp")
    if _handler not in sdk.handlers:
        sdk.addHandler(_handler)
    sdk.setLevel(logging.INFO)
    sdk.propagate = False  # never to the root logger, nor Python's last-resort stderr
