"""End to end: ``dexter ask`` records a run, then ``dexter rerun`` asks it again with the
tools answered from that record, against the fake LLM server (both wire formats)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest

from dexter.testing.fakellm import FakeLLM, Reply, ToolCallSpec
from tests.cli_helpers import CliResult, cli_env, run_cli

pytestmark = pytest.mark.e2e

PROVIDERS = [
    pytest.param("gpt-5.6-sol", "openai", id="openai"),
    pytest.param("claude-sonnet-4-6", "anthropic", id="anthropic"),
]
DATA = "Revenue FY2024 | 130.5\nRevenue FY2023 | 60.9\n"
QUESTION = "How much did revenue grow from FY2023 to FY2024?"
GROWTH = {"expression": "(130.5 - 60.9) / 60.9 * 100"}
NEW_CALL = {"expression": "130.5 - 60.9"}
ANSWER = "Revenue grew 114.29% [S2], from 60.9 to 130.5 [S1]."


Wire = Literal["openai", "anthropic"]


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


def script(*, extra: dict[str, Any] | None = None) -> list[Reply]:
    """Read the file, then compute (one turn each, so the source ids are S1 and S2), then
    answer; ``extra`` adds a calculator call to the second turn."""
    second = [ToolCallSpec("calculator", GROWTH)]
    if extra is not None:
        second.append(ToolCallSpec("calculator", extra))
    return [Reply(tool_calls=[ToolCallSpec("read_file", {"path": "data.txt"})]),
            Reply(tool_calls=second), Reply(text=ANSWER)]


def record(fake: FakeLLM, cwd: Path, model: str) -> Path:
    """A real ``dexter ask`` run that reads data.txt and calls the calculator; the file is
    deleted afterwards. Returns its scratchpad."""
    (cwd / "data.txt").write_text(DATA, encoding="utf-8")
    fake.enqueue(*script())
    result = run_cli(["ask", "--model", model, "--json", QUESTION], cwd=cwd,
                     env=cli_env(fake, cwd))
    assert result.code == 0, result.stderr
    (cwd / "data.txt").unlink()
    [pad] = result.scratchpads()
    return pad


def rerun(fake: FakeLLM, cwd: Path, pad: Path, *flags: str) -> CliResult:
    return run_cli(["rerun", str(pad), *flags], cwd=cwd, env=cli_env(fake, cwd))


def tool_results(body: dict[str, Any], route: Wire) -> list[tuple[str, bool]]:
    """The tool results a request carried, in order: (content, is_error)."""
    found: list[tuple[str, bool]] = []
    for message in body["messages"]:
        if route == "openai" and message.get("role") == "tool":
            found.append((message["content"], message["content"].startswith("[tool error]")))
        elif route == "anthropic" and isinstance(message.get("content"), list):
            found += [(block["content"], bool(block.get("is_error")))
                      for block in message["content"] if block.get("type") == "tool_result"]
    return found


def entries(pad: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in pad.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize(("model", "route"), PROVIDERS)
def test_a_rerun_gives_the_model_the_recorded_results_byte_for_byte(
        fake: FakeLLM, tmp_path: Path, model: str, route: Wire) -> None:
    original = record(fake, tmp_path, model)
    seen_first = tool_results(fake.requests_for(route)[-1].body, route)
    assert [error for _text, error in seen_first] == [False, False]
    assert "Revenue FY2024 | 130.5" in seen_first[0][0] and "114.28" in seen_first[1][0]

    fake.enqueue(*script(extra=NEW_CALL))
    result = rerun(fake, tmp_path, original, "--json")
    assert result.code == 0, result.stderr
    fake.assert_no_violations()
    seen_again = tool_results(fake.requests_for(route)[-1].body, route)
    # the same calls got exactly what the model read the first time (the file is gone)
    assert seen_again[:2] == seen_first
    # the call the first run did not make gets an error naming the recording
    text, is_error = seen_again[2]
    assert is_error and f"not recorded in {original}" in text
    assert json.dumps(NEW_CALL["expression"]) in text
    assert result.events[-1]["status"] == "ok" and result.events[-1]["answer"] == ANSWER
    assert f"Rerun of {original}" in result.stderr

    new_pad = next(p for p in result.scratchpads() if p != original)
    init = entries(new_pad)[0]
    assert init["rerun_of"] == str(original) and init["query"] == QUESTION
    kept = [e["result"] for e in entries(original) if e["type"] == "tool_result"]
    again = [e["result"] for e in entries(new_pad) if e["type"] == "tool_result"]
    assert again[:2] == kept  # recorded the same way too

    replayed = run_cli(["replay", str(new_pad)], cwd=tmp_path,
                       env=cli_env(None, tmp_path))
    assert replayed.code == 0, replayed.stderr
    assert replayed.stdout.splitlines()[0].startswith(f"↻ Rerun of {original}")
    plain = run_cli(["replay", str(original)], cwd=tmp_path,
                    env=cli_env(None, tmp_path))
    assert "Rerun of" not in plain.stdout


def test_live_tools_run_the_calls_that_were_not_recorded(fake: FakeLLM, tmp_path: Path) -> None:
    original = record(fake, tmp_path, "gpt-5.6-sol")
    fake.enqueue(*script(extra=NEW_CALL))
    result = rerun(fake, tmp_path, original, "--json", "--live-tools")
    assert result.code == 0, result.stderr
    seen = tool_results(fake.requests_for("openai")[-1].body, "openai")
    assert "Revenue FY2024 | 130.5" in seen[0][0]  # still the recording: the file is gone
    assert not seen[2][1] and '"result": 69.6' in seen[2][0]  # really computed
    assert "run for real" in result.stderr


def test_the_recorded_model_is_used_unless_model_switches_it(fake: FakeLLM,
                                                              tmp_path: Path) -> None:
    original = record(fake, tmp_path, "gpt-5.6-sol")
    fake.enqueue(*script())
    again = rerun(fake, tmp_path, original, "--json")
    assert again.code == 0, again.stderr
    assert len(fake.requests_for("openai")) == 6 and not fake.requests_for("anthropic")
    assert again.events[0]["model"] == "gpt-5.6-sol"

    fake.enqueue(*script())
    switched = rerun(fake, tmp_path, original, "--json", "--model", "claude-sonnet-4-6")
    assert switched.code == 0, switched.stderr
    anthropic = fake.requests_for("anthropic")
    assert len(anthropic) == 3
    assert switched.events[0]["model"] == "claude-sonnet-4-6"
    seen = tool_results(anthropic[-1].body, "anthropic")
    first = tool_results(fake.requests_for("openai")[2].body, "openai")
    assert seen == first  # the other provider gets the same recorded results


@pytest.mark.parametrize(("content", "problem"), [
    (None, "there is no such file"),
    ("", "it holds no scratchpad entries"),
    ("not json\n{\"half\": \n", "it holds no scratchpad entries (2 lines corrupt)"),
    ('{"type": "done", "timestamp": "t", "answer": "a"}\n', "its init line is missing"),
])
def test_a_missing_or_corrupt_scratchpad_is_a_clear_usage_error(
        tmp_path: Path, content: str | None, problem: str) -> None:
    pad = tmp_path / "run.jsonl"
    if content is not None:
        pad.write_text(content, encoding="utf-8")
    result = run_cli(["rerun", str(pad)], cwd=tmp_path, env=cli_env(None, tmp_path))
    assert result.code == 2
    assert f"Cannot rerun {pad}: {problem}" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
