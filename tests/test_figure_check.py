"""The figure check, rule by rule (docs/verification.md), on real sources: Apple's and
Tesla's statements fetched by dexter's finance tools from the real SEC responses, Apple's
10-K and 10-Q text, Adobe's Q1 FY2023 earnings release (an 8-K exhibit)."""

from __future__ import annotations

import datetime as dt
import functools
import json
from pathlib import Path

import pytest

from dexter.data.filing_text import html_to_text
from dexter.events import Verification, event_from_dict
from dexter.evidence.ledger import SourceLedger, source_from_dict, source_to_dict
from dexter.evidence.numbers import extract_claims
from dexter.evidence.periods import (
    PeriodRef,
    calendar_in,
    compare,
    find_periods,
    row_period,
)
from dexter.evidence.report import verification_event, verification_line
from dexter.evidence.sourcetext import source_quantities, strip_gutter
from dexter.evidence.verify import AnswerCheck, Figure, change_form, repair_note, verify_answer
from dexter.tools.base import ToolOutput
from dexter.tools.files import ReadFileTool
from tests.figure_sources import ledger_for, quantities_read_once, shared_outputs

FIXTURES = Path(__file__).parent / "fixtures"
FILINGS = FIXTURES / "sec-real" / "www.sec.gov" / "Archives" / "edgar" / "data"
APPLE_10K = FILINGS / "320193" / "000032019324000123" / "aapl-20240928.htm"
APPLE_10Q = FILINGS / "320193" / "000032019325000073" / "aapl-20250628.htm"
ADOBE_RELEASE = FIXTURES / "figures" / "adbeex991q123.htm"


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ToolOutput]:
    return shared_outputs(tmp_path_factory)


def check(ledger: SourceLedger, answer: str) -> dict[str, Figure]:
    return {f.claim.text: f for f in verify_answer(answer, ledger).figures}


def statuses(ledger: SourceLedger, answer: str) -> list[tuple[str, str]]:
    return [(f.claim.text, f.status) for f in verify_answer(answer, ledger).figures]


def text_ledger(path: Path, ticker: str) -> SourceLedger:
    ledger = SourceLedger()
    with quantities_read_once():
        ledger.add("read_filings", {"ticker": ticker}, filing_text(path),
                   title=f"{ticker} filing")
    return ledger


@functools.cache
def filing_text(path: Path) -> str:
    """The filing's text as dexter reads it (parsed once per module: several tests read the
    same 10-K, about half a second each)."""
    return html_to_text(path.read_text(encoding="utf-8", errors="replace"))


# -- 1. evidence is the data, not the framing --------------------------------------------------

def test_line_numbers_headers_and_hints_of_read_file_are_not_evidence() -> None:
    shown = ("File: report.txt (lines 139-142 of 900)\n139:Revenue grew strongly.\n"
             "140:Gross margin was 46.2%.\n141:\n142:Net sales | 391,035\n"
             "[758 more lines. Call read_file again with offset=143 to continue.]")
    evidence = ReadFileTool().evidence(shown)
    values = sorted(abs(q.value) for q in source_quantities(evidence))
    assert values == [46.2, 391_035.0]  # not 139-142, 900, 758, 143
    ledger = SourceLedger()
    ledger.add("read_file", {"path": "report.txt"}, evidence)
    assert statuses(ledger, "Revenue grew 141% [S1].") == [("141%", "unsupported")]


def test_a_numbered_listing_from_any_tool_loses_its_gutter() -> None:
    listing = "\n".join(f"{n}\tsome text" for n in range(140, 146)) + "\n146\ttotal 7.5"
    assert [q.value for q in source_quantities(strip_gutter(listing))] == [7.5]


def test_json_keys_links_accession_numbers_and_dates_are_not_evidence() -> None:
    text = ('{"FY2024 141": {"url": "https://www.sec.gov/Archives/edgar/data/320193/'
            '000032019324000123/aapl-20240928.htm", "filed": "2024-11-01", '
            '"note": "accession 0000320193-24-000123 filed November 1, 2024", "revenue": 7}}')
    assert [q.value for q in source_quantities(text)] == [7.0]


