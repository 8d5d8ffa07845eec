"""End to end: ``dexter ask`` gets stock prices without any data key, from Yahoo Finance's
chart endpoint, played back from a real recorded reply by the fake data server.

The real CLI runs in a subprocess; the LLM is the fake server (main model and the routing
step inside get_market_data).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from dexter.data.yahoo import LABEL
from dexter.testing.fakedata import YAHOO_CHART_PATH, FakeDataServer, Response
from dexter.testing.fakellm import FakeLLM, Reply, ToolCallSpec
from tests.cli_helpers import cli_env, run_cli

pytestmark = pytest.mark.e2e


def keyless_env(llm: FakeLLM, data: FakeDataServer, tmp_path: Path) -> dict[str, str]:
    env = cli_env(llm, tmp_path, SEC_EDGAR_BASE_URL=data.url, SEC_EDGAR_DATA_URL=data.url,
                  YAHOO_CHART_BASE_URL=data.url)
    env.pop("FINANCIAL_DATASETS_API_KEY", None)
    return env


def script_price_question(llm: FakeLLM, answer: str) -> None:
    llm.enqueue(
        Reply(tool_calls=[ToolCallSpec("get_market_data", {
            "query": "Goldman Sachs daily closes 2023-10-02 to 2023-10-09"})]),
        Reply(tool_calls=[ToolCallSpec("get_stock_prices", {
            "ticker": "GS", "interval": "day", "start_date": "2023-10-02",
            "end_date": "2023-10-09"})]),
        Reply(text=answer),
    )


def test_ask_gets_prices_without_a_key_and_the_model_reads_their_source(
        llm: FakeLLM, data: FakeDataServer, tmp_path: Path) -> None:
    script_price_question(llm, "Goldman Sachs closed at $312.61 on 2023-10-09, down from "
                               "$318.50 on 2023-10-02 [S1].")
    result = run_cli(["ask", "--json", "How did Goldman Sachs trade in the first week of "
                      "October 2023?"], cwd=tmp_path, env=keyless_env(llm, data, tmp_path))
    assert result.code == 0, result.stderr
    # the router was offered the keyless tools (prices from Yahoo; Form 4s and 13F from SEC
    # EDGAR), not the keyed ones
    offered = {t["function"]["name"] for t in llm.requests[1].body["tools"]}
    assert offered == {"get_stock_price", "get_stock_prices", "get_insider_trades",
                       "get_insider_names", "get_insider_ownership",
                       "get_institutional_holdings"}
    [tool_message] = [m for m in llm.requests[-1].body["messages"] if m["role"] == "tool"]
    _, _, content = tool_message["content"].partition(" ")
    entry = json.loads(content)["data"]["prices[GS, day, 2023-10-02, 2023-10-09]"]
    assert entry["source"] == LABEL
    assert "| 2023-10-02 | 322.03 | 323.58 | 317.1 | 318.5 |" in entry["data"]
    assert "| 2023-10-09 | 308.9 | 313.48 | 308.37 | 312.61 |" in entry["data"]
    assert any("unofficial" in note for note in entry["notes"])
    # the request went to the chart endpoint, with a browser-like User-Agent and no key
    [request] = data.requests_for(f"{YAHOO_CHART_PATH}GS")
    assert request.headers["user-agent"].startswith("Mozilla/5.0")
    assert "x-api-key" not in request.headers
    done = result.events[-1]
    assert done["answer"].startswith("Goldman Sachs closed at $312.61")
    assert done["verification"]["status"] == "verified", done["verification"]
    [citation] = done["citations"]
    assert citation["tool"] == "get_market_data" and citation["provider"] == LABEL
    assert citation["title"] == "GS — Share prices, 2 Oct 2023 to 9 Oct 2023"
    llm.assert_no_violations()


def test_a_rate_limited_keyless_source_tells_the_model_to_set_the_key(
        llm: FakeLLM, data: FakeDataServer, tmp_path: Path) -> None:
    data.route(f"{YAHOO_CHART_PATH}GS", Response(429, "Edge: Too Many Requests",
                                                 content_type="text/plain"))
    script_price_question(llm, "I could not get Goldman Sachs prices right now.")
    result = run_cli(["ask", "--json", "Goldman Sachs closes in early October 2023"],
                     cwd=tmp_path, env=keyless_env(llm, data, tmp_path))
    assert result.code == 0, result.stderr
    [tool_message] = [m for m in llm.requests[-1].body["messages"] if m["role"] == "tool"]
    text = tool_message["content"]
    assert "Yahoo Finance (chart API) is rate limiting requests (HTTP 429)" in text
    assert "set FINANCIAL_DATASETS_API_KEY" in text
    assert "Traceback" not in result.stdout + result.stderr


def test_keyless_prices_reach_the_spreadsheet_as_numbers_in_dollars(
        llm: FakeLLM, data: FakeDataServer, tmp_path: Path) -> None:
    from openpyxl import load_workbook

    script_price_question(llm, "Goldman Sachs closed at $312.61 on 2023-10-09 [S1].")
    result = run_cli(["ask", "--plain", "--output", "gs.xlsx", "How did Goldman Sachs trade?"],
                     cwd=tmp_path, env=keyless_env(llm, data, tmp_path))
    assert result.code == 0, result.stderr
    book = load_workbook(tmp_path / "gs.xlsx")
    [sheet] = [book[name] for name in book.sheetnames if name not in ("Report", "Sources")]
    cells = [[c.value for c in row] for row in sheet.iter_rows()]
    assert sheet.title == "GS share prices"
    [header] = [row for row in cells if row and row[0] == "Date"]
    assert "Close (USD)" in header and "Volume" in header
    close = header.index("Close (USD)")
    rows = {row[0].date().isoformat(): row for row in cells
            if isinstance(row[0], dt.datetime)}  # the dates are dates
    assert rows["2023-10-09"][close] == 312.61
    assert rows["2023-10-02"][close] == 318.5
    sources = [[c.value for c in row] for row in book["Sources"].iter_rows()]
    assert any(LABEL in str(cell) for row in sources for cell in row)
