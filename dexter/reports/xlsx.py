"""The report as a spreadsheet: a Report sheet (question, date, model, answer, verification),
one sheet per data table the run pulled, and a Sources sheet.

Numbers are stored as numbers, never as formatted text: a header names the unit
(``revenue (USD)``, ``gross_margin (%)``) and a number format shows the value (a ratio is
stored as the fraction with a percent format). Statements have a row per field and a column
per period, like the other formats; record lists (daily prices, companies) a row per record.

Every text cell comes from outside (fetched pages, filings, the model): it is stored as a
string, so one starting with ``=`` never becomes a formula, and characters a workbook cannot
hold are dropped. openpyxl is imported inside :func:`render` only.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from dexter.evidence.tables import Cell, DataTable
from dexter.reports.layout import column_header, format_cell, is_transposed, table_caption
from dexter.reports.model import Report, ReportSource

if TYPE_CHECKING:
    from openpyxl.worksheet.worksheet import Worksheet

MAX_SHEET_NAME = 31
"""Excel's limit on a sheet name's length."""
MAX_CELL_TEXT = 32_767
"""Excel's limit on the characters in one cell."""
RESERVED = ("Report", "Sources")
FORBIDDEN_IN_NAME = re.compile(r"[\[\]:*?/\\]")
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
HEADER_ROW = 5
"""The table sheets' header row: the title, the source and a note come first."""
MIN_WIDTH, MAX_WIDTH = 8, 60


def render(report: Report) -> bytes:
    """The workbook as .xlsx bytes."""
    from openpyxl import Workbook

    book = Workbook()
    names = SheetNames(RESERVED)
    sheets = [(table, names.unique(table.title)) for table in report.tables]
    report_sheet = book.active
    assert report_sheet is not None
    report_sheet.title = RESERVED[0]
    _report_sheet(report_sheet, report, sheets)
    sources = {s.id: s for s in report.sources}
    for table, name in sheets:
        _table_sheet(book.create_sheet(name), table, sources.get(table.source_id))
    _sources_sheet(book.create_sheet(RESERVED[1]), report.sources, sheets)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


class SheetNames:
    """Unique, valid sheet names: at most 31 characters, none of ``[]:*?/\\``, not starting
    or ending with an apostrophe, unique regardless of case (Excel's rules)."""

    def __init__(self, taken: Iterable[str] = ()) -> None:
        self._taken = {name.lower() for name in taken}

    def unique(self, title: str) -> str:
        """A valid name for ``title``, ``… (2)`` when one like it is taken."""
        base = sheet_name(title)
        name, n = base, 2
        while name.lower() in self._taken:
            suffix = f" ({n})"
            name = base[:MAX_SHEET_NAME - len(suffix)].rstrip(" '") + suffix
            n += 1
        self._taken.add(name.lower())
        return name


def sheet_name(title: str) -> str:
    """``title`` as a valid sheet name (brackets become parentheses, others a space)."""
    text = title.replace("[", "(").replace("]", ")")
    text = " ".join(FORBIDDEN_IN_NAME.sub(" ", CONTROL.sub("", text)).split()).strip("'")
    if len(text) > MAX_SHEET_NAME:
        text = text[:MAX_SHEET_NAME - 1].rstrip(" '") + "…"
    return text.strip() or "Table"


def number_format(value: float, unit: str) -> str:
    """How a number shows: ratios as percentages, per-share amounts with 2 decimals,
    whole amounts with thousands separators."""
    if unit == "ratio":
        return "0.00%"
    if unit.endswith("/share") or unit == "per share":
        return "#,##0.00"
    if value.is_integer() or unit == "shares":
        return "#,##0"
    if unit or abs(value) >= 1000:
        return "#,##0.00"
    return "General"


def text(value: str) -> str:
    """A string a workbook can hold: no control characters, at most one cell's length."""
    cleaned = CONTROL.sub("", value)
    return cleaned if len(cleaned) <= MAX_CELL_TEXT else cleaned[:MAX_CELL_TEXT - 1] + "…"


def put(sheet: Worksheet, row: int, column: int, value: Cell, unit: str = "",
        bold: bool = False) -> Any:
    """Write one cell: a number with its format, or a string that stays a string (never a
    formula, however it starts); None leaves the cell empty."""
    cell = sheet.cell(row=row, column=column)
    if isinstance(value, float):
        cell.value = int(value) if value.is_integer() and abs(value) < 2**53 else value
        cell.number_format = number_format(value, unit)
    elif isinstance(value, str) and value:
        cell.value = text(value)
        cell.data_type = "s"  # openpyxl takes a leading "=" for a formula
        if value[:1] in "=+-@":
            cell.quotePrefix = True  # and Excel keeps it text when the cell is edited
    if bold:
        from openpyxl.styles import Font

        cell.font = Font(bold=True)
    return cell