def test_finance_tool_output_holds_its_tables_values_not_its_labels(
        outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["AAPL-income-annual"], outputs)
    source = ledger.sources[0]
    assert source.entity == "AAPL" and source.fiscal_year_end[:2] == "09"
    # "Q1 2026", "FY2025", "(2025-09-27)", "10-K", accession and filing dates are framing
    assert 2025.0 not in source.numbers and 320193.0 not in source.numbers
    assert 391_035_000_000.0 in source.numbers


# -- 2. scale binds -------------------------------------------------------------------------

def test_a_written_scale_binds_in_absolute_units(outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["AAPL-income-annual"], outputs)
    # cost of revenue FY2024 is 210,352,000,000: never "$210.4 million"
    assert statuses(ledger, "Cost of revenue was $210.4 billion in FY2024 [S1] and "
                            "$210.4 million is not it.") == [
        ("$210.4 billion", "supported"), ("$210.4 million", "unsupported")]


def test_a_source_number_is_rescaled_only_where_the_source_states_its_unit() -> None:
    ledger = SourceLedger()
    ledger.add("read_filings", {}, "Net sales | 391,035 | 383,285")  # no unit stated
    ledger.add("read_filings", {}, "(dollars in millions)\nNet sales | 94,930 | 85,777")
    found = check(ledger, "Sales were $391.0 billion, $94.9 billion, and 391,035.")
    assert found["$391.0 billion"].status == "unsupported"
    assert found["$94.9 billion"].status == "supported"
    assert found["391,035"].status == "supported"  # compared as written


def test_the_filing_states_units_with_per_share_and_share_count_exceptions() -> None:
    ledger = text_ledger(APPLE_10K, "AAPL")
    found = check(ledger, "Apple's net income was $93.7 billion in fiscal 2024 [S1], diluted "
                          "EPS $6.08 [S1] and diluted shares 15.41 billion [S1].")
    assert [f.status for f in found.values()] == ["supported"] * 3
    assert found["$6.08"].evidence is not None and found["$6.08"].evidence.value == 6.08


def test_the_answers_own_table_takes_the_unit_of_its_header_or_caption(
        outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["AAPL-income-annual"], outputs)
    header = ("| Metric ($B) | FY2024 | FY2023 |\n|---|---|---|\n"
              "| Revenue | 391.0 | 383.3 |\n| Diluted EPS ($) | 6.08 | 6.13 |\n")
    assert [s for _, s in statuses(ledger, header + "Source: [S1]")] == ["supported"] * 4
    caption = ("All figures in USD millions.\n\n| Fiscal year | Revenue | Net income |\n"
               "|---|---|---|\n| FY2024 | 391,035 | 93,736 |\n")
    assert [s for _, s in statuses(ledger, caption)] == ["supported"] * 2
    no_unit = "| Fiscal year | Revenue |\n|---|---|\n| FY2024 | 391.0 |\n"
    assert statuses(ledger, no_unit) == [("391.0", "unsupported")]


# -- 3. citations bind ----------------------------------------------------------------------

def test_support_only_in_an_uncited_source_is_miscited(outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["AAPL-income-annual", "TSLA-income-annual"], outputs)
    found = check(ledger, "Tesla's 2021 revenue was $53.8 billion [S1]. Tesla's 2020 revenue "
                          "was $31.5 billion [S2]. Uncited, Tesla's 2019 revenue was $24.6 "
                          "billion.")
    assert found["$53.8 billion"].status == "miscited"
    assert found["$53.8 billion"].reason == ("$53.8 billion is FY2021 revenue in [S2], not "
                                             "in the cited [S1]")
    assert found["$31.5 billion"].status == "supported"
    assert found["$24.6 billion"].status == "supported"  # uncited: any source


def test_a_calculation_on_cited_figures_supports_a_cited_figure(
        outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["AAPL-income-annual"], outputs)
    ledger.add("calculator", {"expression": "391035000000 / 15408095000"}, "25.379 25.38",
               kind="calculation", expression="391035000000 / 15408095000")
    assert statuses(ledger, "Revenue per diluted share was $25.38 in FY2024 [S1].") == [
        ("$25.38", "supported")]


