"""Starting commands inside a cgroup without moving a process into it every time.

Moving a process into a cgroup (writing its pid to ``cgroup.procs``) waits for an RCU
grace period in the kernel: several milliseconds per command, more on a busy machine. A
process that is already inside forks children that are inside from their first
instruction, for free. So each cgroup of the pool gets one small helper process, moved in
once: :class:`Spawner` sends it a command (``argv``, environment, working directory, and
the descriptors it needs: stdin, stdout, stderr and the ones ``bwrap`` reads, passed over a
Unix socket with ``SCM_RIGHTS``, and the resource limits); it forks, the child makes its own
process group (both sides call ``setpgid``, so the group exists before dexter can signal
it), sets the limits and execs, and the helper reports the pid, then the exit status. The
helper dies with dexter (``PR_SET_PDEATHSIG``), and ``bwrap --die-with-parent`` with it.

The helper is a session leader with no controlling terminal (it is started in a new
session, and opens no terminal), and a command stays in its session: no command can reach
the terminal dexter runs in (``TIOCSTI``, reading keystrokes). A new session per command
would say the same again at a price: with the scheduler's autogroups (on by default), each
``setsid`` makes a new scheduling group, and on a loaded machine the process then waits
about 3 ms for its first turn (measured by ``benchmarks/sandbox_cost.py``).

The limits are set in the forked child, so ``bwrap`` and everything it starts inherit
them, without a ``prlimit`` exec per command (about 1 ms).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
from collections.abc import Sequence

# The helper: python -I -S -c HELPER <socket fd>, in /. Serves one command at a time.
# Isolated mode (-I: no environment variables, no user site, and neither the working
# directory nor the script's folder on sys.path) and no site (-S): the helper runs outside
# the sandbox, so it must not import a json.py a command wrote into the workspace.
HELPER = r'''
import ctypes, fcntl, json, os, resource, signal, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: die with dexter
if os.getppid() == 1:
    sys.exit(0)
sock = socket.socket(fileno=int(sys.argv[1]))
while True:
    try:
        msg, fds, _, _ = socket.recv_fds(sock, 1 << 20, 512)
    except OSError:
        break
    if not msg:
        break
    req = json.loads(msg)
    pid = os.fork()
    if pid == 0:
        try:
            os.setpgid(0, 0)
            for which, value in req["limits"]:
                _, hard = resource.getrlimit(which)
                cap = value if hard == resource.RLIM_INFINITY else min(value, hard)
                resource.setrlimit(which, (cap, cap))
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 1000) for fd in fds]
            targets = [0, 1, 2, *req["pass"]]
            for src, dst in zip(high, targets):
                os.dup2(src, dst)
            keep = set(targets)
            for fd in range(3, max(keep | {3}) + 1):
                if fd not in keep:
                    try: os.close(fd)
                    except OSError: pass
            os.closerange(max(keep | {3}) + 1, 1 << 16)
            os.chdir(req["cwd"])
            os.execve(req["argv"][0], req["argv"], req["env"])
        except BaseException as exc:
            try: os.write(2, f"dexter: could not start {req['argv'][0]}: {exc}\n".encode())
            except OSError: pass
            os._exit(127)
    try: os.setpgid(pid, pid)
    except OSError: pass  # it did so itself and has started bwrap
    for fd in fds:
        os.close(fd)
    sock.send(json.dumps({"pid": pid}).encode())
    _, status = os.waitpid(pid, 0)
    sock.send(json.dumps({"status": status}).encode())
'''


class Spawner:
    """One helper process inside a cgroup; :meth:`spawn` starts a command through it."""

    def __init__(self, start_argv: Sequence[str]) -> None:
        """``start_argv`` is how the helper itself is started (the cgroup's join wrapper
        around ``python``): the one process move into the cgroup."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._sock = ours
        argv = [*start_argv, sys.executable, "-I", "-S", "-c", HELPER, str(theirs.fileno())]
        try:
            self._proc = subprocess.Popen(argv, pass_fds=(theirs.fileno(),), cwd="/",
                                          stdin=subprocess.DEVNULL, env={"PATH": "/usr/bin:/bin"},
                                          start_new_session=True)
        finally:
            theirs.close()
        self._sock.setblocking(False)

    @property
    def alive(self) -> bool:
        return self._proc.poll() is None

    @property
    def pid(self) -> int:
        return self._proc.pid

    async def spawn(self, argv: Sequence[str], env: dict[str, str], cwd: str,
                    pass_fds: Sequence[int],
                    rlimits: Sequence[tuple[int, int]] = ()) -> SpawnedProcess:
        """Start ``argv`` with each ``(resource, value)`` of ``rlimits`` as its soft and hard
        limit (capped at the helper's own hard limit; a limit that cannot be set fails the
        start); its stdout and stderr come back as stream readers."""
        loop = asyncio.get_running_loop()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            request = json.dumps({"argv": list(argv), "env": env, "cwd": cwd,
                                  "pass": list(pass_fds),
                                  "limits": [list(pair) for pair in rlimits]}).encode()
            await _send_fds(loop, self._sock, request, [null, out_w, err_w, *pass_fds])
        except OSError:
            for fd in (out_r, err_r):
                os.close(fd)
            raise
        finally:
            for fd in (null, out_w, err_w):
                os.close(fd)
        reply: dict[str, int] = {"status": 0}
        while "status" in reply:  # an exit status nobody read (a run cancelled before it)
            reply = json.loads(await loop.sock_recv(self._sock, 4096) or b"{}")
        if "pid" not in reply:
            for fd in (out_r, err_r):
                os.close(fd)
            raise OSError("the command helper stopped")
        return SpawnedProcess(reply["pid"], self._sock, await _reader(loop, out_r),
                              await _reader(loop, err_r))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.close()
        with contextlib.suppress(OSError):
            self._proc.kill()
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            self._proc.wait(timeout=2)


async def _send_fds(loop: asyncio.AbstractEventLoop, sock: socket.socket, data: bytes,
                    fds: list[int]) -> None:
    while True:
        try:
            socket.send_fds(sock, [data], fds)
            return
        except BlockingIOError:
            await asyncio.sleep(0.001)


async def _reader(loop: asyncio.AbstractEventLoop, fd: int) -> asyncio.StreamReader:
    reader = asyncio.StreamReader(limit=2**20)
    pipe = os.fdopen(fd, "rb", buffering=0)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
    return reader


class SpawnedProcess:
    """A command started by a :class:`Spawner`: what ``asyncio.subprocess.Process`` gives
    the runner (``pid``, ``stdout``, ``stderr``, ``wait()``, ``returncode``)."""

    def __init__(self, pid: int, sock: socket.socket, stdout: asyncio.StreamReader,
                 stderr: asyncio.StreamReader) -> None:
        self.pid = pid
        self.stdout: asyncio.StreamReader | None = stdout
        self.stderr: asyncio.StreamReader | None = stderr
        self.returncode: int | None = None
        self._sock = sock
        self._waiter: asyncio.Task[int] | None = None

    async def _wait(self) -> int:
        loop = asyncio.get_running_loop()
        data = await loop.sock_recv(self._sock, 4096)
        status = json.loads(data or b"{}").get("status")
        self.returncode = os.waitstatus_to_exitcode(status) if isinstance(status, int) else -9
        return self.returncode

    async def wait(self) -> int:
        """The exit code (negative: the signal that ended it), once it has exited."""
        if self._waiter is None:
            self._waiter = asyncio.ensure_future(self._wait())
        return await asyncio.shield(self._waiter)
