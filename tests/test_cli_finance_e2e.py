"""End to end: ``dexter ask`` answers from SEC EDGAR (no key) and from Financial Datasets.

The real CLI runs in a subprocess; the LLM is the fake server (main model and the finance
tool's routing step), the data APIs are the fake data server with recorded-shape fixtures.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dexter.testing.fakedata import FakeDataServer
from dexter.testing.fakellm import FakeLLM, Reply, ToolCallSpec
from tests.cli_helpers import cli_env, run_cli

pytestmark = pytest.mark.e2e

APPLE_FY2024_REVENUE = "391,035,000,000"


def data_env(data: FakeDataServer) -> dict[str, str]:
    return {
        "SEC_EDGAR_BASE_URL": data.url,
        "SEC_EDGAR_DATA_URL": data.url,
        "FINANCIAL_DATASETS_BASE_URL": data.url,
        "YAHOO_CHART_BASE_URL": data.url,  # keyless prices: never the real Yahoo in a test
    }


def script_revenue_question(llm: FakeLLM) -> None:
    llm.enqueue(
        # main model: ask the finance meta-tool
        Reply(tool_calls=[ToolCallSpec("get_financials", {"query": "Apple annual revenue, last 2 years"})]),
        # fast model inside get_financials: route to the income statement sub-tool
        Reply(tool_calls=[ToolCallSpec("get_income_statements",
                                       {"ticker": "AAPL", "period": "annual", "limit": 2})]),
        # main model: the answer
        Reply(text="Apple's FY2024 revenue was $391.0B, up from $383.3B in FY2023."),
    )


def test_ask_answers_from_edgar_without_any_data_key(llm: FakeLLM, data: FakeDataServer,
                                                     tmp_path: Path) -> None:
    script_revenue_question(llm)
    env = cli_env(llm, tmp_path, **data_env(data))
    env.pop("FINANCIAL_DATASETS_API_KEY", None)
    result = run_cli(["ask", "--json", "What was Apple's revenue in the last two fiscal years?"],
                     cwd=tmp_path, env=env)
    assert result.code == 0, result.stderr
    assert result.events[-1]["answer"].startswith("Apple's FY2024 revenue was $391.0B")
    # the main model's second request carried EDGAR's exact figure and its source URL
    final_request = json.dumps(llm.requests[-1].body)
    assert APPLE_FY2024_REVENUE in final_request
    assert "sec.gov" in final_request or "/Archives/edgar/" in final_request or "CIK0000320193" in final_request
    paths = [r.path for r in data.requests]
    assert any("companyfacts" in p for p in paths), paths
    assert all("x-api-key" not in r.headers for r in data.requests)
    # SEC's fair-access rule: a User-Agent naming a contact on every request
    assert all("dexter" in r.headers.get("user-agent", "").lower() for r in data.requests)
    # the routing call offered only sub-tools that exist
    routing = llm.requests[1].body
    offered = {t["function"]["name"] for t in routing["tools"]}
    assert "get_income_statements" in offered
    llm.assert_no_violations()


def test_ask_answers_from_financial_datasets_with_a_key(llm: FakeLLM, data: FakeDataServer,
                                                        tmp_path: Path) -> None:
    script_revenue_question(llm)
    env = cli_env(llm, tmp_path, FINANCIAL_DATASETS_API_KEY="fd-test-key-123456", **data_env(data))
    result = run_cli(["ask", "--json", "What was Apple's revenue in the last two fiscal years?"],
                     cwd=tmp_path, env=env)
    assert result.code == 0, result.stderr
    final_request = json.dumps(llm.requests[-1].body)
    assert APPLE_FY2024_REVENUE in final_request
    fd_requests = [r for r in data.requests if "income-statements" in r.path]
    assert fd_requests, [r.path for r in data.requests]
    assert fd_requests[0].headers.get("x-api-key") == "fd-test-key-123456"
    # the key never reaches the scratchpad or the output
    assert "fd-test-key-123456" not in result.stdout + result.stderr
    assert "fd-test-key-123456" not in result.scratchpads()[0].read_text(encoding="utf-8")


QUARTERS = {"revenue": ["94,930,000,000", "85,777,000,000", "90,753,000,000", "119,575,000,000"],
            "free_cash_flow": ["23,903,000,000", "26,707,000,000", "20,694,000,000",
                               "37,503,000,000"]}


@pytest.mark.parametrize("keyed", [False, True], ids=["edgar", "financial-datasets"])
def test_multi_step_quarterly_comparison_reaches_the_model_compact_and_complete(
        llm: FakeLLM, data: FakeDataServer, tmp_path: Path, keyed: bool) -> None:
    llm.enqueue(
        Reply(tool_calls=[ToolCallSpec("get_financials", {
            "query": "Apple last 4 quarters revenue and free cash flow"})]),
        Reply(tool_calls=[
            ToolCallSpec("get_income_statements", {"ticker": "AAPL", "period": "quarterly",
                                                   "limit": 4}),
            ToolCallSpec("get_cash_flow_statements", {"ticker": "AAPL", "period": "quarterly",
                                                      "limit": 4})]),
        Reply(text="Apple's revenue was $94.93B in the quarter to 2024-09-28 [S1], with free "
                   "cash flow of $23.90B [S1]."),
    )
    env = cli_env(llm, tmp_path, **data_env(data))
    env.pop("FINANCIAL_DATASETS_API_KEY", None)
    if keyed:
        env["FINANCIAL_DATASETS_API_KEY"] = "fd-test-key-123456"
    result = run_cli(["ask", "--json", "Compare Apple's last 4 quarters of revenue and free "
                      "cash flow"], cwd=tmp_path, env=env)
    assert result.code == 0, result.stderr
    [tool_message] = [m for m in llm.requests[-1].body["messages"] if m["role"] == "tool"]
    source_id, _, content = tool_message["content"].partition(" ")
    assert source_id == "[S1]"  # the model reads which source id to cite
    body = json.loads(content)
    income = body["data"]["income_statements[AAPL, quarterly]"]["data"]
    cash = body["data"]["cash_flow_statements[AAPL, quarterly]"]["data"]
    assert "| revenue | " + " | ".join(QUARTERS["revenue"]) + " |" in income
    assert "| free_cash_flow | " + " | ".join(QUARTERS["free_cash_flow"]) + " |" in cash
    for table in (income, cash):
        assert "Q4 2024 (2024-09-28)" in table and "Q1 2024 (2023-12-30)" in table
        assert "Sources: Q4 2024 (2024-09-28): " in table
    assert body["source_urls"]
    assert len(content) < 6_000, len(content)
    llm.assert_no_violations()
    # the answer's figures are found in the fetched statements, and S1 resolves to them
    done = result.events[-1]
    assert done["verification"]["status"] == "verified", done["verification"]
    assert done["verification"]["checked"] == 2
    [citation] = done["citations"]
    assert citation["id"] == "S1" and citation["tool"] == "get_financials"
    assert "— Income statement, quarterly, Q1 FY2024–Q4 FY2024" in citation["title"]
    assert citation["url"].startswith(("http://127.0.0.1", "http://localhost"))