# -- 4. sign and direction ------------------------------------------------------------------

def test_a_loss_is_a_loss_and_a_profit_against_a_loss_is_wrong(
        outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["TSLA-income-annual", "TSLA-cash-annual"], outputs)
    found = check(ledger, "Tesla posted a net loss of $976 million in 2018 [S1]. Its "
                          "operating income was -$388 million in 2018 [S1]. Tesla earned an "
                          "operating profit of $388 million in 2018 [S1]. Capex was $2.1 "
                          "billion in 2018 [S2].")
    assert found["$976 million"].status == "supported"
    assert found["-$388 million"].status == "supported"
    assert found["$388 million"].status == "misattributed"
    assert found["$388 million"].reason == ("$388 million is an operating loss in FY2018 "
                                            "[S1], not a profit")
    assert found["$2.1 billion"].status == "supported"  # a payment, written as an amount
    table = ("| Year | Net income ($M) |\n|---|---|\n| 2018 | (976) |\n| 2019 | 862 |\n"
             "Source: [S1]")
    assert statuses(ledger, table) == [("(976)", "supported"), ("862", "misattributed")]


def test_a_decline_must_be_a_decline(outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["AAPL-income-annual"], outputs)
    assert statuses(ledger, "Revenue fell 2.8% in fiscal 2023 [S1]. Revenue grew 2.8% in "
                            "fiscal 2023 [S1].") == [("2.8%", "derived"), ("2.8%", "unsupported")]


# -- 5. attribution against tables ------------------------------------------------------------

def test_a_value_of_another_period_line_or_company_is_misattributed_with_what_it_is(
        outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["AAPL-income-annual", "TSLA-income-annual"], outputs)
    found = check(ledger, "Apple's FY2025 revenue was $391.0 billion [S1]. Apple's FY2024 "
                          "operating income was $93.7 billion [S1]. Tesla's FY2021 revenue "
                          "was $365.8 billion [S1].")
    assert found["$391.0 billion"].reason == ("$391.0 billion is FY2024 revenue [S1], not "
                                              "FY2025")
    assert found["$93.7 billion"].reason == ("$93.7 billion is FY2024 net income [S1], not "
                                             "operating income")
    assert found["$365.8 billion"].reason == ("$365.8 billion is AAPL's FY2021 revenue [S1], "
                                              "not Tesla's")
    assert {f.status for f in found.values()} == {"misattributed"}


def test_a_sentence_naming_no_company_is_about_its_citations_company(
        outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["AAPL-income-annual", "TSLA-income-annual"], outputs)
    found = check(ledger, "Apple's revenue was $391.0 billion in fiscal 2024 [S1]. For the "
                          "year ended December 31, 2021, revenue came in at $53.8 billion "
                          "[S2]. Net income was $93.7 billion in fiscal 2024 [S1].")
    assert found["$53.8 billion"].status == "supported"  # Tesla's, as [S2] is
    assert found["$93.7 billion"].status == "supported"
    # named in its own sentence, the company still binds
    tesla = [f for f in check(ledger, "Tesla grew fast; revenue was $391.0 billion in "
                                      "FY2024 [S1].").values()]
    assert [f.status for f in tesla] == ["misattributed"]


def test_periods_follow_the_fiscal_calendar(outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["AAPL-income-annual", "AAPL-income-quarterly"], outputs)
    answer = ("Revenue for the year ended September 28, 2024 was $391.0 billion [S1]. In the "
              "June quarter of fiscal 2025, revenue was $94.0 billion [S2]. Revenue for the "
              "quarter ended December 28, 2024 was $124.3 billion [S2]. Q3 FY2025 revenue "
              "was $124.3 billion [S2].")
    assert statuses(ledger, answer) == [("$391.0 billion", "supported"),
                                        ("$94.0 billion", "supported"),
                                        ("$124.3 billion", "supported"),
                                        ("$124.3 billion", "misattributed")]


