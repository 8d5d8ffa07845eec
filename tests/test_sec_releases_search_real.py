"""Earnings releases (Adobe's 8-K Item 2.02) and EDGAR full-text search on real recorded
responses (``sec-real-more``), and SIC peers on SEC-shaped pages.

Expected values read by hand:

- Adobe's Q1 FY2023 release (8-K 0000796343-23-000044, Exhibit 99.1 adbeex991q123.htm),
  "Condensed Consolidated Statements of Income (In millions, except per share data)",
  three months ended March 3, 2023: total revenue 4,655, net income 1,247, diluted net
  income per share 2.71, shares used for diluted EPS 460; March 4, 2022: revenue 4,262.
  "Financial Targets": second quarter total revenue "$4.75 billion to $4.78 billion". The
  filing's index page: filed 2023-03-15, fiscal year end 1202 (so Q1 FY2023).
- EDGAR full-text search for ``climate change`` in 8-Ks (the recorded efts reply): first
  hit Canadian Pacific Railway (CP, CIK 16875), 8-K 0000950142-20-002702 filed
  2020-12-08, document eh200118123_ex9901.htm (EX-99.1); "10,000 or more" hits.
"""

from __future__ import annotations

from typing import Any

import pytest

from dexter.data.base import NotFoundError
from dexter.data.fulltext import FullTextSearchSource, filer_of
from dexter.data.peers import PeersSource, parse_company_list
from dexter.data.releases import EarningsReleaseSource, outlook, parse_number
from dexter.testing.fakedata import FakeDataServer, Response
from tests.sec_helpers import sec_server, sec_source

__all__ = ["sec_server"]
M = 1_000_000
ADOBE_8K = "0000796343-23-000044"


async def adobe(server: FakeDataServer) -> dict[str, Any]:
    source = sec_source(EarningsReleaseSource, server)
    try:
        result = await source.earnings_releases("ADBE", accession=ADOBE_8K)
    finally:
        await source.aclose()
    [release] = result.data
    return dict(release)


async def test_adobe_q1_fy2023_revenue_is_read_from_the_release_table(
        sec_server: FakeDataServer) -> None:
    release = await adobe(sec_server)
    quarters = {f["report_period"]: f for f in release["figures"] if f.get("period")}
    q1 = quarters["2023-03-03"]
    assert q1["revenue"] == 4_655 * M
    assert q1["net_income"] == 1_247 * M
    assert q1["earnings_per_share_diluted"] == 2.71  # per share: not scaled
    assert q1["weighted_average_shares_diluted"] == 460 * M  # share counts are in millions
    assert q1["fiscal_period"] == "Q1 2023" and q1["period"] == "quarterly"
    assert quarters["2022-03-04"]["revenue"] == 4_262 * M
    assert release["title"] == "Adobe Reports Record Revenue in Q1 Fiscal 2023"
    assert release["filing_date"] == "2023-03-15"
    assert release["source_filing"]["url"].endswith(
        "/Archives/edgar/data/796343/000079634323000044/adbeex991q123.htm")
    # the table's rows are kept as read, the lexicon's metrics marked
    income = next(t for t in release["tables"] if "Statements of Income" in t["title"])
    assert income["scale"] == "millions"
    assert {"label": "Total revenue", "section": "Revenue", "field": "revenue",
            "values": [4_655 * M, 4_262 * M]} in income["rows"]


async def test_adobe_outlook_is_the_financial_targets_section(
        sec_server: FakeDataServer) -> None:
    release = await adobe(sec_server)
    targets = release["outlook"][0]
    assert targets.startswith("Financial Targets")
    assert "Total revenue | $4.75 billion to $4.78 billion" in targets
    assert "Forward-Looking Statements" not in "\n".join(release["outlook"])
    assert "Q1 revenue" not in "\n".join(release["outlook"])  # a quote without a figure


def test_outlook_sentences_need_a_figure_and_skip_boilerplate() -> None:
    text = ("Results\nRevenue grew 9 percent.\nWe expect second quarter revenue of $4.8 "
            "billion. We expect to keep innovating.\nThis press release contains forward-"
            "looking statements; we expect nothing of 5% here.")
    assert outlook(text) == ["We expect second quarter revenue of $4.8 billion."]


def test_release_numbers() -> None:
    assert parse_number("(32)") == -32
    assert parse_number("4,655") == 4655
    assert parse_number("—") == 0
    assert parse_number("$ 2.71") == 2.71
    assert parse_number("March 3, 2023") is None


async def test_an_8k_without_item_202_is_not_an_earnings_release(
        sec_server: FakeDataServer) -> None:
    source = sec_source(EarningsReleaseSource, sec_server)
    try:
        with pytest.raises(NotFoundError, match="no Exhibit 99"):
            # NVIDIA's 8-K of 2026-03-02: Item 5.02 with an EX-10.1, no press release
            await source.earnings_releases("NVDA", accession="0001045810-26-000024")
    finally:
        await source.aclose()