def link(cell: Any, url: str) -> None:
    """Make ``cell`` a hyperlink to a web ``url`` (nothing for other schemes)."""
    if url.startswith(("http://", "https://")):
        cell.hyperlink = text(url)
        cell.style = "Hyperlink"


def _report_sheet(sheet: Worksheet, report: Report,
                  tables: list[tuple[DataTable, str]]) -> None:
    from openpyxl.styles import Alignment
    from openpyxl.worksheet.hyperlink import Hyperlink

    rows: list[tuple[str, str]] = [("Question", " ".join(report.question.split())),
                                   ("Date", report.when), ("Model", report.model)]
    lines = report.answer.splitlines() or [""]
    rows.extend(("Answer" if n == 0 else "", line) for n, line in enumerate(lines))
    rows.extend(("Note", note) for note in report.notes)
    if report.verification:
        rows.append(("Verification", report.verification))
    row = 0
    for row, (label, value) in enumerate(rows, 1):
        put(sheet, row, 1, label, bold=True)
        put(sheet, row, 2, value).alignment = Alignment(wrap_text=True, vertical="top")
    if tables:
        row += 2
        put(sheet, row, 1, "Tables", bold=True)
        for table, name in tables:
            cell = put(sheet, row, 2, name)
            quoted = name.replace("'", "''")
            cell.hyperlink = Hyperlink(ref=cell.coordinate, location=f"'{quoted}'!A1")
            cell.style = "Hyperlink"
            put(sheet, row, 3, table_caption(table))
            row += 1
    sheet.column_dimensions["A"].width = 14
    sheet.column_dimensions["B"].width = 100


def _table_sheet(sheet: Worksheet, table: DataTable, source: ReportSource | None) -> None:
    put(sheet, 1, 1, table.title, bold=True)
    if source is not None:
        put(sheet, 2, 1, f"[{source.id}] {source.title}")
        link(put(sheet, 3, 1, source.url), source.url)
    else:
        label = table.source + (f" [{table.source_id}]" if table.source_id else "")
        put(sheet, 2, 1, label)
    if table.dropped_rows:
        put(sheet, 4, 1, f"The oldest {table.dropped_rows:,} rows were left out.")
    if is_transposed(table):
        header: list[str] = ["field", *table.index]
        body: list[list[tuple[Cell, str]]] = [
            [(column_header(c), ""), *((v, c.unit) for v in c.values)] for c in table.columns]
    else:
        header = [table.index_name, *(column_header(c) for c in table.columns)]
        body = [[(label, ""), *((c.values[i], c.unit) for c in table.columns)]
                for i, label in enumerate(table.index)]
    for column, name in enumerate(header, 1):
        put(sheet, HEADER_ROW, column, name, bold=True)
    for row, cells in enumerate(body, HEADER_ROW + 1):
        for column, (value, unit) in enumerate(cells, 1):
            if value is not None:  # a missing value stays an empty cell
                put(sheet, row, column, value, unit)
    sheet.freeze_panes = f"B{HEADER_ROW + 1}"
    _fit_widths(sheet, header, body)


def _fit_widths(sheet: Worksheet, header: list[str],
                body: list[list[tuple[Cell, str]]]) -> None:
    """Each column as wide as its header or widest value (as shown), within bounds."""
    from openpyxl.utils import get_column_letter

    for n, name in enumerate(header):
        widest = max([len(name), *(len(format_cell(row[n][0], row[n][1]))
                                   for row in body[:500] if n < len(row))])
        sheet.column_dimensions[get_column_letter(n + 1)].width = \
            min(MAX_WIDTH, max(MIN_WIDTH, widest + 2))


def _sources_sheet(sheet: Worksheet, sources: tuple[ReportSource, ...],
                   tables: list[tuple[DataTable, str]]) -> None:
    header = ("id", "title", "URL", "tool", "cited", "tables")
    for column, name in enumerate(header, 1):
        put(sheet, 1, column, name, bold=True)
    for row, source in enumerate(sources, 2):
        gave = ", ".join(name for table, name in tables if table.source_id == source.id)
        for column, value in enumerate((source.id, source.title, source.url, source.tool,
                                        "yes" if source.cited else "no", gave), 1):
            cell = put(sheet, row, column, value)
            if column == 3:
                link(cell, source.url)
    sheet.freeze_panes = "A2"
    for letter, width in zip("ABCDEF", (6, 50, 60, 18, 7, 40), strict=True):
        sheet.column_dimensions[letter].width = width
