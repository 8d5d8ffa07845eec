"""``bash(command, timeout, description)``: run one ``/bin/sh -c`` command in the workspace.

The command runs in the working directory, in its own session and process group, with no
stdin and an environment without secrets: variables whose names look like keys (``_KEY``,
``SECRET``, ``TOKEN``, ``PASSW``, ``CREDENTIAL``, ``_PAT``, ``_AUTH``...; see
:func:`is_secret_variable`) or whose values look like keys (``sk-...``, ``ghp_...``, a URL
with a password...) are dropped, so even an approved command cannot print dexter's API
keys. On Linux dexter also marks itself non-dumpable before the first command, which makes
its own ``/proc/<pid>/environ`` unreadable to the commands it starts (unless they run as
root). stdout and stderr are each kept up to 256 KB; the rest is read and
dropped (so the child never blocks on a full pipe) and the result says how much was lost.

On timeout (default ``[tools] bash_timeout`` = 120 s, at most 600 s) or cancellation the
whole process group gets SIGTERM, then SIGKILL after a short grace. Background processes
the command started are stopped when it finishes: a tool call leaves nothing running.
Every call goes through the permission engine first (``needs_approval``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import sys
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from dexter.secrets import SECRET_ENV_SUFFIXES
from dexter.tools.base import Tool, ToolContext, ToolFailure

MAX_STREAM_BYTES = 256 * 1024
MAX_TIMEOUT_SECONDS = 600
KILL_GRACE_SECONDS = 2.0
PIPE_DRAIN_SECONDS = 2.0
_SECRET_ENV = re.compile(r"(?i)(_key\b|_key_|apikey|secret|token|passw|credential|_pat\b|"
                         r"^pat_|_auth\b|^auth_|cookie|_pwd\b|_pass\b|_dsn\b)")
_SECRET_VALUE = re.compile(
    r"\bsk-[A-Za-z0-9_\-]{8,}|\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{16,}|\bgithub_pat_\w{16,}|"
    r"\bglpat-[\w-]{16,}|\bxox[abprs]-[\w-]{8,}|\bAKIA[0-9A-Z]{16}\b|\bAIza[\w-]{20,}|"
    r"\b(?:xai|gsk|pplx|tvly)-[\w-]{16,}|-----BEGIN [A-Z ]*PRIVATE KEY|"
    r"://[^/\s:@]+:[^/\s@]+@")


class BashParams(BaseModel):
    """Arguments of ``bash``."""

    command: str = Field(min_length=1, description="The shell command (run with /bin/sh -c).")
    timeout: int | None = Field(default=None, ge=1, le=MAX_TIMEOUT_SECONDS,
                                description="Seconds before the command is stopped "
                                            "(default 120, max 600).")
    description: str | None = Field(default=None, description="What the command does, in a "
                                                              "few words (shown when asking).")


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


def is_secret_variable(name: str, value: str) -> bool:
    """True when an environment variable looks like it holds a key, token or password."""
    if _SECRET_ENV.search(name) or name.upper().endswith(SECRET_ENV_SUFFIXES):
        return True
    return bool(_SECRET_VALUE.search(value))


def child_environment() -> dict[str, str]:
    """dexter's environment minus every variable that looks like a secret (name or value)."""
    return {k: v for k, v in os.environ.items() if not is_secret_variable(k, v)}


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
        return "\n".join(parts)


async def run_command(command: str, cwd: os.PathLike[str] | str, timeout: int) -> BashRun:
    """Run ``command`` under ``/bin/sh -c`` with the caps, timeout and group kill."""
    started = time.monotonic()
    protect_own_environment()
    try:
        proc = await asyncio.create_subprocess_exec(
            "/bin/sh", "-c", command, cwd=cwd, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            start_new_session=True, env=child_environment(),
        )
    except OSError as exc:
        raise ToolFailure(f"Could not start /bin/sh in {cwd}: {exc.strerror or exc}.") from None
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
    return BashRun(command, proc.returncode, out, err, time.monotonic() - started, timed_out,
                   timeout)


class BashTool(Tool[BashParams]):
    """Run a shell command (every command goes through the permission engine)."""

    name: ClassVar[str] = "bash"
    description: ClassVar[str] = (
        "Run a shell command with /bin/sh in the working directory. Read-only commands on "
        "workspace files (ls, cat, grep, git log...) run at once; anything else asks the user "
        "first, and some commands (secrets, destruction outside the workspace) are always "
        "refused. Output is capped at 256 KB per stream; timeout defaults to 120 s (max 600)."
    )
    params: ClassVar[type[BaseModel]] = BashParams
    needs_approval: ClassVar[bool] = True

    async def run(self, args: BashParams, ctx: ToolContext) -> str:
        default = ctx.settings.tools.bash_timeout or 120
        timeout = max(1, min(args.timeout or default, MAX_TIMEOUT_SECONDS))
        ctx.progress(f"$ {args.command[:120]}")
        result = await run_command(args.command, ctx.cwd, timeout)
        return result.text()


def shell_tools() -> list[Tool[Any]]:
    """``bash`` and ``ask_user_question``, for the tool registry."""
    from dexter.tools.ask_user import AskUserQuestionTool

    return [BashTool(), AskUserQuestionTool()]
