"""End to end: the real ``dexter`` command against the fake LLM server, both providers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dexter.testing.fakellm import FakeLLM, HttpError, Reply, Stall, ToolCallSpec, Usage
from tests.cli_helpers import (
    HOLD,
    LIVENESS,
    SECRET_ANTHROPIC,
    SECRET_OPENAI,
    cli_env,
    dexter_argv,
    run_cli,
)

pytestmark = pytest.mark.e2e

PROVIDERS = [
    pytest.param("gpt-5.6-sol", "openai", id="openai"),
    pytest.param("claude-sonnet-4-6", "anthropic", id="anthropic"),
]


@pytest.fixture
def fake() -> FakeLLM:
    with FakeLLM() as server:
        yield server


@pytest.mark.parametrize(("model", "route"), PROVIDERS)
def test_ask_runs_a_tool_and_answers(fake: FakeLLM, tmp_path: Path, model: str, route: str) -> None:
    fake.enqueue(
        Reply(text="Let me compute the growth.",
              tool_calls=[ToolCallSpec("calculator", {"expression": "(130.5 - 60.9) / 60.9 * 100"})],
              usage=Usage(900, 40)),
        Reply(text="Revenue grew **114.29%** year over year.", usage=Usage(1000, 20)),
    )
    result = run_cli(["ask", "--model", model, "Revenue went from 60.9 to 130.5. How much did it grow?"], cwd=tmp_path,
                     env=cli_env(fake, tmp_path))
    assert result.code == 0, result.stderr
    assert "114.29%" in result.stdout
    assert "Calculator" in result.stdout
    requests = fake.requests_for(route)
    assert len(requests) == 2
    fake.assert_no_violations()
    # the second request carried the calculator's exact result back to the model
    assert "114.2857" in json.dumps(requests[1].body)
    pads = result.scratchpads()
    assert len(pads) == 1
    kinds = [json.loads(line)["type"] for line in pads[0].read_text().splitlines()]
    assert kinds[0] == "init" and "tool_result" in kinds and kinds[-1] == "done"
    text = pads[0].read_text()
    assert SECRET_OPENAI not in text and SECRET_ANTHROPIC not in text


@pytest.mark.parametrize(("model", "route"), PROVIDERS)
def test_json_output_is_one_event_per_line_ending_with_done(fake: FakeLLM, tmp_path: Path,
                                                            model: str, route: str) -> None:
    fake.enqueue(
        Reply(tool_calls=[ToolCallSpec("calculator", {"expression": "2+2"}),
                          ToolCallSpec("calculator", {"expression": "3*3"})]),
        Reply(text="4 and 9."),
    )
    result = run_cli(["ask", "--json", "--model", model, "two sums"], cwd=tmp_path,
                     env=cli_env(fake, tmp_path))
    assert result.code == 0, result.stderr
    events = result.events
    types = [e["type"] for e in events]
    assert types[0] == "run_start" and types[-1] == "done"
    assert types.count("tool_start") == 2 and types.count("tool_end") == 2
    assert "stream_progress" not in types
    done = events[-1]
    assert done["answer"] == "4 and 9."
    assert done["status"] == "ok" and done["iterations"] == 2
    assert done["token_usage"]["input_tokens"] > 0
    assert done["context_threshold"] > 0 and done["context_tokens"] > 0
    assert len(done["tool_calls"]) == 2


def test_missing_key_exits_2_naming_the_variable(tmp_path: Path) -> None:
    env = cli_env(None, tmp_path)
    result = run_cli(["ask", "--model", "claude-sonnet-4-6", "hi"], cwd=tmp_path, env=env)
    assert result.code == 2
    assert "ANTHROPIC_API_KEY" in result.stderr


@pytest.mark.parametrize(("toml", "expected"), [
    ('[context]\nmax_tool_result_chars = "big"\n',
     "[context]: 'max_tool_result_chars' must be a whole number"),
    ("[context\n", "is not valid TOML"),
    ('model = 5\n', "'model' must be a string in quotes, got 5; write it as model = \"5\"."),
    ('[verify]\nenabled = "no"\n', "[verify]: 'enabled' must be true or false, got \"no\"; "
                                    "write it as enabled = false."),
])
def test_bad_config_exits_2_and_prints_the_error_as_written(tmp_path: Path, toml: str,
                                                            expected: str) -> None:
    config = tmp_path / "bad.toml"
    config.write_text(toml, encoding="utf-8")
    result = run_cli(["ask", "--config", str(config), "hi"], cwd=tmp_path,
                     env=cli_env(None, tmp_path, OPENAI_API_KEY="sk-test-x"))
    assert result.code == 2
    assert expected in " ".join(result.stderr.split())  # "[context]" is text, not markup
    models = run_cli(["--config", str(config), "models"], cwd=tmp_path,
                     env=cli_env(None, tmp_path, COLUMNS="200"))
    assert (models.code, models.stdout) == (2, "")  # not 'Current model: 5'
    assert expected in " ".join(models.stderr.split())


def test_unknown_provider_names_the_config_table_to_add(tmp_path: Path) -> None:
    result = run_cli(["ask", "--model", "nosuch:foo", "hi"], cwd=tmp_path,
                     env=cli_env(None, tmp_path, OPENAI_API_KEY="sk-test-x"))
    assert result.code == 2
    assert "[providers.nosuch] with base_url" in result.stderr


def test_dotenv_in_the_working_directory_is_loaded_and_the_environment_wins(
        fake: FakeLLM, tmp_path: Path) -> None:
    fake.enqueue(Reply(text="Answered with the key from .env."))
    (tmp_path / ".env").write_text(
        "OPENAI_API_KEY=sk-from-dotenv-0123456789\nDEXTER_MODEL=claude-sonnet-4-6\n",
        encoding="utf-8")
    env = cli_env(fake, tmp_path, DEXTER_MODEL="gpt-5.6-sol")
    del env["OPENAI_API_KEY"]
    result = run_cli(["ask", "hi"], cwd=tmp_path, env=env)
    assert result.code == 0, result.stderr
    (request,) = fake.requests
    assert request.route == "openai"  # DEXTER_MODEL from the environment beat the .env one
    assert request.headers.get("authorization") == "Bearer sk-from-dotenv-0123456789"


def test_auth_error_is_explained_without_leaking_the_key(fake: FakeLLM, tmp_path: Path) -> None:
    fake.enqueue(HttpError.openai_auth())
    result = run_cli(["ask", "hi"], cwd=tmp_path, env=cli_env(fake, tmp_path))
    assert result.code == 1
    output = result.stdout + result.stderr
    assert "OPENAI_API_KEY" in output
    assert SECRET_OPENAI not in output
    assert len(fake.requests) == 1  # auth errors are not retried
    # the renderer labels the failure once: no "Error: Error: ..."
    assert "Error: OpenAI rejected the API key" in output
    assert "Error: Error:" not in output


def test_rate_limit_is_retried_then_answers(fake: FakeLLM, tmp_path: Path) -> None:
    fake.enqueue(HttpError.openai_rate_limit(retry_after="0.01"), Reply(text="Done after a retry."))
    result = run_cli(["ask", "--json", "hi"], cwd=tmp_path, env=cli_env(fake, tmp_path))
    assert result.code == 0, result.stderr
    types = [e["type"] for e in result.events]
    assert "provider_retry" in types
    assert result.events[-1]["answer"] == "Done after a retry."


def test_max_iterations_ends_with_the_best_answer_and_says_so(fake: FakeLLM,
                                                               tmp_path: Path) -> None:
    for i in range(2):
        fake.enqueue(Reply(tool_calls=[ToolCallSpec("calculator", {"expression": f"{i}+1"})]))
    fake.enqueue(Reply(text="What I have: 0+1 is 1 [S1] and 1+1 is 2 [S2]."))
    result = run_cli(["ask", "--max-iterations", "2", "loop forever"], cwd=tmp_path,
                     env=cli_env(fake, tmp_path))
    assert result.code == 1
    assert "What I have: 0+1 is 1 [S1] and 1+1 is 2 [S2]." in result.stdout
    assert "iteration limit (2)" in result.stdout
    assert len(fake.requests) == 3
    assert "used all 2 research steps" in json.dumps(fake.requests[-1].body)


def test_bad_tool_calls_become_results_the_model_can_fix(fake: FakeLLM, tmp_path: Path) -> None:
    fake.enqueue(
        Reply(tool_calls=[ToolCallSpec("no_such_tool", {"x": 1}),
                          ToolCallSpec("calculator", '{"expression": "1+'),
                          ToolCallSpec("calculator", {"expresion": "1+1"})]),
        Reply(text="Recovered."),
    )
    result = run_cli(["ask", "--json", "try tools"], cwd=tmp_path, env=cli_env(fake, tmp_path))
    assert result.code == 0, result.stderr
    errors = [e["error"] for e in result.events if e["type"] == "tool_error"]
    assert len(errors) == 3
    assert "Unknown tool 'no_such_tool'" in errors[0]
    assert "not a valid JSON object" in errors[1]
    assert "expression" in errors[2]
    sent = json.dumps(fake.requests[1].body)
    assert "Unknown tool" in sent and "not a valid JSON object" in sent
    fake.assert_no_violations()


def test_read_file_reads_a_workspace_file(fake: FakeLLM, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("NVDA FY2025 revenue: 130.5B\n", encoding="utf-8")
    fake.enqueue(
        Reply(tool_calls=[ToolCallSpec("read_file", {"path": "notes.txt"})]),
        Reply(text="The notes say 130.5B."),
    )
    result = run_cli(["ask", "what do my notes say"], cwd=tmp_path, env=cli_env(fake, tmp_path))
    assert result.code == 0, result.stderr
    assert "130.5B" in json.dumps(fake.requests[1].body)


def test_replay_re_renders_the_run(fake: FakeLLM, tmp_path: Path) -> None:
    fake.enqueue(
        Reply(text="Checking.", tool_calls=[ToolCallSpec("calculator", {"expression": "6*7"})]),
        Reply(text="The answer is 42."),
    )
    env = cli_env(fake, tmp_path)
    first = run_cli(["ask", "what is six times seven"], cwd=tmp_path, env=env)
    assert first.code == 0, first.stderr
    pad = first.scratchpads()[0]
    with pad.open("a", encoding="utf-8") as handle:
        handle.write("{not json\n")
    replayed = run_cli(["replay", str(pad)], cwd=tmp_path, env=env)
    assert replayed.code == 0, replayed.stderr
    assert "what is six times seven" in replayed.stdout
    assert "Calculator" in replayed.stdout
    assert "The answer is 42." in replayed.stdout
    assert "Skipped 1 line corrupt in" in replayed.stderr
    as_json = run_cli(["replay", "--json", str(pad)], cwd=tmp_path, env=env)
    types = [e["type"] for e in as_json.events]
    assert types[0] == "run_start" and types[-1] == "done" and "tool_end" in types


def test_replay_of_a_file_with_no_readable_entry_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "bad.jsonl").write_text("not json\n", encoding="utf-8")
    result = run_cli(["replay", "bad.jsonl"], cwd=tmp_path, env=cli_env(None, tmp_path))
    assert result.code == 2
    assert "holds no readable entries (1 line corrupt)" in result.stderr


@pytest.mark.parametrize("content", [b"not json\n", b'{"name": "not a scratchpad"}\n', b"",
                                     bytes(range(256)), b"[1, 2, 3]\n"],
                         ids=["text", "json", "empty", "binary", "array"])
def test_replay_and_rerun_agree_a_file_that_is_not_a_scratchpad_is_exit_2(
        tmp_path: Path, content: bytes) -> None:
    (tmp_path / "notes.jsonl").write_bytes(content)
    env = cli_env(None, tmp_path)
    replayed = run_cli(["replay", "notes.jsonl"], cwd=tmp_path, env=env)
    rerun = run_cli(["rerun", "notes.jsonl"], cwd=tmp_path, env=env)
    assert (replayed.code, rerun.code) == (2, 2), replayed.stderr + rerun.stderr
    assert "Traceback" not in replayed.stderr + rerun.stderr


def test_replay_of_a_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    result = run_cli(["replay", "nope.jsonl"], cwd=tmp_path, env=cli_env(None, tmp_path))
    assert result.code == 2
    assert "No scratchpad" in result.stderr


def test_output_file_gets_the_question_the_answer_its_sources_and_the_check(
        fake: FakeLLM, tmp_path: Path) -> None:
    (tmp_path / "nvda.txt").write_text("NVIDIA revenue FY2025: $130.5 billion\n", encoding="utf-8")
    fake.enqueue(
        Reply(tool_calls=[ToolCallSpec("read_file", {"path": "nvda.txt"})]),
        Reply(text="| Ticker | Rev | Source |\n|---|---|---|\n| NVDA | 130.5B | [S1] |"))
    result = run_cli(["ask", "--output", "out/answer.md", "table please"], cwd=tmp_path,
                     env=cli_env(fake, tmp_path))
    assert result.code == 0, result.stderr
    document = (tmp_path / "out" / "answer.md").read_text(encoding="utf-8")
    assert document.startswith("# table please\n")
    assert "| NVDA | 130.5B | [S1] |" in document
    assert "## Sources\n\n- **[S1]** File: nvda.txt\n" in document
    assert "read_file" not in document
    assert "✓ The one figure was checked against the sources." in document
    assert document.index("figure was checked") < document.index("| NVDA |")


def test_version_help_and_models(tmp_path: Path) -> None:
    env = cli_env(None, tmp_path, OPENAI_API_KEY="sk-live-should-not-print-123456")
    version = run_cli(["--version"], cwd=tmp_path, env=env)
    assert version.code == 0 and version.stdout.startswith("dexter ")
    help_text = run_cli(["--help"], cwd=tmp_path, env=env)
    assert help_text.code == 0 and "ask" in help_text.stdout and "replay" in help_text.stdout
    models = run_cli(["models"], cwd=tmp_path, env=env)
    assert models.code == 0, models.stderr
    assert "claude-sonnet-4-6" in models.stdout and "OPENAI_API_KEY" in models.stdout
    assert "sk-live-should-not-print" not in models.stdout


@pytest.mark.parametrize(("model", "route"), PROVIDERS)
def test_ctrl_c_mid_stream_exits_130_and_keeps_the_scratchpad(fake: FakeLLM, tmp_path: Path,
                                                               model: str, route: str) -> None:
    import signal
    import subprocess

    stall = Stall(after_chunks=3, reply=Reply(text="A long answer that never finishes " * 20),
                  timeout=HOLD)
    fake.enqueue(
        Reply(tool_calls=[ToolCallSpec("calculator", {"expression": "2*21"})]),
        stall,
    )
    proc = subprocess.Popen(
        dexter_argv("ask", "--model", model, "interrupt me"),
        cwd=tmp_path, env=cli_env(fake, tmp_path), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )
    try:
        assert stall.reached.wait(LIVENESS), "the stream never reached the stall"
        proc.send_signal(signal.SIGINT)
        _stdout, stderr = proc.communicate(timeout=LIVENESS)
    finally:
        stall.gate.set()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    assert "Interrupted" in stderr
    assert "Traceback" not in stderr
    pads = sorted((tmp_path / "scratchpads").glob("*.jsonl"))
    assert len(pads) == 1 and pads[0].name in stderr
    entries = [json.loads(line) for line in pads[0].read_text(encoding="utf-8").splitlines()]
    assert entries[0]["query"] == "interrupt me"
    assert any(e["type"] == "tool_result" and "42" in json.dumps(e["result"]) for e in entries)
    # the record says how the run ended, and replay shows it
    assert (entries[-1]["type"], entries[-1]["status"]) == ("done", "interrupted")
    replayed = run_cli(["replay", str(pads[0])], cwd=tmp_path, env=cli_env(fake, tmp_path))
    assert replayed.code == 0 and "interrupted by the user" in replayed.stdout.lower()


def test_a_reader_that_goes_away_ends_the_run_quietly(fake: FakeLLM, tmp_path: Path) -> None:
    """``dexter ask --json ... | head -1``: no traceback once the pipe closes."""
    import subprocess

    # ~4,000 answer_delta lines: far more than a pipe buffer holds, so writes hit the closed pipe.
    fake.enqueue(Reply(text="x" * 4_000, chunk_size=1))
    proc = subprocess.Popen(
        dexter_argv("ask", "--json", "pipe me"), cwd=tmp_path,
        env=cli_env(fake, tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stdout is not None and proc.stderr is not None
        first = json.loads(proc.stdout.readline())
        proc.stdout.close()
        stderr = proc.stderr.read()
        proc.wait(timeout=LIVENESS)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert first["type"] == "run_start"
    assert proc.returncode == 1
    assert "Traceback" not in stderr and "Error" not in stderr, stderr


def test_a_server_that_refuses_the_connection_is_named_and_counted(tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:  # bound, never listening: Ollama not running
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = cli_env(None, tmp_path, OLLAMA_BASE_URL=f"http://127.0.0.1:{port}",
                  DEXTER_MAX_RETRIES="2")
    result = run_cli(["ask", "--plain", "--model", "ollama:llama3.1", "hi"], cwd=tmp_path,
                     env=env)
    assert result.code == 1
    out = result.stdout + result.stderr
    assert [line.split("(attempt ")[1] for line in out.splitlines() if "(attempt " in line] \
        == ["1)", "2)"]
    assert "connection refused; retrying" in out
    assert f"Connection refused: is the server at http://127.0.0.1:{port}/v1 running?" in out
    assert "(gave up after 2 retries)" in out
    assert "connection lost" not in out.lower() and "Traceback" not in out


@pytest.mark.parametrize(("args", "named"), [
    (["ask", "--allow", "wrte_file", "q"], "there is no tool 'wrte_file'"),
    (["ask", "--output", "x.docx", "q"], "--output x.docx: dexter writes reports as"),
    (["ask", "--output", "../x.md", "q"], "--output ../x.md points outside the working directory"),
    (["rerun", "--allow", "Bash(git log", "run.jsonl"], "--allow 'Bash(git log'"),
    (["rerun", "--allow", "wrte_file", "run.jsonl"], "there is no tool 'wrte_file'"),
    (["eval", "--allow", "wrte_file", "--limit", "1"], "there is no tool 'wrte_file'"),
    (["eval", "--allow", "memory_update", "--limit", "1"], "there is no tool 'memory_update'"),
])
def test_a_mistyped_flag_is_reported_before_the_missing_key(tmp_path: Path, args: list[str],
                                                            named: str) -> None:
    # Before: with no key set, these said only that the key was missing; the flag's
    # problem came once a key was there.
    (tmp_path / "run.jsonl").write_text(json.dumps({
        "type": "init", "timestamp": "2026-01-01T00:00:00Z", "query": "q",
        "model": "gpt-4.1"}) + "\n")
    result = run_cli(args, cwd=tmp_path, env=cli_env(None, tmp_path))
    assert result.code == 2
    assert named in result.stderr
    assert "No API key" not in result.stderr


def test_an_allowed_memory_tool_is_known_before_the_session_is_built(tmp_path: Path) -> None:
    env = cli_env(None, tmp_path, DEXTER_MEMORY_ENABLED="true")
    result = run_cli(["ask", "--allow", "memory_update", "--allow", "write_file", "q"],
                     cwd=tmp_path, env=env)
    assert result.code == 2 and "No API key" in result.stderr  # the flags were fine


def test_python_m_dexter_ignores_modules_planted_in_the_workspace(tmp_path: Path) -> None:
    # a sandboxed command may write any file in the workspace; started from there with
    # ``python -m dexter`` (which puts the working directory on the module path), the next
    # start must not import it outside the sandbox
    marker = tmp_path / "ran-outside"
    (tmp_path / "typer.py").write_text(  # the first library the command line imports
        f"open({str(marker)!r}, 'w').write('planted')\nraise SystemExit('planted')\n")
    result = run_cli(["--version"], cwd=tmp_path, env=cli_env(None, tmp_path))
    assert result.code == 0, result.stderr
    assert result.stdout.startswith("dexter ") and not marker.exists()
