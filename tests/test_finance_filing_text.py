"""HTML to text and item splitting of SEC filing documents."""

from __future__ import annotations

from pathlib import Path

import pytest

from dexter.data.filing_text import base_form, html_to_text, normalize_item, split_items

TOC_FIRST = """Table of Contents
Item 1. Business 3
Item 1A. Risk Factors 9
Item 7. Management's Discussion 30
PART I
Item 1. Business
We make widgets. Many widgets, in several colours, sold worldwide.
Item 1A. Risk Factors
Widget demand may fall. Our suppliers may fail. Competition is intense.
Item 7. Management's Discussion and Analysis
Revenue grew 10% on higher widget volume and pricing.
"""


def test_html_to_text_drops_hidden_xbrl_and_flattens_tables() -> None:
    html = ("<html><head><style>x{}</style></head><body><div style='display:none'>"
            "<ix:header>hidden facts</ix:header></div><p>Net&#160;sales</p>"
            "<table><tr><td>Revenue</td><td>$</td><td>391,035</td></tr></table>"
            "<script>var x</script></body></html>")
    text = html_to_text(html)
    assert "hidden facts" not in text and "var x" not in text
    assert "Net sales" in text
    assert "Revenue | $391,035" in text


REAL = Path(__file__).parent / "fixtures" / "sec-real" / "www.sec.gov" / "Archives" / "edgar" / \
    "data"


@pytest.fixture(scope="module")
def apple_10k() -> list[str]:
    """Apple's FY2024 10-K (the real EDGAR document) as text lines."""
    path = REAL / "320193" / "000032019324000123" / "aapl-20240928.htm"
    return html_to_text(path.read_text(encoding="utf-8")).splitlines()


@pytest.fixture(scope="module")
def tesla_10k() -> list[str]:
    """Tesla's FY2024 10-K (the real EDGAR document) as text lines."""
    path = REAL / "1318605" / "000162828025003063" / "tsla-20241231.htm"
    return html_to_text(path.read_text(encoding="utf-8")).splitlines()


def _line(lines: list[str], start: str) -> str:
    return next(line for line in lines if line.startswith(start))


def test_a_real_10k_keeps_each_unit_with_its_number(apple_10k: list[str]) -> None:
    """The filing's "$" and "%" sit in cells of their own; the text reads them with their
    numbers (the dollar sign before an amount, the percent sign after a rate, a negative
    rate's parentheses before it)."""
    assert _line(apple_10k, "Total net sales |") == \
        "Total net sales | $391,035 | 2% | $383,285 | (3)% | $394,328"
    assert _line(apple_10k, "Effective tax rate |") == \
        "Effective tax rate | 24.1% | 14.7% | 16.2%"
    assert _line(apple_10k, "iPhone |") == \
        "iPhone | $201,183 | —% | $200,583 | (2)% | $205,489"


def test_a_unit_over_a_header_column_is_left_out(tesla_10k: list[str]) -> None:
    """Tesla's "Change | $ | %" header cells name columns, not numbers: they are not glued
    to the years beside them, and the rows below keep their own units."""
    assert "(Dollars in millions) | 2024 | 2023 | 2022" in tesla_10k
    assert not any("2022%" in line or "2024$" in line for line in tesla_10k)
    assert _line(tesla_10k, "Automotive sales |") == \
        "Automotive sales | $72,480 | $78,509 | $67,210 | $(6,029) | (8)% | $11,299 | 17%"
    assert _line(tesla_10k, "Effective tax rate |") == "Effective tax rate | 20% | (50)% | 8%"


def test_a_closing_parenthesis_cell_closes_its_negative() -> None:
    html = ("<table><tr><td>Other income</td><td>(</td><td>(1,234</td><td>)</td>"
            "<td>$</td><td>Total</td><td>%</td></tr></table>")
    assert html_to_text(html) == "Other income | ( | (1,234) | Total"


def test_split_skips_the_table_of_contents() -> None:
    items = split_items(TOC_FIRST, "10-K")
    assert list(items) == ["Item-1", "Item-1A", "Item-7"]
    assert items["Item-1A"].startswith("Item 1A. Risk Factors\nWidget demand")
    assert "Revenue grew 10%" in items["Item-7"]


def test_cross_references_inside_sentences_are_not_headings() -> None:
    text = TOC_FIRST.replace("We make widgets.", "We make widgets, see Item 7 for results.")
    assert "see Item 7 for results" in split_items(text, "10-K")["Item-1"]


def test_eight_k_uses_dotted_items_only() -> None:
    text = "Item 2.02 Results of Operations\nRevenue was up.\nItem 9.01 Exhibits\n99.1 Release"
    assert list(split_items(text, "8-K")) == ["Item-2.02", "Item-9.01"]
    assert split_items("Item 7. Something\nbody", "8-K") == {}


def test_ten_q_items_follow_their_part() -> None:
    text = ("PART I\nItem 1. Financial Statements\nTables.\nItem 2. MD&A\nGrowth.\n"
            "PART II\nItem 1. Legal Proceedings\nNone pending.\nItem 1A. Risk Factors\nSame.")
    items = split_items(text, "10-Q/A")
    assert list(items) == ["Part-1,Item-1", "Part-1,Item-2", "Part-2,Item-1", "Part-2,Item-1A"]
    assert items["Part-2,Item-1"].endswith("None pending.")


@pytest.mark.parametrize(("form", "raw", "key"), [
    ("10-K", "Item-1A", "Item-1A"),
    ("10-K", "1a", "Item-1A"),
    ("10-K", "item 7", "Item-7"),
    ("10-K", "Risk Factors", "Item-1A"),
    ("10-K", "MD&A", "Item-7"),
    ("10-K", "market risk", "Item-7A"),
    ("10-Q", "MD&A", "Part-1,Item-2"),
    ("10-Q", "Part II Item 1A", "Part-2,Item-1A"),
    ("10-Q", "Item 1A", "Part-2,Item-1A"),
    ("10-Q", "Part-1,Item-1", "Part-1,Item-1"),
    ("8-K", "2.02", "Item-2.02"),
    ("10-K", "Item 99", None),
    ("10-K", "xyz", None),
])
def test_item_names_are_normalized(form: str, raw: str, key: str | None) -> None:
    assert normalize_item(form, raw) == key


def test_amended_forms_map_to_their_base() -> None:
    assert base_form("10-K/A") == "10-K"
    assert base_form("10-KT") == "10-K"
    assert base_form("8-K") == "8-K"