def test_where_the_words_name_no_line_or_period_occurrence_is_enough(
        outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["AAPL-income-annual"], outputs)
    assert statuses(ledger, "The figure to watch is $391.0 billion [S1]. Apple's revenue "
                            "was $383.3 billion [S1].") == [
        ("$391.0 billion", "supported"), ("$383.3 billion", "supported")]


def test_a_segment_figure_is_checked_against_the_filings_own_table() -> None:
    ledger = text_ledger(APPLE_10K, "AAPL")
    found = check(ledger, "iPhone net sales were $201.2 billion in fiscal 2024 [S1]. Mac net "
                          "sales were $30.0 billion in fiscal 2023 [S1]. Services revenue was "
                          "$96.2 billion [S1].")
    assert found["$201.2 billion"].status == "supported"
    assert found["$30.0 billion"].status == "misattributed"  # FY2024's Mac net sales
    assert found["$96.2 billion"].status == "supported"


def test_a_relative_clause_narrows_its_metric_to_the_segment_it_refers_to() -> None:
    ledger = text_ledger(APPLE_10K, "AAPL")
    first, second = verify_answer("Fiscal 2024 growth came from higher net sales of "
                                  "Services, whose net sales reached $96.2 billion [S1]. "
                                  "Total net sales reached $96.2 billion in fiscal 2024 "
                                  "[S1].", ledger).figures
    assert first.status == "supported" and first.reading is not None
    assert first.reading.qualifier == "Services"
    assert second.status == "misattributed"  # FY2024 total net sales: $391.0 billion
    assert second.reason == "$96.2 billion is FY2024 Services [S1], not total net sales"


def test_an_insiders_sale_is_read_as_shares_traded_at_a_price() -> None:
    from dexter.evidence.tables import tables_from_data

    # Chris Kondo's Form 4 of August 2024, as the insider-trades tool returns it
    records = [{"ticker": "AAPL", "filing_date": "2024-08-15", "name": "KONDO CHRIS",
                "transaction_code": "S", "transaction_shares": 8706,
                "transaction_price_per_share": 225.0, "shares_owned_after": 15098}]
    ledger = SourceLedger()
    ledger.add("get_insider_trades", {"ticker": "AAPL"}, json.dumps(records),
               tables=tables_from_data("insider_trades[AAPL]", records, "SEC EDGAR"))
    found = check(ledger, "In August 2024 Chris Kondo sold 8,706 shares at $225.00 [S1]. "
                          "He then owned 225 shares [S1].")
    assert found["8,706"].status == "supported" and found["$225.00"].status == "supported"
    assert found["225"].status == "misattributed"
    assert found["225"].reason == "225 is 2024-08-15 price per share [S1], not shares"


def test_a_release_states_its_calendar_so_its_quarters_are_named() -> None:
    ledger = text_ledger(ADOBE_RELEASE, "ADBE")
    assert ledger.sources[0].fiscal_year_end == "1202"
    assert statuses(ledger, "Adobe's Q1 FY2023 revenue was $4,655 million [S1]. Its Q1 FY2022 "
                            "revenue was $4,655 million [S1]. Net income fell 1.5% year over "
                            "year to $1,247 million in Q1 FY2023 [S1].") == [
        ("$4,655 million", "supported"), ("$4,655 million", "misattributed"),
        ("1.5%", "derived"), ("$1,247 million", "supported")]


# -- 6. derived figures -----------------------------------------------------------------------

def test_growth_margins_shares_cagr_differences_and_points_are_recomputed(
        outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["AAPL-income-annual"], outputs)
    answer = ("Revenue rose 2.0% to $391.0 billion in fiscal 2024 [S1]. Operating margin was "
              "31.5% in FY2024 [S1]; R&D was 8.0% of revenue. Revenue compounded at 3.3% a "
              "year from FY2021 to FY2025 [S1]. Net income was down $2.8 billion in fiscal "
              "2023 [S1]. Gross margin expanded 210 bps in fiscal 2024 [S1].")
    found = check(ledger, answer)
    assert found["2.0%"].status == "derived"
    assert found["31.5%"].status == "supported"  # a cell of its own
    assert found["8.0%"].status == "derived"
    assert found["3.3%"].status == "derived"
    assert found["$2.8 billion"].status == "derived"
    assert found["210 bps"].status == "derived"


