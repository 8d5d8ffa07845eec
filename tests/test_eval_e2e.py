"""End to end: the real ``dexter eval`` command against the fake LLM server.

The main model is on the OpenAI route (gpt-4.1: $2 in / $8 out per million tokens) and the
judge on the Anthropic route (claude-haiku-4-5: $1 / $5), each with its own FIFO queue, so
with ``--jobs 1`` every question's replies are known in advance. Expected figures are
worked out by hand in each test.

The scoring test, the concurrency test and Ctrl-C run ``python -m dexter`` in a
subprocess; the others drive the same typer app in process (``eval_cli``), with the same
clean environment, to keep the suite quick.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from dexter.testing.fakellm import (
    Dynamic,
    FakeLLM,
    HttpError,
    RecordedRequest,
    Reply,
    Stall,
    ToolCallSpec,
    Usage,
)
from tests.cli_helpers import HOLD, LIVENESS, CliResult, cli_env, run_cli

pytestmark = pytest.mark.e2e

MAIN = "gpt-4.1"
JUDGE = "claude-haiku-4-5"


@pytest.fixture
def fake() -> FakeLLM:
    with FakeLLM() as server:
        yield server


def rubric(n: int, contradiction_last: bool = False) -> list[dict[str, str]]:
    items = [{"operator": "correctness", "criteria": f"states fact {chr(96 + i)}"}
             for i in range(1, n + 1)]
    if contradiction_last:
        items[-1] = {"operator": "contradiction", "criteria": "says the opposite"}
    return items


def write_dataset(path: Path, rows: list[tuple[str, int]]) -> Path:
    """A CSV dataset, rubrics written as Python literals like most rows of the public 50."""
    import csv

    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["Question", "Answer", "Question Type", "Expert time (mins)", "Rubric"])
        for n, (kind, criteria) in enumerate(rows, 1):
            writer.writerow([f"Question {words(n)}?", f"Expected answer {words(n)}.", kind, "5",
                             repr(rubric(criteria, contradiction_last=criteria > 2))])
    return path


def words(n: int) -> str:
    """Numbers as words: answers without figures need no verification repair turn."""
    return ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight"][n]


def verdicts(*passed: bool) -> Reply:
    body = {"verdicts": [{"criterion": i, "passed": p, "reason": "pass" if p else "missing"}
                         for i, p in enumerate(passed, 1)]}
    return Reply(text=json.dumps(body), usage=Usage(2000, 100))


def answer(n: int) -> Reply:
    return Reply(text=f"Dexter's answer {words(n)}.", usage=Usage(1000 * n, 100 * n))


@pytest.fixture
def inproc(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """A clean environment for running the CLI in this process (no DEXTER_* or keys)."""
    for name in list(os.environ):
        if name.startswith("DEXTER_") or name.endswith(("_API_KEY", "_BASE_URL")):
            monkeypatch.delenv(name)
    return monkeypatch


def dexter(monkeypatch: pytest.MonkeyPatch, fake: FakeLLM, cwd: Path, *args: str) -> CliResult:
    """``dexter ARGS`` in this process: the typer app, cwd and environment as a subprocess gets."""
    from typer.testing import CliRunner

    from dexter.cli.app import app

    for name, value in cli_env(fake, cwd).items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(cwd)
    outcome = CliRunner().invoke(app, list(args), catch_exceptions=False)
    return CliResult(outcome.exit_code, outcome.stdout, outcome.stderr, cwd)


def eval_cli(monkeypatch: pytest.MonkeyPatch, fake: FakeLLM, cwd: Path, *args: str) -> CliResult:
    return dexter(monkeypatch, fake, cwd, "eval", "--model", MAIN, "--judge-model", JUDGE,
                  "--jobs", "1", "--out", "out", *args)


def results(cwd: Path) -> list[dict[str, Any]]:
    text = (cwd / "out" / "results.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def summary(cwd: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((cwd / "out" / "summary.json").read_text(encoding="utf-8"))
    return data


def criteria_in(request: RecordedRequest) -> int:
    text = json.dumps(request.body)
    return sum(1 for n in range(1, 20) if f"\\n{n}. [" in text)


def all_pass(request: RecordedRequest) -> Reply:
    return verdicts(*([True] * criteria_in(request)))


# -- scoring -----------------------------------------------------------------------------


def test_six_questions_are_scored_typed_and_priced_right(fake: FakeLLM, tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "six.csv", [
        ("Trends", 3), ("Trends", 2), ("Beat or Miss", 4), ("Beat or Miss", 1),
        ("Beat or Miss", 2), ("Adjustments", 3)])
    fake.enqueue(answer(1), answer(2), answer(3), answer(4),
                 HttpError(400, message="This request is not valid."),  # question 5 fails
                 answer(6), route="openai")
    fake.enqueue(
        verdicts(True, False, True),                     # 1: 2/3
        verdicts(True, True),                            # 2: 1, all passed
        verdicts(False, False, True, False),             # 3: 1/4
        Reply(text="The answer looks right to me.", usage=Usage(2000, 100)),  # 4: malformed...
        verdicts(True),                                  # ...then 1, all passed
        verdicts(True, True, False),                     # 6: 2/3
        route="anthropic")
    result = run_cli(["eval", "--dataset", str(dataset), "--model", MAIN, "--judge-model", JUDGE,
                      "--jobs", "1", "--out", "out"], cwd=tmp_path, env=cli_env(fake, tmp_path))
    assert result.code == 0, result.stderr + result.stdout
    fake.assert_no_violations()
    fake.assert_all_consumed()

    lines = results(tmp_path)
    assert [line["id"] for line in lines] == ["1", "2", "3", "4", "5", "6"]
    assert [line["status"] for line in lines] == ["ok", "ok", "ok", "ok", "failed", "ok"]
    scores = [line["score"] for line in lines]
    assert scores == pytest.approx([2 / 3, 1.0, 0.25, 1.0, 0.0, 2 / 3])
    assert [line["passed_all"] for line in lines] == [False, True, False, True, False, False]
    assert [v["passed"] for v in lines[2]["verdicts"]] == [False, False, True, False]
    assert lines[3]["judge_attempts"] == 2
    assert "not valid" in lines[4]["error"] and lines[4]["verdicts"] == []
    assert lines[0]["answer"] == "Dexter's answer one."
    assert (lines[5]["input_tokens"], lines[5]["output_tokens"]) == (6000, 600)
    # gpt-4.1: 1000n in at $2/M + 100n out at $8/M = $0.0028 n
    assert [line["cost_usd"] for line in lines] == pytest.approx(
        [0.0028, 0.0056, 0.0084, 0.0112, 0.0, 0.0168])
    # haiku: 2000 in at $1/M + 100 out at $5/M = $0.0025 a reply; question 4 took two
    assert [line["judge_cost_usd"] for line in lines] == pytest.approx(
        [0.0025, 0.0025, 0.0025, 0.005, None, 0.0025])
    assert lines[0]["scratchpad"].startswith("scratchpads/")
    assert (tmp_path / "out" / lines[0]["scratchpad"]).is_file()
    assert lines[0]["verification"]["status"] == "no_evidence"
    assert lines[0]["type"] == "Trends" and lines[0]["question"] == "Question one?"

    s = summary(tmp_path)
    assert (s["questions"], s["completed"], s["failed"], s["judge_errors"], s["not_run"]) == (6, 5, 1, 0, 0)
    # (2/3 + 1 + 1/4 + 1 + 0 + 2/3) / 6 = 43/72
    assert s["mean_score"] == pytest.approx(43 / 72)
    assert s["pass_all_rate"] == pytest.approx(2 / 6)
    assert s["by_type"]["Trends"]["mean_score"] == pytest.approx(5 / 6)        # (2/3 + 1) / 2
    assert s["by_type"]["Beat or Miss"]["mean_score"] == pytest.approx(5 / 12)  # (1/4 + 1 + 0) / 3
    assert s["by_type"]["Beat or Miss"]["pass_all_rate"] == pytest.approx(1 / 3)
    assert s["by_type"]["Adjustments"]["mean_score"] == pytest.approx(2 / 3)
    assert (s["criteria"], s["criteria_passed"]) == (13, 8)  # 3+2+4+1+3 judged; 2+2+1+1+2
    assert s["total_cost_usd"] == pytest.approx(0.0448)   # 0.0028 * (1+2+3+4+6)
    assert s["median_cost_usd"] == pytest.approx(0.007)   # (0.0056 + 0.0084) / 2
    assert s["judge_cost_usd"] == pytest.approx(0.015)    # 6 replies
    assert (s["input_tokens"], s["output_tokens"]) == (16000, 1600)
    assert (s["judge_input_tokens"], s["judge_output_tokens"]) == (12000, 600)

    # the judge saw the question, the expected answer, the criteria in order and the answer
    judge_requests = fake.requests_for("anthropic")
    assert len(judge_requests) == 6
    third = json.dumps(judge_requests[2].body)
    assert "Question three?" in third and "Expected answer three." in third
    assert "1. [correctness] states fact a" in third and "4. [contradiction] says the opposite" in third
    assert "Dexter's answer three." in third
    retry = json.dumps(judge_requests[4].body)
    assert "The answer looks right to me." in retry and "could not be used" in retry

    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "| mean score | 0.597 |" in report
    assert "### 3. [Beat or Miss] score 0.250 (1 of 4)" in report
    assert "### 5. [Beat or Miss] failed (score 0)" in report
    assert "| 4 | contradiction | says the opposite | FAIL | missing |" in report
    # the terminal: a line per question, then the summary table
    assert "✓ 2 [Trends] 1.000 (2/2)" in result.stdout
    assert "mean score" in result.stdout and "0.597" in result.stdout


def test_a_judge_that_is_malformed_twice_makes_a_judge_error(inproc: pytest.MonkeyPatch,
                                                             fake: FakeLLM, tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "one.csv", [("Trends", 2)])
    fake.enqueue(answer(1), route="openai")
    fake.enqueue(Reply(text="{not json"), verdicts(True), route="anthropic")  # bad JSON, wrong count
    result = dexter(inproc, fake, tmp_path, "eval", "--dataset", str(dataset),
                    "--model", MAIN, "--judge-model", JUDGE,
                    "--out", "out")
    assert result.code == 0, result.stderr
    [line] = results(tmp_path)
    assert line["status"] == "judge_error" and line["judge_attempts"] == 2
    assert line["score"] is None and line["passed_all"] is None
    assert line["error"] == "the judge's reply was malformed twice (1 verdicts for 2 criteria)"
    assert line["answer"] == "Dexter's answer one."
    s = summary(tmp_path)
    assert (s["judge_errors"], s["scored"], s["mean_score"]) == (1, 0, None)
    assert len(fake.requests_for("anthropic")) == 2


# -- concurrency -------------------------------------------------------------------------


def test_jobs_3_runs_three_questions_at_once_and_no_more(fake: FakeLLM, tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "four.csv", [("Trends", 1)] * 4)
    stalls = [Stall(after_chunks=1, reply=Reply(text=f"Held answer {words(n)}."), timeout=HOLD)
              for n in range(1, 4)]
    fourth = Stall(after_chunks=1, reply=Reply(text="Fourth answer."), timeout=HOLD)
    fake.enqueue(*stalls, fourth, route="openai")
    fake.enqueue(*[Dynamic(all_pass) for _ in range(4)], route="anthropic")
    # The run is a fork of the pre-imported interpreter (run_cli), waited for in a thread
    # while this one holds and releases the fake provider's streams.
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(
            run_cli, ["eval", "--dataset", str(dataset), "--model", MAIN, "--judge-model",
                      JUDGE, "--jobs", "3", "--out", "out", "--json"],
            cwd=tmp_path, env=cli_env(fake, tmp_path), timeout=LIVENESS)
        try:
            # three runs are in flight at once, each holding an open stream...
            for stall in stalls:
                assert stall.reached.wait(LIVENESS), "a run did not start while others were held"
            # ...and the fourth question waits for a free slot: nothing else reached the server
            assert not fourth.reached.is_set()
            assert len(fake.requests_for("openai")) == 3
            assert fake.requests_for("anthropic") == []
            stalls[1].gate.set()  # one run finishes and is judged...
            assert fourth.reached.wait(LIVENESS)  # ...then the fourth question starts
            assert len(fake.requests_for("anthropic")) == 1  # only the released run was judged
        finally:
            for stall in (*stalls, fourth):
                stall.gate.set()
        done = running.result()
    assert done.code == 0, done.stderr
    out = done.stdout
    events = [json.loads(line) for line in out.splitlines()]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "eval_start" and kinds[-1] == "eval_summary"
    assert kinds.count("eval_result") == 4
    first_result = next(e for e in events if e["type"] == "eval_result")
    assert first_result["result"]["answer"] == "Held answer two."
    assert first_result["finished"] == 1 and first_result["mean_score"] == 1.0
    assert events[-1]["completed"] == 4 and events[-1]["mean_score"] == 1.0
    fake.assert_no_violations()
    lines = results(tmp_path)
    assert sorted(line["answer"] for line in lines) == [
        "Fourth answer.", "Held answer one.", "Held answer three.", "Held answer two."]


# -- resume, interrupt, stops ------------------------------------------------------------


def test_resume_skips_finished_questions(inproc: pytest.MonkeyPatch,
                                         fake: FakeLLM, tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "three.csv", [("Trends", 1), ("Trends", 1), ("Adjustments", 2)])
    fake.enqueue(answer(1), answer(2), route="openai")
    fake.enqueue(verdicts(True), verdicts(False), route="anthropic")
    first = eval_cli(inproc, fake, tmp_path, "--dataset", str(dataset), "--limit", "2")
    assert first.code == 0, first.stderr
    assert [line["id"] for line in results(tmp_path)] == ["1", "2"]
    assert summary(tmp_path)["questions"] == 2

    fake.enqueue(answer(3), route="openai")
    fake.enqueue(verdicts(True, True), route="anthropic")
    second = eval_cli(inproc, fake, tmp_path, "--dataset", str(dataset))
    assert second.code == 0, second.stderr
    assert "Running 1 of 3 questions (2 already in results.jsonl)." in second.stdout
    assert len(fake.requests_for("openai")) == 3  # only question 3 ran again
    fake.assert_all_consumed()
    assert [line["id"] for line in results(tmp_path)] == ["1", "2", "3"]
    s = summary(tmp_path)
    assert (s["questions"], s["completed"]) == (3, 3)
    assert s["mean_score"] == pytest.approx(2 / 3)  # (1 + 0 + 1) / 3

    third = eval_cli(inproc, fake, tmp_path, "--dataset", str(dataset))
    assert third.code == 0 and "Running 0 of 3 questions" in third.stdout
    assert len(fake.requests_for("openai")) == 3


def test_retry_failed_runs_failed_questions_again(inproc: pytest.MonkeyPatch,
                                                  fake: FakeLLM, tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "two.csv", [("Trends", 1), ("Trends", 1)])
    fake.enqueue(HttpError(400, message="Broken request."), answer(2), route="openai")
    fake.enqueue(verdicts(True), route="anthropic")
    assert eval_cli(inproc, fake, tmp_path, "--dataset", str(dataset)).code == 0
    assert [line["status"] for line in results(tmp_path)] == ["failed", "ok"]
    fake.enqueue(answer(1), route="openai")
    fake.enqueue(verdicts(True), route="anthropic")
    assert eval_cli(inproc, fake, tmp_path, "--dataset", str(dataset), "--retry-failed").code == 0
    lines = results(tmp_path)
    assert [(line["id"], line["status"]) for line in lines] == [("1", "failed"), ("2", "ok"), ("1", "ok")]
    s = summary(tmp_path)
    assert (s["questions"], s["completed"], s["failed"], s["mean_score"]) == (2, 2, 0, 1.0)


def test_ctrl_c_keeps_every_finished_line_and_the_next_run_goes_on(inproc: pytest.MonkeyPatch,
                                                                   fake: FakeLLM, tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "three.csv", [("Trends", 1)] * 3)
    held = Stall(after_chunks=1, reply=Reply(text="Never finished."), timeout=HOLD)
    fake.enqueue(answer(1), held, route="openai")
    fake.enqueue(verdicts(True), route="anthropic")
    proc = subprocess.Popen(
        [sys.executable, "-m", "dexter", "eval", "--dataset", str(dataset), "--model", MAIN,
         "--judge-model", JUDGE, "--jobs", "1", "--out", "out"],
        cwd=tmp_path, env=cli_env(fake, tmp_path), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    try:
        assert held.reached.wait(LIVENESS)  # question 1 is done, question 2 is in flight
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=LIVENESS)
    finally:
        held.gate.set()
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    assert "Interrupted. Every finished question is in out/results.jsonl" in err
    assert "Traceback" not in err
    assert [line["id"] for line in results(tmp_path)] == ["1"]
    s = summary(tmp_path)
    assert (s["questions"], s["completed"], s["not_run"]) == (3, 1, 2)
    # the interrupted run's scratchpad says so
    pads = [[json.loads(line) for line in pad.read_text(encoding="utf-8").splitlines()]
            for pad in (tmp_path / "out" / "scratchpads").glob("*.jsonl")]
    [held_pad] = [entries for entries in pads if entries[0]["query"] == "Question two?"]
    assert len(pads) == 2
    assert held_pad[-1]["type"] == "done" and held_pad[-1]["status"] == "interrupted"

    fake.enqueue(answer(2), answer(3), route="openai")
    fake.enqueue(verdicts(True), verdicts(True), route="anthropic")
    again = eval_cli(inproc, fake, tmp_path, "--dataset", str(dataset))
    assert again.code == 0, again.stderr
    assert [line["id"] for line in results(tmp_path)] == ["1", "2", "3"]


def test_max_cost_stops_starting_new_questions(inproc: pytest.MonkeyPatch,
                                               fake: FakeLLM, tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "three.csv", [("Trends", 1)] * 3)
    fake.enqueue(answer(1), answer(2), route="openai")
    fake.enqueue(verdicts(True), verdicts(True), route="anthropic")
    # question 1: $0.0028 + $0.0025 = $0.0053; question 2 brings it to $0.0134 >= $0.01
    result = eval_cli(inproc, fake, tmp_path, "--dataset", str(dataset), "--max-cost", "0.01")
    assert result.code == 0, result.stderr
    assert ("Spend $0.0134 reached --max-cost $0.01: stopped starting new questions (1 question "
            "not run; raise --max-cost and run again with the same --out to go on)") in result.stdout
    assert [line["id"] for line in results(tmp_path)] == ["1", "2"]
    assert len(fake.requests_for("openai")) == 2
    s = summary(tmp_path)
    assert s["not_run"] == 1 and s["spend_usd"] == pytest.approx(0.0134)


def test_max_cost_needs_priced_models(inproc: pytest.MonkeyPatch,
                                      fake: FakeLLM, tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "one.csv", [("Trends", 1)])
    result = dexter(inproc, fake, tmp_path, "eval", "--dataset", str(dataset),
                    "--model", "gpt-5.6-sol",
                    "--judge-model", JUDGE, "--max-cost", "1")
    assert result.code == 2
    assert "--max-cost needs prices" in result.stderr and "gpt-5.6-sol" in result.stderr
    assert fake.requests == []


def test_a_bad_key_stops_the_eval_instead_of_failing_every_question(inproc: pytest.MonkeyPatch,
                                                                    fake: FakeLLM, tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "three.csv", [("Trends", 1)] * 3)
    fake.enqueue(HttpError.openai_auth(), route="openai")
    result = eval_cli(inproc, fake, tmp_path, "--dataset", str(dataset))
    assert result.code == 1
    assert "Stopped starting new questions" in result.stdout and "OPENAI_API_KEY" in result.stdout
    assert len(fake.requests) == 1
    [line] = results(tmp_path)
    assert line["status"] == "failed" and line["error_kind"] == "auth"


# -- flags, datasets, output -------------------------------------------------------------


def test_json_lines_and_a_judge_on_the_openai_route_asks_for_a_json_object(
        inproc: pytest.MonkeyPatch, fake: FakeLLM, tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "two.csv", [("Trends", 1), ("Adjustments", 1)])
    fake.enqueue(Reply(text="Answer from Claude."), route="anthropic")
    fake.enqueue(verdicts(True), route="openai")
    result = dexter(inproc, fake, tmp_path, "eval", "--dataset", str(dataset),
                    "--model", "claude-sonnet-4-6",
                    "--judge-model", "gpt-4.1-mini", "--type", "adjustments", "--json",
                    "--out", "out")
    assert result.code == 0, result.stderr
    fake.assert_no_violations()
    [judge_request] = fake.requests_for("openai")
    assert judge_request.body["response_format"] == {"type": "json_object"}
    assert judge_request.body["model"] == "gpt-4.1-mini"
    assert "tools" not in judge_request.body
    events = result.events
    assert [e["type"] for e in events] == ["eval_start", "eval_result", "eval_summary"]
    assert events[1]["result"]["id"] == "2" and events[1]["result"]["type"] == "Adjustments"
    assert events[2]["by_type"] == {"Adjustments": {"questions": 1, "scored": 1,
                                                    "mean_score": 1.0, "pass_all_rate": 1.0}}


def test_the_default_judge_is_the_providers_fast_model(inproc: pytest.MonkeyPatch,
                                                       fake: FakeLLM, tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "one.csv", [("Trends", 1)])
    fake.enqueue(Reply(text="Answer."), verdicts(True), route="anthropic")
    result = dexter(inproc, fake, tmp_path, "eval", "--dataset", str(dataset),
                    "--model", "claude-sonnet-4-6",
                    "--out", "out")
    assert result.code == 0, result.stderr
    main, judge = fake.requests_for("anthropic")
    assert (main.body["model"], judge.body["model"]) == ("claude-sonnet-4-6", "claude-haiku-4-5")
    assert summary(tmp_path)["judge_model"] == "claude-haiku-4-5"


@pytest.mark.parametrize(("text", "message"), [
    ("Question,Answer\nQ,A\n", "the header has no rubric column"),
    ('Question,Answer,Rubric\nQ,A,"[{""operator"": ""sometimes"", ""criteria"": ""x""}]"\n',
     "row 1: rubric item 1 has operator 'sometimes'"),
])
def test_a_bad_dataset_exits_2_naming_the_problem(inproc: pytest.MonkeyPatch,
                                                  fake: FakeLLM, tmp_path: Path, text: str,
                                                  message: str) -> None:
    (tmp_path / "bad.csv").write_text(text, encoding="utf-8")
    result = eval_cli(inproc, fake, tmp_path, "--dataset", "bad.csv")
    assert result.code == 2
    assert message in result.stderr and "bad.csv" in result.stderr
    assert "Traceback" not in result.stderr
    assert fake.requests == []


@pytest.mark.parametrize(("args", "message"), [
    (["--jobs", "0"], "--jobs must be between 1 and 32"),
    (["--limit", "0"], "--limit must be at least 1"),
    (["--type", "Nope"], "No question has type 'Nope'"),
    (["--from-runs", "evals/x"], "--from-runs takes its questions from the earlier eval; leave out --dataset"),
])
def test_bad_flags_exit_2(inproc: pytest.MonkeyPatch,
                          fake: FakeLLM, tmp_path: Path, args: list[str], message: str) -> None:
    dataset = write_dataset(tmp_path / "one.csv", [("Trends", 1)])
    result = eval_cli(inproc, fake, tmp_path, "--dataset", str(dataset), *args)
    assert result.code == 2
    assert message in result.stderr
    assert fake.requests == []


def test_an_out_dir_of_another_model_or_dataset_is_not_resumed(inproc: pytest.MonkeyPatch,
                                                               fake: FakeLLM, tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "one.csv", [("Trends", 1)])
    fake.enqueue(answer(1), route="openai")
    fake.enqueue(verdicts(True), route="anthropic")
    assert eval_cli(inproc, fake, tmp_path, "--dataset", str(dataset)).code == 0
    other = dexter(inproc, fake, tmp_path, "eval", "--dataset", str(dataset),
                   "--model", "gpt-4o", "--judge-model", JUDGE,
                   "--out", "out")
    assert other.code == 2
    assert "holds an eval with model gpt-4.1, not gpt-4o" in other.stderr
    changed = tmp_path / "changed.jsonl"
    changed.write_text(json.dumps({"question": "Something else?", "answer": "A",
                                   "rubric": rubric(1)}) + "\n", encoding="utf-8")
    mixed = eval_cli(inproc, fake, tmp_path, "--dataset", str(changed))
    assert mixed.code == 2 and "was made from another dataset: question 1" in mixed.stderr


def test_the_default_out_dir_is_dated_and_named_after_the_model(inproc: pytest.MonkeyPatch,
                                                                fake: FakeLLM, tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "one.csv", [("Trends", 1)])
    fake.enqueue(answer(1), route="openai")
    fake.enqueue(verdicts(True), route="anthropic")
    result = dexter(inproc, fake, tmp_path, "eval", "--dataset", str(dataset),
                    "--model", "openai:gpt-4.1",
                    "--judge-model", JUDGE)
    assert result.code == 0, result.stderr
    [out] = (tmp_path / "evals").iterdir()
    assert out.name.endswith("-openai-gpt-4.1") and out.name[:4].isdigit()
    assert {p.name for p in out.iterdir()} >= {"results.jsonl", "summary.json", "report.md",
                                                "eval.json", "scratchpads"}


def test_compare_prints_deltas_between_two_evals(inproc: pytest.MonkeyPatch,
                                                 fake: FakeLLM, tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "two.csv", [("Trends", 2), ("Trends", 2)])
    fake.enqueue(answer(1), answer(2), answer(1), answer(2), route="openai")
    fake.enqueue(verdicts(True, False), verdicts(True, True),       # A: 0.5, 1.0
                 verdicts(True, True), verdicts(False, False),      # B: 1.0, 0.0
                 route="anthropic")
    for out in ("a", "b"):
        done = dexter(inproc, fake, tmp_path, "eval", "--dataset", str(dataset),
                      "--model", MAIN, "--judge-model", JUDGE,
                      "--jobs", "1", "--out", out)
        assert done.code == 0, done.stderr
    table = dexter(inproc, fake, tmp_path, "eval", "compare", "a", "b")
    assert table.code == 0, table.stderr
    assert "+0.500" in table.stdout and "-1.000" in table.stdout
    assert "mean score 0.750 → 0.500 (-0.250); 1 better, 1 worse, 0 the same" in table.stdout
    assert "B/A = 1.00x" in table.stdout
    as_json = dexter(inproc, fake, tmp_path, "eval", "compare", "a", "b", "--json")
    data = json.loads(as_json.stdout)
    assert [q["delta"] for q in data["questions"]] == pytest.approx([0.5, -1.0])
    missing = dexter(inproc, fake, tmp_path, "eval", "compare", "a", "nowhere")
    assert missing.code == 2 and "No eval directory at nowhere" in missing.stderr


# -- --from-runs -------------------------------------------------------------------------

FILING = "ACME Corp FY2024 (10-K)\nTotal revenue | 4,250 | 3,900\n"


def read(path: str) -> Reply:
    return Reply(tool_calls=[ToolCallSpec("read_file", {"path": path})], usage=Usage(500, 20))


def test_from_runs_reruns_each_question_on_its_recorded_tool_results(
        inproc: pytest.MonkeyPatch, fake: FakeLLM, tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "two.csv", [("Trends", 1), ("Adjustments", 1)])
    (tmp_path / "acme.txt").write_text(FILING, encoding="utf-8")
    fake.enqueue(read("acme.txt"), Reply(text="Revenue was $4,250 [S1]."),
                 read("acme.txt"), Reply(text="Revenue rose to $4,250 [S1]."), route="openai")
    fake.enqueue(verdicts(True), verdicts(False), route="anthropic")
    first = eval_cli(inproc, fake, tmp_path, "--dataset", str(dataset))
    assert first.code == 0, first.stderr
    assert [line["verification"]["status"] for line in results(tmp_path)] == ["verified"] * 2
    (tmp_path / "acme.txt").unlink()  # the data is gone: only the recording has it

    # question 1 asks for the recorded call again; question 2 asks for something new
    fake.enqueue(read("acme.txt"), Reply(text="Revenue was $4,250 [S1]."),
                 read("other.txt"), Reply(text="Nothing new was found."), route="openai")
    fake.enqueue(verdicts(True), verdicts(False), route="anthropic")
    again = dexter(inproc, fake, tmp_path, "eval", "--from-runs", "out", "--jobs", "1")
    assert again.code == 0, again.stderr + again.stdout
    fake.assert_no_violations()
    fake.assert_all_consumed()
    requests = fake.requests_for("openai")
    assert len(requests) == 8
    assert all(r.body["model"] == MAIN for r in requests[4:])  # the earlier eval's model
    assert all(r.body["model"] == JUDGE for r in fake.requests_for("anthropic")[2:])  # and judge
    assert "Total revenue | 4,250 | 3,900" in json.dumps(requests[5].body)  # from the recording
    assert "not recorded in" in json.dumps(requests[7].body)  # a new call gets the error

    [out] = (tmp_path / "evals").iterdir()
    assert out.name.endswith("-gpt-4.1-from-out")
    meta = json.loads((out / "eval.json").read_text(encoding="utf-8"))
    assert (meta["from_runs"], meta["model"], meta["judge_model"]) == ("out", MAIN, JUDGE)
    lines = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [(line["id"], line["status"], line["score"]) for line in lines] == [
        ("1", "ok", 1.0), ("2", "ok", 0.0)]
    assert lines[0]["verification"]["status"] == "verified"  # the recorded source counts
    pad = [json.loads(x) for x in (out / lines[0]["scratchpad"]).read_text().splitlines()]
    earlier_pad = results(tmp_path)[0]["scratchpad"]
    assert pad[0]["rerun_of"] == str((tmp_path / "out" / earlier_pad).absolute())
    summary_b = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary_b["from_runs"] == "out" and summary_b["mean_score"] == 0.5


def test_from_runs_with_a_missing_scratchpad_fails_that_question_only(
        inproc: pytest.MonkeyPatch, fake: FakeLLM, tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "two.csv", [("Trends", 1), ("Trends", 1)])
    fake.enqueue(answer(1), answer(2), route="openai")
    fake.enqueue(verdicts(True), verdicts(True), route="anthropic")
    assert eval_cli(inproc, fake, tmp_path, "--dataset", str(dataset)).code == 0
    (tmp_path / "out" / results(tmp_path)[0]["scratchpad"]).unlink()
    fake.enqueue(answer(2), route="openai")
    fake.enqueue(verdicts(True), route="anthropic")
    again = dexter(inproc, fake, tmp_path, "eval", "--from-runs", "out", "--out", "again")
    assert again.code == 0, again.stderr
    lines = [json.loads(x) for x in (tmp_path / "again" / "results.jsonl").read_text().splitlines()]
    by_id = {line["id"]: line for line in lines}
    assert by_id["1"]["status"] == "failed" and "there is no such file" in by_id["1"]["error"]
    assert by_id["2"]["status"] == "ok"
    nowhere = dexter(inproc, fake, tmp_path, "eval", "--from-runs", "nowhere")
    assert nowhere.code == 2 and "--from-runs nowhere: there is no such eval directory" in nowhere.stderr
