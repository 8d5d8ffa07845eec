"""Running one shell command as a contained, bounded child process.

``run_command`` starts ``/bin/sh -c`` in its own process group, in a session without a
controlling terminal (a new one, or the cgroup helper's: :mod:`dexter.sandbox.spawner`),
with no stdin, inside the given :class:`~dexter.sandbox.runner.SandboxRunner` and
:class:`~dexter.sandbox.policy.SandboxPolicy` (or directly, with an allowlisted
environment). stdout and stderr are each kept up to 256 KB; the rest is read and dropped
(so the child never blocks on a full pipe) and counted. On timeout or cancellation the
whole group gets SIGTERM, then SIGKILL after a short grace; background processes the
command started are stopped when it finishes. On Linux dexter marks itself non-dumpable
before the first command, so a child running as the same (non-root) user cannot read its
``/proc/<pid>/environ`` even without a sandbox.

With a sandbox, a command runs under :func:`dexter.sandbox.guard.workspace_lock`: what it
may not touch is opened and noted first (:func:`~dexter.sandbox.guard.prepare`; a link in
the way refuses the command), and checked after it (:func:`~dexter.sandbox.guard.after`):
what it did to a protected path is rolled back and listed in ``BashRun.findings``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from dexter.failures import ToolFailure
from dexter.sandbox.guard import ProtectionRefused, after, prepare, workspace_lock
from dexter.sandbox.policy import SandboxPolicy, child_environment
from dexter.sandbox.runner import Launch, NoSandbox, SandboxRunner, limit_setter
from dexter.sandbox.spawner import SpawnedProcess

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


async def _stop_group(proc: asyncio.subprocess.Process | SpawnedProcess, grace: float) -> None:
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
    findings: tuple[str, ...] = ()
    """What the command did to protected paths, and what dexter did about it."""
    limit_notes: tuple[str, ...] = ()
    """Limits that stopped something (the memory limit killed a process...)."""

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
        for note in self.limit_notes:
            parts.append(f"[{note}]")
        if self.findings:
            parts.append("[dexter rolled back what this command did to paths it protects: "
                         + "; ".join(self.findings) + ". Do not try again: commands may not "
                         "create or change git repositories' .git, dexter's settings, records "
                         "or configuration, or links to them.]")
        if self.sandbox_note and self.exit_code != 0:
            parts.append(f"[{self.sandbox_note}. A command that needs more must be asked "
                         "for: the user approves network or paths outside the workspace.]")
        return "\n".join(parts)


async def run_command(command: str, cwd: os.PathLike[str] | str, timeout: int, *,
                      runner: SandboxRunner | None = None,
                      policy: SandboxPolicy | None = None,
                      env: dict[str, str] | None = None,
                      quarantine: Path | None = None,
                      waiting: Callable[[], None] | None = None) -> BashRun:
    """Run ``command`` under ``/bin/sh -c`` with the caps, timeout and group kill.

    With a ``runner`` and a ``policy`` the shell runs inside that sandbox with the policy's
    environment and limits, under the workspace lock (``waiting`` is called when another
    dexter holds it), with its protected paths checked before and after (what must not be
    there is moved into ``quarantine``); a link in the way of one raises ``ToolFailure``.
    Without, it runs directly with ``env`` (default: the allowlist).
    """
    protect_own_environment()
    runner = runner or NoSandbox("not requested")
    shell = ["/bin/sh", "-c", command]
    if policy is None:
        return await _run(command, cwd, timeout, Launch(shell, env or child_environment()),
                          None, runner)
    if not runner.status.active:
        with runner.launch(shell, policy) as launch:
            return await _run(command, cwd, timeout, launch, policy, runner)
    async with workspace_lock(policy.workspace, waiting):
        try:
            prepared = prepare(policy)
        except ProtectionRefused as exc:
            raise ToolFailure(f"Not run: {exc}.") from None
        try:
            with runner.launch(shell, policy, prepared) as launch:
                result = await _run(command, cwd, timeout, launch, policy, runner)
        finally:
            prepared.close()
        box = quarantine or (policy.dexter_home or policy.workspace / ".dexter") / "quarantine"
        findings = await asyncio.to_thread(after, prepared, policy, box)
    if findings:
        result = dataclasses.replace(result, findings=tuple(findings))
    return result


async def _run(command: str, cwd: os.PathLike[str] | str, timeout: int, launch: Launch,
               policy: SandboxPolicy | None, runner: SandboxRunner) -> BashRun:
    started = time.monotonic()
    preexec = limit_setter(policy.limits) \
        if policy is not None and not runner.limits_in_argv else None
    ooms = launch.cgroup.oom_kills() if launch.cgroup is not None else 0
    starting: Awaitable[asyncio.subprocess.Process | SpawnedProcess]
    if launch.spawner is not None:
        starting = launch.spawner.spawn(launch.argv, launch.env, os.fspath(cwd),
                                        launch.pass_fds, launch.rlimits)
    else:
        starting = asyncio.create_subprocess_exec(
            *launch.argv, cwd=cwd, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            start_new_session=True, env=launch.env, preexec_fn=preexec,
            pass_fds=launch.pass_fds,
        )
    start: asyncio.Future[asyncio.subprocess.Process | SpawnedProcess] = \
        asyncio.ensure_future(starting)
    proc: asyncio.subprocess.Process | SpawnedProcess
    try:
        proc = await asyncio.shield(start)
    except OSError as exc:
        argv0 = launch.argv[0]
        raise ToolFailure(f"Could not start {argv0} in {cwd}: {exc.strerror or exc}.") from None
    except asyncio.CancelledError:
        # Cancelled while the pipes were being connected: the shell already runs (and may
        # have started children), and asyncio alone would kill only the shell, then wait
        # for the pipes the children hold. Finish the start, then stop the whole group.
        with contextlib.suppress(Exception):
            await asyncio.shield(_stop_group(await start, 0.5))
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
    notes = []
    if launch.cgroup is not None and policy is not None \
            and launch.cgroup.oom_kills() > ooms:
        mib = policy.limits.memory_bytes // (1024 * 1024)
        notes.append(f"The memory limit ({mib:,} MiB, shared memory and /tmp included) "
                     "stopped a process of this command; use less memory (stream the data, "
                     "process it in parts)")
    sandbox_note = policy.summary() if policy is not None and runner.status.active else ""
    return BashRun(command, proc.returncode, out, err, time.monotonic() - started, timed_out,
                   timeout, sandbox_note, limit_notes=tuple(notes))
