"""End to end through ``dexter ask``: credentials nobody registered (a token in the git
remote's URL, a password committed to the history and deleted since) never reach the model,
the scratchpad or the terminal, whether the command is plain or hidden."""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path

import pytest

from dexter.testing.fakellm import FakeLLM, Reply, ToolCallSpec
from tests.cli_helpers import cli_env, run_cli

pytestmark = pytest.mark.e2e
REMOTE_TOKEN = "ghs_Zq8R2mK4pL9xW3vN7cT1yB6hJ0dF5sA8uE2i"
OLD_PASSWORD = "Winter-2024-Pw!x"
PROXY_PASSWORD = "pr0xy-S3cret"


def _git(ws: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=a@b", "-c", "user.name=a", *args], cwd=ws,
                   check=True, capture_output=True)


def _repository(ws: Path) -> None:
    ws.mkdir()
    _git(ws, "init", "-q", "-b", "main", ".")
    _git(ws, "remote", "add", "origin",
         f"https://x-access-token:{REMOTE_TOKEN}@github.com/acme/models.git")
    _git(ws, "config", "http.proxy", f"http://analyst:{PROXY_PASSWORD}@proxy.internal:3128")
    (ws / "settings.py").write_text(f'DB_USER = "analyst"\nDB_PASSWORD = "{OLD_PASSWORD}"\n')
    _git(ws, "add", "-A")
    _git(ws, "commit", "-qm", "settings")
    (ws / "settings.py").write_text('DB_USER = "analyst"\nDB_PASSWORD = os.environ["DB_PW"]\n')
    _git(ws, "commit", "-qam", "read the password from the environment")


def _hide(command: str) -> str:
    return f"echo {base64.b64encode(command.encode()).decode()} | base64 -d | sh"


@pytest.mark.parametrize("hidden", [False, True])
@pytest.mark.parametrize("yes", [False, True])
def test_git_credentials_reach_neither_the_model_nor_any_record(llm: FakeLLM, tmp_path: Path,
                                                                 hidden: bool, yes: bool) -> None:
    ws = tmp_path / "ws"
    _repository(ws)
    commands = ["git remote -v", "git log -p", "git config --list"]
    llm.enqueue(
        Reply(tool_calls=[ToolCallSpec("bash", {"command": _hide(c) if hidden else c})
                          for c in commands]),
        Reply(text="The repository reads its password from the environment now."),
    )
    result = run_cli(["ask", "--json", *(["--yes"] if yes else []), "What does the repo hold?"],
                     cwd=ws, env=cli_env(llm, ws), timeout=120)
    assert result.code == 0, result.stderr
    seen = "".join(str(m.get("content")) for r in llm.requests for m in r.body["messages"]
                   if m.get("role") == "tool")
    assert "x-access-token:***@github.com/acme/models.git" in seen  # the output still reads
    assert 'DB_PASSWORD = "***"' in seen
    assert "http://analyst:***@proxy.internal:3128" in seen
    records = "".join(p.read_text() for p in (ws / "scratchpads").glob("*.jsonl"))
    streams = result.stdout + result.stderr
    for secret in (REMOTE_TOKEN, OLD_PASSWORD, PROXY_PASSWORD):
        assert secret not in seen, "reached the model"
        assert secret not in records, "reached the scratchpad"
        assert secret not in streams, "reached the terminal"
    ends = [e for e in result.events if e["type"] == "tool_end"]
    assert len(ends) == len(commands)  # local git commands run without asking
    assert json.dumps(ends).count("***") >= 3


CLI_PASSWORDS = {"mysql": "W1nter-2024x", "spaced": "Rt9-xQ2zq7", "sshpass": "Hunt3r2xy",
                 "token": "9f8e7d6c5b4a3928ff", "typed": "S3cretModel9"}


@pytest.mark.parametrize("hidden", [False, True])
def test_passwords_on_command_lines_reach_neither_the_model_nor_any_record(
        llm: FakeLLM, tmp_path: Path, hidden: bool) -> None:
    """A committed script passes passwords as options (``-pVALUE``, ``--password VALUE``,
    ``sshpass -p VALUE``, ``--token VALUE``); the model reads it, and itself runs a command
    line with a password in it. The output, the recorded arguments, the events and the
    terminal show ``***``; the command still ran with the real value."""
    ws = tmp_path / "ws"
    _repository(ws)
    p = CLI_PASSWORDS
    (ws / "load.sh").write_text(
        f"#!/bin/sh\nmysql -h db.internal -u analyst -p{p['mysql']} prices < load.sql\n"
        f"pg_dump --password {p['spaced']} -h db prices > dump.sql\n"
        f"sshpass -p {p['sshpass']} scp dump.sql deploy@backup:/srv\n"
        f"publish --token {p['token']} dump.sql\n")
    _git(ws, "add", "load.sh")
    _git(ws, "commit", "-qm", "loader")
    commands = ["cat load.sh", "git show HEAD --stat -p",
                f"echo connecting with --password {p['typed']} > typed.txt; cat typed.txt"]
    llm.enqueue(
        Reply(tool_calls=[ToolCallSpec("bash", {"command": _hide(c) if hidden else c})
                          for c in commands]),
        Reply(text="The loader dumps the prices database."),
    )
    result = run_cli(["ask", "--json", "What does load.sh do?"], cwd=ws, env=cli_env(llm, ws),
                     timeout=120)
    assert result.code == 0, result.stderr
    assert (ws / "typed.txt").read_text().strip().endswith(p["typed"])  # it ran as written
    seen = "".join(str(m.get("content")) for r in llm.requests for m in r.body["messages"]
                   if m.get("role") == "tool")
    assert "-u analyst -p*** prices" in seen and "sshpass -p *** scp" in seen
    records = "".join(path.read_text() for path in (ws / "scratchpads").glob("*.jsonl"))
    streams = result.stdout + result.stderr
    for name, secret in p.items():
        if name != "typed":
            assert secret not in seen, f"{name} reached the model"
        assert secret not in records, f"{name} reached the scratchpad"
        assert secret not in streams, f"{name} reached the terminal"
