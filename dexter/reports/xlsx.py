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
from typing import TYPE_CHECKING, Any

from dexter import metrics
from dexter.evidence.tables import Cell, Column, DataTable
from dexter.evidence.text_tables import Written, parse_written
from dexter.reports.answer_text import Block, answer_blocks
from dexter.reports.model import Report, ReportSource
from dexter.reports.presentation import (
    MILLION,
    ValueKind,
    column_label,
    period_end,
    period_kind,
    period_label,
    scale_of,
    short_entity,
    split_period,
    statement_kind,
    statement_order,
    table_title,
    unit_note,
    value_kind,
)

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
"""The table sheets' header row: the title, the unit and the source come first."""
MIN_WIDTH, MAX_WIDTH = 8, 60
TEXT_WIDTH = 100
"""The Report sheet's text column, in characters."""

MILLIONS = "#,##0,,;(#,##0,,);0"
"""Full-precision amounts shown in millions, negatives in parentheses."""
FORMATS: dict[str, str] = {
    "amount_m": MILLIONS, "shares_m": MILLIONS,
    "amount": "#,##0;(#,##0);0", "shares": "#,##0", "count": "#,##0",
    "per_share": "#,##0.00;(#,##0.00);0.00", "price": "#,##0.00",
    "ratio": "0.0%;(0.0%);0.0%", "number": "#,##0.####;(#,##0.####);0",
}
DATE_FORMAT = "d mmm yyyy"
WARN_FILL, OK_FILL, HEAD_FILL = "FFF6E0", "EEF7F0", "EEF1F5"
_OPERAND = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_FORMULA = re.compile(r"^[A-Za-z0-9_\s+\-*/().]+$")
STATEMENT_SHORT = {"income": "income statement", "balance": "balance sheet",
                   "cash_flow": "cash flow"}
STATEMENT_SHORTER = {"income": "income", "balance": "balance sheet", "cash_flow": "cash flow"}
GROWTH = ("revenue", "net_income", "earnings_per_share_diluted", "free_cash_flow")
"""Rows that get a year-on-year growth row (as a formula) when the periods allow it."""


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
        _table_sheet(book.create_sheet(name), table, sources.get(table.source_id))
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


# -- cells ----------------------------------------------------------------------------------


def number_format(value: float, unit: str) -> str:
    """How a number shows in a cell of a record table: ratios as percentages, per-share
    amounts with 2 decimals, whole amounts with thousands separators."""
    if unit == "ratio":
        return FORMATS["ratio"]
    if unit.endswith("/share") or unit == "per share":
        return FORMATS["per_share"]
    if value.is_integer() or unit == "shares":
        return "#,##0;(#,##0)"
    if unit or abs(value) >= 1000:
        return "#,##0.00;(#,##0.00)"
    return "General"


def text(value: str) -> str:
    """A string a workbook can hold: no control characters, at most one cell's length."""
    cleaned = CONTROL.sub("", value)
    return cleaned if len(cleaned) <= MAX_CELL_TEXT else cleaned[:MAX_CELL_TEXT - 1] + "…"


def put(sheet: Worksheet, row: int, column: int, value: Cell | dt.date, unit: str = "",
        bold: bool = False, fmt: str = "") -> Any:
    """Write one cell: a number with its format, a date, or a string that stays a string
    (never a formula, however it starts); None leaves the cell empty."""
    cell = sheet.cell(row=row, column=column)
    if isinstance(value, float):
        cell.value = int(value) if value.is_integer() and abs(value) < 2**53 else value
        cell.number_format = fmt or number_format(value, unit)
    elif isinstance(value, dt.date):
        cell.value = value
        cell.number_format = fmt or DATE_FORMAT
    elif isinstance(value, str) and value:
        cell.value = text(value)
        cell.data_type = "s"  # openpyxl takes a leading "=" for a formula
        if value[:1] in "=+-@":
            cell.quotePrefix = True  # and Excel keeps it text when the cell is edited
    if bold:
        from openpyxl.styles import Font

        cell.font = Font(bold=True)
    return cell


def formula(sheet: Worksheet, row: int, column: int, expression: str, fmt: str) -> Any:
    """Write a formula this module built (cell references and arithmetic only)."""
    cell = sheet.cell(row=row, column=column)
    cell.value = expression
    cell.number_format = fmt
    return cell


def link(cell: Any, url: str) -> None:
    """Make ``cell`` a hyperlink to a web ``url`` (nothing for other schemes)."""
    if url.startswith(("http://", "https://")):
        cell.hyperlink = text(url)
        cell.style = "Hyperlink"


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


# -- a data table's sheet -------------------------------------------------------------------


