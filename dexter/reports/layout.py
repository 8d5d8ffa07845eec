"""How a table reads on a page: cells formatted for people, laid out as a grid (pure).

Statements (few periods, many fields) read best with a row per field and a column per
period, the way filings print them; day-by-day prices and lists of companies read best
with a row per record. Shared by the markdown, HTML and PDF writers; the spreadsheet keeps
raw numbers instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from dexter.evidence.tables import Cell, Column, DataTable
from dexter.reports.series import unit_label


@dataclass(frozen=True, slots=True)
class Grid:
    """A table as rows of text: a header row, body rows, and how many rows were left out
    (``skipped`` rows after ``skip_at``)."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    skipped: int = 0
    skip_at: int = 0
    numeric: tuple[bool, ...] = ()
    """Per column: whether it holds numbers (right-aligned)."""


def column_header(column: Column) -> str:
    """``revenue (USD)``, ``gross_margin (%)``, or the bare name without a unit."""
    unit = unit_label(column.unit)
    return f"{column.name} ({unit})" if unit else column.name


def format_cell(value: Cell, unit: str = "") -> str:
    """A value for a reader: thousands separators, ratios as percentages, '—' when missing."""
    if value is None:
        return "—"
    if isinstance(value, str):
        return " ".join(value.split())
    if unit == "ratio":
        return f"{value * 100:.1f}%"
    if value.is_integer() and abs(value) >= 1000:
        return f"{int(value):,}"
    if abs(value) >= 1000:
        return f"{value:,.2f}"
    return f"{value:,.4g}" if abs(value) < 1 else f"{value:,.2f}".rstrip("0").rstrip(".")


def is_transposed(table: DataTable) -> bool:
    """Whether the table reads with a row per field (statements)."""
    return table.index_name == "period"


def grid(table: DataTable, max_rows: int | None = None) -> Grid:
    """The table as text rows; ``max_rows`` keeps the first and last rows of a longer
    record list (a transposed statement keeps every field)."""
    if is_transposed(table):
        header = ("field", *table.index)
        rows = tuple((column_header(c), *(format_cell(v, c.unit) for v in c.values))
                     for c in table.columns)
        return Grid(header, rows, numeric=(False, *([True] * len(table.index))))
    header = (table.index_name, *(column_header(c) for c in table.columns))
    numeric = (False, *(c.numeric for c in table.columns))
    order = list(range(len(table.index)))
    skipped = skip_at = 0
    if max_rows is not None and len(order) > max_rows:
        half = max(1, max_rows // 2)
        skipped, skip_at = len(order) - 2 * half, half
        order = order[:half] + order[-half:]
    rows = tuple((table.index[i], *(format_cell(c.values[i], c.unit) for c in table.columns))
                 for i in order)
    return Grid(header, rows, skipped, skip_at, numeric)


def table_caption(table: DataTable) -> str:
    """``income_statements[AAPL, quarterly] · SEC EDGAR [S2]``."""
    parts = [table.title]
    if table.source:
        parts.append(table.source)
    caption = " · ".join(parts)
    if table.source_id:
        caption += f" [{table.source_id}]"
    if table.dropped_rows:
        caption += f" (the oldest {table.dropped_rows:,} rows left out)"
    return caption
