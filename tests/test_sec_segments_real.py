"""Segment, geographic and product figures from real filings' XBRL (keyless).

Expected values are read by hand from the documents themselves, not from dexter:

- Apple 10-K FY2024 (``sec-real``, accession 0000320193-24-000123, aapl-20240928.htm),
  Note 13 "Segment Information and Geographic Data" (page 46-47: net sales and operating
  income by reportable segment; net sales and long-lived assets by country) and Part II
  Item 7 "Products and Services Performance" (page 22: net sales by category).
- Tesla 10-K FY2024 (``sec-real``, 0001628280-25-003063), Note "Segment Reporting and
  Information about Geographic Areas": revenues and gross profit by segment.
- Apple 10-Q Q2 FY2025 (``sec-real-more``, 0000320193-25-000057): its XBRL instance and
  label linkbase (``aapl-20250329_lab.xml``, terse label "Wearables, Home and Accessories").
- Apple 10-Q Q3 FY2025 (``sec-real``, 0000320193-25-000073): quarterly segment net sales.
"""

from __future__ import annotations

from typing import Any

import pytest

from dexter.data.base import DataError, NotFoundError
from dexter.data.segments import breakdowns, member_label, resolve_axes
from dexter.data.segments_source import SegmentsSource
from dexter.data.xbrl_facts import display_number, parse_filing, parse_labels
from dexter.testing.fakedata import FakeDataServer
from tests.sec_helpers import MORE, sec_server, sec_source

__all__ = ["sec_server"]
M = 1_000_000
APPLE_10K = "0000320193-24-000123"


def by(records: list[dict[str, Any]], axis: str, period: str) -> dict[str, dict[str, Any]]:
    return {r["segment"]: r for r in records if r["axis"] == axis and r["fiscal_period"] == period}


async def segments(server: FakeDataServer, ticker: str, **kw: Any) -> tuple[list[dict[str, Any]],
                                                                          tuple[str, ...]]:
    source = sec_source(SegmentsSource, server)
    try:
        result = await source.segments(ticker, **kw)
    finally:
        await source.aclose()
    return list(result.data), result.notes


async def test_apple_fy2024_segments_equal_the_10k_segment_note_and_sum_to_net_sales(
        sec_server: FakeDataServer) -> None:
    records, notes = await segments(sec_server, "AAPL", limit=3)
    fy24 = by(records, "Business segment", "FY2024")
    # Note 13, "information by reportable segment ... (in millions)"
    note = {"Americas": (167_045, 67_656), "Europe": (101_328, 41_790),
            "Greater China": (66_952, 27_082), "Japan": (25_052, 12_454),
            "Rest of Asia Pacific": (30_658, 13_062)}
    for segment, (sales, income) in note.items():
        assert fy24[segment]["revenue"] == sales * M, segment
        assert fy24[segment]["operating_income"] == income * M, segment
    # the five segments add up to total net sales (Consolidated Statements of Operations)
    total = sum(fy24[s]["revenue"] for s in note)
    assert total == 391_035 * M == fy24["Total (consolidated)"]["revenue"]
    # segment operating income is reconciled to 123,216 by R&D and corporate costs
    assert fy24["Total of segments"]["operating_income"] == 162_044 * M
    assert fy24["Total (consolidated)"]["operating_income"] == 123_216 * M
    assert ("Business segment, revenue: the 5 members add up to the total (consolidated): "
            "FY2024 ($391,035 million), FY2023 ($383,285 million), FY2022 ($394,328 million)."
            in notes)
    # the comparative years of the same note
    fy22 = by(records, "Business segment", "FY2022")
    assert fy22["Greater China"]["revenue"] == 74_200 * M
    assert fy22["Rest of Asia Pacific"]["operating_income"] == 11_569 * M
    # every record names the 10-K it was read from, with the document's URL
    filing = fy24["Japan"]["source_filing"]
    assert filing["accession_number"] == APPLE_10K and filing["form"] == "10-K"
    assert filing["url"].endswith("/Archives/edgar/data/320193/000032019324000123/"
                                  "aapl-20240928.htm")


async def test_apple_fy2024_geography_and_categories_equal_the_10k(
        sec_server: FakeDataServer) -> None:
    records, notes = await segments(sec_server, "AAPL", limit=1)
    geography = by(records, "Geography", "FY2024")
    # Note 13, net sales by country: U.S., China (with Hong Kong and Taiwan), other countries
    assert geography["United States"]["revenue"] == 142_196 * M
    assert geography["China"]["revenue"] == 66_952 * M
    assert geography["Other Countries"]["revenue"] == 181_887 * M
    assert sum(geography[c]["revenue"] for c in ("United States", "China", "Other Countries")) \
        == 391_035 * M
    product = by(records, "Product or service", "FY2024")
    # Item 7, "net sales by category" (dollars in millions)
    category = {"iPhone": 201_183, "Mac": 29_984, "iPad": 26_694,
                "Wearables Home and Accessories": 37_005, "Services": 96_169}
    for name, sales in category.items():
        assert product[name]["revenue"] == sales * M, name
    assert sum(category.values()) * M == product["Total (consolidated)"]["revenue"]
    # the same axis also holds Products + Services (the income statement's split)
    assert product["Products"]["revenue"] + product["Services"]["revenue"] == 391_035 * M
    assert any("Products + Services each add up to the total (consolidated)" in n
               for n in notes)
    # Services' share of net sales: 96,169 / 391,035
    assert product["Services"]["share_of_total"] == round(96_169 / 391_035, 4) == 0.2459


