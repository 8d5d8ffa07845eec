"""End to end through ``dexter ask``: commands a stranger steered the model into are
contained, and no key reaches any file or stream dexter writes."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from dexter.config import Settings
from dexter.sandbox.runner import detect_runner
from dexter.testing.fakellm import FakeLLM, Reply, ToolCallSpec
from tests.cli_helpers import SECRET_OPENAI, cli_env, run_cli

pytestmark = pytest.mark.e2e
RUNNER = detect_runner(Settings())
OPAQUE_KEY = "Qm7xT2vL9pR4wK8sN3dF6hJ1"  # under a name no pattern knows
USER_PASTED = "ghp_UserPastedToken0123456789abcdef"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _all_written(root: Path) -> dict[str, str]:
    out = {}
    for path in root.rglob("*"):
        if path.is_file():
            out[str(path)] = path.read_text(encoding="utf-8", errors="replace")
    return out


@pytest.mark.skipif(not RUNNER.status.active, reason=f"no OS sandbox here: {RUNNER.status.reason}")
@pytest.mark.parametrize("json_out", [True, False])
def test_under_yes_no_key_reaches_any_file_or_stream(llm: FakeLLM, tmp_path: Path, json_out: bool) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE-KEY-CANARY\n")
    (tmp_path / ".env").write_text(f"LAB_SERVICE={OPAQUE_KEY}\n")
    big = f"python3 -c \"print('y' * 60000)\"; echo {USER_PASTED}"
    llm.enqueue(
        Reply(tool_calls=[
            ToolCallSpec("bash", {"command": "env; cat /proc/$PPID/environ; cat /proc/1/environ"}),
        ]),
        Reply(tool_calls=[
            ToolCallSpec("bash", {"command": f"echo {_b64('cat ~/.ssh/id_rsa; cat .env; set')} | base64 -d | sh"}),
        ]),
        Reply(tool_calls=[ToolCallSpec("bash", {"command": big})]),
        Reply(tool_calls=[ToolCallSpec("memory_update", {"content": f"- token {USER_PASTED}"})]),
        Reply(text=f"Done. The token {USER_PASTED} and {OPAQUE_KEY} were noted."),
    )
    env = cli_env(llm, tmp_path, DEXTER_MEMORY_ENABLED="true",
                  DEXTER_MEMORY_EMBEDDING_PROVIDER="none", MYLAB_APIKEY=OPAQUE_KEY,
                  DEXTER_SANDBOX_CANARY="x")
    args = ["ask", "--yes", "--output", "answer.md", f"Use my token {USER_PASTED} and go"]
    result = run_cli(args[:1] + (["--json"] if json_out else ["--plain"]) + args[1:],
                     cwd=tmp_path, env=env, timeout=120)
    assert result.code == 0, result.stderr
    streams = {"stdout": result.stdout, "stderr": result.stderr}
    files = _all_written(tmp_path / ".dexter") | _all_written(tmp_path / "scratchpads") | \
        {"answer.md": (tmp_path / "answer.md").read_text()}
    assert any("tool-results" in name for name in files), "the big result was spilled"
    for where, text in {**streams, **files}.items():
        for secret in (SECRET_OPENAI, OPAQUE_KEY, USER_PASTED, "PRIVATE-KEY-CANARY"):
            assert secret not in text, f"{secret} leaked into {where}"
    # what the model saw: no key in any tool result (the question itself went to the provider)
    tool_text = "".join(str(m.get("content")) for r in llm.requests for m in r.body["messages"]
                        if m.get("role") == "tool")
    for secret in (SECRET_OPENAI, OPAQUE_KEY, "PRIVATE-KEY-CANARY"):
        assert secret not in tool_text
    assert "Not written: the text contains a secret value" in tool_text
    assert "Done. The token *** and *** were noted." in (tmp_path / "answer.md").read_text()


def test_without_a_sandbox_yes_refuses_what_it_cannot_prove_and_says_so(llm: FakeLLM, tmp_path: Path) -> None:
    llm.enqueue(
        Reply(tool_calls=[ToolCallSpec("bash", {"command": f"echo {_b64('touch pwned')} | base64 -d | sh"})]),
        Reply(tool_calls=[ToolCallSpec("bash", {"command": "ls"})]),
        Reply(text="Could not run the script."),
    )
    result = run_cli(["ask", "--json", "--yes", "go"], cwd=tmp_path,
                     env=cli_env(llm, tmp_path, DEXTER_BASH_SANDBOX="false"))
    assert result.code == 0, result.stderr
    assert "Shell sandbox: OFF" in result.stderr and "--yes does not approve" in result.stderr
    assert not (tmp_path / "pwned").exists()
    denied = next(e for e in result.events if e["type"] == "tool_denied")
    assert "not sandboxed" in denied["reason"] and "apt-get install bubblewrap" in denied["reason"]
    ends = [e for e in result.events if e["type"] == "tool_end" and e["tool"] == "bash"]
    assert len(ends) == 1 and "Exit code: 0" in ends[0]["result"]  # `ls` is provably read-only


@pytest.mark.skipif(not RUNNER.status.active, reason=f"no OS sandbox here: {RUNNER.status.reason}")
def test_sandbox_check_command_holds(tmp_path: Path) -> None:
    result = run_cli(["sandbox", "--check"], cwd=tmp_path, env=cli_env(None, tmp_path))
    assert result.code == 0, result.stdout + result.stderr
    assert "bubblewrap" in result.stdout and "All 17 checks held." in result.stdout
    assert "held  the command holds no descriptor of the host" in result.stdout
    assert "held  no command can make a set-user-ID file" in result.stdout


def test_models_says_whether_the_shell_is_sandboxed(tmp_path: Path) -> None:
    off = run_cli(["models"], cwd=tmp_path, env=cli_env(None, tmp_path, DEXTER_BASH_SANDBOX="false"))
    assert off.code == 0 and "Shell sandbox: OFF (turned off by [bash] sandbox = false)" in off.stdout
    if RUNNER.status.active:
        on = run_cli(["models"], cwd=tmp_path, env=cli_env(None, tmp_path))
        assert "Shell sandbox: bubblewrap" in on.stdout
