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

Protocol: the client connects to the server's Unix socket and sends a JSON request (argv,
environment, working directory) with three descriptors (stdin, stdout, stderr). The server
forks a supervisor for the connection, which forks the run and sends back its pid, then its
exit status, one JSON line each.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import IO

# The server, run as ``python -P -c SERVER SOCKET_PATH``. ``-P``: no working directory on the
# module path (a forked run changes directory into a test's workspace).
SERVER = r'''
import ctypes, json, os, signal, socket, sys
ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: die with the worker
import pkgutil, dexter
# Everything a run may import, dexter's modules and the libraries it loads lazily; not
# matplotlib, which settles its config folder from HOME when it is imported.
names = [m.name for m in pkgutil.walk_packages(dexter.__path__, "dexter.")
         if not m.name.startswith(("dexter.__main__", "dexter.testing"))]
names += ["openai", "anthropic", "httpx", "rich.console", "rich.live", "rich.table",
          "rich.progress", "tiktoken", "lxml.html", "bs4", "openpyxl", "fpdf", "pypdf",
          "markdown_it", "prompt_toolkit.shortcuts", "prompt_toolkit.application",
          "mcp.client.session", "mcp.client.stdio", "mcp.client.streamable_http",
          "mcp.shared._httpx_utils", "mcp.shared.exceptions", "mcp_types", "jsonschema",
          "dotenv"]
for name in names:
    try:
        __import__(name)
    except Exception:
        pass
if "matplotlib" in sys.modules:
    raise SystemExit("a module the fork server imported loaded matplotlib")
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(sys.argv[1])
listener.listen(64)
sys.stdout.write("ready\n"); sys.stdout.flush()
signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # supervisors are reaped by the kernel


def run(conn, req, fds):
    os.setsid()
    for src, dst in zip(fds, (0, 1, 2)):
        os.dup2(src, dst)
    os.closerange(3, 1 << 16)
    os.chdir(req["cwd"])
    os.environ.clear()
    os.environ.update(req["env"])
    sys.argv = ["-m", *req["args"]]
    code = 0
    try:
        import runpy
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


def _socket_path() -> str:
    global _server
    with _lock:
        if _server is not None and _server[0].poll() is None:
            return _server[1]
        folder = tempfile.mkdtemp(prefix="dexter-forkserver-")
        path = os.path.join(folder, "s")
        keep = {k: v for k, v in os.environ.items()
                if k in {"PATH", "LANG", "LC_ALL", "PYTHONPATH"}}
        proc = subprocess.Popen(
            [sys.executable, "-P", "-c", SERVER, path], cwd="/", env=keep,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        if proc.stdout.readline().strip() != "ready":
            raise RuntimeError("the dexter fork server for the tests did not start")
        _server = (proc, path)
        atexit.register(proc.kill)
        return path


def run(args: list[str], *, cwd: Path, env: dict[str, str], timeout: float,
        input_text: str | None) -> tuple[int, str, str]:
    """Run ``python -m dexter ARGS`` as a fork of the pre-imported server: (exit code,
    stdout, stderr), as ``subprocess.run(..., capture_output=True, text=True)`` would give;
    raises :class:`subprocess.TimeoutExpired` after killing the run's process group."""
    with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as stdout, \
            tempfile.TemporaryFile() as stderr, \
            socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        if input_text is not None:
            stdin.write(input_text.encode())
            stdin.seek(0)
        conn.connect(_socket_path())
        request = json.dumps({"args": args, "cwd": str(cwd), "env": env}).encode() + b"\n"
        socket.send_fds(conn, [request[:4096]], [stdin.fileno(), stdout.fileno(),
                                                 stderr.fileno()])
        conn.sendall(request[4096:])
        conn.settimeout(timeout)
        reader = conn.makefile("rb")
        pid = json.loads(reader.readline())["pid"]
        try:
            line = reader.readline()
        except TimeoutError:
            line = b""
        if not line:
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
            raise subprocess.TimeoutExpired([sys.executable, "-m", "dexter", *args], timeout)
        ended = json.loads(line)
        status = int(ended["status"])
        global cpu_seconds
        cpu_seconds += float(ended["cpu"])
        return status, _text(stdout), _text(stderr)


def _text(file: IO[bytes]) -> str:
    """What ``text=True`` gives: decoded, with universal newlines."""
    file.seek(0)
    return io.TextIOWrapper(file, encoding="utf-8", newline=None).read()
