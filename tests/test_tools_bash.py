"""bash: output capture, caps, timeout and cancellation kill the whole process group."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from dexter.config import Settings
from dexter.sandbox.policy import child_environment
from dexter.sandbox.process import MAX_STREAM_BYTES, run_command
from dexter.tools.base import ToolContext, ToolFailure
from dexter.tools.bash import BashTool, shell_tools


def alive(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in {"Z", "X"}


async def gone(pid: int, within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        await asyncio.sleep(0.05)
    return False


async def wait_for_file(path: Path, within: float = 3.0) -> int:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return int(path.read_text())
        await asyncio.sleep(0.02)
    raise AssertionError(f"{path} never appeared")


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(settings=Settings(), cwd=tmp_path, home=tmp_path / ".dexter")


async def bash(ctx: ToolContext, **arguments: Any) -> str:
    tool = BashTool()
    result = await tool.run(tool.parse_args(arguments), ctx)
    assert isinstance(result, str)
    return result


async def test_captures_stdout_stderr_and_exit_code(ctx: ToolContext) -> None:
    out = await bash(ctx, command="echo out; echo err 1>&2; exit 3")
    lines = out.splitlines()
    assert lines[0] == "$ echo out; echo err 1>&2; exit 3"
    assert lines[1].startswith("Exit code: 3 (")
    assert lines[2:] == ["--- stdout ---", "out", "--- stderr ---", "err"]


async def test_runs_in_the_working_directory(ctx: ToolContext, tmp_path: Path) -> None:
    assert f"--- stdout ---\n{tmp_path}" in await bash(ctx, command="pwd")


async def test_no_output_and_signals_are_reported(ctx: ToolContext) -> None:
    assert (await bash(ctx, command="true")).endswith("(no output)")
    assert "Killed by signal 9." in await bash(ctx, command="kill -9 $$")


@pytest.mark.parametrize(("size", "dropped"), [(MAX_STREAM_BYTES, 0), (MAX_STREAM_BYTES + 1, 1),
                                               (5_000_000, 5_000_000 - MAX_STREAM_BYTES)])
async def test_each_stream_is_capped(ctx: ToolContext, size: int, dropped: int) -> None:
    out = await bash(ctx, command=f"head -c {size} /dev/zero | tr '\\0' a; "
                                  f"head -c {size} /dev/zero | tr '\\0' b 1>&2")
    stdout = out.split("--- stdout ---\n", 1)[1].split("\n--- stderr ---\n", 1)[0]
    stderr = out.split("\n--- stderr ---\n", 1)[1]
    assert stdout.split("\n")[0] == "a" * min(size, MAX_STREAM_BYTES)
    assert stderr.split("\n")[0] == "b" * min(size, MAX_STREAM_BYTES)
    note = f"{dropped:,} more bytes were dropped"
    assert (f"[stdout: {note}" in stdout and f"[stderr: {note}" in stderr) is bool(dropped)


async def test_the_environment_is_an_allowlist(ctx: ToolContext, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-live-123")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-456")
    monkeypatch.setenv("DB_PASSWORD", "hunter2")
    monkeypatch.setenv("MYLAB_APIKEY", "opaque-value-99")  # a name no pattern would catch
    monkeypatch.setenv("HARMLESS_SETTING", "visible")
    monkeypatch.setenv("LISTED_SETTING", "listed")
    monkeypatch.setenv("LC_TIME", "C")
    ctx.settings.bash.env = ["LISTED_SETTING"]
    out = await bash(ctx, command="env")
    assert "LISTED_SETTING=listed" in out and "LC_TIME=C" in out and "PATH=" in out
    for absent in ("sk-live-123", "ghp-456", "hunter2", "opaque-value-99", "HARMLESS_SETTING"):
        assert absent not in out


async def test_timeout_kills_the_whole_group(ctx: ToolContext, tmp_path: Path) -> None:
    out = await bash(ctx, command="sleep 30 & echo $! > child.pid; sleep 30", timeout=1)
    assert "Timed out after 1 s" in out
    child = int((tmp_path / "child.pid").read_text())
    assert await gone(child)


async def test_cancellation_kills_the_whole_group(tmp_path: Path) -> None:
    task = asyncio.create_task(run_command("sleep 30 & echo $! > child.pid; wait", tmp_path, 60))
    child = await wait_for_file(tmp_path / "child.pid")
    assert alive(child)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await gone(child)


async def test_cancellation_while_the_shell_is_starting_kills_the_whole_group(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A cancel can land before create_subprocess_exec returns (its pipes are still being
    # connected) while the shell already runs: asyncio then kills only the shell and waits
    # for the pipes, which the background child holds open. Seen as a 30 s stall, under
    # load, of the test above. Here the start is held until the child is there.
    import dexter.sandbox.process as process

    real = asyncio.create_subprocess_exec
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def slow_start(*args: Any, **kwargs: Any) -> asyncio.subprocess.Process:
        proc = await real(*args, **kwargs)
        await wait_for_file(tmp_path / "child.pid")
        started.set()
        await cancelled.wait()  # the pipes are "still connecting" when the cancel lands
        return proc

    monkeypatch.setattr(process.asyncio, "create_subprocess_exec", slow_start)
    task = asyncio.create_task(run_command("sleep 300 & echo $! > child.pid; wait", tmp_path, 600))
    await started.wait()
    child = int((tmp_path / "child.pid").read_text())
    task.cancel()
    await asyncio.sleep(0)
    cancelled.set()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 60)
    assert await gone(child)


async def test_background_processes_do_not_outlive_the_call(ctx: ToolContext, tmp_path: Path) -> None:
    out = await bash(ctx, command="sleep 30 > /dev/null 2>&1 & echo $! > child.pid; echo started")
    assert "Exit code: 0" in out and "started" in out
    assert await gone(int((tmp_path / "child.pid").read_text()))


async def test_timeout_bounds_and_default(ctx: ToolContext) -> None:
    tool = BashTool()
    with pytest.raises(ToolFailure, match="timeout"):
        tool.parse_args({"command": "ls", "timeout": 601})
    with pytest.raises(ToolFailure, match="command"):
        tool.parse_args({"command": ""})
    ctx.settings.tools.bash_timeout = 1
    assert "Timed out after 1 s" in await bash(ctx, command="sleep 5")


def test_shell_tools_flags() -> None:
    bash_tool, ask = shell_tools()
    assert (bash_tool.name, bash_tool.needs_approval, bash_tool.concurrency_safe, bash_tool.compactable) == \
        ("bash", True, False, False)
    assert (ask.name, ask.needs_approval, ask.concurrency_safe) == ("ask_user_question", False, False)


def test_child_environment_keeps_only_allowlisted_names() -> None:
    source = {"PATH": "/usr/bin", "LANG": "C.UTF-8", "LC_ALL": "C", "TERM": "xterm",
              "HOME": "/home/u", "SSH_AUTH_SOCK": "/tmp/agent.sock", "GH_PAT": "plain",
              "DATABASE_URL": "postgres://app:pw@db/x", "EXTRA": "1"}
    env = child_environment(["EXTRA"], home="/private/home", source=source)
    assert env == {"PATH": "/usr/bin", "LANG": "C.UTF-8", "LC_ALL": "C", "TERM": "xterm",
                   "HOME": "/private/home", "TMPDIR": "/tmp", "EXTRA": "1"}


def test_dexter_makes_its_own_environ_unreadable_before_running_commands(tmp_path: Path) -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("/proc and prctl are Linux only")
    script = (
        "import asyncio, ctypes\n"
        "from dexter.sandbox.process import run_command\n"
        "libc = ctypes.CDLL(None)\n"
        "before = libc.prctl(3, 0, 0, 0, 0)\n"
        "asyncio.run(run_command('true', '.', 5))\n"
        "print(before, libc.prctl(3, 0, 0, 0, 0))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                          text=True, timeout=30, check=True)
    assert done.stdout.split() == ["1", "0"]  # PR_GET_DUMPABLE: dumpable before, not after
