"""How the figure check reads the words and tables around a figure, rule by rule, on real
sources (Apple's and Tesla's statements fetched by dexter's finance tools from the real SEC
responses): a unit stated in a table's first header cell or its caption, product numbers,
the ways writers name operating cash flow and gross profit, basis-point changes, a period
stated after the figure's metric, and a company's legal name with its comma."""

from __future__ import annotations

import pytest

from dexter.evidence.ledger import SourceLedger
from dexter.evidence.numbers import extract_claims
from dexter.evidence.verify import FAILED, verify_answer
from dexter.metrics import metrics_named
from dexter.tools.base import ToolOutput
from tests.figure_sources import ledger_for, shared_outputs


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ToolOutput]:
    return shared_outputs(tmp_path_factory)


def statuses(ledger: SourceLedger, answer: str) -> list[tuple[str, str]]:
    return [(f.claim.text, f.status) for f in verify_answer(answer, ledger).figures]


# -- a unit stated once for the whole table ---------------------------------------------------

def test_a_percent_in_the_first_header_cell_is_every_bare_cells_unit(
        outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["TSLA-income-annual"], outputs)
    # Tesla: gross margin 21.0% (2020), 25.3% (2021); operating margin 6.3%, 12.1%
    table = ("| Profitability (%) | 2020 | 2021 |\n|---|---|---|\n"
             "| Gross margin | 21.0 | 25.3 |\n| Operating margin | 6.3 | 12.1 |\n\nSource: [S1]")
    assert statuses(ledger, table) == [("21.0", "supported"), ("25.3", "supported"),
                                       ("6.3", "supported"), ("12.1", "supported")]
    # the unit binds: a margin of another line is still caught
    swapped = table.replace("| 6.3 | 12.1 |", "| 21.0 | 12.1 |")
    assert statuses(ledger, swapped)[2] == ("21.0", "misattributed")


def test_a_percent_in_the_caption_is_every_bare_cells_unit(
        outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["AAPL-income-annual"], outputs)
    # Apple: gross margin 44.1% (FY2023), 46.2% (FY2024); operating margin 29.8%, 31.5%
    for caption in ("Apple's margins, per cent of net sales [S1]",
                    "Margins (%) — Apple Inc. [S1]"):
        answer = (f"{caption}\n\n| | FY2023 | FY2024 |\n|---|---|---|\n"
                  "| Gross margin | 44.1 | 46.2 |\n| Operating margin | 29.8 | 31.5 |\n")
        assert [s for _, s in statuses(ledger, answer)] == ["supported"] * 4, caption


def test_a_captions_scale_reaches_rows_whose_names_hold_ratio_letters(
        outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["AAPL-cash-annual"], outputs)
    # "operations" holds the letters of "ratio", "generated" those of "rate": neither
    # makes the row a ratio that a caption's "$ in billions" must not scale
    answer = ("Cash flows, $ in billions [S1]\n\n| | FY2024 | FY2025 |\n|---|---|---|\n"
              "| Cash generated from operations | 118.3 | 111.5 |\n"
              "| Capital expenditures | 9.4 | 12.7 |\n")
    assert [s for _, s in statuses(ledger, answer)] == ["supported"] * 4


# -- what is not a figure ---------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "the 18650 cells", "the 5000 series", "its 9950 processor", "its 2500 chip",
    "the new 7040 platform", "the 1100 family",
])
def test_a_number_naming_a_product_by_the_noun_after_it_is_no_figure(text: str) -> None:
    assert extract_claims(f"Demand for {text} stayed firm.") == []


@pytest.mark.parametrize(("text", "value"), [
    ("it shipped 18,650 cells", 18_650.0), ("$5000 series A", 5000.0),
    ("revenue of 2100 million", 2.1e9), ("a 45 series run", 45.0),
])
def test_an_amount_before_such_a_noun_is_still_a_figure(text: str, value: float) -> None:
    assert [c.value for c in extract_claims(f"By then {text} was done.")] == [value]


# -- the names of lines -------------------------------------------------------------------------

@pytest.mark.parametrize(("phrase", "field"), [
    ("cash generated from operations", "net_cash_flow_from_operations"),
    ("cash provided by operations", "net_cash_flow_from_operations"),
    ("operating cash flow", "net_cash_flow_from_operations"),
    ("gross income", "gross_profit"),
])
def test_the_ways_writers_name_a_line(phrase: str, field: str) -> None:
    assert [m.field for _, _, m in metrics_named(f"Its {phrase} was higher.")] == [field]