async def test_a_full_text_search_reply_becomes_hits_with_links(
        sec_server: FakeDataServer) -> None:
    source = sec_source(FullTextSearchSource, sec_server)
    try:
        result = await source.search_filings("climate change", forms=("8-K",), limit=100)
    finally:
        await source.aclose()
    assert len(result.data) == 100
    first = result.data[0]
    assert (first["form"], first["filer"], first["ticker"], first["cik"]) == (
        "8-K", "CANADIAN PACIFIC RAILWAY LTD/CN", "CP", "0000016875")
    assert (first["filing_date"], first["accession_number"], first["document_type"]) == (
        "2020-12-08", "0000950142-20-002702", "EX-99.1")
    assert first["url"] == (f"{sec_server.url}/Archives/edgar/data/16875/000095014220002702/"
                            f"eh200118123_ex9901.htm")
    assert all(h["url"].startswith(sec_server.url + "/Archives/edgar/data/") for h in result.data)
    assert result.notes[0].startswith("10,000+ documents match; 100 are listed")
    [request] = sec_server.requests_for("/LATEST/search-index")
    assert request.query == {"q": ["climate change"], "forms": ["8-K"], "from": ["0"]}
    assert request.headers["user-agent"].startswith("dexter-tests")


def test_display_names() -> None:
    assert filer_of("DTE ENERGY CO  (DTB, DTE, DTG, DTW)  (CIK 0000936340)") == {
        "name": "DTE ENERGY CO", "tickers": ["DTB", "DTE", "DTG", "DTW"], "cik": 936340}
    assert filer_of("ARIZONA PUBLIC SERVICE CO  (CIK 0000007286)")["tickers"] == []


# SEC's company browser (cgi-bin/browse-edgar?action=getcompany&SIC=...): its results
# table, as the page lays it out (hand-made: no browser page is among the recordings).
SIC_PAGE = """<table class="tableFile2" summary="Results">
<tr><th>CIK</th><th>Company</th><th>State/Country</th></tr>
<tr><td><a href="/cgi-bin/browse-edgar?action=getcompany&amp;CIK=0000320193">0000320193</a></td>
<td>Apple Inc.</td><td>CA</td></tr>
<tr class="blueRow"><td><a href="/cgi-bin/browse-edgar?CIK=0000789019">0000789019</a></td>
<td>MICROSOFT CORP<br/>formerly: MICROSOFT</td><td>WA</td></tr>
<tr><td><a href="/cgi-bin/browse-edgar?CIK=0001318605">0001318605</a></td>
<td>Tesla, Inc.</td><td>TX</td></tr>
<tr><td><a href="/cgi-bin/browse-edgar?CIK=0009999999">0009999999</a></td>
<td>NO FILINGS &amp; CO</td><td>DE</td></tr>
</table>"""


def test_the_company_browser_table() -> None:
    rows = parse_company_list(SIC_PAGE)
    assert [(r["cik"], r["name"], r["state"]) for r in rows] == [
        (320193, "Apple Inc.", "CA"), (789019, "MICROSOFT CORP", "WA"),
        (1318605, "Tesla, Inc.", "TX"), (9999999, "NO FILINGS & CO", "DE")]


async def test_peers_rank_the_sic_companies_by_a_frame(tmp_path: Any,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    # the bundled fixtures: Apple's submissions (SIC 3571) and the CY2023 revenue frame
    with FakeDataServer({"/cgi-bin/browse-edgar": Response(body=SIC_PAGE)}) as server:
        source = sec_source(PeersSource, server)
        try:
            result = await source.peers("AAPL", metric="revenue", period="CY2023", limit=5)
        finally:
            await source.aclose()
        [browse] = server.requests_for("/cgi-bin/browse-edgar")
        assert browse.param("SIC") == "3571" and browse.param("action") == "getcompany"
    rows = {r["cik"]: r for r in result.data}
    assert rows["0000320193"]["is_subject"] and rows["0000320193"]["ticker"] == "AAPL"
    assert rows["0000320193"]["revenue"] == 383_285_000_000
    ranked = [r["ticker"] for r in result.data if r.get("rank")]
    assert ranked == sorted(ranked, key=lambda t: -next(
        r["revenue"] for r in result.data if r["ticker"] == t))
    assert rows["0000320193"]["source_filing"]["accession_number"] == "0000320193-24-000001"
    # a company of the code with no value in the frame is listed without one
    assert "0009999999" not in rows or rows["0009999999"]["revenue"] is None
    assert result.notes[0].startswith("SIC 3571")