def _table_sheet(sheet: Worksheet, table: DataTable, source: ReportSource | None) -> None:
    from openpyxl.styles import Font

    put(sheet, 1, 1, table_title(table)).font = Font(bold=True, size=12)
    note = unit_note(table) if table.index_name == "period" else ""
    put(sheet, 2, 1, (note + " (full values; the cells show millions)") if "millions" in note
        else note or None).font = Font(italic=True, color="5F6368")
    if source is not None:
        cell = put(sheet, 3, 1, f"Source: [{source.id}] {source.title}"
                   + (f" · {source.provider}" if source.provider else ""))
        link(cell, source.url)
    else:
        put(sheet, 3, 1, "Source: " + table.source + (f" [{table.source_id}]"
                                                      if table.source_id else ""))
    if table.dropped_rows:
        put(sheet, 4, 1, f"The oldest {table.dropped_rows:,} rows were left out.")
    if table.index_name == "period":
        _statement_sheet(sheet, table)
    else:
        _records_sheet(sheet, table)


def _statement_sheet(sheet: Worksheet, table: DataTable) -> None:
    """A row per line item in statement order, a column per period (with its end date as
    a date), derived cells as formulas, then growth rows and each period's filing."""
    from openpyxl.styles import Alignment, Border, Font, Side
    from openpyxl.utils import get_column_letter

    scale = scale_of(table)
    corner = {"annual": "Fiscal year", "quarterly": "Fiscal quarter"}.get(period_kind(table),
                                                                          "Period")
    put(sheet, HEADER_ROW, 1, corner, bold=True)
    rule = Border(bottom=Side(style="thin", color="9AA3AD"))
    total_rule = Border(top=Side(style="thin", color="9AA3AD"))
    dated = any(period_end(label) for label in table.index)
    for n, label in enumerate(table.index):
        head = put(sheet, HEADER_ROW, n + 2, period_label(label), bold=True)
        head.alignment = Alignment(horizontal="right")
        if not dated:
            head.border = rule
            continue
        end = period_end(label)
        day = _date(end)
        cell = put(sheet, HEADER_ROW + 1, n + 2, day if day is not None else end or None)
        cell.font, cell.border = Font(italic=True, color="5F6368"), rule
    if dated:
        put(sheet, HEADER_ROW + 1, 1, "Period end").font = Font(italic=True, color="5F6368")
    sheet.cell(row=HEADER_ROW + (1 if dated else 0), column=1).border = rule
    columns = statement_order(table.columns)
    first = HEADER_ROW + (2 if dated else 1)
    rows = {c.name: first + i for i, c in enumerate(columns)}
    widths = [len(corner), *(len(period_label(x)) for x in table.index)]
    for i, column in enumerate(columns):
        row = first + i
        kind = value_kind(column)
        fmt = _statement_format(kind, scale)
        cell = put(sheet, row, 1, metrics.label(column.name), bold=metrics.is_total(column.name))
        widths[0] = max(widths[0], len(metrics.label(column.name)))
        for n, value in enumerate(column.values):
            how = column.derived[n] if column.derived else ""
            made = _cell_formula(how, rows, get_column_letter(n + 2)) if value is not None \
                else None
            if made:
                target = formula(sheet, row, n + 2, made, fmt)
            elif value is not None:
                target = put(sheet, row, n + 2, value, fmt=fmt) if isinstance(value, float) \
                    else put(sheet, row, n + 2, value)
            else:
                continue
            if metrics.is_total(column.name):
                target.font = Font(bold=True)
        if metrics.is_total(column.name):
            for n in range(len(table.index) + 1):
                sheet.cell(row=row, column=n + 1).border = total_rule
    row = first + len(columns)
    row = _growth_rows(sheet, table, rows, row + 1)
    row = _filing_row(sheet, table, row + 1)
    sheet.freeze_panes = f"B{first}"
    from openpyxl.utils import get_column_letter as letter

    sheet.column_dimensions["A"].width = min(MAX_WIDTH, max(MIN_WIDTH, widths[0] + 2))
    for n in range(len(table.index)):
        sheet.column_dimensions[letter(n + 2)].width = max(12, widths[n + 1] + 3)


def _statement_format(kind: ValueKind, scale: float) -> str:
    if kind in ("amount", "shares"):
        return FORMATS["amount_m"] if scale == MILLION else FORMATS[kind]
    return FORMATS.get(kind, FORMATS["number"])


def _cell_formula(how: str, rows: dict[str, int], letter: str) -> str:
    """A derivation over field names (``gross_profit / revenue``) as a formula over the
    cells of those fields in the same column, or '' when it is not one."""
    if not how:
        return ""
    expression = re.sub(r"\([^()]*\)", lambda m: m.group(0) if all(
        w in rows for w in _OPERAND.findall(m.group(0))) else "", how).strip()
    names = _OPERAND.findall(expression)
    if not names or not _FORMULA.match(expression) or any(n not in rows for n in names):
        return ""
    return "=" + _OPERAND.sub(lambda m: f"{letter}{rows[m.group(0)]}", expression).replace(" ", "")


