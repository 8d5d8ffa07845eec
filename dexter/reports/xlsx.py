"""The report as a workbook an analyst can work in: a Report sheet (the question, the check,
the answer as formatted text with its own tables in cells), one sheet per data table the
run pulled, and a Sources sheet.

Numbers are stored as numbers at full precision, never as formatted text; a number format
shows them the way the reports do: statement amounts and share counts in millions
(``#,##0,,`` shows 391,035,000,000 as 391,035), per-share values with two decimals, ratios
as percentages, negatives in parentheses. A statement's derived rows (margins, gross
profit, free cash flow, total debt) are formulas over the cells they come from, and
year-on-year growth rows are added as formulas; period ends are dates. Statements have a
row per line item, in statement order, and a column per period, like the other formats;
record lists (daily prices, companies) a row per record.

Every text cell comes from outside (fetched pages, filings, the model): it is stored as a
string, so one starting with ``=`` never becomes a formula (the only formulas are the
ones this module writes from field names it knows), and characters a workbook cannot hold
are dropped. openpyxl is imported inside :func:`render` only.
"""

from __future__ import annotations

import datetime as dt
import io
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from dexter.evidence.tables import DataTable
from dexter.evidence.text_tables import Written, parse_written
from dexter.reports.answer_text import Block, answer_blocks
from dexter.reports.model import Report, ReportSource
from dexter.reports.presentation import period_kind, short_entity, statement_kind, table_title
from dexter.reports.xlsx_sheets import CONTROL, link, put, table_sheet

if TYPE_CHECKING:
    from openpyxl.worksheet.worksheet import Worksheet

__all__ = ["SheetNames", "render", "sheet_name", "sheet_title", "written_format"]

MAX_SHEET_NAME = 31
"""Excel's limit on a sheet name's length."""
RESERVED = ("Report", "Sources")
FORBIDDEN_IN_NAME = re.compile(r"[\[\]:*?/\\]")
TEXT_WIDTH = 100
"""The Report sheet's text column, in characters."""
WARN_FILL, OK_FILL, HEAD_FILL = "FFF6E0", "EEF7F0", "EEF1F5"
STATEMENT_SHORT = {"income": "income statement", "balance": "balance sheet",
                   "cash_flow": "cash flow"}
STATEMENT_SHORTER = {"income": "income", "balance": "balance sheet", "cash_flow": "cash flow"}


def render(report: Report) -> bytes:
    """The workbook as .xlsx bytes."""
    from openpyxl import Workbook

    book = Workbook()
    names = SheetNames(RESERVED)
    sheets = [(table, names.unique(sheet_title(table))) for table in report.tables]
    report_sheet = book.active
    assert report_sheet is not None
    report_sheet.title = RESERVED[0]
    _report_sheet(report_sheet, report, sheets)
    sources = {s.id: s for s in report.sources}
    for table, name in sheets:
        table_sheet(book.create_sheet(name), table, sources.get(table.source_id))
    _sources_sheet(book.create_sheet(RESERVED[1]), report.sources, sheets)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


# -- names ----------------------------------------------------------------------------------


class SheetNames:
    """Unique, valid sheet names: at most 31 characters, none of ``[]:*?/\\``, not starting
    or ending with an apostrophe, unique regardless of case (Excel's rules)."""

    def __init__(self, taken: Iterable[str] = ()) -> None:
        self._taken = {name.lower() for name in taken}

    def unique(self, title: str) -> str:
        """A valid name for ``title``, ``... (2)`` when one like it is taken."""
        base = sheet_name(title)
        name, n = base, 2
        while name.lower() in self._taken:
            suffix = f" ({n})"
            name = _cut(base, MAX_SHEET_NAME - len(suffix)) + suffix
            n += 1
        self._taken.add(name.lower())
        return name


def sheet_name(title: str) -> str:
    """``title`` as a valid sheet name: brackets become parentheses, other forbidden
    characters a space, and a long one is cut at a word (never with an ellipsis)."""
    text = title.replace("[", "(").replace("]", ")")
    text = " ".join(FORBIDDEN_IN_NAME.sub(" ", CONTROL.sub("", text)).split()).strip("'")
    return _cut(text, MAX_SHEET_NAME) or "Table"