def test_a_wrong_rate_names_the_right_one(outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["AAPL-income-annual"], outputs)
    [figure] = verify_answer("Revenue grew 5.0% in fiscal 2024 [S1].", ledger).figures
    assert figure.status == "unsupported"
    assert figure.reason == ("5.0% does not check out: revenue grew 2.0% from FY2023 to "
                             "FY2024 [S1]")


# -- 7. non-figures, and a figure opening the answer -------------------------------------------

@pytest.mark.parametrize("text", [
    "the S&P 500", "the Russell 2000", "the Nasdaq-100", "the FTSE 100", "the RTX 4090",
    "the iPhone 16", "Model 3", "FY'24", "iOS 18.1", "version 2.5.1", "COVID-19", "401(k)",
    "the 737 MAX", "16GB", "3nm", "the 1990s", "Form 10-K", "Item 7", "9M24", "Gemini 1.5",
    "September 28, 2024", "2024-09-28", "accession 0000320193-24-000123", "(408) 996-1010",
])
def test_names_versions_and_dates_are_not_figures(text: str) -> None:
    assert extract_claims(f"Compare {text} with it.") == []


def test_a_figure_opening_the_answer_is_read(outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["AAPL-income-annual"], outputs)
    assert statuses(ledger, "$391.0 billion of revenue in FY2024 [S1].") == [
        ("$391.0 billion", "supported")]
    assert statuses(ledger, "391,035,000,000 was FY2024 revenue [S1].") == [
        ("391,035,000,000", "supported")]


# -- 8. low precision ------------------------------------------------------------------------

def test_a_low_precision_figure_found_only_in_text_is_weak_and_not_marked() -> None:
    ledger = text_ledger(ADOBE_RELEASE, "ADBE")
    result = verify_answer("Creative revenue grew 8% [S1].", ledger)
    assert [f.status for f in result.figures] == ["weak"]
    assert result.status == "verified" and result.unsupported == ()
    assert result.counts()["weak"] == 1


# -- 9. output ---------------------------------------------------------------------------------

def test_done_verification_carries_every_figure_self_described(
        outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["AAPL-income-annual"], outputs)
    answer = "Apple's FY2025 revenue was $391.0 billion [S1]; net income $112.0 billion [S1]."
    data = verify_answer(answer, ledger).to_dict()
    first, second = data["figures"]
    assert first == {
        "text": "$391.0 billion", "start": 27, "end": 41, "value": 391.0e9,
        "status": "misattributed",
        "reason": "$391.0 billion is FY2024 revenue [S1], not FY2025", "source": "S1",
        "cited": ["S1"], "field": "revenue", "label": "revenue", "period": "FY2024",
        "company": "AAPL",
        "cell": {"source": "S1", "table": "income_statements[AAPL, annual]",
                 "row": "FY2024 (2024-09-28)", "column": "Revenue", "value": 391_035e6},
        "claimed": {"field": "revenue", "period": "FY2025", "company": "AAPL"}}
    assert second["status"] == "supported" and second["period"] == "FY2025"
    assert data["counts"] == {"supported": 1, "derived": 0, "weak": 0, "unsupported": 0,
                              "misattributed": 1, "miscited": 0}
    assert data["unsupported"] == [{"text": "$391.0 billion", "value": 391.0e9, "start": 27,
                                    "end": 41, "status": "misattributed",
                                    "reason": "$391.0 billion is FY2024 revenue [S1], not "
                                              "FY2025"}]
    assert verification_line(data) == ("⚠ 1 of 2 figures does not check out (marked ⚠): "
                                       "$391.0 billion is FY2024 revenue [S1], not FY2025.")
    assert "$391.0 billion\": $391.0 billion is FY2024 revenue [S1], not FY2025" in \
        repair_note(verify_answer(answer, ledger))


def test_the_verification_event_round_trips_with_its_figures(
        outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["AAPL-income-annual"], outputs)
    result: AnswerCheck = verify_answer("Apple's FY2025 revenue was $391.0 billion [S1].", ledger)
    event = verification_event(result, final=True)
    again = event_from_dict(event.to_dict())
    assert isinstance(again, Verification) and again == event
    assert again.figures[0]["status"] == "misattributed" and again.counts["misattributed"] == 1


