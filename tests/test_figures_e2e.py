"""End to end through ``dexter ask``: the figure check on real SEC data.

The finance tools fetch Apple's and Tesla's real companyfacts from the fake data server
(tests/fixtures/sec-real over HTTP); the model is the fake LLM server speaking the OpenAI or
the Anthropic wire format. The answer holds a true figure, a growth rate to recompute, a
figure of the wrong year, a figure cited to the wrong company's source, a loss called a
profit, an invented figure and a product name; the run must mark exactly the wrong ones,
say why, and carry every figure in ``done.verification.figures``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dexter.testing.fakedata import FakeDataServer, RecordedTree
from dexter.testing.fakellm import FakeLLM, Reply, ToolCallSpec
from tests.cli_helpers import CliResult, cli_env, run_cli

pytestmark = pytest.mark.e2e

REAL = Path(__file__).parent / "fixtures" / "sec-real"
PROVIDERS = [
    pytest.param("gpt-5.6-sol", "openai", id="openai"),
    pytest.param("claude-sonnet-4-6", "anthropic", id="anthropic"),
]
ANSWER = (
    "Apple's revenue was $391.0 billion in fiscal 2024 [S1], up 2.0% from fiscal 2023. "
    "Its FY2023 net income was $93.7 billion [S1]. "
    "Tesla's 2021 revenue was $53.8 billion [S1]. "
    "Tesla earned a net profit of $976 million in 2018 [S2], while the S&P 500 and the "
    "iPhone 16 drew the headlines. Apple's services backlog reached $412.7 billion [S1].")


@pytest.fixture
def sec() -> FakeDataServer:
    with FakeDataServer(fallback=RecordedTree(REAL)) as server:
        yield server


def script(llm: FakeLLM, answer: str, *, repeat: bool = True) -> None:
    llm.enqueue(
        Reply(tool_calls=[ToolCallSpec("get_financials", {"query": "Apple annual income"})]),
        Reply(tool_calls=[ToolCallSpec("get_income_statements",
                                       {"ticker": "AAPL", "period": "annual", "limit": 5})]),
        Reply(tool_calls=[ToolCallSpec("get_financials", {"query": "Tesla annual income"})]),
        Reply(tool_calls=[ToolCallSpec("get_income_statements",
                                       {"ticker": "TSLA", "period": "annual", "limit": 6})]),
        Reply(text=answer),
        *([Reply(text=answer)] if repeat else []),
    )


def ask(llm: FakeLLM, sec: FakeDataServer, tmp: Path, model: str, *flags: str) -> CliResult:
    env = cli_env(llm, tmp, SEC_EDGAR_BASE_URL=sec.url, SEC_EDGAR_DATA_URL=sec.url,
                  FINANCIAL_DATASETS_BASE_URL=sec.url, YAHOO_CHART_BASE_URL=sec.url)
    env.pop("FINANCIAL_DATASETS_API_KEY", None)
    result = run_cli(["ask", "--model", model, *flags, "Compare Apple and Tesla's results"],
                     cwd=tmp, env=env, timeout=120)
    assert result.code == 0, result.stderr + result.stdout
    llm.assert_no_violations()
    return result


def figures(done: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["text"]: f for f in done["verification"]["figures"]}


def mark(answer: str, unsupported: list[dict[str, Any]]) -> str:
    """The answer with ⚠ after each failed figure, as a --json consumer marks it."""
    for item in sorted(unsupported, key=lambda u: u["end"], reverse=True):
        answer = answer[:item["end"]] + " ⚠" + answer[item["end"]:]
    return answer


@pytest.mark.parametrize(("model", "route"), PROVIDERS)
def test_each_figure_is_bound_to_its_line_period_company_and_source(
        llm: FakeLLM, sec: FakeDataServer, tmp_path: Path, model: str, route: str) -> None:
    script(llm, ANSWER)
    result = ask(llm, sec, tmp_path, model, "--json")
    done = result.events[-1]
    found = figures(done)
    assert found["$391.0 billion"]["status"] == "supported"
    assert found["$391.0 billion"]["source"] == "S1"
    assert found["$391.0 billion"]["field"] == "revenue"
    assert found["$391.0 billion"]["period"] == "FY2024"
    assert found["$391.0 billion"]["company"] == "AAPL"
    assert found["$391.0 billion"]["cell"]["value"] == 391_035_000_000
    assert found["2.0%"]["status"] == "derived"
    assert found["$93.7 billion"]["status"] == "misattributed"
    assert found["$93.7 billion"]["reason"] == (
        "$93.7 billion is FY2024 net income [S1], not FY2023")
    assert found["$53.8 billion"]["status"] == "miscited"
    assert found["$53.8 billion"]["reason"].endswith("in [S2], not in the cited [S1]")
    assert found["$976 million"]["status"] == "misattributed"
    assert "net loss" in found["$976 million"]["reason"]
    assert found["$412.7 billion"]["status"] == "unsupported"
    assert not any("500" in text or text == "16" for text in found)  # S&P 500, iPhone 16
    counts = done["verification"]["counts"]
    assert counts == {"supported": 1, "derived": 1, "weak": 0, "unsupported": 1,
                      "misattributed": 2, "miscited": 1}
    assert done["verification"]["status"] == "unverified"
    # the figures that failed: the old list, now with why
    failed = done["verification"]["unsupported"]
    assert [(u["text"], u["status"]) for u in failed] == [
        ("$93.7 billion", "misattributed"), ("$53.8 billion", "miscited"),
        ("$976 million", "misattributed"), ("$412.7 billion", "unsupported")]
    marked = mark(done["answer"], failed)
    assert "$391.0 billion in fiscal 2024 [S1]" in marked and "$93.7 billion ⚠ [S1]" in marked
    assert "$53.8 billion ⚠ [S1]" in marked and "$976 million ⚠ in 2018" in marked
    # one repair request named each figure with its reason
    checks = [e for e in result.events if e["type"] == "verification"]
    assert [c["final"] for c in checks] == [False, True]
    repair = json.dumps(llm.requests_for(route)[-1].body)
    assert "$93.7 billion is FY2024 net income [S1], not FY2023" in repair
    assert "not in the cited [S1]" in repair


@pytest.mark.parametrize(("model", "route"), PROVIDERS)
def test_the_plain_view_marks_the_failed_figures_and_names_each_with_its_reason(
        llm: FakeLLM, sec: FakeDataServer, tmp_path: Path, model: str, route: str) -> None:
    script(llm, ANSWER)
    result = ask(llm, sec, tmp_path, model, "--plain")
    out = result.stdout
    assert "$391.0 billion in fiscal 2024 [S1], up 2.0% from" in out  # no mark on what checked out
    assert "$93.7 billion ⚠ [S1]" in out
    assert "$53.8 billion ⚠ [S1]" in out
    assert "$976 million ⚠ in 2018" in out
    assert "$412.7 billion ⚠ [S1]" in out
    assert ("⚠ 4 of 6 figures do not check out (marked ⚠): $93.7 billion is FY2024 net "
            "income [S1], not FY2023; $53.8 billion is") in out
    assert "$976 million is a net loss in FY2018 [S2], not a profit" in out
    assert "Checking the answer: 4 figures do not check out" in out
    # the same marks when the run is replayed from its scratchpad
    [pad] = result.scratchpads()
    replay = run_cli(["replay", str(pad)], cwd=tmp_path, env=cli_env(llm, tmp_path))
    assert replay.code == 0, replay.stderr
    assert "$93.7 billion ⚠ [S1]" in replay.stdout
    assert "⚠ 4 of 6 figures do not check out" in replay.stdout


def test_a_true_answer_over_real_data_verifies_with_every_figure_placed(
        llm: FakeLLM, sec: FakeDataServer, tmp_path: Path) -> None:
    answer = ("| Company | Fiscal year | Revenue ($B) | Net income ($B) | Source |\n"
              "|---|---|---|---|---|\n"
              "| Apple | FY2024 | 391.0 | 93.7 | [S1] |\n"
              "| Tesla | 2021 | 53.8 | 5.5 | [S2] |\n\n"
              "Tesla posted a net loss of $976 million in 2018 [S2]; Apple's net income fell "
              "2.8% in fiscal 2023 [S1].")
    script(llm, answer, repeat=False)
    result = ask(llm, sec, tmp_path, "gpt-5.6-sol", "--json")
    done = result.events[-1]
    assert done["verification"]["status"] == "verified", done["verification"]
    placed = [(f["text"], f["status"], f["company"], f["period"])
              for f in done["verification"]["figures"]]
    assert placed == [("391.0", "supported", "AAPL", "FY2024"),
                      ("93.7", "supported", "AAPL", "FY2024"),
                      ("53.8", "supported", "TSLA", "FY2021"),
                      ("5.5", "supported", "TSLA", "FY2021"),
                      ("$976 million", "supported", "TSLA", "FY2018"),
                      ("2.8%", "derived", "AAPL", "FY2023")]
    assert len(llm.requests) == 5  # no repair turn
