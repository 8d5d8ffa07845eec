"""Running one shell command as a contained, bounded child process.

``run_command`` starts ``/bin/sh -c`` in its own session and process group with no stdin,
inside the given :class:`~dexter.sandbox.runner.SandboxRunner` and
:class:`~dexter.sandbox.policy.SandboxPolicy` (or directly, with an allowlisted
environment). stdout and stderr are each kept up to 256 KB; the rest is read and dropped
(so the child never blocks on a full pipe) and counted. On timeout or cancellation the
whole group gets SIGTERM, then SIGKILL after a short grace; background processes the
command started are stopped when it finishes. On Linux dexter marks itself non-dumpable
before the first command, so a child running as the same (non-root) user cannot read its
``/proc/<pid>/environ`` even without a sandbox.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from dataclasses import dataclass, field

from dexter.failures import ToolFailure
from dexter.sandbox.policy import SandboxPolicy, child_environment
from dexter.sandbox.runner import NoSandbox, SandboxRunner, limit_setter

MAX_STREAM_BYTES = 256 * 1024
KILL_GRACE_SECONDS = 2.0
PIPE_DRAIN_SECONDS = 2.0


@dataclass
class _Capture:
    kept: bytearray = field(default_factory=bytearray)
    dropped: int = 0


async def _pump(stream: asyncio.StreamReader | None, capture: _Capture) -> None:
    if stream is None:
        return
    while chunk := await stream.read(65536):
        room = MAX_STREAM_BYTES - len(capture.kept)
        if room > 0:
            capture.kept += chunk[:room]
        capture.dropped += max(0, len(chunk) - max(room, 0))


_protected = False


def protect_own_environment() -> bool:
    """Make dexter's ``/proc/<pid>/environ`` unreadable to the commands it runs (Linux).

    ``prctl(PR_SET_DUMPABLE, 0)`` hands the process's /proc files to root; a child running
    as the same (non-root) user can then no longer read the keys in dexter's environment.
    Children are dumpable again after ``exec``, so their own tools keep working. Returns
    True when the process is protected. Elsewhere (macOS) /proc does not exist.
    """
    global _protected
    if _protected or not sys.platform.startswith("linux"):
        return _protected
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        _protected = libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) == 0
    except (OSError, AttributeError):
        _protected = False
    return _protected


_PR_SET_DUMPABLE = 4


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def _stop_group(proc: asyncio.subprocess.Process, grace: float) -> None:
    """SIGTERM the group, wait ``grace`` seconds for the shell, then SIGKILL the group."""
    _signal_group(proc.pid, signal.SIGTERM)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(proc.wait(), grace)
    _signal_group(proc.pid, signal.SIGKILL)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(proc.wait(), grace)


def _render(name: str, capture: _Capture) -> str:
    text = capture.kept.decode("utf-8", errors="replace").rstrip("\n")
    if capture.dropped:
        text += (f"\n[{name}: {capture.dropped:,} more bytes were dropped; only the first "
                 f"{MAX_STREAM_BYTES:,} bytes are kept]")
    return f"--- {name} ---\n{text}"


@dataclass(frozen=True, slots=True)
class BashRun:
    """The outcome of one command."""

    command: str
    exit_code: int | None
    stdout: _Capture
    stderr: _Capture
    seconds: float
    timed_out: bool
    timeout: int
    sandbox_note: str = ""

    def text(self) -> str:
        """The result the model sees."""
        if self.timed_out:
            status = (f"Timed out after {self.timeout} s: the command and its child processes "
                      "were stopped.")
        elif self.exit_code is not None and self.exit_code < 0:
            status = f"Killed by signal {-self.exit_code}."
        else:
            status = f"Exit code: {self.exit_code}"
        parts = [f"$ {self.command}", f"{status} ({self.seconds:.2f} s)"]
        if self.stdout.kept or self.stdout.dropped:
            parts.append(_render("stdout", self.stdout))
        if self.stderr.kept or self.stderr.dropped:
            parts.append(_render("stderr", self.stderr))
        if len(parts) == 2:
            parts.append("(no output)")
        if self.sandbox_note and self.exit_code != 0:
            parts.append(f"[{self.sandbox_note}. A command that needs more must be asked "
                         "for: the user approves network or paths outside the workspace.]")
        return "\n".join(parts)


async def run_command(command: str, cwd: os.PathLike[str] | str, timeout: int, *,
                      runner: SandboxRunner | None = None,
                      policy: SandboxPolicy | None = None,
                      env: dict[str, str] | None = None) -> BashRun:
    """Run ``command`` under ``/bin/sh -c`` with the caps, timeout and group kill.

    With a ``runner`` and a ``policy`` the shell runs inside that sandbox with the policy's
    environment and limits; without, it runs directly with ``env`` (default: the allowlist).
    """
    started = time.monotonic()
    protect_own_environment()
    runner = runner or NoSandbox("not requested")
    shell = ["/bin/sh", "-c", command]
    argv = runner.argv(shell, policy) if policy is not None else shell
    child_env = dict(policy.env) if policy is not None else (env or child_environment())
    preexec = limit_setter(policy.limits) \
        if policy is not None and not runner.limits_in_argv else None
    start = asyncio.ensure_future(asyncio.create_subprocess_exec(
        *argv, cwd=cwd, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        start_new_session=True, env=child_env, preexec_fn=preexec,
    ))
    try:
        proc = await asyncio.shield(start)
    except OSError as exc:
        runner.cleanup()
        raise ToolFailure(f"Could not start {argv[0]} in {cwd}: {exc.strerror or exc}.") from None
    except asyncio.CancelledError:
        # Cancelled while the pipes were being connected: the shell already runs (and may
        # have started children), and asyncio alone would kill only the shell, then wait
        # for the pipes the children hold. Finish the start, then stop the whole group.
        with contextlib.suppress(Exception):
            await asyncio.shield(_stop_group(await start, 0.5))
        runner.cleanup()
        raise
    out, err = _Capture(), _Capture()
    pumps = [asyncio.create_task(_pump(proc.stdout, out)),
             asyncio.create_task(_pump(proc.stderr, err))]
    timed_out = False
    try:
        try:
            await asyncio.wait_for(proc.wait(), timeout)
        except TimeoutError:
            timed_out = True
            await _stop_group(proc, KILL_GRACE_SECONDS)
        _, pending = await asyncio.wait(pumps, timeout=PIPE_DRAIN_SECONDS)
        _signal_group(proc.pid, signal.SIGKILL)  # leftovers started in the background
        if pending:
            await asyncio.wait(pending, timeout=PIPE_DRAIN_SECONDS)
    except asyncio.CancelledError:
        await asyncio.shield(_stop_group(proc, 0.5))
        raise
    finally:
        for task in pumps:
            task.cancel()
        runner.cleanup()
    sandbox_note = policy.summary() if policy is not None and runner.status.active else ""
    return BashRun(command, proc.returncode, out, err, time.monotonic() - started, timed_out,
                   timeout, sandbox_note)