def sheet_title(table: DataTable) -> str:
    """A short readable name for a table's sheet: ``Apple income statement, annual``,
    ``AAPL share prices``; the longest that fits in 31 characters."""
    kind = statement_kind(table)
    if not kind:
        who, _, what = table_title(table).rpartition(" — ")
        return f"{who} {what[:1].lower()}{what[1:]}" if who else what
    entity = short_entity(table_title(table).split(" — ")[0]) \
        if " — " in table_title(table) else ""
    period = {"annual": "annual", "quarterly": "quarterly", "ttm": "TTM"}.get(
        period_kind(table), "")
    what, shorter = STATEMENT_SHORT[kind], STATEMENT_SHORTER[kind]
    candidates = [f"{entity} {what}, {period}", f"{entity} {shorter}, {period}",
                  f"{what.capitalize()}, {period}", f"{shorter.capitalize()}, {period}",
                  what.capitalize()]
    for candidate in candidates:
        cleaned = " ".join(candidate.replace(", ,", ",").strip(" ,").split())
        if cleaned and len(sheet_name(cleaned)) == len(cleaned) <= MAX_SHEET_NAME and \
                "()" not in cleaned:
            return cleaned[:1].upper() + cleaned[1:]
    return what.capitalize()


def _cut(text: str, room: int) -> str:
    """``text`` in at most ``room`` characters, cut at a word when it is longer."""
    if len(text) <= room:
        return text.strip()
    cut = text[:room + 1].rsplit(" ", 1)[0] if " " in text[:room + 1] else text[:room]
    return cut[:room].rstrip(" ,;·—-'(").strip()


# -- numbers as they were written -------------------------------------------------------


def written_format(written: Written) -> str:
    """The number format that shows a value the way it was written (``$119.6B`` as
    ``$#,##0.0,,,"B"``, ``46.2%`` as ``0.0%``, ``(9,447)`` in parentheses)."""
    digits = "#,##0" if written.grouped or abs(written.value) >= 1000 or written.scale else "0"
    if written.decimals:
        digits += "." + "0" * written.decimals
    if written.percent:
        body = digits + "%"
    else:
        commas = {"k": ",", "m": ",,", "mm": ",,", "mn": ",,", "b": ",,,", "bn": ",,,",
                  "t": ",,,,"}.get(written.scale.lower(), "")
        scale = f'"{written.scale}"' if written.scale else ""
        currency = f'"{written.currency}"' if written.currency else ""
        body = f"{currency}{digits}{commas}{scale}"
    return f"{body};({body})"


# -- the Report sheet -----------------------------------------------------------------------


def _report_sheet(sheet: Worksheet, report: Report,
                  tables: list[tuple[DataTable, str]]) -> None:
    from openpyxl.styles import Alignment, Font, PatternFill
    from openpyxl.worksheet.hyperlink import Hyperlink

    wrap = Alignment(wrap_text=True, vertical="top")
    put(sheet, 1, 1, "Question", bold=True)
    cell = put(sheet, 1, 2, " ".join(report.question.split()))
    cell.font, cell.alignment = Font(bold=True, size=13), wrap
    fit_height(sheet, 1, str(cell.value or ""), TEXT_WIDTH - 15)
    put(sheet, 2, 1, "Date", bold=True)
    when = _moment(report.when)
    if when is not None:
        put(sheet, 2, 2, when, fmt="yyyy-mm-dd hh:mm").alignment = Alignment(horizontal="left")
        put(sheet, 2, 3, report.when[17:].strip() or None)
    else:
        put(sheet, 2, 2, report.when)
    put(sheet, 3, 1, "Model", bold=True)
    put(sheet, 3, 2, report.model)
    row = 5
    if report.checked:
        fill = PatternFill("solid", fgColor=WARN_FILL if report.warning else OK_FILL)
        put(sheet, row, 1, "Check", bold=True)
        cell = put(sheet, row, 2, report.verification, bold=True)
        cell.fill, cell.alignment = fill, wrap
        fit_height(sheet, row, report.verification)
        for flag in report.flags:
            row += 1
            cell = put(sheet, row, 2, f"⚠ “{flag.text}”: {flag.reason}")
            cell.fill, cell.alignment = fill, wrap
            cell.font = Font(color="8A4B00")
            fit_height(sheet, row, str(cell.value))
        row += 2
    put(sheet, row, 1, "Answer", bold=True)
    row = _answer(sheet, row, answer_blocks(report.answer)) + 1
    for note in report.notes:
        put(sheet, row, 1, "Note", bold=True)
        put(sheet, row, 2, note).alignment = wrap
        fit_height(sheet, row, note)
        row += 1
    if tables:
        row += 1
        put(sheet, row, 1, "Tables", bold=True)
        for table, name in tables:
            cell = put(sheet, row, 2, name)
            quoted = name.replace("'", "''")
            cell.hyperlink = Hyperlink(ref=cell.coordinate, location=f"'{quoted}'!A1")
            cell.style = "Hyperlink"
            put(sheet, row, 3, table_title(table) + (f" [{table.source_id}]"
                                                      if table.source_id else ""))
            row += 1
    sheet.column_dimensions["A"].width = 12
    sheet.column_dimensions["B"].width = TEXT_WIDTH
    for letter in "CDEFGHIJKL":
        sheet.column_dimensions[letter].width = 14


