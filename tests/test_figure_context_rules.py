"""How the figure check reads context that crosses a figure's own words (docs/verification.md,
"Context across sentences"), rule by rule, on real sources (Apple's and Tesla's statements
fetched by dexter's finance tools from the real SEC responses): a change in points in
brackets after a margin, the period a paragraph carries to a sentence that names none,
relative periods ("a year earlier"), quarter-on-quarter rates, and quarters named by month
and year in a table's header."""

from __future__ import annotations

import pytest

from dexter.evidence.ledger import SourceLedger
from dexter.evidence.periods import find_periods
from dexter.evidence.verify import verify_answer
from dexter.tools.base import ToolOutput
from tests.figure_sources import ledger_for, shared_outputs

# Tesla (annual): revenue $31.5B (2020), $53.8B (2021); gross margin 21.0%, 25.3%;
# operating margin 6.3%, 12.1%.
# Apple (quarterly): revenue $124.3B (Dec-2024 quarter), $95.4B (Mar-2025), $94.0B
# (Jun-2025), $102.5B (Sep-2025); net income $36.3B (Dec-2024), $27.5B (Sep-2025), $42.1B
# (Dec-2025). Apple (annual cash flows): free cash flow $99.6B (FY2023), $108.8B (FY2024),
# $98.8B (FY2025).


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ToolOutput]:
    return shared_outputs(tmp_path_factory)


def statuses(ledger: SourceLedger, answer: str) -> list[tuple[str, str]]:
    return [(f.claim.text, f.status) for f in verify_answer(answer, ledger).figures]


# -- a change in points in brackets after a level ------------------------------------------------

@pytest.mark.parametrize("bracket", ["(+4.3 pts YoY)", "(widening 4.3 percentage points on "
                                     "the year)", "(up 4.3pp versus 2020)"])
def test_a_margin_followed_by_its_change_in_brackets_is_a_level(
        outputs: dict[str, ToolOutput], bracket: str) -> None:
    ledger = ledger_for(["TSLA-income-annual"], outputs)
    answer = (f"Tesla's gross margin stood at 25.3% [S1] {bracket} [S1], with an operating "
              "margin of 12.1% [S1].")
    found = statuses(ledger, answer)
    assert found[0] == ("25.3%", "supported")
    assert found[1][1] == "derived"  # recomputed as 25.3 - 21.0 points
    assert found[2] == ("12.1%", "supported")


def test_a_wrong_change_in_brackets_is_still_caught(outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["TSLA-income-annual"], outputs)
    found = statuses(ledger, "Tesla's gross margin stood at 25.3% [S1] (+3.1 pts YoY) [S1].")
    assert found == [("25.3%", "supported"), ("3.1 pts", "unsupported")]


# -- the period a paragraph carries --------------------------------------------------------------

def test_a_sentence_naming_no_period_takes_the_paragraphs(
        outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["AAPL-cash-annual"], outputs)
    # FY2024 over FY2023 is +9.3%; the latest pair (FY2025 over FY2024) is -9.2%
    answer = ("Apple's fiscal 2024 was a year of recovery in cash. Free cash flow grew 9.3% "
              "year on year [S1].")
    assert statuses(ledger, answer) == [("9.3%", "derived")]
    # and in the paragraph's next sentence after that
    answer += " Operating cash flow was $118.3 billion [S1], up 7.0% [S1]."
    assert [s for _, s in statuses(ledger, answer)] == ["derived", "supported", "derived"]


def test_a_value_of_another_period_than_the_paragraphs_is_caught(
        outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["TSLA-income-annual"], outputs)
    answer = "Tesla's 2020 revenue was $31.5 billion [S1]. Gross margin was 25.3% [S1]."
    assert statuses(ledger, answer)[1] == ("25.3%", "misattributed")  # 2021's margin
    assert statuses(ledger, answer.replace("25.3%", "21.0%"))[1] == ("21.0%", "supported")


@pytest.mark.parametrize("between", ["\n\n", "\n## Margins\n", "\n\n- "])
def test_a_new_paragraph_heading_or_list_item_carries_no_period(
        outputs: dict[str, ToolOutput], between: str) -> None:
    ledger = ledger_for(["TSLA-income-annual"], outputs)
    answer = f"Tesla's 2020 revenue was $31.5 billion [S1].{between}Gross margin was 25.3% [S1]."
    assert statuses(ledger, answer)[1] == ("25.3%", "supported")


