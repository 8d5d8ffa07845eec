"""What the keyless SEC sources share: the recorded tree the tests serve, filings read by
accession number alone, the User-Agent and the ten-a-second limit across every source, and
the meta-tools routing to the new sources with tables the lexicon labels."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from dexter import metrics
from dexter.config import Settings
from dexter.data.base import DataError, NotFoundError
from dexter.data.http import RetryPolicy
from dexter.data.insiders import InsiderSource
from dexter.data.sec import (
    Company,
    SecSource,
    normalize_accession,
    parse_index_page,
    primary_xml,
    split_submission,
)
from dexter.data.segments_source import SegmentsSource
from dexter.testing.fakedata import FakeDataServer, RecordedTree, point_settings_at
from dexter.tools.base import ToolContext
from dexter.tools.finance import RouterConfig, SourceOptions, finance_tools
from dexter.tools.finance.router import QueryArgs
from dexter.tools.finance.sources import build_sources
from tests.sec_helpers import MORE, REAL, sec_server, sec_source
from tests.test_finance_tools import ScriptedModel

__all__ = ["sec_server"]


# -- the recorded tree ------------------------------------------------------------------------


async def test_recorded_tree_lists_folders_and_matches_queries(sec_server: FakeDataServer) -> None:
    import httpx

    async with httpx.AsyncClient(headers={"User-Agent": "t t@example.com"}) as http:
        listing = (await http.get(sec_server.url + "/Archives/edgar/data/320193/"
                                  "000032019324000084/index.json")).json()
        names = [i["name"] for i in listing["directory"]["item"]]
        assert names == ["wk-form4_1723069808.xml"]
        # a derived document is served at the URL SEC serves it at
        derived = await http.get(sec_server.url + "/Archives/edgar/data/1099219/"
                                 "000114036123013281/informationtable.xml")
        assert derived.status_code == 200 and b"ISHARES MSCI CHILE ETF" in derived.content
        # the recorded search reply answers the same parameters in any order, and only them
        hit = await http.get(sec_server.url + "/LATEST/search-index",
                             params={"from": 0, "q": "climate change", "forms": "8-K"})
        miss = await http.get(sec_server.url + "/LATEST/search-index",
                              params={"q": "climate change", "forms": "10-K", "from": 0})
        assert hit.status_code == 200 and hit.json()["hits"]["total"]["value"] == 10000
        assert miss.status_code == 404
        anonymous = await http.get(sec_server.url + "/files/company_tickers.json",
                                   headers={"User-Agent": ""})
        assert anonymous.status_code == 403


def test_accession_numbers_and_documents() -> None:
    assert normalize_accession("000032019324000123") == "0000320193-24-000123"
    assert normalize_accession(" 0000320193-24-000123 ") == "0000320193-24-000123"
    with pytest.raises(DataError, match="not an SEC accession number"):
        normalize_accession("0000320193-24")
    assert primary_xml("xslF345X05/wk-form4_1.xml") == "wk-form4_1.xml"
    assert primary_xml("primary_doc.xml") == "primary_doc.xml"


def test_a_full_submission_splits_into_its_documents() -> None:
    text = (MORE / "www.sec.gov/Archives/edgar/data/1045810/0001045810-24-000108.txt").read_text()
    header, docs = split_submission(text)
    assert header["FILED AS OF DATE"] == "20240515"
    assert header["CONFORMED SUBMISSION TYPE"] == "13F-HR"
    assert [(d.name, d.type) for d in docs] == [("primary_doc.xml", "13F-HR"),
                                               ("information_table.xml", "INFORMATION TABLE")]
    assert docs[1].text is not None and docs[1].text.startswith("<?xml")


def test_an_index_page() -> None:
    html = (MORE / "www.sec.gov/Archives/edgar/data/796343/0000796343-23-000044-index.html"
            ).read_text()
    info, docs = parse_index_page(html)
    assert (info["filing_date"], info["form"], info["fiscal_year_end"], info["sic"]) == (
        "2023-03-15", "8-K", "1202", "7372")
    assert ("adbeex991q123.htm", "EX-99.1") in [(d.name, d.type) for d in docs]


async def test_a_filing_no_one_recorded_says_what_to_check(sec_server: FakeDataServer) -> None:
    source = sec_source(SecSource, sec_server)
    try:
        with pytest.raises(NotFoundError) as err:
            await source.documents(Company(320193, "AAPL", "Apple Inc."), "0000320193-99-000001")
    finally:
        await source.aclose()
    assert "SEC EDGAR has no filing 0000320193-99-000001 for AAPL (CIK 320193)" in str(err.value)
    assert "Check the accession number and the filer" in str(err.value)


async def test_a_cik_needs_no_ticker(sec_server: FakeDataServer) -> None:
    source = sec_source(SecSource, sec_server)
    try:
        assert (await source.resolve_filer("1045810")).ticker == "NVDA"
        unlisted = await source.resolve_filer("CIK 1619124")  # ACTIAM, a manager
        assert (unlisted.cik, unlisted.ticker, unlisted.name) == (1619124, "", "CIK 1619124")
    finally:
        await source.aclose()


async def test_parsed_filings_are_cached_forever(sec_server: FakeDataServer,
                                                 tmp_path: Path) -> None:
    for _ in range(2):
        source = sec_source(InsiderSource, sec_server, tmp_path / "cache")
        try:
            result = await source.insider_trades("AAPL", accession="0000320193-24-000086")
        finally:
            await source.aclose()
        assert [r["transaction_shares"] for r in result.data] == [5_178]
    assert len(sec_server.requests_for("/Archives/edgar/data/320193/000032019324000086/"
                                       "wk-form4_1723590126.xml")) == 1


# -- SEC's fair-access rules across every source ------------------------------------------------


async def test_every_sec_source_sends_the_user_agent_and_shares_the_limit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    with FakeDataServer(fallback=RecordedTree(REAL, MORE)) as server:
        settings = point_settings_at(Settings(), server, tmp_path / "home")
        settings.tools.sec_user_agent = "Jane Analyst jane@example.com"
        options = SourceOptions(use_cache=False, today=dt.date(2025, 12, 1))
        async with build_sources(settings, {}, options) as sources:
            by_name = {s.name: s for s in sources.sources}
            segments, insiders = by_name["sec_edgar_segments"], by_name["sec_edgar_insiders"]
            assert isinstance(segments, SegmentsSource)

            async def accessions(accessions: list[str]) -> None:
                for accession in accessions:
                    await insiders.insider_trades("AAPL", accession=accession)

            await asyncio.gather(
                accessions(["0000320193-24-000084", "0000320193-24-000086"]),
                accessions(["0000320193-24-000088", "0000320193-24-000098"]),
                segments.segments("AAPL", accession="0000320193-24-000123", limit=1))
        starts = sorted(r.at for r in server.requests)
        assert len(starts) >= 11
        # as the server counts arrivals: the 11th came at least a second after the first
        assert starts[10] - starts[0] >= 1.0
        assert {r.headers["user-agent"] for r in server.requests} == {
            "Jane Analyst jane@example.com"}


# -- the meta-tools -------------------------------------------------------------------------------


@pytest.fixture
def keyless_settings(sec_server: FakeDataServer, tmp_path: Path,
                     monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.delenv("FINANCIAL_DATASETS_API_KEY", raising=False)
    return point_settings_at(Settings(), sec_server, tmp_path / "home")


def _tools(settings: Settings) -> dict[str, Any]:
    built = finance_tools(settings, config=RouterConfig(), env={},
                          source_options=SourceOptions(retry=RetryPolicy(max_retries=0),
                                                       sec_rate_limiter=None,
                                                       today=dt.date(2025, 12, 1)))
    return {t.name: t for t in built}


def _ctx(settings: Settings, model: Any) -> ToolContext:
    return ToolContext(settings=settings, cwd=settings.home_path, home=settings.home_path,
                       model=model)


def _labelled(tables: Any) -> None:
    """Every numeric column is a field of the metric lexicon, with a unit."""
    for table in tables:
        for column in table.numeric_columns():
            assert metrics.metric(column.name) is not None, (table.title, column.name)
            assert column.unit, (table.title, column.name)


async def test_get_financials_offers_segments_and_peers_without_a_key(
        keyless_settings: Settings) -> None:
    model = ScriptedModel([("get_financial_segments", {"ticker": "AAPL", "limit": 1,
                                                       "axis": "product"})])
    out = await _tools(keyless_settings)["get_financials"].run(
        QueryArgs(query="Apple revenue by product FY2024"), _ctx(keyless_settings, model))
    assert "get_financial_segments" in model.offered() and "get_peers" in model.offered()
    assert not out.is_error, out.content
    body = json.loads(out.content)
    entry = body["data"]["segments[AAPL, annual, product]"]
    assert entry["source"] == "SEC EDGAR (filing XBRL)"
    assert "| Services | 96,169,000,000 |" in entry["data"]
    assert "aapl-20240928.htm" in entry["data"]  # the filing each figure came from
    titles = [t.title for t in out.tables]
    assert "segments[AAPL, annual, product] · Product or service: Services" in titles
    services = next(t for t in out.tables if t.title.endswith(": Services"))
    revenue = next(c for c in services.columns if c.name == "revenue")
    assert services.index == ("FY2024 (2024-09-28)",) and revenue.values == (96_169e6,)
    assert revenue.unit == "USD"
    _labelled(out.tables)
    assert any("aapl-20240928.htm" in url for url in out.source_urls)


async def test_get_market_data_reads_form4s_and_13f_without_a_key(
        keyless_settings: Settings) -> None:
    model = ScriptedModel([
        ("get_insider_trades", {"ticker": "AAPL", "filing_date_gte": "2024-08-01",
                                "filing_date_lte": "2024-08-31"}),
        ("get_institutional_holdings", {"filer_cik": "1619124",
                                        "accession_number": "0001619124-21-000002"})])
    out = await _tools(keyless_settings)["get_market_data"].run(
        QueryArgs(query="Apple insider sales in August 2024; ACTIAM's 13F"),
        _ctx(keyless_settings, model))
    assert not out.is_error, out.content
    assert "| 2024-08-05 | Adams Katherine L. |" in out.content
    assert "APPLE INC" in out.content and "230,054,000" in out.content
    insider = next(t for t in out.tables if t.title.startswith("insider_trades"))
    shares = next(c for c in insider.columns if c.name == "transaction_shares")
    assert sorted(v for v in shares.values if v) == [2_400, 4_500, 5_178, 8_706, 97_600]
    held = next(t for t in out.tables if t.title.startswith("institutional_holdings"))
    assert held.index_name == "issuer" and "APPLE INC" in held.index
    _labelled(out.tables)


async def test_read_filings_offers_releases_and_full_text_search(
        keyless_settings: Settings) -> None:
    model = ScriptedModel([
        ("get_earnings_releases", {"ticker": "ADBE", "accession_number": "0000796343-23-000044"}),
        ("search_filings", {"query": "climate change", "forms": ["8-K"], "limit": 3})])
    out = await _tools(keyless_settings)["read_filings"].run(
        QueryArgs(query="Adobe's Q1 FY2023 release; who mentions climate change"),
        _ctx(keyless_settings, model))
    assert not out.is_error, out.content
    assert "Outlook / guidance:" in out.content and "$4.75 billion to $4.78 billion" in out.content
    assert "CANADIAN PACIFIC RAILWAY LTD/CN" in out.content
    release = next(t for t in out.tables if "results" in t.title)
    revenue = next(c for c in release.columns if c.name == "revenue")
    assert dict(zip(release.dates, revenue.values, strict=True))["2023-03-03"] == 4_655e6
    assert not any(t.title.startswith("search") for t in out.tables)  # hits hold no figures
    _labelled(out.tables)
