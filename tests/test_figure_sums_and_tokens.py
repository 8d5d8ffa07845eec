"""Half years and nine months summed from quarterly rows, ZIP codes and month spans that are
no figures, and a figure's line bound by the words nearest it, on real sources (Tesla's and
Apple's statements fetched by dexter's finance tools from the recorded SEC responses) and on
a small made-up company's records."""

from __future__ import annotations

import json

import pytest

from dexter.evidence.ledger import SourceLedger
from dexter.evidence.numbers import extract_claims
from dexter.evidence.tables import tables_from_json_text
from dexter.evidence.verify import verify_answer
from dexter.tools.base import ToolOutput
from tests.figure_sources import fetch_outputs, ledger_for, shared_outputs

QUARTERLY = {"TSLA-q": ("get_financials", "get_income_statements",
                        {"ticker": "TSLA", "period": "quarterly", "limit": 8})}


@pytest.fixture(scope="module")
def tesla_quarters() -> SourceLedger:
    # Tesla, Q4 2020 to Q3 2022 (Q4 2021 itself the year less nine months, in the source):
    # revenue 18,756 and 16,934 million in Q1 and Q2 2022; 13,757 and 17,719 in Q3 and Q4
    # 2021; operating income 594, 1,312 and 2,004 million in Q1-Q3 2021; gross profit
    # 5,460 and 4,234 million in Q1 and Q2 2022
    return ledger_for(["TSLA-q"], fetch_outputs(list(QUARTERLY), QUARTERLY), QUARTERLY)


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ToolOutput]:
    return shared_outputs(tmp_path_factory)


def statuses(ledger: SourceLedger, answer: str) -> list[tuple[str, str]]:
    return [(f.claim.text, f.status) for f in verify_answer(answer, ledger).figures]


# -- sums of quarters -------------------------------------------------------------------------

@pytest.mark.parametrize(("answer", "figure"), [
    ("Tesla's H1 2022 revenue reached $35.69 billion [S1].", "$35.69 billion"),
    ("Through the first nine months of 2021, operating income came to $3.91bn [S1].",
     "$3.91bn"),
    ("Revenue in the second half of fiscal 2021 was 31.5 billion dollars [S1].",
     "31.5 billion dollars"),
    ("Gross profit for the six months ended June 30, 2022 was $9.69 billion [S1].",
     "$9.69 billion"),
    ("In 1H calendar 2022 Tesla booked revenue of $35.7B [S1].", "$35.7B"),
    ("For the first three quarters of FY21, operating income totalled USD 3,910 million [S1].",
     "USD 3,910 million"),
])
def test_a_half_year_or_nine_months_is_the_sum_of_its_quarters(
        tesla_quarters: SourceLedger, answer: str, figure: str) -> None:
    assert statuses(tesla_quarters, answer) == [(figure, "derived")]


def test_a_half_year_figure_that_is_no_sum_stays_unsupported(
        tesla_quarters: SourceLedger) -> None:
    found = verify_answer("Tesla's H1 2022 revenue reached $37.2 billion [S1].",
                          tesla_quarters).figures
    assert [(f.claim.text, f.status) for f in found] == [("$37.2 billion", "unsupported")]
    assert "Q1 FY2022 + Q2 FY2022" in found[0].reason


def test_a_fourth_quarter_no_row_states_is_the_year_less_three_quarters() -> None:
    ledger = SourceLedger()
    quarters = [{"ticker": "ZYX", "report_period": end, "fiscal_period": name,
                 "period": "quarterly", "revenue": value}
                for end, name, value in (("2023-03-31", "Q1 2023", 410e6),
                                         ("2023-06-30", "Q2 2023", 455e6),
                                         ("2023-09-30", "Q3 2023", 470e6))]
    year = [{"ticker": "ZYX", "report_period": "2023-12-31", "fiscal_period": "FY2023",
             "period": "annual", "revenue": 1_850e6}]
    for rows in (quarters, year):
        text = json.dumps({"income_statements": rows})
        ledger.add("get_financials", {"ticker": "ZYX"}, text,
                   tables=tables_from_json_text("income_statements", text))
    # the second half: 470 + (1,850 - 410 - 455 - 470) = 985 million
    assert statuses(ledger, "ZYX's 2H FY2023 revenue was $985 million [S1][S2].") == [
        ("$985 million", "derived")]
    assert statuses(ledger, "ZYX's 2H FY2023 revenue was $1,020 million [S1][S2].") == [
        ("$1,020 million", "unsupported")]


