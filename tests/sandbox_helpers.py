"""Shared parts of the red-team tests that play attacks through ``dexter ask``: the fake LLM
issues each command as a ``bash`` call (plain, or hidden from the command check as
``echo B64 | base64 -d | sh`` so that only the OS boundary can stop it), and the effects
are read from outside the sandbox."""

from __future__ import annotations

import base64
import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from dexter.testing.fakellm import FakeLLM, Reply, ToolCallSpec
from dexter.testing.shell_corpus import World
from tests.cli_helpers import CliResult, cli_env, run_cli

MODES = [pytest.param(yes, hidden, id=f"{'yes' if yes else 'no-yes'}-{'b64' if hidden else 'plain'}")
         for yes in (False, True) for hidden in (False, True)]
GIT_IDENT = ["-c", "user.email=a@b", "-c", "user.name=a"]


def hide(command: str) -> str:
    """``command`` as ``echo B64 | base64 -d | sh``: the command check sees none of it."""
    return f"echo {base64.b64encode(command.encode()).decode()} | base64 -d | sh"


def git(cwd: Path, *args: str, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The user's own git, outside the sandbox (no system config; ``home`` holds theirs)."""
    env = {"PATH": os.environ["PATH"], "HOME": str(home or cwd), "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *GIT_IDENT, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=30, check=False)


def snapshot(top: Path) -> dict[str, str]:
    """Every entry under ``top`` (not following links) with what it is."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            if path.is_symlink():
                out[str(path)] = "link:" + os.readlink(path)
            elif path.is_file():
                out[str(path)] = path.read_bytes().hex()[:64] + str(path.stat().st_size)
            else:
                out[str(path)] = "dir"
    return out


def ask(llm: FakeLLM, m: World, commands: list[str], *, yes: bool, hidden: bool,
        flags: tuple[str, ...] = (), as_script: bool = False,
        python: list[str] | None = None, **env: str) -> CliResult:
    """One ``dexter ask --json`` run in ``m``'s workspace in which the model runs
    ``commands`` one after the other, then answers (``as_script``: started as the
    ``dexter`` command, see :func:`tests.cli_helpers.dexter_command`; ``python``: started
    by this command line instead)."""
    replies = [Reply(tool_calls=[ToolCallSpec("bash", {"command": hide(c) if hidden else c})])
               for c in commands]
    llm.enqueue(*replies, Reply(text="Done."))
    full_env = cli_env(llm, m.workspace, HOME=str(m.home), XDG_CONFIG_HOME=str(m.home / ".config"),
                       DEXTER_HOME=str(m.workspace / ".dexter"), **env)
    args = ["ask", "--json", *(["--yes"] if yes else []), *flags, "go"]
    if python is not None:
        done = subprocess.run([*python, *args], cwd=m.workspace, env=full_env,
                              capture_output=True, text=True, timeout=180, check=False)
        result = CliResult(done.returncode, done.stdout, done.stderr, m.workspace)
    else:
        result = run_cli(args, cwd=m.workspace, env=full_env, timeout=180, as_script=as_script)
    assert result.code == 0, result.stderr[-2000:]
    return result


def model_saw(llm: FakeLLM) -> str:
    """Every tool result the model was sent."""
    return "\n".join(str(m.get("content")) for r in llm.requests for m in r.body["messages"]
                     if m.get("role") == "tool")


def alerts(result: CliResult) -> list[str]:
    """The findings of every ``sandbox_alert`` event of a ``--json`` run."""
    return [f for e in result.events if e["type"] == "sandbox_alert" for f in e["findings"]]


@contextlib.contextmanager
def mounts_unchanged(marker: Path) -> Iterator[None]:
    """The host's mount table has no new entry under ``marker`` afterwards."""
    def ours() -> list[str]:
        return [line for line in Path("/proc/self/mountinfo").read_text().splitlines()
                if str(marker) in line]

    before = ours()
    yield
    assert ours() == before


def no_process_left(marker: str) -> None:
    """No process on the host has ``marker`` in its command line."""
    out = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True, check=False)
    assert out.stdout.strip() == ""
