"""Control characters from outside never reach the terminal: they are shown, not obeyed.

A provider's error body, a tool's output, the model's text and a file name may hold ESC
(clear the screen, move the cursor, retitle the window), BEL or NUL. Every text view (live,
plain lines, the REPL, error lines) prints them as visible ``\\x1b``; ``--json`` escapes
them as JSON does (``\\u001b``), the C1 controls included.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from dexter.events import Done, RunStart, Thinking, ToolEnd, ToolError, ToolStart
from dexter.evidence.report import MARK
from dexter.render import choose_renderer
from dexter.render.base import for_terminal
from dexter.reports.sourcing import answer_with_sources
from dexter.testing.fakellm import FakeLLM, HttpError, Raw, Reply, ToolCallSpec
from dexter.text import escape_controls
from tests.cli_helpers import cli_env, run_cli

BAD = "\x1b[2J\x07bad\x00"
SHOWN = "\\x1b[2J\\x07bad\\x00"
RAW = ("\x1b[2J", "\x07", "\x00", "\x9b", "\x1b]0;", "\x08")


def assert_no_raw_controls(text: str) -> None:
    for raw in RAW:
        assert raw not in text, repr(raw)


@pytest.mark.parametrize(("text", "shown"), [
    (BAD, SHOWN),
    ("tab\tand\nnewline stay", "tab\tand\nnewline stay"),
    ("crlf\r\nline", "crlf\nline"),
    ("bare\rreturn", "bare\\x0dreturn"),
    ("\x1b]0;title\x07", "\\x1b]0;title\\x07"),
    ("C1 \x9b31m and DEL \x7f", "C1 \\x9b31m and DEL \\x7f"),
    ("back\x08space, form\x0cfeed, vertical\x0btab", "back\\x08space, form\\x0cfeed, vertical\\x0btab"),
    ("plain, 营收 €5, emoji 😀", "plain, 营收 €5, emoji 😀"),
])
def test_escape_controls(text: str, shown: str) -> None:
    assert escape_controls(text) == shown
    assert escape_controls(shown) == shown  # escaping twice changes nothing


def events() -> list[object]:
    return [
        RunStart(query=f"q {BAD}", model="m", provider="p"),
        Thinking(message=f"thinking {BAD}"),
        ToolStart(tool="read_file", args={"path": f"{BAD}.txt"}, tool_call_id="c1"),
        ToolError(tool="read_file", error=f"File not found: {BAD}.txt", tool_call_id="c1",
                  args={"path": f"{BAD}.txt"}),
        ToolStart(tool="bash", args={"command": "cat x"}, tool_call_id="c2"),
        ToolEnd(tool="bash", args={"command": "cat x"}, result=f"out {BAD}\n\x1b]0;pwned\x07",
                duration_ms=5, tool_call_id="c2"),
        Done(answer=f"Revenue was **$5** {BAD}.", status="ok"),
    ]


@pytest.mark.parametrize("view", ["plain", "live"])
def test_text_views_show_control_characters(view: str) -> None:
    out = io.StringIO()
    target = Console(file=out, force_terminal=True, width=120) if view == "live" else out
    renderer = choose_renderer(target, json=False, is_terminal=view == "live")
    for event in events():
        renderer.handle(event)  # type: ignore[arg-type]
    renderer.close()
    text = out.getvalue()
    assert_no_raw_controls(text)
    assert "\\x1b[2J" in text
    if view == "live":
        assert "\x1b[1m" in text  # the view's own styling still works (bold **$5**)


def test_json_keeps_the_text_exact_and_the_line_safe() -> None:
    out = io.StringIO()
    renderer = choose_renderer(out, json=True, is_terminal=False)
    renderer.handle(Thinking(message=f"{BAD} \x9b31m \x7f"))
    renderer.close()
    line = out.getvalue()
    assert_no_raw_controls(line)
    assert "\x7f" not in line
    assert json.loads(line)["message"] == f"{BAD} \x9b31m \x7f"


def test_the_marks_of_unsupported_figures_move_with_the_escaped_answer() -> None:
    answer = f"{BAD} Revenue was $9.9B and {BAD} margin 40%."
    spans = [(answer.index("$9.9B"), answer.index("$9.9B") + 5),
             (answer.index("40%"), answer.index("40%") + 3)]
    done = Done(answer=answer, verification={
        "checked": 2, "supported": 0, "status": "unverified", "final": True,
        "unsupported": [{"text": answer[s:e], "value": 0, "start": s, "end": e} for s, e in spans]})
    shown = answer_with_sources(for_terminal(done))  # type: ignore[arg-type]
    assert f"$9.9B{MARK}" in shown and f"40%{MARK}" in shown
    assert_no_raw_controls(shown)


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


@pytest.mark.e2e
@pytest.mark.parametrize("step", [HttpError(400, message=BAD), Raw(status=400, body=BAD)],
                         ids=["json-body", "raw-body"])
def test_a_provider_error_body_is_shown_not_obeyed(fake: FakeLLM, tmp_path: Path,
                                                    step: HttpError | Raw) -> None:
    env = cli_env(fake, tmp_path, DEXTER_MODEL="gpt-5.6-sol")
    fake.enqueue(step)
    plain = run_cli(["ask", "hi"], cwd=tmp_path, env=env)
    assert plain.code == 1 and "Traceback" not in plain.stderr
    assert_no_raw_controls(plain.stdout + plain.stderr)
    assert "(HTTP 400): " in plain.stdout and SHOWN in plain.stdout

    fake.enqueue(step)
    as_json = run_cli(["ask", "--json", "hi"], cwd=tmp_path, env=env)
    assert as_json.code == 1
    assert_no_raw_controls(as_json.stdout + as_json.stderr)
    assert BAD in as_json.events[-1]["answer"]  # the text itself is kept, JSON-escaped


@pytest.mark.e2e
def test_model_text_tool_output_and_file_names_through_ask(fake: FakeLLM, tmp_path: Path) -> None:
    text, shown = "\x1b[2J\x07bad", "\\x1b[2J\\x07bad"  # read_file refuses NUL bytes
    (tmp_path / "notes.txt").write_text(f"line one {text}\n", encoding="utf-8")
    fake.enqueue(
        Reply(text=f"Reading {BAD}.", tool_calls=[
            ToolCallSpec("read_file", {"path": "notes.txt"}),
            ToolCallSpec("read_file", {"path": f"{text}.txt"})]),
        Reply(text=f"The note says {BAD}."),
    )
    result = run_cli(["ask", "--model", "gpt-5.6-sol", "read my notes"], cwd=tmp_path,
                     env=cli_env(fake, tmp_path))
    assert result.code == 0, result.stderr
    assert_no_raw_controls(result.stdout + result.stderr)
    assert f"The note says {SHOWN}." in result.stdout
    assert f"{shown}.txt" in result.stdout  # the file name in the call and in its error
    # the model was sent the tool's real output; only the terminal got the escaped text
    sent = [m["content"] for m in fake.requests_for("openai")[1].body["messages"]
            if m["role"] == "tool"]
    assert any(f"line one {text}" in content for content in sent)
    replayed = run_cli(["replay", str(result.scratchpads()[0])], cwd=tmp_path,
                       env=cli_env(fake, tmp_path))
    assert replayed.code == 0 and SHOWN in replayed.stdout
    assert_no_raw_controls(replayed.stdout)


@pytest.mark.e2e
def test_the_repl_shows_them_too(fake: FakeLLM, tmp_path: Path) -> None:
    fake.enqueue(HttpError(400, message=BAD))
    result = run_cli([], cwd=tmp_path, env=cli_env(fake, tmp_path, DEXTER_MODEL="gpt-5.6-sol"),
                     input_text="hello\n")
    assert "Traceback" not in result.stderr
    assert_no_raw_controls(result.stdout + result.stderr)
    assert SHOWN in result.stdout


@pytest.mark.e2e
def test_a_bad_config_value_exits_2_with_one_line(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text("[context]\nkeep_thinking = -1\n", encoding="utf-8")
    result = run_cli(["ask", "--config", str(config), "hi"], cwd=tmp_path, env=cli_env(None, tmp_path))
    assert result.code == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == (f"Error: {config}: [context] keep_thinking = -1 is out of "
                                     "range; allowed: 0 to 10,000 messages.")
    config.write_bytes(b'model = "caf\xe9"\n')
    result = run_cli(["ask", "--config", str(config), "hi"], cwd=tmp_path, env=cli_env(None, tmp_path))
    assert result.code == 2 and "is not UTF-8 text (byte 0xe9 on line 1)" in result.stderr
    (tmp_path / ".env").write_bytes(b"DEXTER_REQUEST_TIMEOUT=nan\n\xff\xfe\x00\n")
    result = run_cli(["ask", "hi"], cwd=tmp_path, env=cli_env(None, tmp_path))
    assert result.code == 2 and "Traceback" not in result.stderr
    assert "DEXTER_REQUEST_TIMEOUT: request_timeout = nan is out of range" in result.stderr


@pytest.mark.e2e
def test_damaged_state_files_at_start_up(fake: FakeLLM, tmp_path: Path) -> None:
    """A binary settings.json is one clear line; a RULES.md saved as Latin-1 is read with
    U+FFFD in place of the bad byte. Neither is a traceback."""
    home = tmp_path / ".dexter"
    home.mkdir()
    (home / "settings.json").write_bytes(bytes(range(256)))
    (home / "RULES.md").write_bytes(b"- Prefer caf\xe9 filings.\n")
    fake.enqueue(Reply(text="Hello."))
    result = run_cli(["ask", "--model", "gpt-5.6-sol", "hi"], cwd=tmp_path,
                     env=cli_env(fake, tmp_path))
    assert "Traceback" not in result.stderr
    assert "settings.json" in result.stderr and "not UTF-8" in result.stderr
    assert_no_raw_controls(result.stderr)
    assert result.code == 0 and "Hello." in result.stdout
    system = fake.requests_for("openai")[0].body["messages"][0]["content"]
    assert "Prefer caf\ufffd filings." in system
