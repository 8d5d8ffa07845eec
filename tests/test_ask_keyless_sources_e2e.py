"""End to end: ``dexter ask`` uses the keyless SEC sources through its meta-tools, and the
figures its answer takes from them pass the figure check.

The real CLI runs in a subprocess with no data key; the LLM is the fake server (the main
model, and the routing step inside each meta-tool); SEC EDGAR is a local server of the
recorded real responses (Apple's FY2024 10-K, its submissions list and Form 4s).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from dexter.testing.fakedata import FakeDataServer, RecordedTree
from dexter.testing.fakellm import FakeLLM, Reply, ToolCallSpec
from tests.cli_helpers import cli_env, run_cli
from tests.sec_helpers import MORE, REAL

pytestmark = pytest.mark.e2e

ANSWER = ("In FY2024 Apple's Services revenue was $96.2 billion, 24.6% of net sales, and "
          "Greater China brought in $67.0 billion with $27.1 billion of operating income "
          "[S1]. In August 2024 Chris Kondo, the principal accounting officer, sold 8,706 "
          "shares at $225.00 [S2].")


@pytest.fixture
def sec() -> Iterator[FakeDataServer]:
    with FakeDataServer(fallback=RecordedTree(REAL, MORE)) as server:
        yield server


def test_ask_cites_segments_and_form4s_and_the_figures_check(llm: FakeLLM, sec: FakeDataServer,
                                                             tmp_path: Path) -> None:
    from openpyxl import load_workbook

    llm.enqueue(
        Reply(tool_calls=[ToolCallSpec("get_financials", {
            "query": "Apple FY2024 revenue and operating income by segment and product"})]),
        Reply(tool_calls=[ToolCallSpec("get_financial_segments", {
            "ticker": "AAPL", "limit": 1})]),
        Reply(tool_calls=[ToolCallSpec("get_market_data", {
            "query": "Apple insider sales in August 2024"})]),
        Reply(tool_calls=[ToolCallSpec("get_insider_trades", {
            "ticker": "AAPL", "filing_date_gte": "2024-08-01",
            "filing_date_lte": "2024-08-31"})]),
        Reply(text=ANSWER),
    )
    env = cli_env(llm, tmp_path, SEC_EDGAR_BASE_URL=sec.url, SEC_EDGAR_DATA_URL=sec.url,
                  SEC_EDGAR_FTS_URL=sec.url + "/LATEST", YAHOO_CHART_BASE_URL=sec.url)
    env.pop("FINANCIAL_DATASETS_API_KEY", None)
    result = run_cli(["ask", "--json", "--output", "apple.xlsx",
                      "How much of Apple's revenue is Services and Greater China, and did "
                      "insiders sell in August 2024?"], cwd=tmp_path, env=env)
    assert result.code == 0, result.stderr
    # the routing steps were offered the keyless sub-tools
    financials = {t["function"]["name"] for t in llm.requests[1].body["tools"]}
    market = {t["function"]["name"] for t in llm.requests[3].body["tools"]}
    assert "get_financial_segments" in financials
    assert "get_insider_trades" in market and "get_institutional_holdings" in market
    # the model read the filings' own figures, each with its filing
    final = json.dumps(llm.requests[-1].body)
    assert "96,169,000,000" in final and "aapl-20240928.htm" in final
    assert "8,706" in final and "wk-form4_1724106610.xml" in final
    done = result.events[-1]
    assert done["answer"] == ANSWER
    verification = done["verification"]
    assert verification["status"] == "verified", verification
    assert verification["checked"] >= 6 and verification["unsupported"] == []
    titles = {c["id"]: c["title"] for c in done["citations"]}
    assert titles["S1"].startswith("AAPL — Segments, FY2024")  # in words, not a result key
    assert titles["S2"].startswith("AAPL — Insider trades")
    assert "aapl-20240928.htm" in done["citations"][0]["url"]
    # the tables the sources carried reached the spreadsheet, as numbers
    book = load_workbook(tmp_path / "apple.xlsx")
    sheets = {n: [c.value for row in book[n].iter_rows() for c in row]
              for n in book.sheetnames if n not in ("Report", "Sources")}
    services = [n for n, cells in sheets.items() if str(cells[0]).endswith(
        "Product or service: Services")]
    assert services and 96_169_000_000 in sheets[services[0]]
    insiders = [cells for cells in sheets.values()
                if str(cells[0]).startswith("AAPL — Insider trades")]
    assert not any("insider_trades" in str(cells[0]) or "segments[" in str(cells[0])
                   for cells in sheets.values())  # titles in words, never the result keys
    assert insiders and 8_706 in insiders[0] and 225 in insiders[0]
    # the price column came along (named by its field, or by its lexicon label)
    assert any(str(v).startswith(("transaction_price_per_share", "Price per share"))
               for v in insiders[0])
    llm.assert_no_violations()