async def test_a_metric_and_a_member_the_user_names(sec_server: FakeDataServer) -> None:
    records, _ = await segments(sec_server, "AAPL", limit=2, axis="geography",
                                metrics=("long_lived_assets",))
    fy24 = by(records, "Geography", "FY2024")
    # Note 13, long-lived assets as of September 28, 2024 (in millions)
    assert {k: v["long_lived_assets"] for k, v in fy24.items()} == {
        "United States": 35_664 * M, "China": 4_797 * M, "Other Countries": 5_219 * M,
        "Total (consolidated)": 45_680 * M}
    only, _ = await segments(sec_server, "AAPL", limit=1, axis="product", member="services")
    assert {r["segment"] for r in only} == {"Services", "Total (consolidated)"}


async def test_an_axis_the_filing_lacks_names_the_ones_it_has(sec_server: FakeDataServer) -> None:
    with pytest.raises(DataError) as err:
        await segments(sec_server, "AAPL", limit=1, axis="FinancingReceivableVintage")
    assert "No axis named 'FinancingReceivableVintage'" in str(err.value)
    assert "StatementBusinessSegmentsAxis" in str(err.value)
    with pytest.raises(NotFoundError, match="No member matching 'Antarctica'"):
        await segments(sec_server, "AAPL", limit=1, axis="geography", member="Antarctica")


async def test_tesla_fy2024_segment_revenue_and_gross_profit(sec_server: FakeDataServer) -> None:
    records, _ = await segments(sec_server, "TSLA", limit=1, axis="segment")
    fy24 = by(records, "Business segment", "FY2024")
    # Segment note: Automotive 87,604 / 14,810; Energy generation and storage 10,086 / 2,640
    assert fy24["Automotive"]["revenue"] == 87_604 * M
    assert fy24["Automotive"]["gross_profit"] == 14_810 * M
    assert fy24["Energy Generation and Storage"]["revenue"] == 10_086 * M
    assert fy24["Energy Generation and Storage"]["gross_profit"] == 2_640 * M
    assert fy24["Total (consolidated)"]["revenue"] == 97_690 * M


async def test_tesla_q2_2024_10q_instance(sec_server: FakeDataServer) -> None:
    # tsla-20240630_htm.xml, contexts on StatementBusinessSegmentsAxis for 2024-04-01 to
    # 2024-06-30: Revenues 22,486 / 3,014 million, GrossProfit 3,838 / 740 million; the
    # income statement's total (RevenueFromContractWithCustomer...) is 25,500 million
    records, notes = await segments(sec_server, "1318605", period="quarterly", axis="segment",
                                    accession="0001628280-24-032662")
    q2 = by(records, "Business segment", "Q2 2024")
    assert (q2["Automotive"]["revenue"], q2["Automotive"]["gross_profit"]) == (
        22_486 * M, 3_838 * M)
    assert (q2["Energy Generation and Storage"]["revenue"],
            q2["Energy Generation and Storage"]["gross_profit"]) == (3_014 * M, 740 * M)
    assert q2["Total (consolidated)"]["revenue"] == 25_500 * M
    assert any(n.startswith("Business segment, revenue: the 2 members add up") and "Q2 2024"
               in n for n in notes)
    assert by(records, "Business segment", "Q2 2023")["Automotive"]["revenue"] == 23_418 * M


async def test_the_fy2023_10k_instance_agrees_with_the_fy2024_comparatives(
        sec_server: FakeDataServer) -> None:
    # aapl-20230930_htm.xml (10-K FY2023) against the FY2023 column of the FY2024 10-K
    records, _ = await segments(sec_server, "AAPL", axis="segment",
                                accession="0000320193-23-000106")
    fy23 = by(records, "Business segment", "FY2023")
    assert fy23["Americas"]["revenue"] == 162_560 * M
    assert fy23["Japan"]["operating_income"] == 11_888 * M
    assert fy23["Americas"]["source_filing"]["url"].endswith("aapl-20230930_htm.xml")


async def test_one_10q_by_accession_uses_its_instance_and_label_linkbase(
        sec_server: FakeDataServer) -> None:
    records, _ = await segments(sec_server, "320193", period="quarterly", axis="product",
                                accession="0000320193-25-000057")
    q2 = by(records, "Product or service", "Q2 2025")
    # the filing's own labels (terse labels of the label linkbase)
    assert "Wearables, Home and Accessories" in q2 and "Services" in q2
    assert q2["Total (consolidated)"]["revenue"] == 95_359 * M  # Q2 FY2025 net sales
    assert q2["Services"]["source_filing"]["url"].endswith("aapl-20250329_htm.xml")
    assert q2["Services"]["source_filing"]["accession_number"] == "0000320193-25-000057"


