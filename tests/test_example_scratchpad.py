"""The example scratchpad a newcomer replays without a key: a labelled scripted run.

``scratchpads/example-apple.jsonl`` was made by ``dexter.testing.example_run``: ``dexter
ask`` against the fake provider (the model's turns) and the fake data server serving
Apple's real recorded SEC responses (every tool result).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from dexter.frontend import EXAMPLE_SCRATCHPAD
from dexter.testing.example_run import LABEL, QUESTION, generate
from tests.cli_helpers import cli_env, run_cli

pytestmark = pytest.mark.e2e


def entries(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def essentials(path: Path) -> dict[str, Any]:
    """What the example is about: its question, every tool call, the answer and its check."""
    lines = entries(path)
    done = lines[-1]
    return {"question": lines[0]["query"], "example": lines[0].get("example"),
            "calls": [(e["tool"], e["args"]) for e in lines if e["type"] == "tool_result"],
            "answer": done["answer"], "status": done["status"],
            "check": done["verification"]["status"]}


def test_the_example_replays_as_a_labelled_run(tmp_path: Path) -> None:
    result = run_cli(["replay", str(EXAMPLE_SCRATCHPAD)], cwd=tmp_path,
                     env=cli_env(None, tmp_path))
    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("ⓘ Scripted example: the model's turns were written")
    assert lines[1] == f"> Query: {QUESTION}"
    for shown in ("Financials(", "Read Filings(", "Calculator(", "[S1]", "[S2]",
                  "$391.0 billion", "State Aid Decision", "figures checked against the sources"):
        assert shown in result.stdout, shown
    assert "127.0.0.1" not in result.stdout  # the sources are SEC's own addresses
    # the Sources list reads in words, each source at its filing's own SEC address
    assert ("https://www.sec.gov/Archives/edgar/data/320193/000032019324000123/"
            "aapl-20240928.htm") in result.stdout
    assert "[S1] Apple Inc. — Income statement, annual" in result.stdout
    assert "calculator:" not in result.stdout
    assert "Traceback" not in result.stderr and "Skipped" not in result.stderr


def test_the_example_is_what_the_scripted_run_on_recorded_sec_data_gives(
        tmp_path: Path) -> None:
    def fork_server_run(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str, str]:
        # PYTHONPATH, as cli_env keeps it: with DEXTER_TESTS_COLD=1 a worktree runs its own
        # dexter
        env = {**env, **{k: v for k, v in os.environ.items() if k == "PYTHONPATH"}}
        done = run_cli(args, cwd=cwd, env=env, timeout=600)
        return done.code, done.stdout, done.stderr

    made = essentials(generate(tmp_path / "again.jsonl", run=fork_server_run))
    shipped = essentials(EXAMPLE_SCRATCHPAD)
    assert made == shipped, ("scratchpads/example-apple.jsonl is out of date; regenerate it: "
                             "python -m dexter.testing.example_run")
    assert shipped["example"] == LABEL and shipped["status"] == "ok"
    assert shipped["check"] == "verified"  # every figure of the answer is in a source


@pytest.mark.parametrize("args", [["ask", "hi"], []], ids=["ask", "piped-repl"])
def test_the_no_key_message_points_to_the_example(tmp_path: Path, args: list[str]) -> None:
    result = run_cli(args, cwd=tmp_path, env=cli_env(None, tmp_path), input_text="")
    assert result.code == 2
    out = result.stdout + result.stderr
    assert "Without a key: " in out
    assert f"dexter replay {EXAMPLE_SCRATCHPAD} shows a scripted example run" in out
    assert EXAMPLE_SCRATCHPAD.is_file()
