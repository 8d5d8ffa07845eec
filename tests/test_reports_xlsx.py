"""The .xlsx report: written end to end by ``dexter ask --output report.xlsx`` after a run
against the fake data server, then opened with openpyxl; and the writer's rules for hostile
text and sheet names on hand-built reports."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from openpyxl import load_workbook
from openpyxl.worksheet.worksheet import Worksheet

from dexter.evidence.tables import Column, DataTable
from dexter.reports import Report, ReportSource, render_bytes
from dexter.reports.xlsx import SheetNames, sheet_name
from dexter.testing.fakedata import FakeDataServer
from dexter.testing.fakellm import FakeLLM
from tests.report_helpers import ANSWER, run_report

HOSTILE = "=cmd|' /C calc'!A0"


def rows(sheet: Worksheet) -> list[list[Any]]:
    return [[c.value for c in row] for row in sheet.iter_rows()]


def find_row(sheet: Worksheet, first: str) -> tuple[Any, ...]:
    for row in sheet.iter_rows():
        if row[0].value == first:
            return row
    raise AssertionError(f"no row starting with {first!r} in {sheet.title}: {rows(sheet)}")


def test_ask_output_xlsx_holds_the_fetched_numbers_units_and_sources(
        llm: FakeLLM, data: FakeDataServer, tmp_path: Path) -> None:
    run = run_report(llm, data, tmp_path, "report.xlsx",
                     answer=ANSWER + "\n" + HOSTILE)
    assert run.result.code == 0, run.result.stderr
    book = load_workbook(run.path)
    assert book.sheetnames[0] == "Report" and book.sheetnames[-1] == "Sources"
    assert len(book.sheetnames) == 3

    report = book["Report"]
    assert find_row(report, "Question")[1].value.startswith("How did Apple's revenue")
    assert find_row(report, "Model")[1].value
    assert "figures checked" in find_row(report, "Verification")[1].value
    answer_cells = [r[1] for r in report.iter_rows() if isinstance(r[1].value, str)]
    hostile = [c for c in answer_cells if c.value == HOSTILE]
    assert len(hostile) == 1 and hostile[0].data_type == "s"  # text, not a formula

    tables = find_row(report, "Tables")
    assert tables[1].value == book.sheetnames[1]
    assert tables[1].hyperlink.location == f"'{book.sheetnames[1]}'!A1"

    table = book[book.sheetnames[1]]
    assert table["A1"].value == "income_statements[AAPL, quarterly]"
    assert table["A3"].value.endswith("/api/xbrl/companyfacts/CIK0000320193.json")
    header = find_row(table, "field")
    assert [c.value for c in header][1].startswith("Q1 2024")
    assert table.freeze_panes == f"B{header[0].row + 1}"
    revenue = find_row(table, "revenue (USD)")
    assert revenue[1].value == 119_575_000_000 and revenue[1].data_type == "n"
    assert revenue[1].number_format == "#,##0"
    assert [c.value for c in revenue[1:]] == [119_575_000_000, 90_753_000_000,
                                              85_777_000_000, 94_930_000_000]
    margin = find_row(table, "net_margin (%)")
    assert margin[1].value == pytest.approx(0.2836) and margin[1].number_format == "0.00%"
    eps = find_row(table, "earnings_per_share_diluted (USD/share)")
    assert eps[1].value == pytest.approx(2.18) and eps[1].number_format == "#,##0.00"
    assert eps[4].value is None  # not reported for that quarter: an empty cell

    sources = rows(book["Sources"])
    assert sources[0] == ["id", "title", "URL", "tool", "cited", "tables"]
    s1 = sources[1]
    assert s1[0] == "S1" and s1[4] == "yes" and s1[5] == book.sheetnames[1]
    assert s1[2] == data.url + "/api/xbrl/companyfacts/CIK0000320193.json"
    assert book["Sources"]["C2"].hyperlink.target == s1[2]


def test_an_unwritable_xlsx_path_is_refused_before_the_run(
        llm: FakeLLM, data: FakeDataServer, tmp_path: Path) -> None:
    run = run_report(llm, data, tmp_path, "no/such/folder/report.xlsx")
    assert run.result.code == 2
    assert "does not exist" in run.result.stderr and "Traceback" not in run.result.stderr
    assert llm.requests_for("openai") == []


def table(title: str, source_id: str = "S1", **columns: tuple[Any, ...]) -> DataTable:
    cols = tuple(Column(name, "USD" if name == "price" else "", values)
                 for name, values in columns.items())
    count = len(next(iter(columns.values())))
    return DataTable(title=title, source="web", index_name="row",
                     index=tuple(str(n) for n in range(1, count + 1)), dates=(),
                     columns=cols, source_id=source_id)


def report(*tables: DataTable, sources: tuple[ReportSource, ...] = ()) -> Report:
    return Report(question="q", when="2026-01-01 10:00 UTC", model="m", answer="a",
                  sources=sources, verification="", notes=(), tables=tables)


def test_hostile_text_cells_stay_strings_and_control_characters_are_dropped() -> None:
    hostile = table("picks", price=(1.5, 2.0, None),
                    note=(HOSTILE, "+SUM(A1)", "@x\x07bell"))
    src = ReportSource("S1", "=HYPERLINK(\"http://evil\")", "javascript:alert(1)", "web_fetch",
                       cited=True)
    book = load_workbook(io.BytesIO(render_bytes(report(hostile, sources=(src,)), "xlsx")))
    sheet = book["picks"]
    notes = next(r for r in sheet.iter_rows() if r[0].value == "1")
    assert notes[1].value == 1.5 and notes[1].number_format == "#,##0.00"
    cells = [sheet.cell(row=notes[0].row + n, column=3) for n in range(3)]
    assert [c.value for c in cells] == [HOSTILE, "+SUM(A1)", "@xbell"]
    assert all(c.data_type == "s" for c in cells)
    assert sheet.cell(row=notes[0].row + 2, column=2).value is None  # missing: empty
    title = book["Sources"]["B2"]
    assert title.data_type == "s" and title.value.startswith("=HYPERLINK")
    assert book["Sources"]["C2"].hyperlink is None  # only web links are made links


def test_sheet_names_are_valid_and_unique() -> None:
    long = "income_statements[AAPL, quarterly]"
    assert sheet_name(long) == "income_statements(AAPL, quarte…"
    assert len(sheet_name(long)) == 31
    assert sheet_name("a/b:c*d?e\\f") == "a b c d e f"
    assert sheet_name("'quoted'") == "quoted" and sheet_name("[]") == "()"
    assert sheet_name("???") == "Table"
    names = SheetNames(["Report", "Sources"])
    made = [names.unique(t) for t in (long, long, long, "report", "SOURCES")]
    assert made == ["income_statements(AAPL, quarte…", "income_statements(AAPL, qua (2)",
                    "income_statements(AAPL, qua (3)", "report (2)", "SOURCES (2)"]
    assert all(len(n) <= 31 for n in made)


def test_colliding_table_titles_each_get_a_sheet() -> None:
    first = table("prices[AAPL]", price=(1.0, 2.0))
    second = table("prices[AAPL]", source_id="S2", price=(3.0, 4.0))
    sources = (ReportSource("S1", "one", "https://a.example/1", "t", True),
               ReportSource("S2", "two", "https://a.example/2", "t", False))
    book = load_workbook(io.BytesIO(render_bytes(report(first, second, sources=sources),
                                                 "xlsx")))
    assert book.sheetnames == ["Report", "prices(AAPL)", "prices(AAPL) (2)", "Sources"]
    assert book["prices(AAPL) (2)"]["A2"].value == "[S2] two"
    assert [r[5] for r in rows(book["Sources"])[1:]] == ["prices(AAPL)", "prices(AAPL) (2)"]
    assert [r[4] for r in rows(book["Sources"])[1:]] == ["yes", "no"]


def test_openpyxl_is_imported_only_when_a_workbook_is_written() -> None:
    import subprocess
    import sys

    code = ("import sys, dexter.reports, dexter.reports.xlsx, dexter.reports.export, "
            "dexter.repl.session, dexter.repl.handlers, dexter.render.charts\n"
            "print('openpyxl' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "False"


def test_prices_have_a_row_per_day_with_units_in_the_header() -> None:
    prices = DataTable(title="prices[AAPL]", source="Yahoo", index_name="date",
                       index=("2024-01-02", "2024-01-03"), dates=("2024-01-02", "2024-01-03"),
                       columns=(Column("close", "USD", (185.64, 184.25)),
                                Column("volume", "shares", (82_488_700.0, None))),
                       source_id="S1", dropped_rows=3)
    book = load_workbook(io.BytesIO(render_bytes(report(prices), "xlsx")))
    sheet = book["prices(AAPL)"]
    header = find_row(sheet, "date")
    assert [c.value for c in header] == ["date", "close (USD)", "volume (shares)"]
    day = find_row(sheet, "2024-01-02")
    assert day[1].value == pytest.approx(185.64) and day[1].number_format == "#,##0.00"
    assert day[2].value == 82_488_700 and day[2].number_format == "#,##0"
    assert find_row(sheet, "2024-01-03")[2].value is None
    assert sheet["A4"].value == "The oldest 3 rows were left out."
    assert sheet["A2"].value == "Yahoo [S1]"  # no such source in the report: the label