def test_a_saved_ledger_keeps_what_the_check_needs(outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["AAPL-10k"], outputs)
    restored = SourceLedger.restore(source_from_dict(source_to_dict(s)) for s in ledger)
    answer = "Mac net sales were $30.0 billion in fiscal 2023 [S1]."
    assert statuses(restored, answer) == statuses(ledger, answer) == [
        ("$30.0 billion", "misattributed")]


# -- periods -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "row"), [
    ("FY2024", "FY2024 (2024-09-28)"), ("fiscal 2024", "FY2024 (2024-09-28)"),
    ("FY24", "FY2024 (2024-09-28)"), ("FY'24", "FY2024 (2024-09-28)"),
    ("the year ended September 28, 2024", "FY2024 (2024-09-28)"),
    ("the fiscal year ended Sept. 28, 2024", "FY2024 (2024-09-28)"),
    ("2024", "FY2024 (2024-09-28)"), ("Q3 FY2025", "Q3 2025 (2025-06-28)"),
    ("the June quarter", "Q3 2025 (2025-06-28)"),
    ("the third quarter of fiscal 2025", "Q3 FY2025 (2025-06-28)"),
    ("the three months ended June 28, 2025", "Q3 2025 (2025-06-28)"),
    ("the December 2024 quarter", "Q1 2025 (2024-12-28)"),
    ("Q4 2024", "Q1 2025 (2024-12-28)"),  # calendar Q4 2024 is Apple's fiscal Q1 2025
])
def test_prose_periods_match_apples_fiscal_rows(text: str, row: str) -> None:
    [mention] = find_periods(text)
    assert any(compare(ref, row_period(row)) is True for ref in mention.refs), (text, row)


@pytest.mark.parametrize(("text", "row"), [
    ("FY2023", "FY2024 (2024-09-28)"), ("Q2 FY2025", "Q3 2025 (2025-06-28)"),
    ("the March quarter", "Q3 2025 (2025-06-28)"),
    ("the year ended September 30, 2023", "FY2024 (2024-09-28)"),
    ("the December 2025 quarter", "Q1 2025 (2024-12-28)"),
])
def test_other_periods_do_not_match(text: str, row: str) -> None:
    [mention] = find_periods(text)
    assert all(compare(ref, row_period(row)) is False for ref in mention.refs), (text, row)


def test_a_bare_year_is_the_fiscal_year_mostly_in_it() -> None:
    [mention] = find_periods("in 2024")
    [ref] = mention.refs
    nvidia_fy2025 = row_period("FY2025 (2025-01-26)")  # February 2024 to January 2025
    assert compare(ref, nvidia_fy2025) is True
    assert compare(PeriodRef("fy", year=2024), nvidia_fy2025) is False


def test_a_filing_states_its_fiscal_calendar() -> None:
    release = calendar_in("results for its first quarter fiscal year 2023 ended March 3, 2023")
    assert release is not None and (release.month, abs(release.day - 2) <= 7) == (12, True)
    assert (release.fiscal_year(dt.date(2023, 3, 3)), release.quarter(dt.date(2023, 3, 3))) \
        == (2023, 1)
    apple = calendar_in(html_to_text(APPLE_10Q.read_text(encoding="utf-8")))
    assert apple is not None and apple.quarter(dt.date(2025, 6, 28)) == 3


# -- the example run's figures (dexter/testing/example_run.py, on the real SEC data) ----------

def _calculation(ledger: SourceLedger, expression: str, result: float) -> None:
    """A calculator result as the executor adds it (the tool's JSON, the expression)."""
    ledger.add("calculator", {"expression": expression}, json.dumps(
        {"expression": expression, "result": result, "formatted": f"{result:.9f}"}),
        kind="calculation", expression=expression)