def _growth_rows(sheet: Worksheet, table: DataTable, rows: dict[str, int], row: int) -> int:
    """Year-on-year growth of revenue, net income, diluted EPS and free cash flow, as
    formulas over the row above and the column of the same period a year earlier."""
    from openpyxl.styles import Font
    from openpyxl.utils import get_column_letter

    earlier = [_year_before(table.index, n) for n in range(len(table.index))]
    wanted = [name for name in GROWTH if name in rows]
    if not wanted or not any(e is not None for e in earlier):
        return row
    put(sheet, row, 1, "Growth, year on year").font = Font(bold=True, italic=True)
    row += 1
    for name in wanted:
        put(sheet, row, 1, f"{metrics.label(name)} growth")
        source = rows[name]
        for n, before in enumerate(earlier):
            if before is None:
                continue
            now, then = (f"{get_column_letter(n + 2)}{source}",
                         f"{get_column_letter(before + 2)}{source}")
            # blank when either value is missing, or the earlier one is zero
            formula(sheet, row, n + 2,
                    f'=IF(OR({now}="",{then}="",{then}=0),"",{now}/ABS({then})-SIGN({then}))',
                    FORMATS["ratio"])
        row += 1
    return row


def _year_before(index: Sequence[str], n: int) -> int | None:
    """The column of the same period one fiscal year earlier (FY2023 for FY2024, Q1 FY2024
    for Q1 FY2025), when the table has it."""
    label = period_label(split_period(index[n])[0])
    match = re.match(r"^(Q[1-4] )?FY(\d{4})$", label)
    if not match:
        return None
    wanted = f"{match.group(1) or ''}FY{int(match.group(2)) - 1}"
    return next((i for i, other in enumerate(index)
                 if period_label(split_period(other)[0]) == wanted), None)


def _filing_row(sheet: Worksheet, table: DataTable, row: int) -> int:
    """Under the figures, the filing each period's values came from (most of them)."""
    from openpyxl.styles import Alignment, Font

    if not table.filings:
        return row
    put(sheet, row, 1, "Filed in").font = Font(italic=True, color="5F6368")
    for n in range(len(table.index)):
        counts: dict[str, int] = {}
        for column in table.columns:
            for accession in (column.sources[n].split() if column.sources else []):
                counts[accession] = counts.get(accession, 0) + 1
        if not counts:
            continue
        accession = max(counts, key=lambda a: counts[a])
        filing = table.filing(accession)
        shown = f"{filing.form} {accession}" if filing is not None and filing.form else accession
        cell = put(sheet, row, n + 2, shown)
        cell.font, cell.alignment = Font(italic=True, color="5F6368", size=8), \
            Alignment(horizontal="right", wrap_text=True)
        if filing is not None:
            link(cell, filing.url)
            cell.font = Font(italic=True, color="1F5FA8", size=8, underline="single")
    return row + 1


def _records_sheet(sheet: Worksheet, table: DataTable) -> None:
    """A row per record: the label (a date as a date) then each field, numbers in their
    format, with the unit in the header."""
    from openpyxl.styles import Border, Side

    kinds = [value_kind(c) for c in table.columns]
    scales = [scale_of(_alone(table, c)) if k == "amount" else 1.0
              for c, k in zip(table.columns, kinds, strict=True)]
    header = [{"date": "Date"}.get(table.index_name, metrics.label(table.index_name)
                                   if table.index_name != "row" else ""),
              *(column_label(c, k, s) for c, k, s in zip(table.columns, kinds, scales,
                                                         strict=True))]
    rule = Border(bottom=Side(style="thin", color="9AA3AD"))
    for place, name in enumerate(header, 1):
        put(sheet, HEADER_ROW, place, name or None, bold=True).border = rule
    for i, label in enumerate(table.index):
        row = HEADER_ROW + 1 + i
        day = _date(label) if table.index_name == "date" else None
        put(sheet, row, 1, day if day is not None else label)
        for n, (column, kind, scale) in enumerate(zip(table.columns, kinds, scales,
                                                      strict=True)):
            value = column.values[i]
            if value is None:
                continue  # a missing value stays an empty cell
            if isinstance(value, float):
                fmt = FORMATS["amount_m"] if kind == "amount" and scale == MILLION else \
                    number_format(value, column.unit) if kind in ("amount", "number") else \
                    FORMATS.get(kind, "General")
                put(sheet, row, n + 2, value, fmt=fmt)
            else:
                put(sheet, row, n + 2, value)
    sheet.freeze_panes = f"B{HEADER_ROW + 1}"
    _fit_widths(sheet, header, table)


def _alone(table: DataTable, column: Column) -> DataTable:
    return DataTable(table.title, table.source, table.index_name, table.index, table.dates,
                     (column,))


def _fit_widths(sheet: Worksheet, header: list[str], table: DataTable) -> None:
    """Each column as wide as its header or widest value, within bounds."""
    from openpyxl.utils import get_column_letter

    first = max([len(header[0]), *(len(str(i)) for i in table.index[:500])])
    sheet.column_dimensions["A"].width = min(MAX_WIDTH, max(MIN_WIDTH, first + 2))
    for n, column in enumerate(table.columns, 2):
        widest = max([len(header[n - 1]), *(len(f"{v:,.2f}") if isinstance(v, float)
                                            else len(str(v or "")) for v in column.values[:500])])
        sheet.column_dimensions[get_column_letter(n)].width = \
            min(MAX_WIDTH, max(MIN_WIDTH, widest + 2))


def _date(text_value: str) -> dt.date | None:
    try:
        return dt.date.fromisoformat(text_value[:10]) if len(text_value) >= 10 else None
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
