"""The workbook's cells and data sheets: how one value is written (a number with its
format, a date, a string that never becomes a formula), and the sheet of each data table
the run pulled (statements with formulas for derived rows and growth, record lists).

Used by :mod:`dexter.reports.xlsx`, which writes the workbook; openpyxl is imported inside
the functions only.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from dexter import metrics
from dexter.evidence.tables import Cell, Column, DataTable
from dexter.reports.model import ReportSource
from dexter.reports.presentation import (
    MILLION,
    THOUSAND,
    ValueKind,
    column_label,
    period_end,
    period_kind,
    period_label,
    scale_of,
    split_period,
    statement_order,
    table_title,
    unit_note,
    value_kind,
)

if TYPE_CHECKING:
    from openpyxl.worksheet.worksheet import Worksheet

MAX_CELL_TEXT = 32_767
"""Excel's limit on the characters in one cell."""
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
HEADER_ROW = 5
"""The table sheets' header row: the title, the unit and the source come first."""
MIN_WIDTH, MAX_WIDTH = 8, 60
MILLIONS = "#,##0,,;(#,##0,,);0"
"""Full-precision amounts shown in millions, negatives in parentheses."""
THOUSANDS = "#,##0,;(#,##0,);0"
FORMATS: dict[str, str] = {
    "amount_m": MILLIONS, "shares_m": MILLIONS, "amount_k": THOUSANDS,
    "amount": "#,##0;(#,##0);0", "shares": "#,##0", "count": "#,##0",
    "per_share": "#,##0.00;(#,##0.00);0.00", "price": "#,##0.00",
    "ratio": "0.0%;(0.0%);0.0%", "number": "#,##0.####;(#,##0.####);0",
}
DATE_FORMAT = "d mmm yyyy"
_OPERAND = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_FORMULA = re.compile(r"^[A-Za-z0-9_\s+\-*/().]+$")
GROWTH = ("revenue", "net_income", "earnings_per_share_diluted", "free_cash_flow")
"""Rows that get a year-on-year growth row (as a formula) when the periods allow it."""


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


# -- a data table's sheet -------------------------------------------------------------------


def table_sheet(sheet: Worksheet, table: DataTable, source: ReportSource | None) -> None:
    from openpyxl.styles import Font

    put(sheet, 1, 1, table_title(table)).font = Font(bold=True, size=12)
    note = unit_note(table) if table.index_name == "period" else ""
    scaled = next((w for w in ("millions", "thousands") if w in note), "")
    put(sheet, 2, 1, (note + f" (full values; the cells show {scaled})") if scaled
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
        return MILLIONS if scale == MILLION else THOUSANDS if scale == THOUSAND else \
            FORMATS[kind]
    return FORMATS.get(kind, FORMATS["number"])


def _cell_formula(how: str, rows: dict[str, int], letter: str) -> str:
    """A derivation over field names (``gross_profit / revenue``) as a formula over the
    cells of those fields in the same column, or '' when it is not one."""
    if not how:
        return ""
    expression = re.sub(r"\([^()]*\)", lambda m: m.group(0) if all(
        w in rows for w in _OPERAND.findall(m.group(0))) else "", how).strip()
    names = _OPERAND.findall(expression)
    if not names or not _FORMULA.match(expression) or any(n not in rows for n in names) \
            or re.search(r"[A-Za-z0-9_]\s*\(", expression):  # a call, never
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
