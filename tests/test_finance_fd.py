"""The Financial Datasets source: every endpoint's request shape, filters, limits, caching."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from dexter.data.base import (
    DataError,
    DateFilter,
    NotFoundError,
    PlanError,
    ScreenFilter,
)
from dexter.data.cache import DiskCache
from dexter.data.financial_datasets import FinancialDatasetsSource, match_insider_names
from dexter.data.http import RetryPolicy
from dexter.data.http_source import SourceConnection
from dexter.testing.fakedata import FakeDataServer, RecordedRequest, Response

KEY = "fd-test-key"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeDataServer]:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    with FakeDataServer() as srv:
        yield srv


@pytest.fixture
async def fd(server: FakeDataServer, tmp_path: Path) -> AsyncIterator[FinancialDatasetsSource]:
    source = FinancialDatasetsSource(
        SourceConnection(server.url + "/", DiskCache(tmp_path),
                         retry=RetryPolicy(max_retries=1, backoff_base=0.001),
                         today=dt.date(2025, 3, 1)),
        api_key=KEY)
    yield source
    await source.aclose()


def last(server: FakeDataServer, path: str) -> RecordedRequest:
    found = server.requests_for(path)
    assert found, f"no request to {path}"
    return found[-1]


def test_an_empty_key_never_builds_the_source() -> None:
    with pytest.raises(ValueError, match="FINANCIAL_DATASETS_API_KEY"):
        FinancialDatasetsSource(SourceConnection("http://x", None), api_key="  ")


async def test_statements_send_key_ticker_period_limit_and_bounds(
        fd: FinancialDatasetsSource, server: FakeDataServer) -> None:
    result = await fd.statements("income", " aapl", period="annual", limit=2,
                                 filters=DateFilter(gte="2023-01-01", lte="2024-12-31"))
    req = last(server, "/financials/income-statements/")
    assert req.headers["x-api-key"] == KEY
    assert req.query == {"ticker": ["AAPL"], "period": ["annual"], "limit": ["2"],
                         "report_period_gte": ["2023-01-01"], "report_period_lte": ["2024-12-31"]}
    assert [r["fiscal_period"] for r in result.data] == ["FY2024", "FY2023"]
    assert result.urls[0].startswith(server.url + "/financials/income-statements/?ticker=AAPL")


async def test_quarterly_period_is_filtered_and_limited(fd: FinancialDatasetsSource) -> None:
    result = await fd.statements("income", "AAPL", period="quarterly", limit=1)
    assert [r["fiscal_period"] for r in result.data] == ["Q4 2024"]


@pytest.mark.parametrize(("kind", "path", "field"), [
    ("balance", "/financials/balance-sheets/", "total_debt"),
    ("cash_flow", "/financials/cash-flow-statements/", "free_cash_flow"),
])
async def test_other_statement_endpoints(fd: FinancialDatasetsSource, server: FakeDataServer,
                                         kind: str, path: str, field: str) -> None:
    result = await fd.statements(kind, "AAPL")  # type: ignore[arg-type]
    assert field in result.data[0]
    assert last(server, path).param("period") == "annual"


async def test_all_statements_endpoint(fd: FinancialDatasetsSource, server: FakeDataServer) -> None:
    result = await fd.statements("all", "AAPL", limit=1)
    assert set(result.data) == {"income_statements", "balance_sheets", "cash_flow_statements"}
    assert last(server, "/financials/").param("limit") == "1"


async def test_unknown_ticker_is_a_clear_404(fd: FinancialDatasetsSource) -> None:
    with pytest.raises(NotFoundError, match=r"Unknown ticker 'NOPE'.*search"):
        await fd.statements("income", "nope")


async def test_metrics_segments_earnings_and_facts(fd: FinancialDatasetsSource,
                                                   server: FakeDataServer) -> None:
    assert (await fd.key_ratios_snapshot("aapl")).data["price_to_earnings_ratio"] == 36.8
    hist = await fd.historical_key_ratios("AAPL", limit=3, filters=DateFilter(eq="2024-09-28"))
    assert hist.data[0]["period"] == "ttm"
    req = last(server, "/financial-metrics/")
    assert (req.param("period"), req.param("limit"), req.param("report_period")) == (
        "ttm", "3", "2024-09-28")
    seg = await fd.segments("AAPL", period="quarterly", limit=2)
    assert last(server, "/financials/segments/").param("period") == "quarterly"
    assert isinstance(seg.data, list)
    assert (await fd.earnings("aapl")).data[0]["eps_actual"] == 1.64
    assert last(server, "/earnings").query == {"ticker": ["AAPL"]}
    await fd.earnings(None, limit=20)
    assert last(server, "/earnings").query == {"limit": ["20"]}
    assert (await fd.company_facts("AAPL")).data["sector"] == "Information Technology"


async def test_prices_widen_a_zero_width_range(fd: FinancialDatasetsSource,
                                               server: FakeDataServer) -> None:
    await fd.prices("AAPL", interval="day", start_date="2024-01-05", end_date="2024-01-05")
    req = last(server, "/prices/")
    assert (req.param("start_date"), req.param("end_date")) == ("2023-12-29", "2024-01-05")
    assert req.param("interval_multiplier") == "1"


async def test_closed_price_windows_are_cached_open_ones_refetched_later(
        fd: FinancialDatasetsSource, server: FakeDataServer, tmp_path: Path) -> None:
    for _ in range(2):
        await fd.prices("AAPL", start_date="2024-01-01", end_date="2024-01-31")
    assert len(server.requests_for("/prices/")) == 1
    entry = next((tmp_path / "fd_prices").glob("*.json")).read_text()
    assert '"expires_at":null' in entry
    await fd.prices("AAPL", start_date="2025-02-01", end_date="2025-03-01")
    newest = max((tmp_path / "fd_prices").glob("*.json"), key=lambda p: p.stat().st_mtime)
    assert '"expires_at":null' not in newest.read_text()


async def test_live_price_snapshots_are_never_cached(fd: FinancialDatasetsSource,
                                                     server: FakeDataServer) -> None:
    for _ in range(2):
        assert (await fd.price_snapshot("AAPL")).data["price"] == 232.5
    assert len(server.requests_for("/prices/snapshot/")) == 2


async def test_cached_statements_are_served_from_disk(fd: FinancialDatasetsSource,
                                                      server: FakeDataServer) -> None:
    first = await fd.statements("income", "AAPL", limit=2)
    second = await fd.statements("income", "AAPL", limit=2)
    assert first.data == second.data and first.urls == second.urls
    assert len(server.requests_for("/financials/income-statements/")) == 1


async def test_crypto_and_ticker_lists(fd: FinancialDatasetsSource, server: FakeDataServer) -> None:
    assert (await fd.crypto_price_snapshot("btc-usd")).data["ticker"] == "BTC-USD"
    await fd.crypto_prices("BTC-USD", interval="minute", interval_multiplier=5,
                           start_date="2024-01-01", end_date="2024-01-02")
    assert last(server, "/crypto/prices/").param("interval_multiplier") == "5"
    assert (await fd.crypto_tickers()).data == ["BTC-USD", "ETH-USD"]
    assert (await fd.stock_tickers()).data == ["AAPL", "MSFT", "NVDA"]


@pytest.mark.parametrize(("asked", "sent"), [(5, "5"), (10, "10"), (11, "10"), (0, "1")])
async def test_news_limit_is_capped_at_ten(fd: FinancialDatasetsSource, server: FakeDataServer,
                                           asked: int, sent: str) -> None:
    await fd.news("AAPL", limit=asked)
    assert last(server, "/news").param("limit") == sent


def test_insider_name_matching_is_order_and_prefix_insensitive() -> None:
    names = ["COOK TIMOTHY D", "WILLIAMS JEFFREY E", "O'BRIEN DEIRDRE"]
    assert match_insider_names("Tim Cook", names) == ["COOK TIMOTHY D"]
    assert match_insider_names("jeff williams", names) == ["WILLIAMS JEFFREY E"]
    assert match_insider_names("Satya", names) == []
    assert match_insider_names("  ", names) == []


async def test_insider_trades_resolve_the_sec_spelling(fd: FinancialDatasetsSource,
                                                       server: FakeDataServer) -> None:
    result = await fd.insider_trades("AAPL", name="Tim Cook", limit=5,
                                     filters=DateFilter(gte="2024-01-01"))
    req = last(server, "/insider-trades/")
    assert req.param("name") == "COOK TIMOTHY D"
    assert req.param("filing_date_gte") == "2024-01-01"
    assert [r["name"] for r in result.data] == ["COOK TIMOTHY D"]
    assert "matched SEC spelling" in result.notes[0]
    assert len(result.urls) == 2


async def test_unmatched_insider_name_passes_through(fd: FinancialDatasetsSource,
                                                     server: FakeDataServer) -> None:
    await fd.insider_trades("AAPL", name="Satya Nadella")
    assert last(server, "/insider-trades/").param("name") == "Satya Nadella"


async def test_all_insider_trades_are_sorted_newest_first(fd: FinancialDatasetsSource) -> None:
    dates = [r["filing_date"] for r in (await fd.insider_trades("AAPL")).data]
    assert dates == sorted(dates, reverse=True)


async def test_ownership_endpoints_and_filer_lookup(fd: FinancialDatasetsSource,
                                                    server: FakeDataServer) -> None:
    await fd.insider_ownership("AAPL", form_type="3")
    assert last(server, "/insider-ownership/").param("form_type") == "3"
    held = await fd.institutional_holdings(filer_name="Berkshire")
    assert last(server, "/institutional-holdings/").param("filer_cik") == "0001067983"
    assert len(held.urls) == 2
    await fd.beneficial_ownership(filer_name="Vanguard", history=True, type="passive")
    req = last(server, "/beneficial-ownership/")
    assert (req.param("filer_cik"), req.param("history"), req.param("type")) == (
        "0000102909", "true", "passive")


async def test_ownership_needs_exactly_one_subject(fd: FinancialDatasetsSource) -> None:
    with pytest.raises(DataError, match="exactly one"):
        await fd.institutional_holdings(ticker="AAPL", filer_name="Berkshire")
    with pytest.raises(DataError, match="exactly one"):
        await fd.beneficial_ownership()


async def test_unknown_filer_name_says_so(fd: FinancialDatasetsSource,
                                          server: FakeDataServer) -> None:
    server.route("/institutional-holdings/investors", {"investors": []})
    with pytest.raises(NotFoundError, match="No filer found matching 'Nobody'"):
        await fd.institutional_holdings(filer_name="Nobody")


async def test_filings_and_items_repeat_list_parameters(fd: FinancialDatasetsSource,
                                                        server: FakeDataServer) -> None:
    await fd.filings("AAPL", filing_types=("10-K", "10-Q"), limit=3)
    assert last(server, "/filings/").query["filing_type"] == ["10-K", "10-Q"]
    items = await fd.filing_items("AAPL", filing_type="10-K",
                                  accession_number="0000320193-24-000123",
                                  items=("Item-1A", "Item-7"))
    assert last(server, "/filings/items/").query["item"] == ["Item-1A", "Item-7"]
    assert items.data["items"][0]["name"] == "Item-1A"


async def test_screener_posts_filters(fd: FinancialDatasetsSource, server: FakeDataServer) -> None:
    assert (await fd.screener_filters()).data["filters"][0]["field"] == "revenue"
    result = await fd.screen((ScreenFilter("revenue", "gt", 1e11),), limit=5)
    body = last(server, "/financials/search/screener/").json()
    assert body == {"filters": [{"field": "revenue", "operator": "gt", "value": 1e11}],
                    "currency": "USD", "limit": 5}
    assert result.data["results"][0]["ticker"] == "AAPL"


async def test_plan_errors_name_the_data(fd: FinancialDatasetsSource,
                                         server: FakeDataServer) -> None:
    server.route("/insider-trades/", Response(402, {"error": "Upgrade required"}))
    with pytest.raises(PlanError) as err:
        await fd.insider_trades("AAPL")
    assert "plan does not cover insider trades for AAPL" in str(err.value)
    assert KEY not in str(err.value)


async def test_unexpected_reply_shape_is_reported(fd: FinancialDatasetsSource,
                                                  server: FakeDataServer) -> None:
    server.route("/news", {"articles": []})
    with pytest.raises(DataError, match="no 'news' field"):
        await fd.news(None)
