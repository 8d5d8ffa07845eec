"""End to end: the real ``dexter`` command, in a pseudo-terminal and with piped stdin."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pexpect
import pytest

from dexter.testing.fakellm import FakeLLM, Reply, Stall, ToolCallSpec
from tests.cli_helpers import HOLD, LIVENESS, SECRET_OPENAI, cli_env, run_cli, spawn_terminal

pytestmark = pytest.mark.e2e

COLOUR = re.compile(r"\x1b\[(?:[0-9;]*;)?(?:3[0-7]|38;[25];|9[0-7])[;m]")


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


def spawn(fake: FakeLLM | None, cwd: Path, **extra: str) -> Any:
    env = cli_env(fake, cwd, **{"TERM": "xterm-256color", "PROMPT_TOOLKIT_NO_CPR": "1",
                                "DEXTER_MODEL": "gpt-4.1", **extra})
    if "NO_COLOR" not in extra:
        env.pop("NO_COLOR")
    return spawn_terminal([], cwd=cwd, env=env, dimensions=(30, 100), timeout=LIVENESS)


def exit_at_the_prompt(child: Any) -> None:
    """Wait for the prompt, type ``/exit`` and wait for dexter to end."""
    child.expect("❯")
    child.send("/exit\r")
    child.expect(pexpect.EOF)


@pytest.mark.parametrize("no_color", [False, True], ids=["colour", "no-color"])
def test_ask_see_the_answer_and_quit_in_a_terminal(fake: FakeLLM, tmp_path: Path,
                                                   no_color: bool) -> None:
    fake.enqueue(Reply(text="Checking.", tool_calls=[ToolCallSpec("calculator",
                                                                  {"expression": "130.5-60.9"})]),
                 Reply(text="Revenue grew by **69.6B** dollars."))
    child = spawn(fake, tmp_path, **({"NO_COLOR": "1"} if no_color else {}))
    screen = io.StringIO()
    child.logfile_read = screen
    try:
        child.expect("deep financial research")
        child.expect("❯")
        child.send("Revenue went from 60.9B to 130.5B. How much did it grow?\r")
        child.expect("69.6B")
        child.expect("calculations on them")  # the check: no data, the figure is computed
        child.expect("✻")
        exit_at_the_prompt(child)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    output = screen.getvalue()
    assert "Calculator" in output and "= 69.6" in output
    assert bool(COLOUR.search(output)) is not no_color
    assert SECRET_OPENAI not in output
    turns = (tmp_path / ".dexter" / "history" / "sessions.jsonl").read_text().splitlines()
    assert json.loads(turns[0]) | {"timestamp": ""} == {
        "timestamp": "", "query": "Revenue went from 60.9B to 130.5B. How much did it grow?",
        "answer": "Revenue grew by **69.6B** dollars."}
    fake.assert_no_violations()


STREAMED = "Revenue rose in every quarter of the year, led by the data-center segment."


def test_the_answer_streams_and_esc_keeps_what_was_written(fake: FakeLLM, tmp_path: Path) -> None:
    stall = Stall(after_chunks=5, reply=Reply(text=STREAMED, chunk_size=8), timeout=HOLD)
    fake.enqueue(stall)
    child = spawn(fake, tmp_path, NO_COLOR="1")
    try:
        child.expect("❯")
        child.send("how did revenue do?\r")
        assert stall.reached.wait(LIVENESS)
        child.expect("Revenue rose in every")  # on screen while the model is still writing
        child.send("\x1b")
        child.expect("Interrupted · what should dexter do instead\\?")
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
    finally:
        stall.gate.set()
        child.close(force=True)
    [pad] = tmp_path.glob("scratchpads/*.jsonl")
    done = json.loads(pad.read_text(encoding="utf-8").splitlines()[-1])
    assert done["type"] == "done" and done["status"] == "interrupted"
    assert done["answer"].startswith("Revenue rose in every")  # the partial answer is kept
    replay = run_cli(["replay", str(pad)], cwd=tmp_path, env=cli_env(fake, tmp_path))
    assert "Revenue rose in every" in replay.stdout and "Interrupted" in replay.stdout


def test_ask_streams_in_a_terminal_and_ctrl_c_keeps_the_partial_answer(
        fake: FakeLLM, tmp_path: Path) -> None:
    stall = Stall(after_chunks=5, reply=Reply(text=STREAMED, chunk_size=8), timeout=HOLD)
    fake.enqueue(stall)
    env = cli_env(fake, tmp_path, TERM="xterm-256color", DEXTER_MODEL="gpt-4.1")
    child = spawn_terminal(["ask", "how did revenue do?"], cwd=tmp_path, env=env,
                           dimensions=(30, 100), timeout=LIVENESS)
    try:
        assert stall.reached.wait(LIVENESS)
        child.expect("Revenue rose in every")
        child.sendintr()
        child.expect("Interrupted")
        child.expect(pexpect.EOF)
    finally:
        stall.gate.set()
        child.close(force=True)
    assert child.exitstatus == 130
    [pad] = tmp_path.glob("scratchpads/*.jsonl")
    done = json.loads(pad.read_text(encoding="utf-8").splitlines()[-1])
    assert (done["type"], done["status"]) == ("done", "interrupted")
    assert done["answer"].startswith("Revenue rose in every")


def test_interrupt_then_ctrl_d_in_a_terminal(fake: FakeLLM, tmp_path: Path) -> None:
    stall = Stall(after_chunks=2, reply=Reply(text="A very long report that never ends."),
                  timeout=HOLD)
    fake.enqueue(stall, Reply(text="Short answer instead."))
    child = spawn(fake, tmp_path)
    try:
        child.expect("❯")
        child.send("write a long report\r")
        assert stall.reached.wait(LIVENESS)
        child.send("\x1b")
        child.expect("Interrupted · what should dexter do instead\\?")
        child.send("short version\r")
        child.expect("Short answer instead.")
        child.expect("✻")
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
    finally:
        stall.gate.set()
        child.close(force=True)
    assert child.exitstatus == 0


def test_piped_stdin_answers_one_question_per_line(fake: FakeLLM, tmp_path: Path) -> None:
    fake.enqueue(Reply(text="First answer."), Reply(text="Second answer."))
    result = run_cli([], cwd=tmp_path, env=cli_env(fake, tmp_path),
                     input_text="first question\n\n/history\nsecond question\n")
    assert result.code == 0, result.stderr
    out = result.stdout
    assert out.index("First answer.") < out.index("1. first question") < out.index("Second answer.")
    assert "\x1b[" not in out
    second = fake.requests_for("openai")[1].body["messages"]
    assert [m["content"] for m in second if m["role"] == "user"] == ["first question",
                                                                     "second question"]


def test_piped_stdin_denies_approvals_and_reports_a_failed_run(fake: FakeLLM, tmp_path: Path) -> None:
    fake.enqueue(Reply(tool_calls=[ToolCallSpec("write_file", {"path": "x.md", "content": "x"})]),
                 Reply(text="I could not write the file."))
    result = run_cli([], cwd=tmp_path, env=cli_env(fake, tmp_path),
                     input_text="write x.md\nexit\n")
    assert result.code == 0, result.stderr
    assert "needs approval, and input is not a terminal: denied" in result.stdout
    assert not (tmp_path / "x.md").exists()


def test_piped_stdin_without_a_key_says_which_variable(tmp_path: Path) -> None:
    env = cli_env(None, tmp_path, DEXTER_MODEL="gpt-4.1")
    result = run_cli([], cwd=tmp_path, env=env, input_text="hello\n")
    assert result.code == 2  # a configuration error, as for dexter ask
    assert "OPENAI_API_KEY" in result.stdout


def test_dumb_terminal_prints_runs_between_prompts(fake: FakeLLM, tmp_path: Path) -> None:
    fake.enqueue(Reply(text="Checking.", tool_calls=[ToolCallSpec("calculator",
                                                                  {"expression": "6*7"})]),
                 Reply(text="It is 42."))
    child = spawn(fake, tmp_path, TERM="dumb")
    screen = io.StringIO()
    child.logfile_read = screen
    try:
        child.expect("ctrl\\+c to interrupt")
        child.expect("❯ ")
        child.send("six times seven\r")
        child.expect("It is 42.")
        child.expect("✻[^\r\n]*\r\n")
        child.expect("❯ ")  # the prompt comes back after the closing line
        child.send("/history\r")
        child.expect("1\\. six times seven")
        exit_at_the_prompt(child)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    output = screen.getvalue()
    run = output[output.index("> Query: six times seven"):output.index("✻")]
    assert "❯" not in run  # no prompt drawn into the middle of the run's lines
    assert output.count("/history") == 1  # the typed command is not echoed again
    assert "\x1b[" not in output.split("❯ ", 1)[1]


def test_a_line_typed_during_a_run_on_a_dumb_terminal_is_asked_next(fake: FakeLLM,
                                                                    tmp_path: Path) -> None:
    """On a dumb terminal no prompt is open while a run works, so a line typed meanwhile
    waits in the terminal, whose cooked mode turns its Enter into a line feed; when the
    prompt comes back the line is sent, not left in the prompt as a second line."""
    stall = Stall(after_chunks=1, reply=Reply(text="First answer."), timeout=HOLD)
    fake.enqueue(stall, Reply(text="Second answer."))
    child = spawn(fake, tmp_path, TERM="dumb")
    try:
        child.expect("❯ ")
        child.send("first question\r")
        assert stall.reached.wait(LIVENESS)
        child.send("second question\r")
        stall.gate.set()
        child.expect("First answer.")
        child.expect("Second answer.")
        exit_at_the_prompt(child)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    asked = [str(r.body) for r in fake.requests]
    assert len(asked) == 2 and "second question" in asked[1]


@pytest.mark.parametrize("typed", ["", "q\n", "/help\nwhat is 2+2?\n"], ids=["eof", "q", "lines"])
def test_with_no_key_piped_input_is_told_once_and_exits_2(tmp_path: Path, typed: str) -> None:
    # Before: </dev/null exited 0, and each line typed printed the no-key block again and
    # exited 1; the README says a missing key is exit 2.
    result = run_cli([], cwd=tmp_path, env=cli_env(None, tmp_path), input_text=typed)
    assert result.code == 2, result.stdout + result.stderr
    told = result.stdout + result.stderr
    assert told.count("OPENAI_API_KEY=your-key-here") == 1
    # the lines are not read, so a '/model' line could not help: the flag is named
    assert "/model" not in told and "whose key is set with --model" in told


def test_with_no_key_a_terminal_session_opens_with_guidance_and_exits_2(tmp_path: Path) -> None:
    child = spawn(None, tmp_path)
    try:
        child.expect("OPENAI_API_KEY=your-key-here")
        exit_at_the_prompt(child)
    finally:
        child.close(force=True)
    assert child.exitstatus == 2
