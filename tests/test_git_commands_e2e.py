"""Ordinary git commands through ``dexter ask``, in a repository whose remote URL holds a
token (as ``git clone https://user:TOKEN@host/...`` leaves it in ``.git/config``): the
local ones run contained without asking, and the token never reaches the model, the
terminal or the scratchpad, however the command prints it (plain and base64-hidden)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dexter.config import Settings
from dexter.sandbox.runner import detect_runner
from dexter.testing.fakellm import FakeLLM
from dexter.testing.shell_corpus import World
from tests.sandbox_helpers import ask, git, model_saw

RUNNER = detect_runner(Settings())
pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(not RUNNER.status.active,
                                 reason=f"no OS sandbox here: {RUNNER.status.reason}")]
TOKEN = "ghp_R3dTeamT0kenInRemoteUrl0123456789ab"
URL = f"https://analyst:{TOKEN}@github.com/acme/research.git"
COMMANDS = ["git remote -v", "git remote get-url origin", "git config --get remote.origin.url",
            "cat .git/config", "git -C . status --short", "git log --oneline -1",
            "git branch -a", "git diff --stat HEAD"]


@pytest.fixture
def repo(tmp_path: Path) -> World:
    world = World(tmp_path).build()
    assert git(world.workspace, "remote", "add", "origin", URL).returncode == 0
    return world


@pytest.mark.parametrize("hidden", [False, True], ids=["plain", "b64"])
def test_local_git_commands_run_without_asking_and_the_remote_token_stays_out(
        llm: FakeLLM, repo: World, hidden: bool) -> None:
    result = ask(llm, repo, COMMANDS, yes=False, hidden=hidden)
    calls = [e for e in result.events if e["type"] == "tool_end"]
    assert len(calls) == len(COMMANDS)
    asked = [e for e in result.events if e["type"] in ("tool_approval", "tool_denied", "tool_error")]
    assert asked == [], asked
    saw = model_saw(llm)
    assert saw.count("github.com/acme/research.git") >= 4  # every form printed the URL
    assert "init" in saw  # git log ran
    written = "".join(p.read_text() for p in (repo.workspace / "scratchpads").glob("*.jsonl"))
    for where, text in (("model", saw), ("stdout", result.stdout), ("stderr", result.stderr),
                        ("scratchpad", written)):
        assert TOKEN not in text, where
        assert TOKEN[4:20] not in text, where  # nor a piece of it
    assert (repo.workspace / ".git" / "config").read_text().count(TOKEN) == 1  # untouched