def test_a_sentence_naming_several_periods_carries_none(
        outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["TSLA-income-annual"], outputs)
    answer = ("Tesla's revenue grew from $31.5 billion in 2020 to $53.8 billion in 2021 [S1]. "
              "Gross margin was 21.0% [S1].")
    # which year the margin is of is ambiguous: occurrence is enough (no over-flag)
    assert [s for _, s in statuses(ledger, answer)] == ["supported"] * 3


def test_a_carried_period_the_sources_lack_for_the_line_binds_nothing(
        outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["AAPL-income-quarterly", "AAPL-cash-annual"], outputs)
    # the paragraph is about a quarter; free cash flow is held by year only
    answer = ("In the March 2025 quarter Apple's revenue was $95.4 billion [S1]. Free cash "
              "flow was $108.8 billion [S2].")
    assert statuses(ledger, answer) == [("$95.4 billion", "supported"),
                                        ("$108.8 billion", "supported")]


# -- relative periods ----------------------------------------------------------------------------

@pytest.mark.parametrize("answer", [
    "Apple's net income was $42.1 billion in Q1 FY2026 [S1], compared with $27.5 billion a "
    "year earlier [S1].",
    "Net income reached $42.1 billion in fiscal Q1 2026 [S1], versus $27.5 billion in the "
    "year-ago quarter [S1].",
    "Apple's net income was $42.1 billion in the December 2025 quarter [S1]. A year earlier, "
    "net income was $27.5 billion [S1].",
])
def test_a_year_earlier_is_the_year_ago_period_not_the_quarter_before(
        outputs: dict[str, ToolOutput], answer: str) -> None:
    ledger = ledger_for(["AAPL-income-quarterly"], outputs)
    # $27.5 billion is the September-2025 quarter's (the quarter before), not a year earlier
    assert statuses(ledger, answer)[1] == ("$27.5 billion", "misattributed")
    assert statuses(ledger, answer.replace("$27.5", "$36.3"))[1] == ("$36.3 billion",
                                                                     "supported")


# -- quarter on quarter --------------------------------------------------------------------------

def test_a_sequential_fall_after_a_rise_word_is_a_fall(outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["AAPL-income-quarterly"], outputs)
    answer = "In the March 2025 quarter, Apple revenue rose to $95.4bn, falling 23.3% QoQ [S1]."
    assert statuses(ledger, answer) == [("$95.4bn", "supported"), ("23.3%", "derived")]


def test_year_on_year_and_sequential_rates_are_each_their_own(
        outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["AAPL-income-quarterly"], outputs)
    # September-2025 quarter revenue: +9.0% on the June quarter, +7.9% on a year earlier
    both = ("Apple revenue in the September 2025 quarter was $102.5 billion [S1], up 9.0% "
            "sequentially [S1] and 7.9% y/y [S1].")
    assert [s for _, s in statuses(ledger, both)] == ["supported", "derived", "derived"]
    swapped = ("Apple revenue in the September 2025 quarter was $102.5 billion [S1], up 9.0% "
               "year over year [S1].")
    assert statuses(ledger, swapped)[1] == ("9.0%", "unsupported")


# -- a quarter named by its month and year --------------------------------------------------------

@pytest.mark.parametrize(("text", "month", "year"), [
    ("the March-2025 quarter", 3, 2025), ("Dec-24 qtr", 12, 2024),
    ("June-2025 quarter", 6, 2025), ("the Sept '25 quarter", 9, 2025),
])
def test_a_quarter_named_by_month_and_year(text: str, month: int, year: int) -> None:
    found = find_periods(f"Results for {text} were strong.")
    assert len(found) == 1
    ref = found[0].refs[0]
    assert (ref.kind, ref.month, ref.year) == ("month", month, year)


def test_a_table_header_naming_quarters_by_month_binds_its_cells(
        outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["AAPL-income-quarterly"], outputs)
    table = ("Apple [S1]\n\n| ($ in billions) | Dec-24 qtr | the March-2025 quarter |\n"
             "|---|---|---|\n| Revenue | 124.3 | 95.4 |\n| Net income | 36.3 | 24.8 |\n")
    assert [s for _, s in statuses(ledger, table)] == ["supported"] * 4
    # the December-2025 quarter's net income under the March-2025 header
    assert statuses(ledger, table.replace("24.8", "42.1"))[3] == ("42.1", "misattributed")
