"""The tests' fork server gives what a cold ``python -m dexter`` gives.

Most end-to-end tests start dexter as a fork of a pre-imported interpreter
(``tests/forkserver.py``); these runs compare it with a cold start on what the tests read:
exit status, standard output and error, the environment and working directory of the run,
its input, and a run that never ends.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from dexter.testing.fakellm import FakeLLM, Reply, Stall
from tests import forkserver
from tests.cli_helpers import HOLD, LIVENESS, WARM_RUN, cli_env, run_cli


def _both(args: list[str], cwd: Path, env: dict[str, str],
          input_text: str | None = None) -> tuple[tuple[int, str, str], tuple[int, str, str]]:
    warm = forkserver.run(args, cwd=cwd, env=env, timeout=120, input_text=input_text)
    cold = run_cli(args, cwd=cwd, env=env, timeout=120, input_text=input_text, fresh=True)
    return warm, (cold.code, cold.stdout, cold.stderr)


def test_a_usage_error_and_a_missing_key_read_the_same(tmp_path: Path) -> None:
    env = cli_env(None, tmp_path)
    warm, cold = _both(["ask", "--output", "x.docx", "hi"], tmp_path, env)
    assert warm == cold and warm[0] == 2
    warm, cold = _both(["ask", "--plain", "hi"], tmp_path, env)
    assert warm == cold and warm[0] == 2 and "API key" in warm[2]


def test_each_run_has_its_own_environment_and_folder(tmp_path: Path) -> None:
    """A key set for one run is not seen by the next one, and the output lands in the
    run's working directory."""
    with FakeLLM() as llm:
        first, second = tmp_path / "one", tmp_path / "two"
        first.mkdir()
        second.mkdir()
        llm.enqueue(Reply(text="First."))
        ran = run_cli(["ask", "--plain", "q"], cwd=first, env=cli_env(llm, first))
        assert ran.code == 0 and "First." in ran.stdout
        assert list((first / "scratchpads").glob("*.jsonl"))
        assert not (second / "scratchpads").exists()
        keyless = cli_env(None, second)
        later = run_cli(["ask", "--plain", "q"], cwd=second, env=keyless)
        assert later.code == 2 and "API key" in later.stderr


def test_piped_input_reaches_the_run(tmp_path: Path) -> None:
    with FakeLLM() as llm:
        llm.enqueue(Reply(text="Piped."), Reply(text="Piped."))
        env = cli_env(llm, tmp_path)
        warm, cold = _both([], tmp_path, env, input_text="a question\n")
    assert warm[0] == cold[0] == 0
    assert "a question" in warm[1] and "a question" in cold[1]
    assert llm.requests and "a question" in str(llm.requests[-1].body)


def test_a_run_past_its_timeout_is_killed_and_raises(tmp_path: Path) -> None:
    with FakeLLM() as llm:
        env = cli_env(llm, tmp_path)
        stall = Stall(timeout=HOLD)
        llm.enqueue(stall)
        with pytest.raises(subprocess.TimeoutExpired):
            forkserver.run(["ask", "--plain", "q"], cwd=tmp_path, env=env, timeout=5,
                           input_text=None)
        assert stall.reached.is_set(), "the run was waiting on its reply when it was killed"
        stall.gate.set()


ECHO_SCRIPT = '''
import os, signal, sys, time
print("argv", sys.argv[1:], "cwd", os.path.basename(os.getcwd()), "var", os.environ.get("X_VAR"))
print("read", sys.stdin.read().upper(), flush=True)
print("to stderr", file=sys.stderr)
sys.exit(int(sys.argv[1]))
'''


def test_a_script_run_through_warm_run_reads_as_a_cold_start(tmp_path: Path) -> None:
    """What the MCP tests start their fixture server with: streams, arguments, working
    folder, environment and exit status are those of ``python SCRIPT``, and the script sees
    end of input when its starter closes it."""
    script = tmp_path / "echo.py"
    script.write_text(ECHO_SCRIPT, encoding="utf-8")
    env = {"PATH": "/usr/bin:/bin", "X_VAR": "seven"}
    runs = []
    for argv in ([str(script)], [str(WARM_RUN), forkserver.socket_path(), str(script)]):
        done = subprocess.run([sys.executable, *argv, "3"], input="quiet words", text=True,
                              capture_output=True, cwd=tmp_path, env=env, timeout=120)
        runs.append((done.returncode, done.stdout, done.stderr))
    warm, cold = runs[1], runs[0]
    assert warm == cold
    assert cold[0] == 3 and "read QUIET WORDS" in cold[1] and "var seven" in cold[1]


def test_a_signal_to_warm_run_reaches_the_script(tmp_path: Path) -> None:
    """dexter stops an MCP server with SIGTERM when it does not end by itself: the script
    gets it, and the launcher ends as the script did."""
    script = tmp_path / "wait.py"
    script.write_text("import sys, time\nprint('up', flush=True)\ntime.sleep(600)\n",
                      encoding="utf-8")
    proc = subprocess.Popen([sys.executable, str(WARM_RUN), forkserver.socket_path(),
                             str(script)], stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "up"
    proc.terminate()
    assert proc.wait(LIVENESS) == -signal.SIGTERM
    proc.stdout.close()


def test_dexter_through_warm_run_reads_as_a_cold_start(tmp_path: Path) -> None:
    """``dexter_argv`` (for tests that signal the process or read it as it writes) gives
    what ``python -m dexter`` gives: a usage error and a missing key, streams and status."""
    env = cli_env(None, tmp_path)
    for args in (["ask", "--output", "x.docx", "hi"], ["ask", "--plain", "hi"]):
        warm = subprocess.run([sys.executable, str(WARM_RUN), forkserver.socket_path(), "-m",
                               "dexter", *args], capture_output=True, text=True, cwd=tmp_path,
                              env=env, timeout=120)
        cold = subprocess.run([sys.executable, "-m", "dexter", *args], capture_output=True,
                              text=True, cwd=tmp_path, env=env, timeout=120)
        assert (warm.returncode, warm.stdout, warm.stderr) == \
            (cold.returncode, cold.stdout, cold.stderr)
        assert warm.returncode == 2
