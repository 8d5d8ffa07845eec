"""The source ledger, the figure extractor and the deterministic verifier, on real prose and
a real filing (Apple's FY2024 10-K from tests/fixtures/sec-real)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dexter.data.filing_text import html_to_text
from dexter.evidence.citations import cited_ids, find_citations
from dexter.evidence.ledger import SourceLedger, accession_of
from dexter.evidence.numbers import extract_claims
from dexter.evidence.report import mark_unsupported, verification_line
from dexter.evidence.sourcetext import source_quantities
from dexter.evidence.tables import tables_from_json_text
from dexter.evidence.verify import repair_note, verify_answer
from dexter.reports.sourcing import sources_markdown

FILING = (Path(__file__).parent / "fixtures" / "sec-real" / "www.sec.gov" / "Archives" / "edgar"
          / "data" / "320193" / "000032019324000123" / "aapl-20240928.htm")
FILING_URL = ("https://www.sec.gov/Archives/edgar/data/320193/000032019324000123/"
              "aapl-20240928.htm")


@pytest.fixture(scope="module")
def tenk_text() -> str:
    return html_to_text(FILING.read_text(encoding="utf-8"))


def texts(prose: str) -> list[str]:
    return [c.text for c in extract_claims(prose)]


# -- extraction -----------------------------------------------------------------------------


def test_scales_signs_and_units_are_read_as_written() -> None:
    claims = {c.text: c for c in extract_claims(
        "Net sales were $391.0 billion, or 391,035 million; the loss was (1,234) and "
        "-$3.2 billion; gross margin 46.2%; P/E 28.1x; EPS $6.11; spread 45 bps; $102.5B.")}
    assert claims["$391.0 billion"].value == pytest.approx(391.0e9)
    assert claims["$391.0 billion"].tolerance == pytest.approx(0.05e9)
    assert claims["391,035 million"].value == pytest.approx(391_035e6)
    assert claims["(1,234)"].negative and claims["(1,234)"].value == 1234
    assert claims["-$3.2 billion"].negative
    assert (claims["46.2%"].kind, claims["46.2%"].value) == ("percent", 46.2)
    assert (claims["28.1x"].kind, claims["28.1x"].value) == ("multiple", 28.1)
    assert (claims["$6.11"].kind, claims["$6.11"].tolerance) == ("money", pytest.approx(0.005))
    assert claims["45 bps"].value == pytest.approx(0.45)
    assert claims["$102.5B"].value == pytest.approx(102.5e9)


def test_years_dates_periods_forms_counts_and_list_numbers_are_not_claims() -> None:
    prose = ("1. In fiscal 2024 (FY2024, Q3 and H1), per the 10-K filed Nov 1, 2024 "
             "(2024-11-01, also 11/01/2024), see Item 7 and Note 12. Over 4 quarters and "
             "30 days, [S3] said so. https://www.sec.gov/Archives/edgar/data/320193/x.htm\n"
             "2) Revenue rose to $391.0 billion.")
    assert texts(prose) == ["$391.0 billion"]


def test_a_source_holds_its_data_values_at_the_scale_it_states() -> None:
    json_values = [q.value for q in source_quantities(
        '{"revenue": 391035000000, "gm": 0.4621, "fy2024": "about 1.2 billion"}')]
    assert json_values == [391035000000.0, 0.4621, 1.2e9]  # keys are not data
    prose = source_quantities("Net sales | 383,285 | (1,234)\nabout 1.2 billion")
    assert [(q.value, q.scale) for q in prose] == [(383285.0, 1.0), (-1234.0, 1.0),
                                                    (1.2e9, 1e9)]


def test_citations_in_every_bracket_form() -> None:
    text = "Revenue $391.0B [S1], margin 46.2% [S2, S4]; EPS [s3][S1] and [S5; S6]."
    assert cited_ids(text) == ["S1", "S2", "S4", "S3", "S5", "S6"]
    assert [c.id for c in find_citations(text)].count("S1") == 2


def test_accession_comes_from_the_filing_url() -> None:
    assert accession_of([FILING_URL]) == "0000320193-24-000123"
    assert accession_of([], "see accession 0000320193-24-000123 for details") == \
        "0000320193-24-000123"
    assert accession_of(["https://example.com/a"]) == ""


# -- verification on the real 10-K ----------------------------------------------------------


def tenk_ledger(text: str) -> SourceLedger:
    ledger = SourceLedger()
    source = ledger.add("read_filings", {"ticker": "AAPL"}, text, title="AAPL 10-K FY2024",
                        urls=[FILING_URL])
    assert source.id == "S1" and source.accession == "0000320193-24-000123"
    return ledger


def test_rounded_and_rescaled_figures_from_the_filing_verify(tenk_text: str) -> None:
    answer = ("Apple's net sales were $391.0 billion in fiscal 2024 [S1] (391,035 million), "
              "against $383.3B in 2023. Net income was $93.7 billion and diluted EPS $6.08 "
              "[S1]. Greater China fell to 66,952 [S1].")
    check = verify_answer(answer, tenk_ledger(tenk_text), "Apple fiscal 2024 results")
    assert (check.checked, check.supported, check.status) == (6, 6, "verified")
    assert check.support["$391.0 billion"] == "S1"


def test_an_invented_figure_is_unsupported_even_beside_a_real_one(tenk_text: str) -> None:
    answer = "Net sales were $391.0 billion [S1]; Services revenue reached $412.7 billion [S1]."
    check = verify_answer(answer, tenk_ledger(tenk_text))
    assert [c.text for c in check.unsupported] == ["$412.7 billion"]
    assert check.status == "unverified"
    note = repair_note(check)
    assert '"$412.7 billion"' in note and "calculator" in note


def test_rounding_tolerance_follows_the_digits_written() -> None:
    ledger = SourceLedger()
    ledger.add("get_financials", {}, '{"revenue": 383285000000}')
    ok = verify_answer("Revenue was $383 billion, $383.3 billion, 383,285 million.", ledger)
    assert ok.supported == 3
    wrong = verify_answer("Revenue was $383.2 billion.", ledger)  # 383.285 rounds to 383.3
    assert [c.text for c in wrong.unsupported] == ["$383.2 billion"]


def add_json(ledger: SourceLedger, text: str) -> None:
    """Add a JSON result as the executor does: with the tables found in it."""
    ledger.add("get_financials", {}, text, tables=tables_from_json_text("metrics", text))


def test_percent_against_ratio_and_the_boundary_of_rounding() -> None:
    ledger = SourceLedger()
    add_json(ledger, '{"gross_margin": 0.125, "other_margin": 0.4649}')
    assert verify_answer("Margin 12.5%.", ledger).status == "verified"
    assert verify_answer("Margin 46.5%.", ledger).status == "verified"  # 46.49 → 46.5
    assert verify_answer("Margin 46.6%.", ledger).status == "unverified"


def test_per_share_amounts_are_not_matched_against_rescaled_table_numbers() -> None:
    ledger = SourceLedger()
    ledger.add("get_financials", {}, "shares | 6,110 |")
    assert verify_answer("EPS was $6.11.", ledger).status == "unverified"
    ledger.add("get_financials", {}, "eps | 6.11 |")
    assert verify_answer("EPS was $6.11.", ledger).status == "verified"


def test_a_number_split_across_table_cells_is_found() -> None:
    ledger = SourceLedger()
    ledger.add("read_filings", {}, "(in millions)\nTotal net sales | $ | 391,035 | $ | 383,285")
    check = verify_answer("| Year | Net sales ($M) |\n|---|---|\n| 2024 | 391,035 |\n"
                          "| 2023 | 383,285 |", ledger)
    assert (check.checked, check.status) == (2, "verified")


def test_a_calculation_counts_only_when_its_inputs_are_supported() -> None:
    ledger = SourceLedger()
    ledger.add("get_financials", {}, '{"fy2024": 391035, "fy2023": 383285}')
    expression = "(391035 - 383285) / 383285 * 100"
    ledger.add("calculator", {"expression": expression}, "2.0220 2.02", kind="calculation",
               expression=expression)
    assert verify_answer("Net sales grew 2.02% [S2].", ledger).status == "verified"
    invented = "(412700 - 383285) / 383285 * 100"
    ledger.add("calculator", {"expression": invented}, "7.6745 7.67", kind="calculation",
               expression=invented)
    check = verify_answer("Services grew 7.67% [S3].", ledger)
    assert [c.text for c in check.unsupported] == ["7.67%"]


def test_a_chain_of_calculations_grounds_step_by_step() -> None:
    ledger = SourceLedger()
    ledger.add("get_financials", {}, '{"a": 120, "b": 80}')
    ledger.add("calculator", {}, "200 200", kind="calculation", expression="120 + 80")
    ledger.add("calculator", {}, "0.6 0.6", kind="calculation", expression="120 / 200")
    assert verify_answer("A was 60.0% of the total [S3].", ledger).status == "verified"


def test_figures_from_the_question_are_not_claims_and_ids_must_exist() -> None:
    ledger = SourceLedger()
    ledger.add("get_financials", {}, '{"revenue": 391035}')
    check = verify_answer("Above your $350 billion bar: $391.0 billion [S1] [S9].", ledger,
                          question="Did Apple clear $350 billion in sales?")
    assert check.checked == 1 and check.unknown_citations == ("S9",)
    assert check.status == "unverified"


def test_no_data_source_means_no_evidence() -> None:
    ledger = SourceLedger()
    ledger.add("calculator", {}, "4 4", kind="calculation", expression="2 + 2")
    check = verify_answer("Revenue is about $400 billion.", ledger)
    assert check.status == "no_evidence" and check.supported == 0


# -- how the check is shown ------------------------------------------------------------------


def test_marks_sources_and_the_verification_line() -> None:
    ledger = SourceLedger()
    ledger.add("get_financials", {}, '{"revenue": 391035000000}',
               title="income[AAPL] · SEC EDGAR", urls=[FILING_URL])
    answer = "Revenue $391.0 billion [S1]; margin 48.9%."
    check = verify_answer(answer, ledger).to_dict()
    assert mark_unsupported(answer, check["unsupported"]) == \
        "Revenue $391.0 billion [S1]; margin 48.9% ⚠."
    assert verification_line(check) == ("⚠ 1 of 2 figures does not check out (marked ⚠): "
                                        "48.9% is in none of the cited sources [S1] nor any "
                                        "other.")
    # an older run's citation, saved with its result key as the title, reads in words
    assert sources_markdown([ledger.sources[0].citation()]) == \
        f"**Sources**\n\n- [S1] Income: AAPL · SEC EDGAR · {FILING_URL}"
    assert verification_line({"checked": 3, "supported": 3, "status": "verified",
                              "unsupported": [], "unknown_citations": ["S7"]}) == \
        "✓ 3 figures checked against the sources. ⚠ [S7] cites no source."
    assert verification_line({"checked": 2, "supported": 0, "status": "no_evidence"}) == \
        "⚠ No data was fetched for this answer: 2 of 2 figures rest on no source (marked ⚠)."
    assert verification_line({"checked": 1, "supported": 1, "status": "no_evidence"}) == \
        ("No data was fetched for this answer; its figure comes from your own words or "
         "calculations on them.")
    assert verification_line({"checked": "x", "status": 3}) != ""  # odd replay data: no crash


def test_the_check_leaves_cycle_collection_as_it_found_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import gc

    ledger = SourceLedger()
    ledger.add("get_financials", {"ticker": "AAPL"}, '{"revenue": 391035000000}')
    seen: list[bool] = []
    real = verify_answer.__globals__["_verify_answer"]

    def spy(*args: object) -> object:
        seen.append(gc.isenabled())
        return real(*args)

    monkeypatch.setattr("dexter.evidence.verify._verify_answer", spy)
    assert gc.isenabled()
    assert verify_answer("Revenue was $391.0 billion [S1].", ledger).status == "verified"
    assert seen == [False] and gc.isenabled()  # paused during the check, on after it
    gc.disable()
    try:
        verify_answer("Revenue was $391.0 billion [S1].", ledger)
        assert not gc.isenabled()  # a caller that turned it off keeps it off
    finally:
        gc.enable()

    def broken(*args: object) -> object:
        raise RuntimeError("boom")

    monkeypatch.setattr("dexter.evidence.verify._verify_answer", broken)
    with pytest.raises(RuntimeError):
        verify_answer("Revenue was $391.0 billion [S1].", ledger)
    assert gc.isenabled()  # on again after a failure