def test_operating_cash_flow_named_in_other_words_binds_its_line(
        outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["AAPL-cash-annual"], outputs)
    # Apple's FY2024 operating cash flow is $118.3 billion; $9.4 billion is its capex
    assert statuses(ledger, "Apple's cash generated from operations came to $118.3 billion "
                            "in fiscal 2024 [S1].") == [("$118.3 billion", "supported")]
    [figure] = verify_answer("Apple's cash provided by operations came to $9.4 billion in "
                             "fiscal 2024 [S1].", ledger).figures
    assert figure.status in FAILED and "operating cash flow is 118.3 billion" in figure.reason


def test_a_growth_rate_of_gross_income_is_recomputed(outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["TSLA-income-annual"], outputs)
    # Tesla's gross profit: $6.6 billion in 2020, $13.6 billion in 2021 (+105.2%)
    assert statuses(ledger, "Tesla's gross income climbed 105.2% in 2021 [S1].") == [
        ("105.2%", "derived")]
    assert statuses(ledger, "Tesla's gross income climbed 62.9% in 2021 [S1].") == [
        ("62.9%", "unsupported")]


# -- basis-point changes ------------------------------------------------------------------------

def test_a_change_in_points_before_the_level_it_reached_is_a_difference(
        outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["AAPL-income-annual"], outputs)
    # Apple's operating margin: 29.8% in FY2023, 31.5% in FY2024 (+1.69 points)
    assert statuses(ledger, "Apple's operating margin moved 169 bps to 31.5% in fiscal "
                            "2024 [S1].") == [("169 bps", "derived"), ("31.5%", "supported")]
    assert statuses(ledger, "Apple's operating margin moved 250 bps to 31.5% in fiscal "
                            "2024 [S1].")[0] == ("250 bps", "unsupported")
    # the level after "to" is still the level of the period named
    assert statuses(ledger, "Apple's operating margin moved 169 bps to 29.8% in fiscal "
                            "2024 [S1].")[1] == ("29.8%", "misattributed")


def test_a_margin_that_widened_or_narrowed_changed_by_those_points(
        outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["AAPL-income-annual", "TSLA-income-annual"], outputs)
    # Apple's gross margin 44.1% -> 46.2% (FY2023 -> FY2024); Tesla's 18.8% -> 16.6%
    # (2018 -> 2019) and 21.0% -> 25.3% (2020 -> 2021)
    assert statuses(ledger, "Apple's gross margin widened 2.1 percentage points in fiscal "
                            "2024 [S1]. Tesla's gross margin was narrowing, 230bp in 2019 "
                            "[S2]. Tesla's gross margin was widening: 426bp in 2021 [S2].") == [
        ("2.1 percentage points", "derived"), ("230bp", "derived"), ("426bp", "derived")]
    # "narrow" as an adjective says no fall: Apple's net sales grew 2.0% in fiscal 2024
    assert statuses(ledger, "Apple's net sales posted a narrow 2.0% gain in fiscal 2024 "
                            "[S1].") == [("2.0%", "derived")]


# -- periods and companies named around the figure ----------------------------------------------

def test_a_dated_period_after_the_figures_metric_is_its_period(
        outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["TSLA-income-annual"], outputs)
    # Tesla's revenue: $31.5 billion in 2020, $53.8 billion in 2021
    assert statuses(ledger, "Tesla recorded $31.5 billion of revenue for the year ended "
                            "December 31, 2020 [S1].") == [("$31.5 billion", "supported")]
    assert statuses(ledger, "Tesla recorded $53.8 billion of revenue for the year ended "
                            "December 31, 2020 [S1].") == [("$53.8 billion", "misattributed")]


def test_a_legal_names_comma_does_not_cut_the_figure_from_its_line(
        outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["TSLA-income-annual"], outputs)
    # Tesla's 2021 operating income is $6.5 billion; its 2021 net income is $5.5 billion
    [figure] = verify_answer("Net income of Tesla, Inc. reached $6.5 billion in 2021 [S1].",
                             ledger).figures
    assert figure.status in FAILED and "FY2021 net income is 5.5 billion" in figure.reason
    assert statuses(ledger, "Net income of Tesla, Inc. reached $5.5 billion in 2021 [S1].") \
        == [("$5.5 billion", "supported")]
