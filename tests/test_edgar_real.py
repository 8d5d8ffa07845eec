"""SEC EDGAR on real SEC responses (Apple and Tesla): figures, fiscal periods, splits,
source filings, filing items and how few requests a read takes.

The recorded bodies in ``tests/fixtures/sec-real/`` are served over HTTP on 127.0.0.1
exactly as SEC laid them out. Expected values come from the published 10-K figures and
from rules written out here independently of dexter's fiscal-calendar code.
"""

from __future__ import annotations

import datetime as dt
import itertools
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from dexter.data.cache import DiskCache
from dexter.data.edgar import EdgarSource
from dexter.data.http import RetryPolicy
from dexter.data.http_source import SourceConnection
from dexter.testing.fakedata import FakeDataServer, RecordedTree, Response

REAL = Path(__file__).parent / "fixtures" / "sec-real"
UA = "dexter-tests tests@example.com"
APPLE_10K = "0000320193-24-000123"
APPLE_10Q = "0000320193-25-000073"
TESLA_10K = "0001628280-25-003063"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeDataServer]:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    with FakeDataServer(fallback=RecordedTree(REAL)) as srv:
        yield srv


@pytest.fixture
async def edgar(server: FakeDataServer, tmp_path: Path) -> AsyncIterator[EdgarSource]:
    source = EdgarSource(SourceConnection(server.url, DiskCache(tmp_path / "cache"),
                                          rate_limiter=None,
                                          retry=RetryPolicy(max_retries=0, backoff_base=0.001),
                                          today=dt.date(2025, 12, 1)),
                         data_url=server.url, user_agent=UA)
    yield source
    await source.aclose()


async def statements(edgar: EdgarSource, kind: str, ticker: str, period: str) -> list[dict[str, Any]]:
    result = await edgar.statements(kind, ticker, period=period, limit=500)  # type: ignore[arg-type]
    return list(result.data)


def by_label(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["fiscal_period"]: r for r in records}


# -- published figures ---------------------------------------------------------------------

async def test_published_figures(edgar: EdgarSource) -> None:
    apple = by_label(await statements(edgar, "income", "AAPL", "annual"))
    assert apple["FY2023"]["revenue"] == 383_285_000_000
    assert apple["FY2023"]["net_income"] == 96_995_000_000
    assert apple["FY2024"]["revenue"] == 391_035_000_000
    assert apple["FY2024"]["earnings_per_share_diluted"] == 6.08
    tesla = by_label(await statements(edgar, "income", "TSLA", "annual"))
    assert tesla["FY2021"]["revenue"] == 53_823_000_000


# -- fiscal periods ---------------------------------------------------------------------------

def apple_label(end: str, annual: bool) -> str:
    """Apple's fiscal year ends on the last Saturday of September (Sep 24 - Oct 1)."""
    date = dt.date.fromisoformat(end)
    year = date.year + (date.month >= 10 or date.month == 12) - (date.month == 10 and date.day <= 7)
    if annual:
        return f"FY{year}"
    quarter = {12: 1, 1: 1, 3: 2, 4: 2, 6: 3, 7: 3, 9: 4, 10: 4}[date.month]
    return f"Q{quarter} {year}"


def tesla_label(end: str, annual: bool) -> str:
    date = dt.date.fromisoformat(end)
    return f"FY{date.year}" if annual else f"Q{(date.month - 1) // 3 + 1} {date.year}"


@pytest.mark.parametrize("ticker", ["AAPL", "TSLA"])
@pytest.mark.parametrize("kind", ["income", "balance", "cash_flow"])
@pytest.mark.parametrize("period", ["annual", "quarterly"])
async def test_one_label_per_period_matching_the_fiscal_calendar(
        edgar: EdgarSource, ticker: str, kind: str, period: str) -> None:
    records = await statements(edgar, kind, ticker, period)
    labels = [r["fiscal_period"] for r in records]
    assert len(records) >= 10
    assert len(labels) == len(set(labels)), sorted(labels)
    rule = apple_label if ticker == "AAPL" else tesla_label
    wrong = [(r["report_period"], r["fiscal_period"]) for r in records
             if r["fiscal_period"] != rule(r["report_period"], period == "annual")]
    assert wrong == []
    ends = [dt.date.fromisoformat(r["report_period"]) for r in records]
    assert all((a - b).days > 60 for a, b in itertools.pairwise(ends))  # no near-twins


async def test_a_restated_value_says_what_was_first_reported(edgar: EdgarSource) -> None:
    apple = by_label(await statements(edgar, "income", "AAPL", "annual"))
    restated = apple["FY2009"]["restated"]["revenue"]  # Apple's 2010 revenue-recognition change
    assert restated.startswith("first reported as 36,537,000,000 in 10-K")
    assert apple["FY2009"]["revenue"] == 42_905_000_000


# -- splits -----------------------------------------------------------------------------------

async def test_per_share_values_are_on_the_latest_split_basis(edgar: EdgarSource) -> None:
    apple = by_label(await statements(edgar, "income", "AAPL", "annual"))
    # FY2017 diluted EPS was reported as 9.21, before the 4-for-1 split of August 2020.
    assert apple["FY2017"]["earnings_per_share_diluted"] == pytest.approx(9.21 / 4, abs=1e-4)
    assert "4-for-1 split" in apple["FY2017"]["split_adjusted"]["earnings_per_share_diluted"]
    assert "as filed: 9.21" in apple["FY2017"]["split_adjusted"]["earnings_per_share_diluted"]
    # FY2018 was restated on the new basis by the FY2020 10-K: nothing to adjust.
    assert apple["FY2018"]["earnings_per_share_diluted"] == 2.98
    assert "split_adjusted" not in apple["FY2018"]
    eps = [apple[f"FY{y}"]["earnings_per_share_diluted"] for y in range(2012, 2025)]
    jumps = [b / a for a, b in itertools.pairwise(eps) if a > 0]
    assert max(jumps) < 2 and min(jumps) > 0.5  # no split-sized steps left in the series
    tesla = by_label(await statements(edgar, "income", "TSLA", "annual"))
    assert tesla["FY2021"]["earnings_per_share_diluted"] == pytest.approx(4.90 / 3, abs=1e-4)
    shares = tesla["FY2021"]["weighted_average_shares_diluted"]
    assert shares == 3 * 1_129_000_000