def _answer(sheet: Worksheet, row: int, blocks: Sequence[Block]) -> int:
    """The answer's blocks from column B: headings in bold, paragraphs wrapped, list items
    indented, tables as cells (numbers as numbers, shown as written). The last row used."""
    from openpyxl.styles import Alignment, Font

    wrap = Alignment(wrap_text=True, vertical="top")
    for block in blocks:
        if block.kind == "table":
            row = _answer_table(sheet, row, block) + 1
            continue
        if block.kind == "rule" or not block.text:
            row += 1
            continue
        cell = put(sheet, row, 2, block.text)
        if block.kind == "heading":
            cell.font = Font(bold=True, size={1: 14, 2: 13, 3: 12}.get(block.level, 11))
            row += 1 if row else 0
        elif block.kind == "item":
            cell.alignment = Alignment(wrap_text=True, vertical="top", indent=block.level)
        elif block.kind in ("quote", "code"):
            cell.font = Font(italic=True, color="5F6368")
            cell.alignment = wrap
        else:
            cell.alignment = wrap
        fit_height(sheet, row, block.text, TEXT_WIDTH - 4 * block.level)
        row += 1
    return row


def fit_height(sheet: Worksheet, row: int, value: str, width: int = TEXT_WIDTH) -> None:
    """Give a row of wrapped text the height its lines need (a workbook does not measure
    it on opening)."""
    lines = sum(max(1, -(-len(part) // max(10, int(width * 1.1)))) for part in value.split("\n"))
    if lines > 1:
        sheet.row_dimensions[row].height = 15 * lines


def _answer_table(sheet: Worksheet, row: int, block: Block) -> int:
    """One of the answer's tables as cells: the header bold on a rule, each number a number
    in the format it was written in. The last row used."""
    from openpyxl.styles import Alignment, Border, Font, PatternFill, Side

    rule = Border(bottom=Side(style="thin", color="9AA3AD"))
    for n, cells in enumerate(block.rows):
        for c, value in enumerate(cells):
            written = parse_written(value) if n else None
            if written is not None:
                cell = put(sheet, row, 2 + c, written.value, fmt=written_format(written))
            else:
                cell = put(sheet, row, 2 + c, value or None)
                if c and n and block.numeric[c:c + 1] == (True,):
                    cell.alignment = Alignment(horizontal="right")
            if n == 0:
                cell.font = Font(bold=True)
                cell.border = rule
                cell.fill = PatternFill("solid", fgColor=HEAD_FILL)
                if c:
                    cell.alignment = Alignment(horizontal="right", wrap_text=True)
        row += 1
    return row


def _moment(when: str) -> dt.datetime | None:
    try:
        return dt.datetime.strptime(when[:16], "%Y-%m-%d %H:%M")
    except ValueError:
        return None


# -- the Sources sheet ----------------------------------------------------------------------


def _sources_sheet(sheet: Worksheet, sources: tuple[ReportSource, ...],
                   tables: list[tuple[DataTable, str]]) -> None:
    from openpyxl.styles import Alignment

    header = ("Id", "Source", "Supplied by", "Document", "Details", "Cited", "Sheets")
    for column, name in enumerate(header, 1):
        put(sheet, 1, column, name, bold=True)
    wrap = Alignment(wrap_text=True, vertical="top")
    for row, source in enumerate(sources, 2):
        gave = ", ".join(name for table, name in tables if table.source_id == source.id)
        documents = [r for r in source.references if r.url] or []
        first = documents[0] if documents else None
        details = [source.detail, *source.inputs,
                   *(f"{r.covers}: {r.text}" if r.covers else r.text for r in source.references)]
        values = (source.id, source.title, "" if source.provider == "calculator"
                  else source.provider, (first.name or first.url) if first else source.url,
                  "\n".join(d for d in details if d), "yes" if source.cited else "no", gave)
        for column, value in enumerate(values, 1):
            cell = put(sheet, row, column, value)
            cell.alignment = wrap
            if column == 4:
                link(cell, first.url if first else source.url)
    sheet.freeze_panes = "A2"
    for letter, width in zip("ABCDEFG", (6, 50, 28, 30, 80, 7, 30), strict=True):
        sheet.column_dimensions[letter].width = width
