"""End to end: ``dexter sessions``, ``dexter ask --continue/--resume`` and ``dexter
--continue/--resume`` in the real command, against the fake LLM (pty tests with pexpect)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pexpect
import pytest

from dexter.testing.fakellm import FakeLLM, Reply
from tests.cli_helpers import LIVENESS, SECRET_OPENAI, CliResult, cli_env, run_cli, spawn_terminal

pytestmark = pytest.mark.e2e

FIRST_Q = "Which segments does Apple report?"
FIRST_A = "Apple reports iPhone, Mac, iPad, wearables and services."


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


def env_for(fake: FakeLLM, cwd: Path, **extra: str) -> dict[str, str]:
    return cli_env(fake, cwd, DEXTER_MODEL="gpt-4.1", **extra)


def ask(fake: FakeLLM, cwd: Path, *args: str, **extra: str) -> CliResult:
    return run_cli(["ask", "--plain", *args], cwd=cwd, env=env_for(fake, cwd, **extra))


def session_files(cwd: Path) -> list[Path]:
    return sorted((cwd / ".dexter" / "sessions").glob("*.json"))


def only_session(cwd: Path) -> dict[str, Any]:
    (path,) = session_files(cwd)
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def chat(fake: FakeLLM, index: int) -> list[tuple[str, str]]:
    """Request ``index``'s user and assistant messages (OpenAI wire format)."""
    body = fake.requests_for("openai")[index].body
    return [(m["role"], m["content"]) for m in body["messages"] if m["role"] != "system"]


def first_session(fake: FakeLLM, cwd: Path) -> str:
    fake.enqueue(Reply(text=FIRST_A))
    result = ask(fake, cwd, FIRST_Q)
    assert result.code == 0, result.stderr
    session_id: str = only_session(cwd)["id"]
    return session_id


def test_every_ask_is_a_session_and_continue_sends_the_earlier_turn(
        fake: FakeLLM, tmp_path: Path) -> None:
    session_id = first_session(fake, tmp_path)
    fake.enqueue(Reply(text="Services is the second largest."))

    result = ask(fake, tmp_path, "--continue", "Which one is second largest?")

    assert result.code == 0, result.stderr
    assert f"Resumed session {session_id} · 1 earlier turn · gpt-4.1" in result.stderr
    assert chat(fake, 1) == [("user", FIRST_Q), ("assistant", FIRST_A),
                             ("user", "Which one is second largest?")]
    saved = only_session(tmp_path)
    assert saved["id"] == session_id and saved["turns"] == 2
    assert [t["query"] for t in saved["conversation"]["turns"]] == [
        FIRST_Q, "Which one is second largest?"]
    assert len(saved["scratchpads"]) == 2
    assert SECRET_OPENAI not in session_files(tmp_path)[0].read_text()
    fake.assert_no_violations()


def test_resume_by_id_prefix_and_a_wrong_id_exits_2(fake: FakeLLM, tmp_path: Path) -> None:
    session_id = first_session(fake, tmp_path)
    fake.enqueue(Reply(text="Yes."))

    result = ask(fake, tmp_path, "--resume", session_id[:4], "Is that all of them?")

    assert result.code == 0, result.stderr
    assert chat(fake, 1)[:2] == [("user", FIRST_Q), ("assistant", FIRST_A)]
    assert only_session(tmp_path)["turns"] == 2

    wrong = "0123abcd" if not session_id.startswith("0123") else "4567abcd"
    for args in (["--resume", wrong], ["-r", "not-an-id"], ["--resume", ""],
                 ["--continue", "--resume", session_id]):
        result = ask(fake, tmp_path, *args, "Another question?")
        assert result.code == 2, (args, result.stderr)
        assert "Traceback" not in result.stderr and "Error:" in result.stderr
    assert f"No session matches {wrong!r}" in ask(fake, tmp_path, "--resume", wrong, "q").stderr
    assert len(fake.requests_for("openai")) == 2  # none of them asked the model


def test_continue_without_any_session_exits_2(fake: FakeLLM, tmp_path: Path) -> None:
    result = ask(fake, tmp_path, "--continue", "Hello?")
    assert result.code == 2
    assert "No saved session to continue" in result.stderr
    result = run_cli(["--continue"], cwd=tmp_path, env=env_for(fake, tmp_path), input_text="")
    assert result.code == 2 and "No saved session to continue" in result.stderr


def test_a_resumed_session_keeps_its_model_unless_told(fake: FakeLLM, tmp_path: Path) -> None:
    fake.enqueue(Reply(text=FIRST_A), Reply(text="One."), Reply(text="Two."))
    assert ask(fake, tmp_path, "-m", "gpt-4.1-mini", FIRST_Q).code == 0
    assert ask(fake, tmp_path, "--continue", "and then?").code == 0
    assert run_cli(["-m", "gpt-4.1", "--continue", "ask", "--plain", "and now?"], cwd=tmp_path,
                   env=env_for(fake, tmp_path)).code == 0
    models = [r.body["model"] for r in fake.requests_for("openai")]
    assert models == ["gpt-4.1-mini", "gpt-4.1-mini", "gpt-4.1"]
    assert only_session(tmp_path)["model"] == "gpt-4.1"
    assert chat(fake, 2)[:4] == [("user", FIRST_Q), ("assistant", FIRST_A),
                                 ("user", "and then?"), ("assistant", "One.")]


