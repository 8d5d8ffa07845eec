"""13F-HR holdings of three real managers (keyless), before and after the 2023 value-scale
change.

The rule (SEC Release No. 34-95148, Form 13F amendments): a report filed before
2023-01-03 states column 4 in thousands of dollars, one filed on or after it in dollars,
whatever quarter it reports. The three recorded filings (``sec-real-more``, full
submissions ``.txt``) cover each case; the expected values are read by hand from them:

- ACTIAM N.V., quarter 2020-12-31, filed 2021-02-12: in thousands. Cover page
  ``tableValueTotal`` 732158 over 5 rows; Apple 1,733,777 shares valued 230054 (x 1,000 =
  $230,054,000, $132.69 a share: Apple's close on 2020-12-31).
- MetLife Inc, quarter 2021-12-31, filed 2023-03-23 (an old quarter on the new form): in
  dollars. ``tableValueTotal`` 11019796 over 6 rows.
- NVIDIA Corp as manager, quarter 2024-03-31, filed 2024-05-15: in dollars.
  ``tableValueTotal`` 332688337 over 4 rows; Arm 1,960,784 shares, $245,078,392.
"""

from __future__ import annotations

from typing import Any

import pytest

from dexter.data.base import DataError
from dexter.data.holdings import (
    HoldingsSource,
    compare,
    previous_quarter,
    quarter_end,
    unit_doubt,
    value_multiplier,
)
from dexter.testing.fakedata import FakeDataServer
from tests.sec_helpers import sec_server, sec_source

__all__ = ["sec_server"]

CASES = [
    ("1619124", "0001619124-21-000002", "ACTIAM N.V.", "2020-12-31", "2021-02-12",
     732_158 * 1000, 5, "thousands"),
    ("1099219", "0001140361-23-013281", "METLIFE INC", "2021-12-31", "2023-03-23",
     11_019_796, 6, "dollars"),
    ("1045810", "0001045810-24-000108", "NVIDIA CORP", "2024-03-31", "2024-05-15",
     332_688_337, 4, "dollars"),
]


async def holdings(server: FakeDataServer, **kw: Any) -> Any:
    source = sec_source(HoldingsSource, server)
    try:
        return await source.institutional_holdings(**kw)
    finally:
        await source.aclose()


@pytest.mark.parametrize(("cik", "accession", "manager", "quarter", "filed", "total", "rows",
                          "unit"), CASES, ids=[c[2] for c in CASES])
async def test_the_table_adds_up_to_the_cover_page_total_in_dollars(
        sec_server: FakeDataServer, cik: str, accession: str, manager: str, quarter: str,
        filed: str, total: int, rows: int, unit: str) -> None:
    result = await holdings(sec_server, filer_cik=cik, accession=accession, limit=0)
    assert len(result.data) == rows
    assert sum(r["value"] for r in result.data) == total
    assert {r["value_unit"] for r in result.data} == {unit}
    assert {r["manager"] for r in result.data} == {manager}
    assert {r["report_period"] for r in result.data} == {quarter}
    filing = result.data[0]["source_filing"]
    assert filing["accession_number"] == accession and filing["filed"] == filed
    assert filing["form"] == "13F-HR"
    assert any(f"add up to the cover page's total, ${total:,}" in n for n in result.notes)


async def test_positions_keep_the_filed_number_and_their_terms(sec_server: FakeDataServer) -> None:
    actiam = await holdings(sec_server, filer_cik="1619124", accession="0001619124-21-000002",
                            limit=0)
    apple = next(r for r in actiam.data if r["cusip"] == "037833100")
    assert (apple["issuer"], apple["shares"], apple["value_as_filed"], apple["value"]) == (
        "APPLE INC", 1_733_777, 230_054, 230_054_000)
    assert apple["value"] / apple["shares"] == pytest.approx(132.69, abs=0.01)
    assert (apple["share_type"], apple["investment_discretion"], apple["voting_sole"]) == (
        "SH", "SOLE", 1_733_777)
    nvidia = await holdings(sec_server, filer_cik="1045810", accession="0001045810-24-000108",
                            limit=2)
    assert [r["issuer"] for r in nvidia.data] == ["ARM HOLDINGS PLC",
                                                  "RECURSION PHARMACEUTICALS IN"]
    assert nvidia.data[0]["value"] == 245_078_392 and nvidia.data[0]["shares"] == 1_960_784
    assert any("The 2 largest of 4 rows" in n for n in nvidia.notes)


