"""The SEC EDGAR source against the bundled fixtures served on 127.0.0.1."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from dexter.data.base import DataError, DateFilter, NotFoundError, ScreenFilter
from dexter.data.cache import DiskCache
from dexter.data.edgar import EdgarSource
from dexter.data.http import RetryPolicy
from dexter.data.http_source import SourceConnection
from dexter.testing.fakedata import FakeDataServer, Response

UA = "dexter-tests tests@example.com"
K24 = "0000320193-24-000123"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeDataServer]:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    with FakeDataServer() as srv:
        yield srv


@pytest.fixture
async def edgar(server: FakeDataServer, tmp_path: Path) -> AsyncIterator[EdgarSource]:
    source = EdgarSource(SourceConnection(server.url, DiskCache(tmp_path / "cache"),
                                          rate_limiter=None,
                                          retry=RetryPolicy(max_retries=1, backoff_base=0.001),
                                          today=dt.date(2025, 3, 1)),
                         data_url=server.url, user_agent=UA)
    yield source
    await source.aclose()


def by_period(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["fiscal_period"]: r for r in records}


async def test_every_request_carries_the_configured_user_agent(
        edgar: EdgarSource, server: FakeDataServer) -> None:
    await edgar.filings("AAPL", limit=1)
    assert server.requests
    assert {r.headers["user-agent"] for r in server.requests} == {UA}


@pytest.mark.parametrize("raw", ["aapl", " AAPL ", "320193"])
async def test_ticker_resolution_is_case_and_space_insensitive(edgar: EdgarSource,
                                                               raw: str) -> None:
    company = await edgar.resolve(raw)
    assert (company.cik, company.ticker, company.cik10) == (320193, "AAPL", "0000320193")


async def test_class_share_dot_matches_sec_dash(edgar: EdgarSource) -> None:
    assert (await edgar.resolve("brk.b")).cik == 1067983


async def test_unknown_ticker_names_close_matches(edgar: EdgarSource) -> None:
    with pytest.raises(NotFoundError) as err:
        await edgar.resolve("APPL")
    assert "Unknown ticker 'APPL'" in str(err.value)
    assert "AAPL (Apple Inc.)" in str(err.value)
    assert (await edgar.search_companies("apple"))[0].ticker == "AAPL"


async def test_annual_income_statement_values_labels_and_provenance(edgar: EdgarSource) -> None:
    result = await edgar.statements("income", "AAPL", period="annual", limit=10)
    rows = by_period(result.data)
    fy24 = rows["FY2024"]
    assert fy24["report_period"] == "2024-09-28"
    assert fy24["revenue"] == 391_035_000_000
    assert fy24["net_income"] == 93_736_000_000
    assert fy24["earnings_per_share_diluted"] == 6.08
    assert fy24["gross_margin"] == pytest.approx(0.4621, abs=1e-4)
    assert fy24["derived"]["gross_margin"] == "gross_profit / revenue"
    assert fy24["source_filing"]["accession_number"] == K24
    # the filing's primary document, as the submissions index names it, and its period
    assert fy24["source_filing"]["url"].endswith(
        "/Archives/edgar/data/320193/000032019324000123/aapl-20240928.htm")
    assert fy24["source_filing"]["fiscal_period"] == "FY2024"
    assert fy24["company_name"] == "Apple Inc."
    assert [r["fiscal_period"] for r in result.data] == ["FY2024", "FY2023", "FY2022", "FY2017"]
    assert "XBRL" in result.source and result.urls[0].endswith("companyfacts/CIK0000320193.json")


async def test_revenue_falls_back_per_period_to_older_concepts(edgar: EdgarSource) -> None:
    rows = by_period((await edgar.statements("income", "AAPL", limit=10)).data)
    assert rows["FY2017"]["revenue"] == 229_234_000_000
    assert "net_income" not in rows["FY2017"]


async def test_restated_value_wins_and_names_its_filing(edgar: EdgarSource) -> None:
    rows = by_period((await edgar.statements("income", "AAPL", limit=10)).data)
    fy22 = rows["FY2022"]
    assert fy22["selling_general_and_administrative_expenses"] == 25_094_000_000
    assert fy22["source_filing"]["accession_number"] == K24


async def test_quarters_direct_and_q4_derived_from_fy_minus_nine_months(
        edgar: EdgarSource) -> None:
    result = await edgar.statements("income", "AAPL", period="quarterly", limit=8)
    rows = by_period(result.data)
    assert rows["Q3 2024"]["revenue"] == 85_777_000_000
    assert "revenue" not in rows["Q3 2024"].get("derived", {})
    q4 = rows["Q4 2024"]
    assert q4["revenue"] == 391_035_000_000 - 296_105_000_000
    assert q4["derived"]["revenue"].startswith("FY (10-K 0000320193-24-000123) minus 9M YTD")
    assert "earnings_per_share_diluted" not in q4  # per-share values are never subtracted
    assert rows["Q1 2023"]["report_period"] == "2022-12-31"  # comparative gets its fiscal year


async def test_cash_flow_quarters_come_from_year_to_date_differences(edgar: EdgarSource) -> None:
    rows = by_period((await edgar.statements("cash_flow", "AAPL", period="quarterly",
                                             limit=4)).data)
    assert rows["Q1 2024"]["net_cash_flow_from_operations"] == 39_895_000_000
    assert rows["Q2 2024"]["net_cash_flow_from_operations"] == (62_585 - 39_895) * 10**6
    assert rows["Q2 2024"]["capital_expenditure"] == -(4_388 - 2_392) * 10**6
    assert rows["Q2 2024"]["free_cash_flow"] == (62_585 - 39_895 - 4_388 + 2_392) * 10**6


async def test_ttm_sums_four_contiguous_quarters(edgar: EdgarSource) -> None:
    result = await edgar.statements("income", "AAPL", period="ttm", limit=2)
    assert len(result.data) == 1
    ttm = result.data[0]
    assert ttm["report_period"] == "2024-09-28"
    assert ttm["revenue"] == 391_035_000_000
    assert ttm["derived"]["revenue"] == "sum of the last four quarters"


async def test_balance_sheet_has_debt_shares_and_derived_total_debt(edgar: EdgarSource) -> None:
    rows = by_period((await edgar.statements("balance", "AAPL", limit=4)).data)
    fy24 = rows["FY2024"]
    assert fy24["total_debt"] == (85_750 + 10_912 + 9_967) * 10**6
    assert fy24["outstanding_shares"] == 15_116_786_000
    assert fy24["derived"]["total_debt"] == "long_term_debt + current_debt + short_term_borrowings"
    quarterly = by_period((await edgar.statements("balance", "AAPL", period="quarterly")).data)
    assert quarterly["Q3 2024"]["total_assets"] == 331_612_000_000
    assert quarterly["Q4 2024"]["report_period"] == "2024-09-28"


async def test_cash_flow_capex_is_an_outflow_and_fcf_is_derived(edgar: EdgarSource) -> None:
    result = await edgar.statements("cash_flow", "AAPL")
    fy24 = by_period(result.data)["FY2024"]
    assert fy24["capital_expenditure"] == -9_447_000_000
    assert fy24["free_cash_flow"] == (118_254 - 9_447) * 10**6
    assert "capital_expenditure" not in fy24["derived"]  # reported, only shown as an outflow
    assert result.notes[1] == ("Payments (capital_expenditure, dividends_paid, "
                               "share_repurchases) are shown as negative numbers (outflows); "
                               "filings report them as positive amounts.")


@pytest.mark.parametrize(("limit", "count"), [(1, 1), (2, 2), (3, 3)])
async def test_limit_keeps_the_newest_periods(edgar: EdgarSource, limit: int, count: int) -> None:
    result = await edgar.statements("income", "AAPL", limit=limit)
    assert len(result.data) == count
    assert result.data[0]["fiscal_period"] == "FY2024"


async def test_report_period_filters_bound_the_dates(edgar: EdgarSource) -> None:
    since = await edgar.statements("income", "AAPL", limit=10,
                                   filters=DateFilter(gte="2023-09-30"))
    assert [r["report_period"] for r in since.data] == ["2024-09-28", "2023-09-30"]
    before = await edgar.statements("income", "AAPL", limit=10,
                                    filters=DateFilter(lt="2023-09-30", gt="2017-09-30"))
    assert [r["report_period"] for r in before.data] == ["2022-09-24"]


async def test_all_statements_returns_the_three_lists(edgar: EdgarSource) -> None:
    data = (await edgar.statements("all", "AAPL", limit=1)).data
    assert set(data) == {"income_statements", "balance_sheets", "cash_flow_statements"}
    assert all(len(v) == 1 for v in data.values())


async def test_company_facts_include_cover_page_shares(edgar: EdgarSource) -> None:
    result = await edgar.company_facts("AAPL")
    assert result.data["name"] == "Apple Inc."
    assert result.data["outstanding_shares"] == 15_115_823_000
    assert result.data["outstanding_shares_as_of"] == "2024-10-18"
    assert result.data["sic_description"] == "Electronic Computers"
    assert len(result.urls) == 2


async def test_company_without_xbrl_facts_is_a_clear_404(edgar: EdgarSource) -> None:
    with pytest.raises(NotFoundError) as err:
        await edgar.statements("income", "MSFT")
    assert str(err.value) == "SEC EDGAR has no XBRL financial data of MSFT (HTTP 404)."


async def test_filings_filter_by_form_and_page_into_older_files(
        edgar: EdgarSource, server: FakeDataServer) -> None:
    recent_only = await edgar.filings("AAPL", filing_types=("10-K",), limit=2)
    assert [r["report_date"] for r in recent_only.data] == ["2024-09-28", "2023-09-30"]
    assert len(recent_only.urls) == 1
    paged = await edgar.filings("AAPL", filing_types=("10-K",), limit=4)
    assert [r["accession_number"] for r in paged.data][-1] == "0000320193-21-000105"
    assert len(paged.urls) == 2
    assert server.requests_for("/submissions/CIK0000320193-submissions-001.json")
    eight_k = (await edgar.filings("AAPL", filing_types=("8-K",))).data[0]
    assert eight_k["items"] == "2.02,9.01"
    assert eight_k["url"].endswith("/000032019324000120/aapl-20241031.htm")


async def test_10k_without_items_lists_sections_instead_of_the_whole_text(
        edgar: EdgarSource) -> None:
    result = await edgar.filing_items("AAPL", filing_type="10-K", accession_number=K24)
    names = [i["name"] for i in result.data["available_items"]]
    assert names == ["Item-1", "Item-1A", "Item-1B", "Item-7", "Item-7A", "Item-8"]
    assert "items" not in result.data


async def test_10k_items_skip_the_table_of_contents(edgar: EdgarSource) -> None:
    result = await edgar.filing_items("AAPL", filing_type="10-K", accession_number=K24,
                                      items=("risk factors", "MD&A", "Item 99"))
    texts = {i["name"]: i["text"] for i in result.data["items"]}
    assert list(texts) == ["Item-1A", "Item-7"]
    assert "global and regional economic conditions" in texts["Item-1A"]
    assert "Net sales | $391,035 | 2% | $383,285" in texts["Item-7"]
    assert result.data["missing_items"] == ["Item 99"]


async def test_filing_text_is_cached_by_accession(edgar: EdgarSource,
                                                  server: FakeDataServer) -> None:
    for _ in range(2):
        await edgar.filing_items("AAPL", filing_type="10-K", accession_number=K24,
                                 items=("Item-1",))
    assert len(server.requests_for(
        "/Archives/edgar/data/320193/000032019324000123/aapl-20240928.htm")) == 1


async def test_a_cached_filing_entry_of_the_wrong_shape_is_refetched(
        edgar: EdgarSource, server: FakeDataServer, tmp_path: Path) -> None:
    await edgar.filing_items("AAPL", filing_type="10-K", accession_number=K24, items=("Item-1",))
    [entry] = (tmp_path / "cache" / "edgar_filing-items").glob("*.json")
    entry.write_text('{"value": {"sections": {}}, "expires_at": null, "url": ""}')
    result = await edgar.filing_items("AAPL", filing_type="10-K", accession_number=K24,
                                      items=("Item-1",))
    assert result.data["items"][0]["name"] == "Item-1"
    assert len(server.requests_for(
        "/Archives/edgar/data/320193/000032019324000123/aapl-20240928.htm")) == 2


async def test_10q_items_are_keyed_by_part(edgar: EdgarSource) -> None:
    result = await edgar.filing_items("AAPL", filing_type="10-Q",
                                      accession_number="0000320193-24-000081",
                                      items=("Item 1A", "Part I Item 2"))
    texts = {i["name"]: i["text"] for i in result.data["items"]}
    assert "no material changes" in texts["Part-2,Item-1A"]
    assert "driven by Services" in texts["Part-1,Item-2"]


async def test_8k_includes_press_release_exhibit(edgar: EdgarSource) -> None:
    result = await edgar.filing_items("AAPL", filing_type="8-K",
                                      accession_number="0000320193-24-000120")
    texts = {i["name"]: i["text"] for i in result.data["items"]}
    assert list(texts) == ["Item-2.02", "Item-9.01", "Exhibit-99.1"]
    assert "Quarterly revenue of $94.9 billion" in texts["Exhibit-99.1"]
    assert any(u.endswith("a8-kex991q4202409282024.htm") for u in result.urls)


async def test_reading_a_recent_filing_does_not_page_through_older_filings(
        edgar: EdgarSource, server: FakeDataServer) -> None:
    await edgar.filing_items("AAPL", filing_type="10-K", accession_number=K24,
                             items=("Item-1",))
    assert not server.requests_for("/submissions/CIK0000320193-submissions-001.json")
    # an older filing is found on the next page (its document is not in the fixtures)
    with pytest.raises(NotFoundError, match="SEC EDGAR has no 10-K 0000320193-21-000105"):
        await edgar.filing_items("AAPL", filing_type="10-K",
                                 accession_number="0000320193-21-000105")
    assert len(server.requests_for("/submissions/CIK0000320193-submissions-001.json")) == 1


async def test_unknown_accession_says_to_list_filings(edgar: EdgarSource) -> None:
    with pytest.raises(NotFoundError, match="List the company's filings"):
        await edgar.filing_items("AAPL", filing_type="10-K", accession_number="0000-00-0")


async def test_frames_screen_merges_revenue_concepts_and_derives_margin(
        edgar: EdgarSource) -> None:
    result = await edgar.screen((ScreenFilter("revenue", "gt", 1e11),
                                 ScreenFilter("net_margin", "gt", 0.1)), period="CY2023")
    assert [r["ticker"] for r in result.data] == ["AAPL", "MSFT"]
    assert result.data[0]["net_margin"] == pytest.approx(96995 / 383285, abs=1e-4)
    # Tesla reports under Revenues first (96.8B): below the bar despite a tiny other value
    loose = await edgar.screen((ScreenFilter("revenue", "gte", 60_922_000_000),), period="CY2023")
    assert [r["ticker"] for r in loose.data] == ["AAPL", "MSFT", "TSLA", "NVDA"]


async def test_screen_rejects_fields_frames_cannot_answer(edgar: EdgarSource) -> None:
    with pytest.raises(DataError, match="FINANCIAL_DATASETS_API_KEY"):
        await edgar.screen((ScreenFilter("sector", "eq", "Technology"),))
    with pytest.raises(DataError, match="not valid"):
        await edgar.screen((ScreenFilter("revenue", "gt", 1),), period="2023")


async def test_default_screen_period_is_last_calendar_year(edgar: EdgarSource) -> None:
    assert edgar.default_screen_period() == "CY2024"


async def test_missing_user_agent_is_refused_before_any_request() -> None:
    with pytest.raises(ValueError, match="SEC_EDGAR_USER_AGENT"):
        EdgarSource(SourceConnection("http://x", None), data_url="http://x", user_agent=" ")


async def test_sec_server_error_then_ok_is_retried(edgar: EdgarSource,
                                                   server: FakeDataServer) -> None:
    server.route("/files/company_tickers.json", [
        Response(503, headers={"retry-after": "0"}),
        Response(body={"0": {"cik_str": 320193, "ticker": "AAPL", "title": "Apple Inc."}})])
    assert (await edgar.resolve("AAPL")).cik == 320193
    assert len(server.requests_for("/files/company_tickers.json")) == 2
