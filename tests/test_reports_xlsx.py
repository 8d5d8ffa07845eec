"""The .xlsx report: written end to end by ``dexter ask --output report.xlsx`` after a run
against the fake data server, then opened with openpyxl; and the writer's rules for hostile
text and sheet names on hand-built reports."""

from __future__ import annotations

import datetime as dt
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


def find_row(sheet: Worksheet, first: str | None, column: int = 0,
             value: Any = None) -> tuple[Any, ...]:
    """The first row whose first cell is ``first`` (or whose cell ``column`` is ``value``)."""
    wanted = first if value is None else value
    for row in sheet.iter_rows():
        if len(row) > column and row[column].value == wanted:
            return row
    raise AssertionError(f"no row with {wanted!r} in {sheet.title}: {rows(sheet)}")


def test_ask_output_xlsx_holds_the_fetched_numbers_units_and_sources(
        llm: FakeLLM, data: FakeDataServer, tmp_path: Path) -> None:
    run = run_report(llm, data, tmp_path, "report.xlsx",
                     answer=ANSWER + "\n\n" + HOSTILE)
    assert run.result.code == 0, run.result.stderr
    book = load_workbook(run.path)
    assert book.sheetnames[0] == "Report" and book.sheetnames[-1] == "Sources"
    assert len(book.sheetnames) == 3

    report = book["Report"]
    assert find_row(report, "Question")[1].value.startswith("How did Apple's revenue")
    assert find_row(report, "Model")[1].value
    assert "figures checked" in find_row(report, "Check")[1].value
    assert find_row(report, "Date")[1].is_date
    answer_cells = [r[1] for r in report.iter_rows() if isinstance(r[1].value, str)]
    hostile = [c for c in answer_cells if c.value == HOSTILE]
    assert len(hostile) == 1 and hostile[0].data_type == "s"  # text, not a formula
    # the answer's table is cells: its header, then numbers shown as they were written
    quarter = find_row(report, None, column=1, value="Q1 2024")
    assert quarter[2].value == 119_600_000_000 and quarter[2].data_type == "n"
    assert quarter[3].value == pytest.approx(0.284) and "%" in quarter[3].number_format
    assert not any(str(c.value).startswith(("|", "#", "**")) for c in answer_cells)

    tables = find_row(report, "Tables")
    assert tables[1].value == book.sheetnames[1] == "Apple income, quarterly"
    assert tables[1].hyperlink.location == f"'{book.sheetnames[1]}'!A1"

    table = book[book.sheetnames[1]]
    assert table["A1"].value == "Apple Inc. — Income statement, quarterly"
    assert table["A2"].value.startswith("USD millions, except per-share")
    assert "aapl-20240928.htm" not in str(table["A3"].value)  # the title, not a file name
    assert table["A3"].hyperlink.target.endswith(".htm")
    header = find_row(table, "Fiscal quarter")
    assert [c.value for c in header][1] == "Q1 FY2024"
    ends = find_row(table, "Period end")
    assert ends[1].is_date and ends[1].value.date().isoformat() == "2023-12-30"
    assert table.freeze_panes == f"B{header[0].row + 2}"
    revenue = find_row(table, "Revenue")
    assert revenue[1].value == 119_575_000_000 and revenue[1].data_type == "n"
    assert revenue[1].number_format.startswith("#,##0,,")  # shown in millions
    assert [c.value for c in revenue[1:]] == [119_575_000_000, 90_753_000_000,
                                              85_777_000_000, 94_930_000_000]
    margin = find_row(table, "Net margin")
    net, rev = find_row(table, "Net income")[0].row, revenue[0].row
    assert margin[1].value == f"=B{net}/B{rev}" and "%" in margin[1].number_format
    eps = find_row(table, "EPS, diluted")
    assert eps[1].value == pytest.approx(2.18) and eps[1].number_format.startswith("#,##0.00")
    assert eps[4].value is None  # not reported for that quarter: an empty cell

    sources = rows(book["Sources"])
    assert sources[0] == ["Id", "Source", "Supplied by", "Document", "Details", "Cited",
                          "Sheets"]
    s1 = sources[1]
    assert s1[0] == "S1" and s1[5] == "yes" and s1[6] == book.sheetnames[1]
    assert s1[1] == "Apple Inc. — Income statement, quarterly, Q1 FY2024–Q4 FY2024"
    assert s1[3] == "aapl-20240928.htm" and "0000320193-24-000123" in s1[4]
    assert book["Sources"]["D2"].hyperlink.target.endswith("/aapl-20240928.htm")


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