async def test_quarters_across_10qs_with_q4_derived_from_the_10k(
        sec_server: FakeDataServer) -> None:
    records, _ = await segments(sec_server, "AAPL", period="quarterly", limit=4,
                                axis="segment", member="Greater China", metrics=("revenue",))
    totals = {r["fiscal_period"]: r for r in records if r["segment"] == "Total (consolidated)"}
    # Q3 FY2025 net sales (10-Q to June 28, 2025) and Q2 FY2025 (10-Q to March 29, 2025)
    assert totals["Q3 2025"]["revenue"] == 94_036 * M
    assert totals["Q2 2025"]["revenue"] == 95_359 * M
    # Q4 FY2024 = FY2024 (391,035) - nine months to June 29, 2024 (119,575 + 90,753 + 85,777)
    q4 = totals["Q4 2024"]
    assert q4["revenue"] == (391_035 - 296_105) * M
    assert "fiscal year (0000320193-24-000123) minus nine months" in q4["derived"]["revenue"]


def test_inline_numbers_scale_sign_and_formats() -> None:
    assert display_number("391,035", "ixt:num-dot-decimal") == 391035
    assert display_number("—", "ixt:fixed-zero") == 0
    assert display_number("1.234,5", "ixt:num-comma-decimal") == 1234.5
    assert display_number("three", "ixt-sec:numwordsen") is None
    html = ('<html xmlns="http://www.w3.org/1999/xhtml" xmlns:ix="http://www.xbrl.org/2013/'
            'inlineXBRL" xmlns:xbrli="http://www.xbrl.org/2003/instance" xmlns:xbrldi='
            '"http://xbrl.org/2006/xbrldi"><body><ix:header><ix:resources>'
            '<xbrli:context id="c1"><xbrli:entity><xbrli:segment><xbrldi:explicitMember '
            'dimension="us-gaap:StatementBusinessSegmentsAxis">x:EastMember</xbrldi:'
            'explicitMember></xbrli:segment></xbrli:entity><xbrli:period><xbrli:startDate>'
            '2024-01-01</xbrli:startDate><xbrli:endDate>2024-12-31</xbrli:endDate></xbrli:'
            'period></xbrli:context><xbrli:unit id="usd"><xbrli:measure>iso4217:USD'
            '</xbrli:measure></xbrli:unit></ix:resources></ix:header>'
            '<ix:nonFraction name="us-gaap:OperatingIncomeLoss" contextRef="c1" unitRef="usd" '
            'decimals="-6" scale="6" sign="-" format="ixt:num-dot-decimal">1,250</ix:nonFraction>'
            '</body></html>')
    [fact] = parse_filing(html).facts
    assert fact.value == -1_250_000_000  # a loss shown as 1,250 with sign="-", in millions
    assert fact.dims == (("us-gaap:StatementBusinessSegmentsAxis", "x:EastMember"),)


def test_labels_from_the_label_linkbase() -> None:
    lab = (MORE / "www.sec.gov/Archives/edgar/data/320193/000032019325000057/"
                  "aapl-20250329_lab.xml").read_bytes()
    labels = parse_labels(lab)
    assert labels["aapl:WearablesHomeandAccessoriesMember"] == "Wearables, Home and Accessories"
    assert labels["us-gaap:ServiceMember"] == "Services"  # the terse label, not "Service [Member]"


def test_member_names_in_words() -> None:
    assert member_label("aapl:RestOfAsiaPacificSegmentMember") == "Rest of Asia Pacific"
    assert member_label("aapl:IPhoneMember") == "iPhone"
    assert member_label("country:DE") == "Germany"
    assert member_label("us-gaap:ServiceMember") == "Services"


def test_axes_by_word_or_name() -> None:
    present = ["us-gaap:StatementBusinessSegmentsAxis", "srt:ProductOrServiceAxis",
               "srt:MajorCustomersAxis"]
    assert resolve_axes("region", present) == ["srt:StatementGeographicalAxis"]
    assert resolve_axes("MajorCustomers", present) == ["srt:MajorCustomersAxis"]
    assert resolve_axes(None, present) == ["us-gaap:StatementBusinessSegmentsAxis",
                                           "srt:ProductOrServiceAxis"]


def test_breakdowns_find_each_split_that_adds_up() -> None:
    members = [("Products", 294.0), ("Services", 96.0), ("iPhone", 201.0), ("Mac", 30.0),
               ("iPad", 27.0), ("Wearables", 36.0)]
    found = [set(f) for f in breakdowns(members, 390.0)]
    assert {"iPhone", "Services", "Mac", "Wearables", "iPad"} in found
    assert {"Products", "Services"} in found
    assert breakdowns(members, 1.0) == []