def test_json_output_stays_json_when_resuming(fake: FakeLLM, tmp_path: Path) -> None:
    first_session(fake, tmp_path)
    fake.enqueue(Reply(text="Fine."))
    result = run_cli(["ask", "--json", "--continue", "More?"], cwd=tmp_path,
                     env=env_for(fake, tmp_path))
    assert result.code == 0, result.stderr
    assert result.events[-1]["type"] == "done"  # every stdout line is JSON
    assert "Resumed session" in result.stderr


def test_sessions_lists_newest_first_and_skips_a_corrupt_file(
        fake: FakeLLM, tmp_path: Path) -> None:
    older = first_session(fake, tmp_path)
    fake.enqueue(Reply(text="Microsoft reports three segments."))
    assert ask(fake, tmp_path, "Which segments does Microsoft report?").code == 0
    (newer,) = {p.stem for p in session_files(tmp_path)} - {older}
    corrupt = tmp_path / ".dexter" / "sessions" / "0badf00d.json"
    corrupt.write_text('{"format": "dexter-session", "version": 1, "id": ')

    result = run_cli(["sessions"], cwd=tmp_path, env=env_for(fake, tmp_path))

    assert result.code == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if line.startswith((older, newer))]
    assert [line.split()[0] for line in lines] == [newer, older]
    assert "gpt-4.1" in lines[0] and "Which segments does Microsoft report?" in lines[0]
    assert lines[1].split()[4] == "1" and FIRST_Q in lines[1]  # turns, first question
    assert "ID" in result.stdout and "First question" in result.stdout
    assert f"Skipped {corrupt}: not a readable session (not valid JSON" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_sessions_without_any(fake: FakeLLM, tmp_path: Path) -> None:
    result = run_cli(["sessions"], cwd=tmp_path, env=env_for(fake, tmp_path))
    assert result.code == 0 and "No saved sessions yet" in result.stdout


def test_piped_repl_resumes_and_saves_back(fake: FakeLLM, tmp_path: Path) -> None:
    session_id = first_session(fake, tmp_path)
    fake.enqueue(Reply(text="Wearables."))
    result = run_cli(["--resume", session_id], cwd=tmp_path, env=env_for(fake, tmp_path),
                     input_text="Which is smallest?\n")
    assert result.code == 0, result.stderr
    out = result.stdout
    assert out.index(f"Resumed session {session_id} · 1 earlier turn · gpt-4.1") \
        < out.index(f"1. {FIRST_Q}") < out.index("Wearables.")
    assert chat(fake, 1)[:2] == [("user", FIRST_Q), ("assistant", FIRST_A)]
    assert only_session(tmp_path)["turns"] == 2
    result = run_cli(["--resume"], cwd=tmp_path, env=env_for(fake, tmp_path), input_text="")
    assert result.code == 2 and "give its id" in result.stderr
    result = run_cli(["--resume", "ffff0000ffff"], cwd=tmp_path, env=env_for(fake, tmp_path),
                     input_text="")
    assert result.code == 2 and "No session matches" in result.stderr


# -- in a pseudo-terminal ------------------------------------------------------------------------


def spawn(fake: FakeLLM, cwd: Path, *args: str) -> Any:
    env = cli_env(fake, cwd, TERM="xterm-256color", PROMPT_TOOLKIT_NO_CPR="1",
                  DEXTER_MODEL="gpt-4.1")
    return spawn_terminal([*args], cwd=cwd, env=env, dimensions=(30, 100), timeout=LIVENESS)


def test_continue_in_a_terminal_shows_the_earlier_turns_and_sends_them(
        fake: FakeLLM, tmp_path: Path) -> None:
    session_id = first_session(fake, tmp_path)
    fake.enqueue(Reply(text="Services grew fastest."))
    child = spawn(fake, tmp_path, "--continue")
    screen = io.StringIO()
    child.logfile_read = screen
    try:
        child.expect(f"Resumed session {session_id} · 1 earlier turn · gpt-4.1")
        child.expect("Which segments does Apple report")  # the earlier turn
        child.expect("iPhone, Mac, iPad")
        child.expect("❯")
        child.send("Which grew fastest?\r")
        child.expect("Services grew fastest.")
        child.expect("✻")
        child.expect("❯")
        child.send("/exit\r")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0, screen.getvalue()
    assert chat(fake, 1) == [("user", FIRST_Q), ("assistant", FIRST_A),
                             ("user", "Which grew fastest?")]
    assert only_session(tmp_path)["turns"] == 2


def test_resume_without_an_id_offers_a_picker(fake: FakeLLM, tmp_path: Path) -> None:
    older = first_session(fake, tmp_path)
    fake.enqueue(Reply(text="Microsoft reports three segments."))
    assert ask(fake, tmp_path, "Which segments does Microsoft report?").code == 0
    fake.enqueue(Reply(text="Still five."))
    child = spawn(fake, tmp_path, "--resume")
    screen = io.StringIO()
    child.logfile_read = screen
    try:
        child.expect("Resume which session\\?")
        child.expect("Which segments does Apple report")  # the older one, second
        child.send("2")
        child.expect(f"Resumed session {older} · 1 earlier turn")
        child.expect("❯")
        child.send("How many?\r")
        child.expect("Still five.")
        child.expect("✻")
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0, screen.getvalue()
    assert chat(fake, 2)[:2] == [("user", FIRST_Q), ("assistant", FIRST_A)]
