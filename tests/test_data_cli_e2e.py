"""End to end: ``dexter data`` with no model and no key, the real command in a subprocess,
against a local server of the recorded real SEC responses (``tests/fixtures/sec-real``
and ``sec-real-more``, served by URL path; the SEC hosts moved there by their base-URL
settings).

The recorded Apple submissions list names Form 4s newer than the recorded ones, so the
insider commands pick the recorded filings by date range or accession number.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from dexter.testing.fakedata import FakeDataServer, RecordedTree, Response
from tests.cli_helpers import CliResult, cli_env, run_cli
from tests.sec_helpers import MORE, REAL

pytestmark = pytest.mark.e2e
M = 1_000_000


@pytest.fixture
def sec() -> Iterator[FakeDataServer]:
    with FakeDataServer(fallback=RecordedTree(REAL, MORE)) as server:
        yield server


def data(sec: FakeDataServer, tmp_path: Path, *args: str, **env: str) -> CliResult:
    base = cli_env(None, tmp_path, **{"SEC_EDGAR_BASE_URL": sec.url,
                                      "SEC_EDGAR_DATA_URL": sec.url,
                                      "SEC_EDGAR_FTS_URL": sec.url + "/LATEST", **env})
    assert not any(k.endswith("_API_KEY") for k in base)  # no model key, no data key
    result = run_cli(["data", *args], cwd=tmp_path, env=base)
    assert "Traceback" not in result.stdout + result.stderr
    return result


def test_statements_to_a_spreadsheet(sec: FakeDataServer, tmp_path: Path) -> None:
    from openpyxl import load_workbook

    result = data(sec, tmp_path, "statements", "AAPL", "--output", "aapl.xlsx")
    assert result.code == 0, result.stderr
    assert "Wrote aapl.xlsx (1 table)." in result.stdout
    book = load_workbook(tmp_path / "aapl.xlsx")
    [sheet] = [book[n] for n in book.sheetnames if n not in ("Report", "Sources")]
    cells = [[c.value for c in row] for row in sheet.iter_rows()]
    header = next(row for row in cells if row and "FY2024" in row)
    column = header.index("FY2024")
    # Apple FY2024 revenue and net income (10-K), as numbers
    values = [row[column] for row in cells if len(row) > column]
    assert 391_035 * M in values and 93_736 * M in values
    sources = [[c.value for c in row] for row in book["Sources"].iter_rows()]
    assert any("SEC EDGAR (XBRL company facts)" in str(c) for row in sources for c in row)


def test_statements_on_the_terminal_in_millions(sec: FakeDataServer, tmp_path: Path) -> None:
    result = data(sec, tmp_path, "statements", "AAPL", "--limit", "2")
    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    revenue = next(line for line in lines if line.strip().startswith("Revenue"))
    assert "391,035" in revenue and "416,161" in revenue  # FY2024 and FY2025, $ millions
    eps = next(line for line in lines if line.strip().startswith("EPS, diluted"))
    assert "6.08" in eps and "7.46" in eps
    assert "USD millions" in result.stdout
    assert "_" not in revenue and "net_income" not in result.stdout  # labels, not fields


def test_a_statement_reads_like_the_reports(sec: FakeDataServer, tmp_path: Path) -> None:
    result = data(sec, tmp_path, "statements", "AAPL", "--kind", "all", "--limit", "1")
    assert result.code == 0, result.stderr
    out = " ".join(result.stdout.split())  # rich wraps long notes
    lines = result.stdout.splitlines()
    # Apple's FY2025 10-K: 14,948,500,000 weighted basic shares; 14,773 million outstanding
    basic = next(line for line in lines
                 if line.strip().startswith("Weighted average shares, basic"))
    assert basic.split()[-1] == "14,948"  # millions, as the reports show them
    capex = next(line for line in lines if line.strip().startswith("Capital expenditure"))
    assert capex.split()[-1] == "(12,715)"
    # each table names the units it holds, and only those
    assert "USD millions, except per-share values (USD); shares in millions." in out
    assert "USD millions; shares in millions." in out  # the balance sheet
    assert "prices" not in out.split("Source:")[0]
    # the notes are words for a reader: no field names
    notes = out.split("Source:")[1]
    assert "most recently filed in a 10-K or 10-Q" in notes
    assert "Payments (capital expenditure, dividends paid, share repurchases)" in notes
    for field in ("source_filing", "'derived'", "split_adjusted", "'restated'", "_"):
        assert field not in notes.replace("http", "").split("Note:", 1)[1], field


def test_segment_tables_name_only_their_units(sec: FakeDataServer, tmp_path: Path) -> None:
    result = data(sec, tmp_path, "segments", "AAPL")
    assert result.code == 0, result.stderr
    assert "USD millions." in result.stdout
    assert "per-share" not in result.stdout and "share counts" not in result.stdout


def test_a_missing_search_service_reads_plainly(sec: FakeDataServer, tmp_path: Path) -> None:
    result = data(sec, tmp_path, "search", "iphone", SEC_EDGAR_FTS_URL=sec.url + "/nowhere")
    assert result.code == 1
    assert "SEC EDGAR has no full-text search service at this address (HTTP 404)" in \
        result.stderr
    assert "no EDGAR full-text" not in result.stderr


def test_segments_as_json_records(sec: FakeDataServer, tmp_path: Path) -> None:
    result = data(sec, tmp_path, "segments", "AAPL", "--json")
    assert result.code == 0, result.stderr
    records = json.loads(result.stdout)
    fy24 = {r["segment"]: r for r in records
            if r["axis"] == "Business segment" and r["fiscal_period"] == "FY2024"}
    # Apple's 10-K FY2024, Note 13
    assert fy24["Americas"]["revenue"] == 167_045 * M
    assert fy24["Greater China"]["operating_income"] == 27_082 * M
    members = [r for r in fy24.values() if not r["is_total"]]
    assert sum(r["revenue"] for r in members) == fy24["Total (consolidated)"]["revenue"] \
        == 391_035 * M
    assert all(r["source_filing"]["url"].endswith("aapl-20240928.htm") for r in records)


def test_insiders_on_the_terminal(sec: FakeDataServer, tmp_path: Path) -> None:
    result = data(sec, tmp_path, "insiders", "AAPL", "--since", "2024-08-01",
                  "--until", "2024-08-31")
    assert result.code == 0, result.stderr
    out = result.stdout
    assert "KONDO CHRIS" in out and "Adams" in out
    kondo = next(line for line in out.splitlines() if "2024-08-15" in line)
    assert "S sale" in kondo and "8,706" in kondo and "225.00" in kondo and "15,419" in kondo
    assert "wk-form4_1724106610.xml" in out  # each filing read, with its link
    one = data(sec, tmp_path, "insiders", "320193", "--accession", "0000320193-24-000098")
    assert one.code == 0, one.stderr
    assert "WILLIAMS" in one.stdout and "A grant" in one.stdout
    assert "yes" in one.stdout  # derivative rows (restricted stock units)


def test_insiders_without_readable_filings_say_what_to_try(sec: FakeDataServer,
                                                           tmp_path: Path) -> None:
    # the ten newest Form 4s of the recorded list were not recorded
    result = data(sec, tmp_path, "insiders", "AAPL")
    assert result.code == 1
    assert "None of the 10 latest Form 4 filings of AAPL could be read" in result.stderr
    assert "--since/--until" in result.stderr


@pytest.mark.parametrize(("cik", "accession", "apple_or_first", "value", "total"), [
    ("1619124", "0001619124-21-000002", "APPLE INC", 230_054_000, 732_158_000),
    ("1045810", "0001045810-24-000108", "ARM HOLDINGS PLC", 245_078_392, 332_688_337),
])
def test_holdings_as_csv_in_dollars(sec: FakeDataServer, tmp_path: Path, cik: str,
                                    accession: str, apple_or_first: str, value: int,
                                    total: int) -> None:
    result = data(sec, tmp_path, "holdings", cik, "--accession", accession, "--csv")
    assert result.code == 0, result.stderr
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    first = next(r for r in rows if r["issuer"] == apple_or_first)
    assert int(first["value"]) == value
    assert sum(int(r["value"]) for r in rows) == total  # the cover page's total, in dollars
    assert first["source_filing.accession_number"] == accession
    assert {"cusip", "shares", "put_call", "investment_discretion", "value_unit"} <= set(rows[0])


def test_search_on_the_terminal_with_links(sec: FakeDataServer, tmp_path: Path) -> None:
    result = data(sec, tmp_path, "search", "climate change", "--form", "8-K", "--limit", "5")
    assert result.code == 0, result.stderr
    assert "CANADIAN PACIFIC RAILWAY LTD/CN" in result.stdout
    assert (f"[1] {sec.url}/Archives/edgar/data/16875/000095014220002702/eh200118123_ex9901.htm"
            in result.stdout)
    assert "10,000+ documents match" in result.stdout


def test_releases_and_filings_by_accession(sec: FakeDataServer, tmp_path: Path) -> None:
    result = data(sec, tmp_path, "releases", "ADBE", "--accession", "0000796343-23-000044")
    assert result.code == 0, result.stderr
    assert "Adobe Reports Record Revenue in Q1 Fiscal 2023" in result.stdout
    revenue = next(line for line in result.stdout.splitlines()
                   if line.strip().startswith("Revenue"))
    assert "4,655" in revenue and "4,262" in revenue
    assert "Financial Targets" in result.stdout
    listing = data(sec, tmp_path, "filings", "ADBE", "--accession", "0000796343-23-000044")
    assert listing.code == 0 and "EX-99.1" in listing.stdout


def test_segments_report_as_html(sec: FakeDataServer, tmp_path: Path) -> None:
    result = data(sec, tmp_path, "segments", "AAPL", "--axis", "geography", "--output",
                  "reports/geo.html")
    assert result.code == 0, result.stderr
    html = (tmp_path / "reports" / "geo.html").read_text()
    assert "Geography: Greater China" not in html  # geography members are countries
    assert "Geography: United States" in html and "dexter data segments AAPL" in html


def test_errors_say_what_to_do(sec: FakeDataServer, tmp_path: Path) -> None:
    unknown = data(sec, tmp_path, "statements", "APPL")
    assert unknown.code == 1
    assert "Unknown ticker 'APPL'" in unknown.stderr and "AAPL (Apple Inc.)" in unknown.stderr
    both = data(sec, tmp_path, "facts", "AAPL", "--json", "--csv")
    assert both.code == 2 and "--json or --csv, not both" in both.stderr
    date = data(sec, tmp_path, "insiders", "AAPL", "--since", "August")
    assert date.code == 2 and "YYYY-MM-DD" in date.stderr
    bad = data(sec, tmp_path, "statements", "AAPL", "--kind", "profit")
    assert bad.code == 2 and "income, balance, cash-flow, all" in bad.stderr
    nowhere = data(sec, tmp_path, "facts", "AAPL", "--output", "x.docx")
    assert nowhere.code == 2 and ".xlsx" in nowhere.stderr


def test_offline_and_refused(sec: FakeDataServer, tmp_path: Path) -> None:
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}"
    offline = run_cli(["data", "facts", "AAPL"], cwd=tmp_path, env=cli_env(
        None, tmp_path, SEC_EDGAR_BASE_URL=dead, SEC_EDGAR_DATA_URL=dead))
    assert offline.code == 1
    assert "Could not reach SEC EDGAR" in offline.stderr
    assert "check the connection" in offline.stderr
    sec.route("/files/company_tickers.json", Response(
        429, "Too Many Requests", headers={"Retry-After": "0"}, content_type="text/plain"))
    limited = data(sec, tmp_path, "facts", "AAPL")
    assert limited.code == 1 and "rate limiting requests (HTTP 429)" in limited.stderr
    assert "Wait a minute" in limited.stderr
    # what SEC answers a client whose User-Agent it does not accept
    sec.route("/files/company_tickers.json", Response(
        403, "<html>Your request has been identified as automated</html>"))
    refused = data(sec, tmp_path, "facts", "AAPL")
    assert refused.code == 1 and "refused the request" in refused.stderr
    assert "SEC_EDGAR_USER_AGENT" in refused.stderr


def test_prices_screen_and_facts_from_the_bundled_fixtures(data: FakeDataServer,
                                                           tmp_path: Path) -> None:
    env = cli_env(None, tmp_path, SEC_EDGAR_BASE_URL=data.url, SEC_EDGAR_DATA_URL=data.url,
                  YAHOO_CHART_BASE_URL=data.url)
    # Yahoo's chart endpoint, a real recorded reply (tests/fixtures/prices-real)
    prices = run_cli(["data", "prices", "GS", "--start", "2023-10-02", "--end", "2023-10-09",
                      "--json"], cwd=tmp_path, env=env)
    assert prices.code == 0, prices.stderr
    bars = {b["date"]: b for b in json.loads(prices.stdout)["prices"]}
    assert bars["2023-10-09"]["close"] == 312.61 and bars["2023-10-02"]["close"] == 318.5
    table = run_cli(["data", "prices", "GS", "--start", "2023-10-02", "--end", "2023-10-09"],
                    cwd=tmp_path, env=env)
    assert "312.61" in table.stdout and "Yahoo Finance" in table.stdout
    # SEC's XBRL frames (the bundled CY2023 revenue frame)
    screen = run_cli(["data", "screen", "revenue>3e11", "--period", "CY2023", "--csv"],
                     cwd=tmp_path, env=env)
    assert screen.code == 0, screen.stderr
    rows = list(csv.DictReader(io.StringIO(screen.stdout)))
    assert [(r["ticker"], int(r["revenue"])) for r in rows] == [("AAPL", 383_285_000_000)]
    bad = run_cli(["data", "screen", "revenue is big"], cwd=tmp_path, env=env)
    assert bad.code == 2 and "revenue>1e11" in bad.stderr
    facts = run_cli(["data", "facts", "AAPL"], cwd=tmp_path, env=env)
    assert facts.code == 0 and "Apple Inc." in facts.stdout and "0000320193" in facts.stdout