def test_the_scale_rule_turns_on_the_filing_date() -> None:
    assert value_multiplier("2023-01-02") == 1000
    assert value_multiplier("2023-01-03") == 1
    assert value_multiplier("2021-02-12") == 1000
    assert value_multiplier(None) == 1


def test_a_filer_who_got_the_unit_wrong_is_noted() -> None:
    # a pre-2023 report whose values were already in dollars: x1000 gives $100k+ a share
    rows = [{"share_type": "SH", "put_call": None, "shares": 1_000, "value": v * 1000}
            for v in (150_000, 90_000, 300_000)]
    assert "over $100,000 a share" in str(unit_doubt(rows))
    assert unit_doubt([{"share_type": "SH", "shares": 10, "value": 1500}] * 3) is None


def test_the_change_between_two_quarters() -> None:
    # the later quarter: ACTIAM's real rows (dollars); the earlier: the same book with Apple
    # trimmed, Microsoft added to and Amazon not yet bought (made up for the comparison)
    later = [{"issuer": "APPLE INC", "cusip": "037833100", "title_of_class": "Common stock",
              "shares": 1_733_777, "value": 230_054_000},
             {"issuer": "MICROSOFT CORP", "cusip": "594918104", "title_of_class": "Common stock",
              "shares": 1_009_277, "value": 224_483_000},
             {"issuer": "AMAZON.COM INC", "cusip": "023135106", "title_of_class": "Common stock",
              "shares": 46_688, "value": 152_059_000}]
    earlier = [{**later[0], "shares": 2_000_000, "value": 230_000_000},
               {**later[1], "shares": 900_000, "value": 190_000_000},
               {"issuer": "TESLA INC", "cusip": "88160R101", "title_of_class": "Common stock",
                "shares": 10_000, "value": 5_000_000}]
    changes = {c["issuer"]: c for c in compare(earlier, later, previous_period="2020-09-30",
                                               current_period="2020-12-31")}
    assert changes["AMAZON.COM INC"]["status"] == "new"
    assert changes["TESLA INC"]["status"] == "sold out"
    assert changes["TESLA INC"]["shares_after"] == 0
    assert changes["APPLE INC"]["status"] == "reduced"
    assert changes["APPLE INC"]["shares_change"] == 1_733_777 - 2_000_000
    assert changes["MICROSOFT CORP"]["status"] == "added"
    assert changes["MICROSOFT CORP"]["shares_change_pct"] == round(109_277 / 900_000, 4)


def test_quarters() -> None:
    assert quarter_end("2024Q1") == quarter_end("Q1 2024") == quarter_end("2024-02-10") \
        == "2024-03-31"
    assert previous_quarter("2024-03-31") == "2023-12-31"
    assert previous_quarter("2024-09-30") == "2024-06-30"
    with pytest.raises(DataError, match="not a quarter"):
        quarter_end("spring")


def _submissions(rows: list[tuple[str, str, str, str]]) -> dict[str, Any]:
    """A manager's submissions feed (SEC's layout: parallel arrays), hand-made around the
    recorded ACTIAM filing."""
    return {"cik": "1619124", "name": "ACTIAM N.V.", "filings": {"recent": {
        "accessionNumber": [r[0] for r in rows], "form": [r[1] for r in rows],
        "filingDate": [r[2] for r in rows], "reportDate": [r[3] for r in rows],
        "primaryDocument": ["xslForm13F_X02/primary_doc.xml"] * len(rows)}}}


async def test_a_quarter_from_the_managers_filing_list(sec_server: FakeDataServer) -> None:
    sec_server.route("/submissions/CIK0001619124.json", _submissions([
        ("0001619124-21-000009", "13F-HR", "2021-05-14", "2021-03-31"),
        ("0001619124-21-000002", "13F-HR", "2021-02-12", "2020-12-31"),
        ("0001619124-20-000007", "13F-NT", "2020-11-13", "2020-09-30")]))
    result = await holdings(sec_server, filer_cik="1619124", quarter="Q4 2020", limit=0)
    assert sum(r["value"] for r in result.data) == 732_158_000
    assert result.data[0]["source_filing"]["accession_number"] == "0001619124-21-000002"
    with pytest.raises(DataError) as err:
        await holdings(sec_server, filer_cik="1619124", quarter="2019Q4")
    assert "No 13F-HR of ACTIAM N.V. for the quarter ending 2019-12-31" in str(err.value)
    assert "Quarters filed: 2021-03-31, 2020-12-31" in str(err.value)


async def test_who_holds_a_company_is_not_keyless(sec_server: FakeDataServer) -> None:
    with pytest.raises(DataError, match="cannot list who holds AAPL"):
        await holdings(sec_server, ticker="AAPL")
