"""Start ``python -m dexter`` runs from a pre-imported interpreter instead of a cold one.

A cold ``dexter ask`` spends most of its CPU importing: the OpenAI SDK about half a second,
the Anthropic SDK over a second (pydantic builds every model class), dexter's own modules a
few tenths more. The end-to-end tests start dexter several hundred times, so on a 2-core
machine those imports alone take minutes. The fork server imports them once per test worker
and then forks a new process per run: each run is a fresh process with its own environment,
working directory, arguments, standard streams, process group and exit status, and it runs
``dexter/__main__.py`` exactly as ``python -m dexter`` does; only the import work is shared,
copy-on-write. What the fork server cannot show is what happens *during* imports or before
them (the module path, a module a command planted, start-up itself): those tests start a
cold interpreter (``run_cli(..., fresh=True)`` or ``as_script=True``), and
``DEXTER_TESTS_COLD=1`` makes every run cold, to check that the fork server hides nothing.

One server serves the whole session: the controlling pytest process starts it before its
workers (:func:`start_shared`, from ``tests/conftest.py``) and the workers inherit its
socket's path; a worker whose shared server is gone starts one of its own. A request may
name a ``script`` instead: ``tests/fixtures/warm_run.py`` uses that to start the MCP tests'
fixture server, whose SDK imports would otherwise cost each of its starts over a second.

The server imports, besides dexter's modules, what the SDKs and the CLI import only on first
use, and it loads the trust stores (``dexter.tls``) once: a run that had to do either paid
a tenth of a second or more for it. With ``DEXTER_TESTS_FORKSERVER_MISSES=FILE`` each run
appends to FILE the modules it still imported, to keep the list whole.

Protocol: the client connects to the server's Unix socket and sends a JSON request (argv,
environment, working directory) with three descriptors (stdin, stdout, stderr). The server
forks a supervisor for the connection, which forks the run and sends back its pid, then its
exit status, one JSON line each.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import io
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import termios
import threading
from pathlib import Path
from typing import IO

from pexpect.fdpexpect import fdspawn

# The server, run as ``python -P -c SERVER SOCKET_PATH``. ``-P``: no working directory on the
# module path (a forked run changes directory into a test's workspace).
SERVER = r'''
import ctypes, json, os, signal, socket, sys
ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: die with the worker
# Listen first: a client connects at once and its request waits in the backlog until the
# imports below are done (the suite's shared server is started without waiting for them).
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(sys.argv[1])
listener.listen(128)
import pkgutil, dexter
# Everything a run may import: dexter's modules and the libraries it loads lazily.
# matplotlib settles its config and cache folders (from HOME) when it is imported, so it
# gets one of the server's own, where it builds its font list once; a cold run builds it
# again in each test's empty HOME (about a second).
os.environ["MPLCONFIGDIR"] = os.path.join(os.path.dirname(sys.argv[1]), "matplotlib")
names = [m.name for m in pkgutil.walk_packages(dexter.__path__, "dexter.")
         if not m.name.startswith(("dexter.__main__", "dexter.testing"))]
names += ["openai", "anthropic", "httpx", "rich.console", "rich.live", "rich.table",
          "rich.progress", "tiktoken", "lxml.html", "bs4", "openpyxl", "fpdf", "pypdf",
          "markdown_it", "prompt_toolkit.shortcuts", "prompt_toolkit.application",
          "mcp.client.session", "mcp.client.stdio", "mcp.client.streamable_http",
          "mcp.shared._httpx_utils", "mcp.shared.exceptions", "mcp_types", "jsonschema",
          "dotenv", "matplotlib", "matplotlib.figure", "matplotlib.font_manager",
          "matplotlib.backends.backend_agg", "matplotlib.backends.backend_svg",
          "matplotlib.ticker", "matplotlib.style", "numpy",
          # the tests' MCP server (tests/fixtures/mcp_server.py), run as a script
          "mcp.server", "mcp.server.stdio", "mcp.server.mcpserver", "mcp_types",
          "mcp.server.streamable_http_manager", "uvicorn", "starlette.applications",
          # what the SDKs and the CLI import only on first use (a client's first request,
          # a command's first option): DEXTER_TESTS_FORKSERVER_MISSES lists what is left
          "httpx2", "httpcore2", "httpcore", "h11", "anyio._backends._asyncio", "certifi",
          "truststore", "platformdirs", "platformdirs.unix", "pyseccomp", "ctypes.util",
          "typer._click.decorators", "typer._adapters", "rich._emoji_codes",
          "encodings.utf_16_le", "encodings.utf_8_sig", "runpy", "rich.logging",
          "rich._unicode_data.unicode17-0-0", "anyio._core._subprocesses", "tty",
          "prompt_toolkit.key_binding.bindings.search", "prompt_toolkit.input.vt100",
          "prompt_toolkit.input.posix_utils", "_strptime", "openai.resources.embeddings"]
import importlib
for name in names:
    try:
        importlib.import_module(name)
    except Exception:
        pass
# Each HTTP library's trust store, loaded once here instead of in every run (dexter.tls keys
# it by SSL_CERT_FILE and SSL_CERT_DIR, which this server's environment does not set).
try:
    from dexter import tls
    tls.sdk_context(), tls.httpx_context()
except Exception:
    pass
PRELOADED = set(sys.modules)
MISSES = os.environ.get("DEXTER_TESTS_FORKSERVER_MISSES")
sys.stdout.write("ready\n"); sys.stdout.flush()
signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # supervisors are reaped by the kernel


KEEP = []


def fresh_stdio(unbuffered):
    """sys.stdin, stdout and stderr made again for the run's descriptors, as the
    interpreter makes them at start (line-buffered on a terminal and for stderr;
    write-through with PYTHONUNBUFFERED)."""
    import io
    KEEP.extend((sys.stdin, sys.stdout, sys.stderr))  # never closed: they hold fds 0-2
    made = []
    for fd in (0, 1, 2):
        write = fd != 0
        raw = io.FileIO(fd, "wb" if write else "rb", closefd=False)
        buffer = raw if (write and unbuffered) else (
            io.BufferedWriter(raw) if write else io.BufferedReader(raw))
        made.append(io.TextIOWrapper(
            buffer, encoding="utf-8", newline="\n",
            errors="backslashreplace" if fd == 2 else "strict",
            line_buffering=not unbuffered and (fd == 2 or (write and raw.isatty())),
            write_through=write and unbuffered))
    sys.stdin, sys.stdout, sys.stderr = made
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = made


def run(conn, req, fds):
    os.setsid()
    for src, dst in zip(fds, (0, 1, 2)):
        os.dup2(src, dst)
    if req.get("tty"):
        import fcntl, termios
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    os.closerange(3, 1 << 16)
    os.chdir(req["cwd"])
    os.environ.clear()
    os.environ.update(req["env"])
    fresh_stdio(bool(req["env"].get("PYTHONUNBUFFERED")))
    script = req.get("script")
    sys.argv = [script, *req["args"]] if script else ["-m", *req["args"]]
    code = 0
    try:
        import runpy
        if script:
            runpy.run_path(script, run_name="__main__")
        else:
            runpy.run_module("dexter", run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        if exc.code is None:
            code = 0
        elif isinstance(exc.code, int):
            code = exc.code
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = 1
    # What the interpreter does on its way out: wait for threads, run atexit, flush.
    try:
        import threading
        threading._shutdown()
    except BaseException:
        pass
    try:
        import atexit
        atexit._run_exitfuncs()
    except BaseException:
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    if MISSES:
        try:
            with open(MISSES, "a") as handle:
                handle.write("".join(f"{name}\n" for name in set(sys.modules) - PRELOADED))
        except OSError:
            pass
    os._exit(code & 0xFF)


def supervise(conn):
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    msg, fds, _, _ = socket.recv_fds(conn, 1 << 16, 3)
    while not msg.endswith(b"\n"):
        more = conn.recv(1 << 16)
        if not more:
            os._exit(1)
        msg += more
    req = json.loads(msg)
    pid = os.fork()
    if pid == 0:
        run(conn, req, fds)
    for fd in fds:
        os.close(fd)
    conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
    _, status, usage = os.wait4(pid, 0)
    conn.sendall(json.dumps({"status": os.waitstatus_to_exitcode(status),
                             "cpu": usage.ru_utime + usage.ru_stime}).encode() + b"\n")
    os._exit(0)


while True:
    conn, _ = listener.accept()
    if os.fork() == 0:
        listener.close()
        try:
            supervise(conn)
        finally:
            os._exit(1)
    conn.close()
'''

cpu_seconds = 0.0
"""CPU time of the runs this process started through the server and that have ended (for
the suite's CPU log: they are the server's children, not this process's)."""
_lock = threading.Lock()
_server: tuple[subprocess.Popen[str], str] | None = None


def cold() -> bool:
    """Whether every run starts a cold interpreter (``DEXTER_TESTS_COLD=1``)."""
    return os.environ.get("DEXTER_TESTS_COLD", "") not in ("", "0")


SHARED = "DEXTER_TESTS_FORKSERVER"
"""The environment variable naming the socket of the server the whole test session shares
(started by the controlling pytest process, :func:`start_shared`, before its workers)."""
_shared_failed = False


def start_shared() -> None:
    """Start one server for the session and name its socket in :data:`SHARED`, which the
    test workers inherit: its imports are then paid once, not once per worker. It is not
    waited for: requests queue on its socket until it has imported everything."""
    if cold() or os.environ.get(SHARED):
        return
    proc, folder, path = _spawn()
    atexit.register(_stop, proc, folder)
    os.environ[SHARED] = path


def _spawn() -> tuple[subprocess.Popen[str], str, str]:
    folder = tempfile.mkdtemp(prefix="dexter-forkserver-")
    path = os.path.join(folder, "s")
    keep = {k: v for k, v in os.environ.items()
            if k in {"PATH", "LANG", "LC_ALL", "PYTHONPATH", "DEXTER_TESTS_FORKSERVER_MISSES"}}
    proc = subprocess.Popen(
        [sys.executable, "-P", "-c", SERVER, path], cwd="/", env=keep,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
    return proc, folder, path


def socket_path() -> str:
    """The socket of the server this process sends its runs to: the session's shared one
    while it answers, else one of this process's own (started on first use)."""
    shared = os.environ.get(SHARED)
    if shared and not _shared_failed:
        return shared
    return _own_socket_path()


def _own_socket_path() -> str:
    global _server
    with _lock:
        if _server is not None and _server[0].poll() is None:
            return _server[1]
        proc, folder, path = _spawn()
        assert proc.stdout is not None
        if proc.stdout.readline().strip() != "ready":
            raise RuntimeError("the dexter fork server for the tests did not start")
        _server = (proc, path)
        atexit.register(_stop, proc, folder)
        return path


def _stop(proc: subprocess.Popen[str], folder: str) -> None:
    """End the server and remove its folder (its socket and matplotlib's font list)."""
    proc.kill()
    proc.wait()
    shutil.rmtree(folder, ignore_errors=True)


def _start(args: list[str], cwd: Path, env: dict[str, str], fds: list[int],
           tty: bool = False) -> tuple[socket.socket, IO[bytes], int]:
    """Ask the server for a run on ``fds`` (stdin, stdout, stderr): (connection, its reader,
    the run's pid)."""
    global _shared_failed
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(socket_path())
    except (FileNotFoundError, ConnectionRefusedError):
        if not os.environ.get(SHARED) or _shared_failed:
            raise
        _shared_failed = True  # the shared server is gone: use one of this worker's own
        conn.connect(socket_path())
    request = json.dumps({"args": args, "cwd": str(cwd), "env": env, "tty": tty}).encode()
    request += b"\n"
    socket.send_fds(conn, [request[:4096]], fds)
    conn.sendall(request[4096:])
    reader = conn.makefile("rb")
    return conn, reader, int(json.loads(reader.readline())["pid"])


def _ended(line: bytes) -> int:
    """The exit status in the server's last line (negative: killed by that signal)."""
    global cpu_seconds
    ended = json.loads(line)
    cpu_seconds += float(ended["cpu"])
    return int(ended["status"])


def run(args: list[str], *, cwd: Path, env: dict[str, str], timeout: float,
        input_text: str | None) -> tuple[int, str, str]:
    """Run ``python -m dexter ARGS`` as a fork of the pre-imported server: (exit code,
    stdout, stderr), as ``subprocess.run(..., capture_output=True, text=True)`` would give;
    raises :class:`subprocess.TimeoutExpired` after killing the run's process group."""
    with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as stdout, \
            tempfile.TemporaryFile() as stderr:
        if input_text is not None:
            stdin.write(input_text.encode())
            stdin.seek(0)
        conn, reader, pid = _start(args, cwd, env,
                                   [stdin.fileno(), stdout.fileno(), stderr.fileno()])
        with conn, reader:
            conn.settimeout(timeout)
            try:
                line = reader.readline()
            except TimeoutError:
                line = b""
            if not line:
                with contextlib.suppress(OSError):
                    os.killpg(pid, signal.SIGKILL)
                raise subprocess.TimeoutExpired([sys.executable, "-m", "dexter", *args],
                                                timeout)
            status = _ended(line)
        return status, _text(stdout), _text(stderr)


class Terminal(fdspawn):
    """A dexter run on a pseudo-terminal of its own, forked from the server: what
    ``pexpect.spawn(sys.executable, ["-m", "dexter", *args], dimensions=...)`` gives
    (``expect``, ``send``, ``sendcontrol``, ``sendintr``, ``close(force=True)``,
    ``exitstatus`` and ``signalstatus``), the terminal its controlling one."""

    def __init__(self, args: list[str], *, cwd: Path, env: dict[str, str],
                 dimensions: tuple[int, int], timeout: float) -> None:
        master, slave = os.openpty()
        rows, cols = dimensions
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        try:
            self._conn, self._reader, self.pid = _start(args, cwd, env, [slave] * 3, tty=True)
        finally:
            os.close(slave)
        super().__init__(master, timeout=timeout, encoding="utf-8")
        self.exitstatus: int | None = None
        self.signalstatus: int | None = None
        self._status: int | None = None

    def sendcontrol(self, char: str) -> int:
        """Send the control character ``char`` (``"c"`` for Ctrl-C), as pexpect does."""
        return self.send(chr(ord(char.lower()) - ord("a") + 1))

    def sendintr(self) -> None:
        """Send the terminal's interrupt character (Ctrl-C)."""
        self.send("\x03")

    def isalive(self) -> bool:
        """Whether the run has not ended yet."""
        return self._wait(0) is None

    def _wait(self, timeout: float | None) -> int | None:
        if self._status is None:
            self._conn.settimeout(timeout)
            try:
                line = self._reader.readline()
            except (TimeoutError, BlockingIOError):
                return None
            self._status = _ended(line)
            self.exitstatus = self._status if self._status >= 0 else None
            self.signalstatus = -self._status if self._status < 0 else None
            self._reader.close()
            self._conn.close()
        return self._status

    def close(self, force: bool = True) -> None:
        """Close the terminal (a hang-up for the run, as pexpect's close sends) and wait
        for the run to end; ``force``: kill it if it has not ended after a while."""
        if self.child_fd != -1:
            super().close()
        if self._wait(5.0) is None:
            if not force:
                self._wait(None)
                return
            with contextlib.suppress(OSError):
                os.killpg(self.pid, signal.SIGKILL)
            self._wait(None)


def _text(file: IO[bytes]) -> str:
    """What ``text=True`` gives: decoded, with universal newlines."""
    file.seek(0)
    return io.TextIOWrapper(file, encoding="utf-8", newline=None).read()