# -- source filings ---------------------------------------------------------------------------

@pytest.mark.parametrize("ticker", ["AAPL", "TSLA"])
async def test_values_are_attributed_to_periodic_reports(edgar: EdgarSource, ticker: str) -> None:
    forms: set[str] = set()
    for kind in ("income", "balance", "cash_flow"):
        for period in ("annual", "quarterly"):
            for record in await statements(edgar, kind, ticker, period):
                forms.add(record["source_filing"]["form"])
                forms.update(v.split()[0] for v in record.get("field_sources", {}).values())
    assert forms <= {"10-K", "10-Q", "10-K/A", "10-Q/A"}


# -- filing items -----------------------------------------------------------------------------

FIRST_SENTENCES = {
    ("AAPL", APPLE_10K, "10-K"): {
        "Item-1": "Company Background",
        "Item-1A": "The Company’s business, reputation, results of operations, financial "
                   "condition and stock price can be affected by a number of factors",
        "Item-1B": "None.", "Item-4": "Not applicable.", "Item-9": "None.",
        "Item-7": "The following discussion should be read in conjunction with",
        "Item-16": "None.",
    },
    ("AAPL", APPLE_10Q, "10-Q"): {
        "Part-1,Item-3": "There have been no material changes to the Company’s market risk",
        "Part-2,Item-3": "None.", "Part-2,Item-4": "Not applicable.",
        "Part-2,Item-1A": "The Company’s business, reputation, results of operations",
    },
    ("TSLA", TESLA_10K, "10-K"): {
        "Item-1": "Overview", "Item-1B": "None.", "Item-9": "None.", "Item-16": "None.",
        "Item-2": "We are headquartered in Austin, Texas.",
    },
}
_CONTENTS_ROW = re.compile(r"\|\s*\d{1,3}\s*$")


@pytest.mark.parametrize(("ticker", "accession", "form"), list(FIRST_SENTENCES))
async def test_every_item_starts_with_its_own_heading_and_real_text(
        edgar: EdgarSource, ticker: str, accession: str, form: str) -> None:
    listing = await edgar.filing_items(ticker, filing_type=form, accession_number=accession)
    names = [i["name"] for i in listing.data["available_items"]]
    result = await edgar.filing_items(ticker, filing_type=form, accession_number=accession,
                                      items=tuple(names))
    items = {i["name"]: i["text"] for i in result.data["items"]}
    assert len(items) >= (11 if form == "10-Q" else 20)
    for name, text in items.items():
        heading, _, body = text.partition("\n")
        number = name.rsplit("Item-", 1)[1]
        assert re.match(rf"item\s+{re.escape(number)}\b", heading, re.IGNORECASE), (name, heading)
        assert not _CONTENTS_ROW.search(heading), (name, heading)  # not a contents row
        assert body.strip() or "reserved" in heading.lower(), (name, text[:200])
    for name, first in FIRST_SENTENCES[(ticker, accession, form)].items():
        body = items[name].partition("\n")[2].strip()
        assert body.startswith(first), (name, body[:200])


# -- requests ---------------------------------------------------------------------------------

async def test_reading_a_recent_10k_reads_no_older_submissions_page(
        edgar: EdgarSource, server: FakeDataServer) -> None:
    from dexter.tools.finance.subtools import AnnualReportArgs, _read_10k

    result = await _read_10k(edgar, AnnualReportArgs(ticker="TSLA", items=["Item-9"],
                                                     fiscal_year=2024))
    assert result.data["accession_number"] == TESLA_10K
    assert server.requests_for("/submissions/CIK0001318605-submissions-001.json") == []


async def test_a_failed_older_page_does_not_fail_a_listing_already_found(
        edgar: EdgarSource, server: FakeDataServer) -> None:
    server.route("/submissions/CIK0001318605-submissions-001.json", Response(500, "down"))
    result = await edgar.filings("TSLA", filing_types=("10-K",), limit=50)
    assert len(result.data) >= 5
    assert any("could not be read" in note for note in result.notes)


async def test_a_value_names_the_document_and_period_of_its_filing(edgar: EdgarSource) -> None:
    apple = by_label(await statements(edgar, "income", "AAPL", "annual"))
    filing = apple["FY2022"]["source_filing"]  # restated by the FY2024 10-K
    assert filing["accession_number"] == APPLE_10K and filing["form"] == "10-K"
    assert filing["url"].endswith("/320193/000032019324000123/aapl-20240928.htm")
    assert filing["fiscal_period"] == "FY2024" and filing["filed"] == "2024-11-01"
    quarters = by_label(await statements(edgar, "income", "AAPL", "quarterly"))
    q3 = quarters["Q3 2025"]["source_filing"]
    assert q3["accession_number"] == APPLE_10Q and q3["fiscal_period"] == "Q3 2025"
    assert q3["url"].endswith("/000032019325000073/aapl-20250628.htm")
    assert quarters["Q3 2025"]["company_name"] == "Apple Inc."
