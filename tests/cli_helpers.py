"""Run the real ``dexter`` CLI in a subprocess against local fake servers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dexter.testing.fakellm import FakeLLM
from tests import forkserver

LIVENESS = 120.0
"""Seconds a test waits for what must happen (a dexter subprocess reaching the fake
server, a prompt, an exit): only a broken run waits that long, so it is generous for a
loaded 2-core machine running the suite on several workers. Never a measurement. A fake
server step that must still be holding when the wait ends (``Stall(timeout=...)``) holds
for ``HOLD``."""
HOLD = 3 * LIVENESS

SECRET_OPENAI = "sk-test-openai-0123456789abcdef"
SECRET_ANTHROPIC = "sk-ant-test-0123456789abcdef"


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str
    cwd: Path

    @property
    def events(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stdout.splitlines() if line.strip()]

    def scratchpads(self) -> list[Path]:
        return sorted((self.cwd / "scratchpads").glob("*.jsonl"))


def cli_env(fake: FakeLLM | None, cwd: Path, **extra: str) -> dict[str, str]:
    """A clean environment: no user config, state under ``cwd``, fake endpoints, no colour."""
    # PYTHONPATH: a git worktree's tests run its own dexter, not the shared venv's install.
    keep = {k: v for k, v in os.environ.items()
            if k in {"PATH", "LANG", "LC_ALL", "SYSTEMROOT", "PYTHONPATH"}}
    env = {
        **keep,
        "HOME": str(cwd / "home"),
        "XDG_CONFIG_HOME": str(cwd / "home" / ".config"),
        "DEXTER_HOME": str(cwd / ".dexter"),
        "DEXTER_MEMORY_ENABLED": "false",
        "NO_COLOR": "1",
        "TERM": "dumb",
        "COLUMNS": "120",
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
        "PYTHONUNBUFFERED": "1",
    }
    if fake is not None:
        env.update({
            "OPENAI_BASE_URL": fake.openai_base_url,
            "ANTHROPIC_BASE_URL": fake.anthropic_base_url,
            "OPENAI_API_KEY": SECRET_OPENAI,
            "ANTHROPIC_API_KEY": SECRET_ANTHROPIC,
        })
    env.update(extra)
    return env


def config_outside(workspace: Path) -> Path:
    """Where a test keeps the config file the user wrote: beside the workspace, not in it
    (a file in the workspace is one commands can write, so its widening options would need
    ``dexter trust``). Unique per test, as ``workspace`` is its ``tmp_path``."""
    return workspace.parent / f"{workspace.name}.config.toml"


def dexter_command() -> list[str]:
    """The ``dexter`` command as the README starts it: the console script beside this
    Python, whose ``sys.path`` starts with its own folder, not the working directory (as
    ``python -m dexter`` would: a module a command wrote into the workspace would then
    shadow dexter's own imports)."""
    script = Path(sys.executable).parent / "dexter"
    if script.is_file():
        return [sys.executable, str(script)]
    return [sys.executable, "-P", "-m", "dexter"]


WARM_RUN = Path(__file__).parent / "fixtures" / "warm_run.py"


def dexter_argv(*args: str) -> list[str]:
    """The command line of ``python -m dexter ARGS`` for a test that needs the process
    itself (``subprocess.Popen``: to signal it, or to read its output as it comes): a
    launcher that hands the process's streams and signals to a fork of the pre-imported
    interpreter (``tests/fixtures/warm_run.py``), or with ``DEXTER_TESTS_COLD=1`` the cold
    command."""
    if forkserver.cold():
        return [sys.executable, "-m", "dexter", *args]
    return [sys.executable, str(WARM_RUN), forkserver.socket_path(), "-m", "dexter", *args]


def script_argv(script: Path, *args: str) -> list[str]:
    """The arguments after the interpreter that run ``python SCRIPT ARGS``: through the
    warm launcher, as a fork of the pre-imported interpreter (so its dexter and SDK imports
    are not paid again at each start), or cold with ``DEXTER_TESTS_COLD=1``. Either way the
    starter gets a process of its own, with its streams, signals and exit status."""
    if forkserver.cold():
        return [str(script), *args]
    return [str(WARM_RUN), forkserver.socket_path(), str(script), *args]


def spawn_terminal(args: list[str], *, cwd: Path, env: dict[str, str],
                   dimensions: tuple[int, int], timeout: float) -> Any:
    """``python -m dexter ARGS`` on a pseudo-terminal of ``dimensions`` (rows, columns) for
    pexpect: a fork of the pre-imported interpreter (:class:`tests.forkserver.Terminal`),
    or with ``DEXTER_TESTS_COLD=1`` a cold ``pexpect.spawn``."""
    if forkserver.cold():
        import pexpect
        return pexpect.spawn(sys.executable, ["-m", "dexter", *args], cwd=str(cwd), env=env,
                             dimensions=dimensions, encoding="utf-8", timeout=timeout)
    return forkserver.Terminal(args, cwd=cwd, env=env, dimensions=dimensions, timeout=timeout)


def run_cli(args: list[str], *, cwd: Path, env: dict[str, str], timeout: float = 60,
            input_text: str | None = None, as_script: bool = False,
            fresh: bool = False) -> CliResult:
    """Run ``python -m dexter ARGS`` (with ``as_script``, :func:`dexter_command`) and
    capture everything. The run is a fork of a pre-imported interpreter
    (:mod:`tests.forkserver`) unless ``as_script`` or ``fresh`` asks for a cold start (for
    what happens while dexter starts: its module path, its imports) or
    ``DEXTER_TESTS_COLD=1`` is set."""
    if not (as_script or fresh or forkserver.cold()):
        code, out, err = forkserver.run(args, cwd=cwd, env=env, timeout=timeout,
                                        input_text=input_text)
        return CliResult(code, out, err, cwd)
    command = dexter_command() if as_script else [sys.executable, "-m", "dexter"]
    proc = subprocess.run(
        [*command, *args], cwd=cwd, env=env, capture_output=True,
        text=True, timeout=timeout, input=input_text,
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr, cwd)