def test_a_decline_written_down_is_the_calculators_magnitude_on_figures_read_in_millions(
        outputs: dict[str, ToolOutput]) -> None:
    # the model reads S1's 96,995,000,000 and 93,736,000,000 as 96995 and 93736 (millions);
    # Item 7 alone has neither, so only S1 at another scale grounds the calculation
    ledger = ledger_for(["AAPL-income-annual", "AAPL-10k-item7"], outputs)
    _calculation(ledger, "(391035 - 383285) / 383285 * 100", 2.021994077514121)
    _calculation(ledger, "(96995 - 93736) / 96995 * 100", 3.3599670086086912)
    _calculation(ledger, "(96990 - 93736) / 96990 * 100", 3.354984018970)  # 96990: no source
    answer = ("- **Revenue** rose from $383.3 billion to $391.0 billion [S1], up 2.02% [S3].\n"
              "- **Net income** fell from $97.0 billion to $93.7 billion [S1], down 3.36% "
              "[S4].\n- Net income fell 3.35% [S5].")
    figures = verify_answer(answer, ledger).figures
    assert [(f.claim.text, f.status, f.reason) for f in figures if "%" in f.claim.text] == [
        ("2.02%", "supported", "from the calculation [S3]"),
        ("3.36%", "supported", "from the calculation [S4]"),
        ("3.35%", "unsupported", "3.35% is in none of the cited sources [S5] nor any other")]


def test_a_calculation_gives_a_change_its_direction(outputs: dict[str, ToolOutput]) -> None:
    """A calculator result is compared by its size and, for a change, by the way it went:
    a negative result is a decline, a positive result of ``(old - new) / old`` is one too,
    and a figure said to go the other way is flagged (before, "up 3.36%" on a decline
    passed)."""
    ledger = ledger_for(["AAPL-income-annual", "AAPL-10k-item7"], outputs)
    _calculation(ledger, "(391035 - 383285) / 383285 * 100", 2.021994077514121)  # S3
    _calculation(ledger, "(96995 - 93736) / 96995 * 100", 3.3599670086086912)  # S4: a fall
    _calculation(ledger, "(93736 - 96995) / 96995 * 100", -3.3599670086086912)  # S5

    def check(sentence: str) -> tuple[str, str]:
        found = [f for f in verify_answer(sentence, ledger).figures if "%" in f.claim.text]
        return found[0].status, found[0].reason

    for right in ("Net income fell 3.36% [S4].", "Net income was down 3.36% [S5].",
                  "Net income declined 3.36% [S4].", "Revenue rose 2.02% [S3].",
                  "Net income changed by -3.36% [S5]."):
        assert check(right) == ("supported", f"from the calculation [{right[-4:-2]}]"), right
    assert check("Net income rose 3.36% [S5].") == (
        "misattributed", "3.36% is a decline in the calculation [S5], not a rise")
    assert check("Net income was up 3.36% [S4].") == (
        "misattributed", "3.36% is a decline in the calculation [S4], not a rise")
    assert check("Revenue fell 2.02% [S3].") == (
        "misattributed", "2.02% is a rise in the calculation [S3], not a decline")
    assert check("Net income growth was 3.36% [S5].")[0] == "misattributed"  # growth: a rise
    # no direction written: the size is enough, as before
    assert check("Net income changed 3.36% year over year [S5].")[0] == "supported"


@pytest.mark.parametrize(("expression", "form"), [
    ("(391035 - 383285) / 383285 * 100", 1),
    ("100 * (391035 - 383285) / 383285", 1),
    ("((391,035 - 383,285) / 383,285) * 100", 1),
    ("(96995 - 93736) / 96995 * 100", -1),
    ("(93736 / 96995 - 1) * 100", 1),
    ("93736/96995 - 1", 1),
    ("(1 - 93736 / 96995) * 100", -1),
    ("96995 - 93736", 0),
    ("(96995 - 93736) / 2", 0),
    ("(1 + 2) * (3 - 4)", 0),
    ("", 0),
])
def test_the_form_of_a_change_calculation(expression: str, form: int) -> None:
    assert change_form(expression) == form


