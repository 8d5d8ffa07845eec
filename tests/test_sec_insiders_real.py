"""Insider transactions from real Apple Form 4s (keyless).

Every table row of the five recorded Form 4 XML documents (``sec-real-more``) is checked
against the values read by hand from those documents: transaction code, shares, price per
share, acquired or disposed, shares owned after, direct or indirect, derivative or not.
The filings are found through Apple's real submissions list (``sec-real``), which names
each Form 4's primary document (``xslF345X05/wk-form4_1723069808.xml``: its XML is the file
without the rendering folder).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dexter.data.base import DateFilter, NotFoundError
from dexter.data.insiders import InsiderSource, code_meaning, name_matches, parse_ownership
from dexter.testing.fakedata import FakeDataServer
from tests.sec_helpers import MORE, sec_server, sec_source

__all__ = ["sec_server"]
FOLDER = MORE / "www.sec.gov/Archives/edgar/data/320193"

# (accession, owner, role, [(date, code, shares, price, A/D, owned after, D/I, derivative)])
EXPECTED: list[tuple[str, str, str, list[tuple[str, str, int, float, str, int, str, bool]]]] = [
    ("0000320193-24-000084", "Adams Katherine L.", "SVP, GC and Secretary", [
        ("2024-08-05", "S", 97_600, 206.42, "disposed", 193_943, "direct", False),
        ("2024-08-05", "S", 2_400, 207.05, "disposed", 191_543, "direct", False),
        ("2024-08-07", "G", 4_500, 0, "disposed", 187_043, "direct", False)]),
    ("0000320193-24-000086", "KONDO CHRIS", "Principal Accounting Officer", [
        ("2024-08-09", "S", 5_178, 216.50, "disposed", 24_125, "direct", False)]),
    ("0000320193-24-000088", "KONDO CHRIS", "Principal Accounting Officer", [
        ("2024-08-15", "S", 8_706, 225, "disposed", 15_419, "direct", False)]),
    ("0000320193-24-000098", "WILLIAMS JEFFREY E", "COO", [
        ("2024-09-29", "A", 43_901, 0, "acquired", 43_901, "direct", True),
        ("2024-09-29", "A", 43_901, 0, "acquired", 43_901, "direct", True)]),
    ("0000320193-20-000086", "Maestri Luca", "Senior Vice President, CFO", [
        ("2020-10-09", "S", 243_431, 116.89, "disposed", 110_272, "direct", False)]),
]


def _rows(record_list: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(r["transaction_date"], r["transaction_code"], r["transaction_shares"],
             r["transaction_price_per_share"], r["acquired_disposed"], r["shares_owned_after"],
             r["direct_or_indirect"], r["is_derivative"]) for r in record_list]


@pytest.mark.parametrize(("accession", "owner", "role", "rows"), EXPECTED,
                         ids=[e[0] for e in EXPECTED])
async def test_every_form4_row_by_accession(sec_server: FakeDataServer, accession: str,
                                            owner: str, role: str,
                                            rows: list[tuple[Any, ...]]) -> None:
    source = sec_source(InsiderSource, sec_server)
    try:
        result = await source.insider_trades("AAPL", accession=accession)
    finally:
        await source.aclose()
    assert _rows(result.data) == rows
    for record in result.data:
        assert record["owner"] == owner and record["role"] == role
        assert record["ticker"] == "AAPL"
        assert record["transaction_type"] == code_meaning(record["transaction_code"])
        filing = record["source_filing"]
        assert filing["accession_number"] == accession and filing["form"] == "4"
        assert "/Archives/edgar/data/320193/" + accession.replace("-", "") in filing["url"]


async def test_form4s_in_a_date_range_from_the_submissions_list(
        sec_server: FakeDataServer) -> None:
    source = sec_source(InsiderSource, sec_server)
    try:
        result = await source.insider_trades(
            "AAPL", limit=20, filters=DateFilter(gte="2024-08-01", lte="2024-08-31"))
    finally:
        await source.aclose()
    # the three Form 4s Apple's submissions list dates August 2024, newest first
    assert [r["source_filing"]["accession_number"] for r in result.data] == [
        "0000320193-24-000088", "0000320193-24-000086", "0000320193-24-000084",
        "0000320193-24-000084", "0000320193-24-000084"]
    assert [r["filing_date"] for r in result.data][:2] == ["2024-08-19", "2024-08-13"]
    # the XML was read, not the XSL rendering the list names
    paths = [r.path for r in sec_server.requests if r.path.endswith(".xml")]
    assert all("/xsl" not in p for p in paths) and len(paths) == 3
    adams = [r for r in result.data if r["owner"] == "Adams Katherine L."]
    assert adams[0]["transaction_value"] == pytest.approx(97_600 * 206.42)


async def test_a_name_as_the_user_writes_it(sec_server: FakeDataServer) -> None:
    source = sec_source(InsiderSource, sec_server)
    try:
        result = await source.insider_trades(
            "AAPL", name="Chris Kondo", filters=DateFilter(gte="2024-08-01", lte="2024-08-31"))
        with pytest.raises(NotFoundError, match="SEC writes it last name first"):
            await source.insider_trades("AAPL", name="Tim Cook",
                                        filters=DateFilter(gte="2024-08-01", lte="2024-08-31"))
    finally:
        await source.aclose()
    assert {r["owner"] for r in result.data} == {"KONDO CHRIS"}
    assert [r["transaction_shares"] for r in result.data] == [8_706, 5_178]


def test_the_10b5_1_plan_footnote_and_derivative_details() -> None:
    maestri = parse_ownership((FOLDER / "000032019320000086/wf-form4_160262821333467.xml")
                              .read_bytes())
    [row] = maestri["rows"]
    assert row["rule_10b5_1_plan"] is True  # footnote F1: "a Rule 10b5-1 trading plan"
    assert any("weighted average sale price" in n for n in row["footnotes"])
    williams = parse_ownership((FOLDER / "000032019324000098/wk-form4_1727821948.xml")
                               .read_bytes())
    first = williams["rows"][0]
    assert first["security"] == "Restricted Stock Unit"
    assert first["underlying_security"] == "Common Stock" and first["underlying_shares"] == 43_901
    assert "rule_10b5_1_plan" not in first


def test_codes_and_names() -> None:
    assert code_meaning("S") == "open-market or private sale"
    assert code_meaning("F") == "payment of exercise price or tax withholding with shares"
    assert code_meaning("M").startswith("exercise or conversion of a derivative")
    assert code_meaning("Q") == ""
    assert name_matches("COOK TIMOTHY D", "Tim Cook")
    assert name_matches("Adams Katherine L.", "katherine adams")
    assert not name_matches("KONDO CHRIS", "Tim Cook")


def test_a_document_with_an_entity_is_refused_not_expanded() -> None:
    bomb = ('<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "aaaaaaaaaa">'
            '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><ownershipDocument>'
            '<documentType>&b;</documentType></ownershipDocument>')
    parsed = parse_ownership(bomb)
    assert "aaaaaaaaaa" not in str(parsed)


def test_an_external_entity_is_not_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-VALUE")
    doc = (f'<?xml version="1.0"?><!DOCTYPE d [<!ENTITY x SYSTEM "file://{secret}">]>'
           f'<ownershipDocument><documentType>&x;</documentType></ownershipDocument>')
    assert "TOP-SECRET-VALUE" not in str(parse_ownership(doc))
