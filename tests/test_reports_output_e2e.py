"""End to end through ``dexter ask --output``: a report folder a command swaps for a symlink,
moves or replaces during the run never makes the report land outside the workspace; the
refusal says what happened and the report is kept in DEXTER_HOME/reports/."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from dexter.config import Settings
from dexter.sandbox.runner import detect_runner
from dexter.testing.fakellm import FakeLLM, Reply, ToolCallSpec
from tests.cli_helpers import cli_env, run_cli

pytestmark = pytest.mark.e2e
RUNNER = detect_runner(Settings())
needs_sandbox = pytest.mark.skipif(not RUNNER.status.active,
                                   reason=f"no OS sandbox here: {RUNNER.status.reason}")
ANSWER = "Apple reports its revenue in its annual filing."  # no figure to verify


def _hide(command: str) -> str:
    return f"echo {base64.b64encode(command.encode()).decode()} | base64 -d | sh"


def _run(llm: FakeLLM, ws: Path, command: str, output: str, *, hidden: bool, yes: bool):  # type: ignore[no-untyped-def]
    llm.enqueue(Reply(tool_calls=[ToolCallSpec("bash", {"command": _hide(command) if hidden
                                                          else command})]),
                Reply(text=ANSWER))
    return run_cli(["ask", "--plain", *(["--yes"] if yes else []), "--output", output,
                    "What was Apple's revenue?"], cwd=ws, env=cli_env(llm, ws), timeout=120)


def _world(tmp_path: Path) -> tuple[Path, Path]:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / "reports").mkdir(parents=True)
    outside.mkdir()
    (outside / "victim.md").write_text("keep me\n")
    return ws, outside


@needs_sandbox
@pytest.mark.parametrize("hidden", [False, True])
@pytest.mark.parametrize("yes", [False, True])
@pytest.mark.parametrize(("swap", "output"), [
    ("rm -rf reports && ln -s {outside} reports", "reports/answer.md"),
    ("ln -s {outside} fresh", "fresh/answer.md"),  # the last folder, created at the end
    ("mv reports reports.old && mkdir reports", "reports/answer.md"),
    ("mv reports reports.old && ln -s {outside} reports", "reports/victim.md"),
])
def test_a_report_folder_changed_during_the_run_is_refused(
        llm: FakeLLM, tmp_path: Path, hidden: bool, yes: bool, swap: str, output: str) -> None:
    ws, outside = _world(tmp_path)
    result = _run(llm, ws, swap.format(outside=outside), output, hidden=hidden, yes=yes)
    stderr = " ".join(result.stderr.split())
    assert sorted(p.name for p in outside.iterdir()) == ["victim.md"]
    assert (outside / "victim.md").read_text() == "keep me\n"
    tool_text = " ".join(str(m.get("content")) for r in llm.requests
                         for m in r.body["messages"] if m.get("role") == "tool")
    if "Blocked by dexter's safety floor" in tool_text:
        # a plain `ln -s OUTSIDE` is refused before it runs; the folder stays as it was
        assert not hidden and "ln -s" in swap
        assert result.code == 0 and (ws / output).is_file()
        return
    assert "Exit code: 0" in tool_text, "the swap ran inside the sandbox"
    assert result.code == 1, result.stderr
    assert "was replaced or moved during the run" in stderr or "symbolic link" in stderr
    kept = ws / ".dexter" / "reports" / Path(output).name
    assert kept.is_file() and ANSWER in kept.read_text()
    assert f"The report is in {kept} instead." in stderr


@needs_sandbox
@pytest.mark.parametrize("hidden", [False, True])
def test_a_symlink_planted_at_the_file_name_is_replaced_not_followed(
        llm: FakeLLM, tmp_path: Path, hidden: bool) -> None:
    ws, outside = _world(tmp_path)
    result = _run(llm, ws, f"ln -s {outside}/victim.md reports/answer.md", "reports/answer.md",
                  hidden=hidden, yes=False)
    assert result.code == 0, result.stderr
    assert (outside / "victim.md").read_text() == "keep me\n"
    written = ws / "reports" / "answer.md"
    assert not written.is_symlink() and ANSWER in written.read_text()


def test_a_symlinked_folder_already_there_is_refused_before_asking(llm: FakeLLM,
                                                                  tmp_path: Path) -> None:
    ws, outside = _world(tmp_path)
    (ws / "reports").rmdir()
    (ws / "reports").symlink_to(outside)
    llm.enqueue(Reply(text="never asked"))
    relative = run_cli(["ask", "--output", "reports/answer.md", "q"], cwd=ws,
                       env=cli_env(llm, ws))
    assert relative.code == 2 and "points outside the working directory" in relative.stderr
    # typed as an absolute path, still a link a command may have made in the workspace
    result = run_cli(["ask", "--output", str(ws / "reports" / "answer.md"), "q"], cwd=ws,
                     env=cli_env(llm, ws))
    assert result.code == 2 and not llm.requests
    assert "is a symbolic link inside a folder commands may write" in result.stderr
    assert str(outside) in result.stderr  # what to give instead, if that is what they mean
    assert sorted(p.name for p in outside.iterdir()) == ["victim.md"]


def test_an_untouched_report_folder_is_written(llm: FakeLLM, tmp_path: Path) -> None:
    ws, _ = _world(tmp_path)
    llm.enqueue(Reply(text=ANSWER))
    result = run_cli(["ask", "--output", "fresh/answer.md", "q"], cwd=ws, env=cli_env(llm, ws))
    assert result.code == 0, result.stderr
    path = ws / "fresh" / "answer.md"
    assert ANSWER in path.read_text() and oct(path.stat().st_mode & 0o777) == "0o644"
    assert [p.name for p in (ws / "fresh").iterdir()] == ["answer.md"]  # no temporary left
