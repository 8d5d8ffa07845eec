"""The pieces of a research note on their own: how a table reads (reports/presentation.py),
tables in text files and pages (evidence/text_tables.py), the documents a filing result
names (evidence/documents.py), the verification banner (reports/check.py), sources that
name filings and calculations (reports/sourcing.py), the answer as plain blocks and the
workbook's formulas; on Apple's real EDGAR records where it matters."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dexter.data.edgar import primary_documents
from dexter.data.xbrl import build_statement
from dexter.events import Done
from dexter.evidence.documents import Document, document_from_dict, documents_from_data
from dexter.evidence.ledger import SourceLedger, source_from_dict, source_to_dict
from dexter.evidence.tables import Column, DataTable, tables_from_data
from dexter.evidence.text_tables import (
    parse_written,
    tables_from_csv,
    tables_from_file,
    tables_from_markdown,
)
from dexter.reports.answer_text import answer_blocks
from dexter.reports.check import banner
from dexter.reports.model import build_report
from dexter.reports.presentation import (
    fit_periods,
    period_label,
    period_span,
    periods_text,
    readable_title,
    table_title,
    unit_note,
    view,
)
from dexter.reports.sourcing import expression_inputs, measured, statement_references
from dexter.reports.xlsx import written_format
from dexter.reports.xlsx_sheets import _cell_formula

REAL = Path(__file__).parent / "fixtures" / "sec-real" / "data.sec.gov"
FILINGS_URL = "https://www.sec.gov/Archives/edgar/data/320193/"


@pytest.fixture(scope="module")
def apple_annual() -> list[dict[str, Any]]:
    """Apple's annual income statements built from the real companyfacts, with the primary
    documents the real submissions index names."""
    facts = json.loads((REAL / "api" / "xbrl" / "companyfacts" / "CIK0000320193.json")
                       .read_text(encoding="utf-8"))
    submissions = json.loads((REAL / "submissions" / "CIK0000320193.json")
                             .read_text(encoding="utf-8"))
    documents = primary_documents(submissions)
    records = build_statement(
        facts, "income", "annual", ticker="AAPL", fiscal_year_end="0926",
        filing_url=lambda a: f"{FILINGS_URL}{a.replace('-', '')}/{documents.get(a, '')}")
    return [{**r, "company_name": "Apple Inc."} for r in records[:5]]


# -- how a table reads ---------------------------------------------------------------------


@pytest.mark.parametrize(("label", "shown"), [
    ("FY2024 (2024-09-28)", "FY2024"), ("Q1 2025 (2024-12-28)", "Q1 FY2025"),
    ("Q1 FY2025", "Q1 FY2025"), ("TTM to 2024-12-28 (2024-12-28)", "TTM Dec 2024"),
    ("2024-01-02", "2024-01-02"), ("H1 2024", "H1 2024"),
])
def test_periods_read_as_fiscal_periods(label: str, shown: str) -> None:
    assert period_label(label) == shown


def test_period_spans_and_runs() -> None:
    order = ["FY2021", "FY2022", "FY2023", "FY2024", "FY2025"]
    assert period_span(order) == "FY2021–FY2025" and period_span(["FY2024"]) == "FY2024"
    assert periods_text(["FY2025", "FY2023", "FY2024", "FY2021"], order) == \
        "FY2021, FY2023–FY2025"
    assert periods_text(["FY2022", "FY2023"], order) == "FY2022, FY2023"


def test_a_real_statement_reads_as_its_10k_prints_it(apple_annual: list) -> None:
    [table] = tables_from_data("income_statements[AAPL, annual]", apple_annual)
    shown = view(table)
    assert shown.caption == ("Apple Inc. — Income statement, annual · USD millions, except "
                             "per-share; shares in millions")
    rows = {row.label: row for row in shown.rows}
    fy2024 = shown.header.index("FY2024")
    assert rows["Revenue"].cells[fy2024] == "391,035"
    assert rows["Net income"].cells[fy2024] == "93,736" and rows["Net income"].total
    assert rows["EPS, diluted"].cells[fy2024] == "6.08"
    assert rows["Gross margin"].cells[fy2024] == "46.2%"
    assert shown.subheader[fy2024] == "28 Sep 2024"


def test_fitting_keeps_the_newest_periods_and_says_which_it_left_out(
        apple_annual: list) -> None:
    [table] = tables_from_data("income_statements[AAPL, annual]", apple_annual)
    narrow = fit_periods(view(table), 3)
    assert narrow.header == ("FY2023", "FY2024", "FY2025")
    assert all(len(row.cells) == 3 for row in narrow.rows)
    assert narrow.notes[-1].startswith("FY2021, FY2022 not shown here") or \
        narrow.notes[-1].startswith("FY2021–FY2022 not shown here")
    assert fit_periods(view(table), 10) == view(table)


@pytest.mark.parametrize(("columns", "note"), [
    ((Column("revenue", "USD", (1e9,)), Column("earnings_per_share", "USD/share", (1.0,))),
     "USD millions, except per-share"),
    ((Column("revenue", "EUR", (1e9,)),), "EUR millions"),
    ((Column("revenue", "USD", (1e9,)), Column("outstanding_shares", "shares", (2e9,))),
     "USD millions; shares in millions"),
    ((Column("net_margin", "ratio", (0.2,)),), ""),
])
def test_the_unit_line_says_what_the_numbers_are_in(columns: tuple[Column, ...],
                                                    note: str) -> None:
    table = DataTable("t", "", "period", ("FY2024",), ("FY2024",), columns)
    assert unit_note(table) == note


@pytest.mark.parametrize(("title", "shown"), [
    ("income_statements[AAPL, quarterly]", "Income statements: AAPL, quarterly"),
    ("mcp__prices__daily_bars", "Daily bars (prices)"),
    ("segments.csv", "segments.csv"), ("key_metrics · SEC EDGAR", "Key metrics · SEC EDGAR"),
])
def test_titles_in_words(title: str, shown: str) -> None:
    assert readable_title(title) == shown


def test_a_prices_table_and_a_file_table_are_titled_for_a_reader() -> None:
    days = ("2024-01-02", "2024-01-03", "2024-01-04")
    prices = DataTable("prices[AAPL, day]", "Yahoo", "date", days, days,
                       (Column("close", "USD", (1.0, 2.0, 3.0)),))
    assert table_title(prices) == "AAPL — Share prices"
    [csv] = tables_from_csv("segments.csv", "Segment,FY2023,FY2024\nServices,85200,96169\n")
    assert table_title(csv) == "segments.csv"


# -- tables in text ------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "value", "shape"), [
    ("$119.6B", 119.6e9, ("$", "B", 1)), ("(9,447)", -9447.0, ("", "", 0)),
    ("46.2%", 0.462, ("", "", 1)), ("2.40", 2.4, ("", "", 2)), ("−5", -5.0, ("", "", 0)),
])
def test_written_numbers_keep_how_they_were_written(text: str, value: float,
                                                    shape: tuple[str, str, int]) -> None:
    written = parse_written(text)
    assert written is not None and written.value == pytest.approx(value)
    assert (written.currency, written.scale, written.decimals) == shape
    assert parse_written("FY2024") is None and parse_written("12%B") is None


def test_a_csv_statement_with_periods_across_becomes_a_statement_table() -> None:
    text = ('Line item,FY2024,FY2023\nNet sales,"391,035","383,285"\n'
            "Gross margin,46.2%,44.1%\nCapex,(9447),(10959)\n")
    [table] = tables_from_csv("apple.csv", text)
    assert table.index == ("FY2023", "FY2024") and table.is_time_series  # oldest first
    by_name = {c.name: c for c in table.columns}
    assert by_name["revenue"].values == (383_285.0, 391_035.0)  # "Net sales" is revenue
    assert by_name["gross_margin"].unit == "ratio"
    assert by_name["capital_expenditure"].values == (-10_959.0, -9_447.0)
    assert [r.label for r in view(table).rows][:2] == ["Revenue", "Capital expenditure"]


def test_markdown_tables_in_a_page_become_tables_and_prose_does_not() -> None:
    page = ("Results\n\n| Quarter | Revenue | Net margin |\n|---|---:|---:|\n"
            "| Q4 2024 | $94.9B | 15.5% |\n| Q1 2024 | $119.6B | 28.4% |\n\nText | with a pipe\n"
            "\n| Name | Role |\n|---|---|\n| Tim | CEO |\n")
    [table] = tables_from_markdown("Apple results", page)
    assert table.index == ("Q1 2024", "Q4 2024")
    assert {c.name: c.values for c in table.columns}["revenue"] == (119.6e9, 94.9e9)
    assert tables_from_file("notes.md", page)[0].title == "notes.md"
    assert tables_from_file("data.json", '[{"date": "2024-01-02", "close": 1.5}]')


def test_a_read_file_result_gives_the_tables_of_what_it_read(tmp_path: Path) -> None:
    import asyncio

    from dexter.config import Settings
    from dexter.tools.base import ToolContext
    from dexter.tools.files import ReadFileParams, ReadFileTool

    (tmp_path / "rev.csv").write_text("metric,FY2023,FY2024\nrevenue,1,2\n", encoding="utf-8")
    output = asyncio.run(ReadFileTool().run(ReadFileParams(path="rev.csv"),
                                            ToolContext(settings=Settings(), cwd=tmp_path,
                                                        home=tmp_path / ".dexter")))
    assert "2:revenue,1,2" in output.content
    [table] = output.tables
    assert table.title == "rev.csv" and table.columns[0].values == (1.0, 2.0)


# -- documents -------------------------------------------------------------------------------


def test_filing_text_results_name_their_documents() -> None:
    data = {"ticker": "AAPL", "accession_number": "0000320193-24-000123",
            "filing_type": "10-K", "filing_date": "2024-11-01", "report_date": "2024-09-28",
            "url": f"{FILINGS_URL}000032019324000123/aapl-20240928.htm",
            "items": [{"name": "Item-7", "title": "Management's Discussion", "text": "..."}]}
    [document] = documents_from_data(data)
    assert document.name == "aapl-20240928.htm" and document.form == "10-K"
    assert document.sections == ("Item 7 · Management's Discussion",)
    assert documents_from_data({"filings": [data, data]}) == [document, document]
    assert documents_from_data([{"accession_number": "x", "url": "u"}]) == []  # a listing
    assert document_from_dict(json.loads(json.dumps(
        {"url": document.url, "form": "10-K", "sections": list(document.sections)}))).sections
    ledger = SourceLedger()
    source = ledger.add("read_filings", {"query": "q"}, "text", documents=[document])
    assert source_from_dict(json.loads(json.dumps(source_to_dict(source)))).documents == \
        (document,)


def test_a_statements_filings_say_which_periods_they_supplied(apple_annual: list) -> None:
    [table] = tables_from_data("income_statements[AAPL, annual]", apple_annual)
    references = statement_references([table])
    by_accession = {r.text.split("accession ")[1]: r for r in references}
    fy24_10k = by_accession["0000320193-24-000123"]
    assert fy24_10k.name == "aapl-20240928.htm" and fy24_10k.covers.startswith("FY2022")
    assert fy24_10k.text == ("Form 10-K for FY2024 · filed 1 Nov 2024 · accession "
                             "0000320193-24-000123")
    newest = references[0]
    assert newest.name == "aapl-20250927.htm" and "FY2023–FY2025" in newest.covers
    assert [r.text.split("filed ")[1][:11] for r in references] == sorted(
        [r.text.split("filed ")[1][:11] for r in references], reverse=True, key=_date)


def _date(text: str) -> str:
    import datetime as dt

    return dt.datetime.strptime(text.strip(" ·"), "%d %b %Y").date().isoformat()


# -- the banner ------------------------------------------------------------------------------


def test_the_banner_names_each_flag_from_the_figure_checks_statuses() -> None:
    verification = {
        "checked": 4, "supported": 1, "status": "unverified", "unknown_citations": [],
        "unsupported": [{"text": "$60.9 billion"}, {"text": "$1.2 billion"}],
        "figures": [
            {"text": "$391.0 billion", "status": "supported"},
            {"text": "$60.9 billion", "status": "misattributed",
             "reason": "60.9 billion is FY2024 revenue [S2], not FY2025"},
            {"text": "$1.2 billion", "status": "unsupported"},
            {"text": "about 40%", "status": "weak"},
        ]}
    headline, flags = banner(verification)
    assert headline.startswith("⚠ 2 of 4 figures are not supported by the sources.")
    assert "1 figure rests only on a mention in text." in headline
    assert [(f.text, f.status) for f in flags] == [("$60.9 billion", "misattributed"),
                                                    ("$1.2 billion", "unsupported")]
    assert flags[0].reason == "60.9 billion is FY2024 revenue [S2], not FY2025"
    assert flags[1].reason == "in no source the run fetched"


def test_the_banner_falls_back_to_the_unsupported_list() -> None:
    headline, flags = banner({"checked": 3, "supported": 2, "status": "unverified",
                              "unsupported": [{"text": "$126.4 billion", "start": 1, "end": 5}],
                              "unknown_citations": ["S9"]})
    assert headline == ("⚠ 1 of 3 figures is not supported by the sources. ⚠ [S9] cites no "
                        "source.")
    assert [f.text for f in flags] == ["$126.4 billion"]
    assert banner({"checked": 6, "supported": 6, "status": "verified"}) == \
        ("✓ All 6 figures checked against the sources.", ())
    assert banner(None) == ("", ())
    assert banner({"checked": 0, "supported": 0, "status": "no_evidence"})[0] == \
        "No data was fetched for this answer."
    headline, flags = banner({"checked": 2, "supported": 1, "status": "no_evidence",
                              "unsupported": [{"text": "$5 billion"}]})
    assert headline.startswith("⚠ No data was fetched for this answer: 1 of 2 figures")
    assert [f.text for f in flags] == ["$5 billion"]


# -- calculations ----------------------------------------------------------------------------


def test_a_calculation_names_what_it_measures_and_where_its_inputs_came_from(
        apple_annual: list) -> None:
    assert [i.value for i in expression_inputs("(391035 - 383285) / 383285 * 100")] == \
        [391_035.0, 383_285.0]
    assert [i.text for i in expression_inputs("cagr(365.8, 416.2, 4)")] == ["365.8", "416.2"]
    answer = "Revenue grew 2.0% [S2]; the gross margin was 46.2% [S3, S1]."
    assert measured(answer, "S2") == "Revenue growth" and measured(answer, "S3") == \
        "Gross margin"
    ledger = SourceLedger()
    ledger.add("get_financials", {"query": "q"}, "391,035",
               tables=tables_from_data("income_statements[AAPL, annual]", apple_annual))
    ledger.add("calculator", {"expression": "180683 / 391035 * 100"}, "46.2063498 46.21",
               kind="calculation", expression="180683 / 391035 * 100")
    ledger.add("calculator", {"expression": "999999 / 2"}, "499999.5", kind="calculation",
               expression="999999 / 2")
    done = Done(answer="The gross margin was 46.2% [S2], or so [S3].",
                citations=[{"id": "S2"}, {"id": "S3"}], tool_calls=[])
    report = build_report(done, "q", "now", ledger)
    assert [s.id for s in report.sources] == ["S1", "S2", "S3"]  # S1 feeds a cited one
    calc = report.sources[1]
    assert calc.title == "Calculation: Gross margin"
    assert calc.detail == "180,683 ÷ 391,035 × 100 = 46.21"
    assert calc.inputs == ("180,683: Gross profit, FY2024 [S1]", "391,035: Revenue, FY2024 [S1]")
    assert report.sources[2].inputs == ("999,999: not found in a source",)


# -- the answer as blocks, the workbook's formulas -------------------------------------------


def test_the_answer_becomes_plain_blocks() -> None:
    blocks = answer_blocks("## Summary\n\nRevenue **rose** [S1], see [the 10-K]"
                           "(https://sec.gov/x).\n\n- one\n- two\n\n1. first\n\n"
                           "| A | B |\n|---|--:|\n| x | 1 |\n")
    assert [(b.kind, b.text) for b in blocks[:2]] == [
        ("heading", "Summary"), ("paragraph", "Revenue rose [S1], see the 10-K "
                                              "(https://sec.gov/x).")]
    assert [b.text for b in blocks if b.kind == "item"] == ["• one", "• two", "1. first"]
    table = blocks[-1]
    assert table.rows == (("A", "B"), ("x", "1")) and table.numeric == (False, True)


def test_derived_cells_become_formulas_over_the_cells_they_come_from() -> None:
    rows = {"revenue": 7, "gross_profit": 9, "net_cash_flow_from_operations": 12,
            "capital_expenditure": 13}
    assert _cell_formula("gross_profit / revenue", rows, "E") == "=E9/E7"
    assert _cell_formula("net_cash_flow_from_operations + capital_expenditure (capex is "
                         "negative)", rows, "C") == "=C12+C13"
    assert _cell_formula("FY (10-K 0000320193-25-000079) minus 9M YTD (10-Q x)", rows, "C") \
        == ""
    assert _cell_formula("operating_income / revenue", rows, "C") == ""  # no such row
    assert _cell_formula("=HYPERLINK(\"x\")", rows, "C") == ""
    assert _cell_formula("revenue(gross_profit)", rows, "C") == ""  # never a call


def test_a_written_number_keeps_its_look_in_a_cell() -> None:
    def fmt(text: str) -> str:
        written = parse_written(text)
        assert written is not None
        return written_format(written)

    assert fmt("$119.6B") == '"$"#,##0.0,,,"B";("$"#,##0.0,,,"B")'
    assert fmt("46.2%") == "0.0%;(0.0%)"
    assert fmt("(9,447)") == "#,##0;(#,##0)"
    assert fmt("2.40") == "0.00;(0.00)"


def test_document_names_are_file_names_only() -> None:
    assert Document(url=f"{FILINGS_URL}000032019324000123/").name == ""
    assert Document(url=f"{FILINGS_URL}000032019324000123/aapl-20240928.htm").name == \
        "aapl-20240928.htm"


def test_a_smaller_company_reads_in_thousands_as_its_filings_print_it() -> None:
    table = DataTable("t", "", "period", ("FY2024",), ("FY2024",),
                      (Column("revenue", "USD", (52_345_678.0,)),
                       Column("earnings_per_share", "USD/share", (0.12,))))
    shown = view(table)
    assert shown.unit == "USD thousands, except per-share"
    assert shown.rows[0].cells == ("52,346",)


def test_a_segment_table_is_titled_by_what_narrows_it_not_as_a_statement() -> None:
    segment = DataTable("segments[AAPL, annual] · Product or service: Services", "SEC EDGAR",
                        "period", ("FY2023 (2023-09-30)", "FY2024 (2024-09-28)",
                                   "FY2025 (2025-09-27)"),
                        ("2023-09-30", "2024-09-28", "2025-09-27"),
                        (Column("revenue", "USD", (85.2e9, 96.169e9, 109.2e9)),))
    assert table_title(segment) == "AAPL — Segments · Product or service: Services"
    from dexter.reports.series import charts_of

    [chart] = charts_of([segment])
    assert chart.title == ("AAPL — Revenue, Product or service: Services, FY2023–FY2025 "
                           "(USD bn)")
    statement = DataTable("financial_statements[AAPL, annual] · income_statements",
                          "SEC EDGAR", "period", segment.index, segment.dates,
                          segment.columns)
    assert table_title(statement) == "AAPL — Income statement, annual"


def test_many_tables_of_one_kind_are_one_source_title() -> None:
    from dexter.reports.sourcing import describe

    tables = [DataTable(f"segments[AAPL, annual] · Geography: {place}", "SEC EDGAR", "period",
                        ("FY2024 (2024-09-28)",), ("2024-09-28",),
                        (Column("revenue", "USD", (1e9,)),))
              for place in ("Americas", "Europe", "Japan", "China")]
    ledger = SourceLedger()
    source = ledger.add("get_financials", {"query": "q"}, "1", tables=tables,
                        urls=[f"{FILINGS_URL}000032019324000123/aapl-20240928.htm"])
    described = describe(source, True, ledger)
    assert described.title == "AAPL — Segments, FY2024 (4 tables)"
    assert described.url.endswith("aapl-20240928.htm")


def test_a_list_of_mixed_amounts_keeps_the_decimals_small_ones_need() -> None:
    trades = DataTable("insider_trades[AAPL]", "SEC EDGAR", "transaction", ("a", "b", "c"), (),
                       (Column("transaction_value", "USD", (20_146_592.0, 496_920.0, 1.2e9)),))
    assert [row.cells[0] for row in view(trades).rows] == ["20.1", "0.50", "1,200"]