def test_a_decline_in_a_table_cell_is_derived_from_the_cells_and_a_rise_is_not(
        outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["AAPL-income-annual"], outputs)
    table = ("Apple, fiscal 2023 to fiscal 2024 [S1]:\n\n| | FY2023 | FY2024 | change |\n"
             "|---|---|---|---|\n| Revenue | $383.3B | $391.0B | up 2.02% |\n"
             "| Net income | $97.0B | $93.7B | {} 3.36% |\n")
    down = {f.claim.text: f for f in verify_answer(table.format("down"), ledger).figures}
    assert (down["3.36%"].status, down["3.36%"].reason) == (
        "derived", "net income fell 3.4% from FY2023 to FY2024 [S1]; recomputed from the cells")
    assert down["2.02%"].status == "derived"
    up = {f.claim.text: f for f in verify_answer(table.format("up"), ledger).figures}
    assert up["3.36%"].status == "unsupported"  # net income fell: "up" is wrong
    wrong_way = table.replace("up 2.02%", "down 2.02%").format("down")
    assert {f.claim.text: f.status for f in verify_answer(wrong_way, ledger).figures}[
        "2.02%"] == "unsupported"  # revenue grew: "down" is wrong (read as "2.02%" before)
    assert statuses(ledger, "Net income fell from $97.0 billion to $93.7 billion [S1], down "
                            "3.36% [S1].") == [("$97.0 billion", "supported"),
                                               ("$93.7 billion", "supported"),
                                               ("3.36%", "derived")]


def test_a_rate_row_of_a_table_in_millions_holds_percentages(
        outputs: dict[str, ToolOutput]) -> None:
    # a text that lost the "%" signs ("Effective tax rate | 24.1 | 14.7 | 16.2", as a PDF's
    # or a web page's table may read) under "(dollars in millions)": the row is
    # percentages, never $24.1 million (a filing's text keeps its "24.1%")
    rows = source_quantities(
        "Provision for income taxes, effective tax rate and statutory federal income tax "
        "rate for 2024, 2023 and 2022 were as follows (dollars in millions):\n\n"
        "2024 | 2023 | 2022\nProvision for income taxes | 29,749 | 16,741 | 19,300\n"
        "Effective tax rate | 24.1 | 14.7 | 16.2\n"
        "Statutory federal income tax rate | 21 | 21 | 21\n")
    assert [(q.value, q.percent) for q in rows] == [
        (29_749e6, False), (16_741e6, False), (19_300e6, False), (24.1, True), (14.7, True),
        (16.2, True), (21.0, True), (21.0, True), (21.0, True)]
    # Tesla's reconciliation (in millions): an amount at a rate is money
    reconciliation = source_quantities(
        "(in millions)\n\n2024 | 2023 | 2022\nTax at statutory federal rate | 1,887 | 2,094 "
        "| 2,881\nEffect of a change in tax rate | (12) | 4 | 9\nRisk-free interest rate | "
        "3.92 | 3.90 | 3.11\n")
    assert [(q.value, q.percent) for q in reconciliation] == [
        (1_887e6, False), (2_094e6, False), (2_881e6, False), (-12e6, False), (4e6, False),
        (9e6, False), (3.92, True), (3.90, True), (3.11, True)]
    ledger = ledger_for(["AAPL-income-annual", "AAPL-10k-item7"], outputs)
    found = [(f.claim.text, f.status, f.reason) for f in verify_answer(
        "Net income fell even though revenue grew: the 10-K says the effective tax rate rose "
        "to 24.1% from 14.7%, due primarily to a one-time income tax charge of $10.2 "
        "billion, net, related to the State Aid Decision [S2].", ledger).figures]
    assert found[:2] == [("24.1%", "supported", "Effective tax rate, 2024 in [S2]"),
                         ("14.7%", "supported", "Effective tax rate, 2023 in [S2]")]
    assert statuses(ledger, "The effective tax rate rose from 14.7% to 24.1% [S2].") == [
        ("14.7%", "supported"), ("24.1%", "supported")]
    assert statuses(ledger, "The effective tax rate rose to 24.1% from 15.7% [S2].") == [
        ("24.1%", "supported"), ("15.7%", "unsupported")]
    assert statuses(ledger, "The provision for income taxes was $24.1 million [S2].")[0][1] \
        != "supported"
