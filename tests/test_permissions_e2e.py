"""End to end: a write nobody approved is denied and the model reports it; the floor holds under --yes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dexter.config import Settings
from dexter.testing.fakellm import FakeLLM, Reply, ToolCallSpec
from tests.cli_helpers import cli_env, run_cli

pytestmark = pytest.mark.e2e


def _registry_has_file_tools() -> bool:
    try:
        from dexter.tools.registry import build_tools

        return {"write_file", "bash"} <= {tool.name for tool in build_tools(Settings())}
    except ImportError:
        return False


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    if not _registry_has_file_tools():
        pytest.skip("the tool registry does not offer write_file/bash yet")
    with FakeLLM() as server:
        yield server


def test_denied_write_is_reported_and_the_run_goes_on(llm: FakeLLM, tmp_path: Path) -> None:
    llm.enqueue(
        Reply(tool_calls=[ToolCallSpec("write_file", {"path": "memo.md", "content": "# Memo\n"})]),
        Reply(text="I could not save memo.md: writing files was not approved. Here is the memo: ..."),
    )
    result = run_cli(["ask", "--json", "Write a memo to memo.md"], cwd=tmp_path, env=cli_env(llm, tmp_path))
    assert result.code == 0, result.stderr
    assert not (tmp_path / "memo.md").exists()
    denied = next(e for e in result.events if e["type"] == "tool_denied")
    assert denied["tool"] == "write_file"
    tool_message = next(m for m in llm.requests[-1].body["messages"] if m["role"] == "tool")
    assert "Denied: write_file changes files (memo.md)" in tool_message["content"]
    assert "--allow write_file" in tool_message["content"]  # says how to allow it next time
    assert "--allow write_file" in denied["reason"]
    assert result.events[-1]["answer"].startswith("I could not save memo.md")


def test_allow_lets_the_write_through(llm: FakeLLM, tmp_path: Path) -> None:
    llm.enqueue(
        Reply(tool_calls=[ToolCallSpec("write_file", {"path": "memo.md", "content": "# Memo\n"})]),
        Reply(text="Saved memo.md."),
    )
    result = run_cli(["ask", "--json", "--allow", "write_file", "Write a memo"], cwd=tmp_path,
                     env=cli_env(llm, tmp_path))
    assert result.code == 0, result.stderr
    assert (tmp_path / "memo.md").read_text() == "# Memo\n"


def test_yes_does_not_lift_the_deny_floor(llm: FakeLLM, tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("OPENAI_API_KEY=sk-should-never-leak\n")
    llm.enqueue(
        Reply(tool_calls=[ToolCallSpec("bash", {"command": "cat .env"})]),
        Reply(text="Reading .env is not allowed."),
    )
    result = run_cli(["ask", "--json", "--yes", "Show me .env"], cwd=tmp_path, env=cli_env(llm, tmp_path))
    assert result.code == 0, result.stderr
    assert "sk-should-never-leak" not in result.stdout
    tool_message = next(m for m in llm.requests[-1].body["messages"] if m["role"] == "tool")
    assert "safety floor" in tool_message["content"] and "sk-should-never-leak" not in tool_message["content"]


def test_a_mistyped_allow_is_a_usage_error_not_a_silent_denial(llm: FakeLLM, tmp_path: Path) -> None:
    result = run_cli(["ask", "--allow", "Bash(git log:*", "--allow", "write", "Summarise the repo"],
                     cwd=tmp_path, env=cli_env(llm, tmp_path))
    assert result.code == 2
    assert "missing its closing ')'" in result.stderr
    assert "no tool 'write'" in result.stderr
    assert llm.requests == []  # nothing ran


def test_yes_never_writes_outside_the_workspace_through_the_shell(llm: FakeLLM, tmp_path: Path) -> None:
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    (outside / "victim.txt").write_text("original\n")
    commands = [f"touch {outside}/pwned", f"sed -i s/original/owned/ {outside}/victim.txt",
                f"cd {outside} && rm -f victim.txt", "jq -n env"]
    llm.enqueue(
        Reply(tool_calls=[ToolCallSpec("bash", {"command": c}) for c in commands]),
        Reply(text="Those commands were refused by the safety floor."),
    )
    result = run_cli(["ask", "--json", "--yes", "Tidy up"], cwd=work, env=cli_env(llm, work))
    assert result.code == 0, result.stderr
    assert sorted(p.name for p in outside.iterdir()) == ["victim.txt"]
    assert (outside / "victim.txt").read_text() == "original\n"
    denied = [e for e in result.events if e["type"] == "tool_denied"]
    assert len(denied) == len(commands)
    assert all("safety floor" in e["reason"] for e in denied)
    assert result.events[-1]["answer"].startswith("Those commands were refused")