def test_sheet_names_are_valid_unique_and_never_cut_with_an_ellipsis() -> None:
    long = "income_statements[AAPL, quarterly] and a good deal more"
    assert sheet_name(long) == "income_statements(AAPL"
    assert len(sheet_name(long)) <= 31 and "…" not in sheet_name(long)
    assert sheet_name("a/b:c*d?e\\f") == "a b c d e f"
    assert sheet_name("'quoted'") == "quoted" and sheet_name("[]") == "()"
    assert sheet_name("???") == "Table"
    names = SheetNames(["Report", "Sources"])
    title = "Apple income statement, annual"
    made = [names.unique(t) for t in (title, title, title, "report", "SOURCES")]
    assert made == ["Apple income statement, annual", "Apple income statement (2)",
                    "Apple income statement (3)", "report (2)", "SOURCES (2)"]
    assert all(len(n) <= 31 and "…" not in n for n in made)


def test_sheets_are_named_by_company_statement_and_period() -> None:
    from dexter.reports.xlsx import sheet_title

    def statement(entity: str, period: str) -> DataTable:
        return DataTable("x", "SEC EDGAR", "period", ("FY2024 (2024-09-28)",), ("2024-09-28",),
                         (Column("revenue", "USD", (1.0,)), Column("net_income", "USD", (1.0,))),
                         entity=entity, period=period)

    assert sheet_title(statement("Apple Inc.", "annual")) == "Apple income statement, annual"
    assert sheet_title(statement("Apple Inc.", "quarterly")) == "Apple income, quarterly"
    long = sheet_title(statement("Berkshire Hathaway Inc.", "quarterly"))
    assert long == "Berkshire income, quarterly" and len(long) <= 31


def test_colliding_table_titles_each_get_a_sheet() -> None:
    first = table("prices[AAPL]", price=(1.0, 2.0))
    second = table("prices[AAPL]", source_id="S2", price=(3.0, 4.0))
    sources = (ReportSource("S1", "one", "https://a.example/1", "t", True),
               ReportSource("S2", "two", "https://a.example/2", "t", False))
    book = load_workbook(io.BytesIO(render_bytes(report(first, second, sources=sources),
                                                 "xlsx")))
    assert book.sheetnames == ["Report", "AAPL prices", "AAPL prices (2)", "Sources"]
    assert book["AAPL prices (2)"]["A3"].value == "Source: [S2] two"
    assert [r[6] for r in rows(book["Sources"])[1:]] == ["AAPL prices", "AAPL prices (2)"]
    assert [r[5] for r in rows(book["Sources"])[1:]] == ["yes", "no"]


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
    sheet = book["AAPL share prices"]
    header = find_row(sheet, "Date")
    assert [c.value for c in header] == ["Date", "Close (USD)", "Volume"]
    day = find_row(sheet, None, value=dt.datetime(2024, 1, 2))
    assert day[0].is_date
    assert day[1].value == pytest.approx(185.64) and day[1].number_format == "#,##0.00"
    assert day[2].value == 82_488_700 and day[2].number_format == "#,##0"
    assert find_row(sheet, None, value=dt.datetime(2024, 1, 3))[2].value is None
    assert sheet["A4"].value == "The oldest 3 rows were left out."
    assert sheet["A3"].value == "Source: Yahoo [S1]"  # no such source in the report: the label


SEGMENTS = ('Segment,FY2023,FY2024\n"iPhone","200,583","201,183"\n'
            '"Services","85,200","96,169"\n"Mac","29,357","(29,984)"\n')


def test_a_csv_the_run_read_is_a_sheet_of_numbers(llm: FakeLLM, data: FakeDataServer,
                                                   tmp_path: Path) -> None:
    from dexter.testing.fakellm import Reply, ToolCallSpec
    from tests.cli_helpers import cli_env, run_cli
    from tests.report_helpers import data_env

    (tmp_path / "segments.csv").write_text(SEGMENTS, encoding="utf-8")
    llm.enqueue(Reply(tool_calls=[ToolCallSpec("read_file", {"path": "segments.csv"})]),
                Reply(text="Services grew fastest of the three segments [S1]."))
    env = cli_env(llm, tmp_path, **data_env(data))
    result = run_cli(["ask", "--plain", "--output", "segments.xlsx", "Which segment grew?"],
                     cwd=tmp_path, env=env)
    assert result.code == 0, result.stderr
    book = load_workbook(tmp_path / "segments.xlsx")
    assert book.sheetnames == ["Report", "segments.csv", "Sources"]
    table = book["segments.csv"]
    header = find_row(table, "Fiscal year")
    assert [c.value for c in header] == ["Fiscal year", "FY2023", "FY2024"]
    labels = [r[0].value for r in table.iter_rows(min_row=header[0].row + 1)]
    assert labels == ["iPhone", "Services", "Mac"]  # as the file had them
    services = find_row(table, "Services")
    assert [c.value for c in services] == ["Services", 85_200, 96_169]
    assert all(c.data_type == "n" for c in services[1:])
    assert find_row(table, "Mac")[2].value == -29_984  # (29,984) is a negative number
    sources = rows(book["Sources"])
    assert sources[1][:2] == ["S1", "segments.csv, FY2023–FY2024"]