# -- what is no figure ------------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "San Jose, CA 95113", "Portland, OR 97201", "Indianapolis, IN 46204",
    "Redmond, WA 98052-6399", "Boise, Idaho 83702",
    "One Tesla Road, Austin, Texas 78725-1234",
])
def test_a_zip_code_after_a_state_is_no_figure(text: str) -> None:
    assert extract_claims(f"The head office is at {text}; call for details.") == []


@pytest.mark.parametrize(("text", "value"), [
    ("Texas deliveries were 78,725 cars", 78_725.0), ("it sold 83702 units", 83_702.0),
])
def test_other_five_digit_numbers_are_still_figures(text: str, value: float) -> None:
    assert [c.value for c in extract_claims(f"By June {text}.")] == [value]


@pytest.mark.parametrize("text", [
    "In 9M FY2024 deliveries rose", "Over 6M 2023 margins held", "The 3M ended March was slow",
    "For 12M FY24 the mix shifted", "In 6M '24 costs fell", "Across 9M fiscal 2022 it grew",
])
def test_a_span_of_months_before_a_period_word_is_no_figure(text: str) -> None:
    assert extract_claims(f"{text}.") == []


@pytest.mark.parametrize(("text", "value"), [
    ("it issued 9M shares", 9e6), ("it paid $6M in fees", 6e6),
    ("it added 12M customers", 12e6), ("it sold 3M units in FY2024", 3e6),
])
def test_millions_written_so_are_still_figures(text: str, value: float) -> None:
    assert [c.value for c in extract_claims(f"Last year {text}.")] == [value]


# -- the words nearest the figure name its line -----------------------------------------------

def test_a_verb_before_a_cash_flow_line_does_not_qualify_it(
        outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["AAPL-cash-annual"], outputs)
    # Apple FY2023: free cash flow 99,584 million, share repurchases 77,550 million
    answer = ("Apple's fiscal 2023 free cash flow of $99.6 billion [S1] exceeded share "
              "repurchases of {} [S1].")
    assert statuses(ledger, answer.format("$99.6 billion"))[1] == ("$99.6 billion",
                                                                   "misattributed")
    assert statuses(ledger, answer.format("$77.6 billion"))[1] == ("$77.6 billion",
                                                                   "supported")


def test_repurchases_alone_name_the_buyback_line(outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["AAPL-cash-annual"], outputs)
    # Apple FY2024: share repurchases 94,949 million, free cash flow 108,807 million
    assert statuses(ledger, "In fiscal 2024 Apple spent $108.8 billion on repurchases [S1].") \
        == [("$108.8 billion", "misattributed")]
    assert statuses(ledger, "In fiscal 2024 Apple spent $94.9 billion on repurchases [S1].") \
        == [("$94.9 billion", "supported")]


def test_a_scale_word_or_preposition_before_a_line_is_no_qualifier(
        outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["TSLA-cash-annual"], outputs)
    # Tesla 2021: free cash flow 5,015 million, capital expenditure 6,482 million
    answer = "Tesla's 2021 free cash flow was $5,015 million [S1] despite capex of {} [S1]."
    assert statuses(ledger, answer.format("$5.02 billion"))[1] == ("$5.02 billion",
                                                                   "misattributed")
    assert statuses(ledger, answer.format("$6.48 billion"))[1] == ("$6.48 billion",
                                                                   "supported")


def test_a_month_joined_to_its_year_is_no_qualifier(outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["TSLA-cash-annual"], outputs)
    # Tesla 2021: operating cash flow 11,497 million, free cash flow 5,015 million
    answer = "Operating cash flow for the December-2021 year came to {} [S1]."
    assert statuses(ledger, answer.format("$5.02 billion")) == [("$5.02 billion",
                                                                "misattributed")]
    assert statuses(ledger, answer.format("$11.5 billion")) == [("$11.5 billion",
                                                                 "supported")]


def test_a_half_year_figure_that_is_another_periods_or_lines_sum_is_misattributed(
        tesla_quarters: SourceLedger) -> None:
    # 35.69 billion is the first half of 2022's revenue; 31.48 billion the second half of
    # 2021's; gross profit of H1 2022 is 9.69 billion
    found = verify_answer("Tesla's revenue for the second half of 2021 was $35.69 billion "
                          "[S1].", tesla_quarters).figures
    assert [(f.claim.text, f.status) for f in found] == [("$35.69 billion", "misattributed")]
    assert "Q1 FY2022 + Q2 FY2022" in found[0].reason
    assert statuses(tesla_quarters, "Tesla's H1 2022 gross profit came to $35.69 billion "
                    "[S1].") == [("$35.69 billion", "misattributed")]
