"""How ``dexter data`` shows records on a terminal: rich tables with the lexicon's labels,
amounts in $ millions, per-share values and prices to two decimals, ratios as percentages
and negatives in parentheses.

:func:`format_cell` is the one place a number becomes text here, so the view can switch
to the report writers' formatting functions when they provide one for terminals. Every
text from outside (a filer's name, a release's words) is shown with its control
characters escaped, never interpreted.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from dexter import metrics
from dexter.text import escape_controls

if TYPE_CHECKING:
    from rich.table import Table

MILLION = 1_000_000.0
AMOUNT_CAPTION = "USD millions, except per-share values and prices (USD) and share counts."


def kind_of(field: str) -> str:
    """The lexicon's kind of a field (``amount``, ``per_share``, ``shares``, ``ratio``,
    ``price``, ``count``), or ``text`` for a field it does not know."""
    if field == "n":
        return "count"  # a row number
    known = metrics.metric(field)
    return known.kind if known is not None else "text"


def format_cell(value: Any, field: str) -> str:
    """One value for a reader: amounts in $ millions (two decimals under 1, one under
    100), per-share values and prices to two decimals, shares and counts whole, ratios as
    percentages to one decimal, negatives in parentheses, '—' when missing."""
    if value is None or value == "":
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if not isinstance(value, int | float):
        if isinstance(value, list):
            return escape_controls("; ".join(str(v) for v in value))
        if isinstance(value, dict):
            return escape_controls(", ".join(f"{k}: {v}" for k, v in value.items()))
        return escape_controls(" ".join(str(value).split()))
    kind = kind_of(field)
    number = float(value)
    if kind == "ratio":
        text = f"{abs(number) * 100:.1f}%"
    elif kind in ("per_share", "price"):
        text = f"{abs(number):,.2f}"
    elif kind == "amount":
        scaled = abs(number) / MILLION
        digits = 0 if scaled >= 100 or round(scaled, 6).is_integer() else \
            1 if scaled >= 1 else 2
        text = f"{scaled:,.{digits}f}"
    elif number.is_integer():
        text = f"{abs(int(number)):,}"
    else:
        text = f"{abs(number):,.2f}"
    return f"({text})" if number < 0 else text


def label(field: str) -> str:
    """A column or row label: the lexicon's, never the field name."""
    return metrics.label(field)


def _table(title: str, caption: str = "") -> Table:
    from rich import box
    from rich.table import Table

    return Table(title=escape_controls(title), title_justify="left", caption=caption or None,
                 caption_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)


def _text(value: str) -> Any:
    from rich.text import Text

    return Text(value)


def records_view(title: str, records: Sequence[dict[str, Any]], fields: Iterable[str], *,
                 caption: str = "", headers: dict[str, str] | None = None) -> Table:
    """A row per record, a column per field present in any record."""
    present = [f for f in fields if any(r.get(f) not in (None, "") for r in records)]
    numeric = {f for f in present if kind_of(f) != "text"}
    table = _table(title, caption)
    cells = [[format_cell(r.get(f), f) for f in present] for r in records]
    for i, field in enumerate(present):
        dated = field.endswith("date") or field in ("date", "report_period", "period_end")
        # a text column is never narrower than its longest word (up to 14): words wrap,
        # they are not cut
        words = [len(w) for row in cells for w in row[i].split()] or [1]
        table.add_column((headers or {}).get(field) or label(field),
                         justify="right" if field in numeric else "left",
                         no_wrap=field in numeric or dated, overflow="fold",
                         min_width=None if field in numeric or dated else min(14, max(words)))
    for row in cells:
        table.add_row(*(_text(cell) for cell in row))
    return table


def periods_view(title: str, records: Sequence[dict[str, Any]], fields: Iterable[str], *,
                 period_key: str = "fiscal_period", caption: str = "") -> Table:
    """A statement: a row per field (in the lexicon's order), a column per record."""
    table = _table(title, caption)
    table.add_column("", justify="left")
    for record in records:
        table.add_column(escape_controls(f"{record.get(period_key) or ''}\n"
                                         f"{record.get('report_period') or ''}".strip()),
                         justify="right")
    for field in sorted(dict.fromkeys(fields), key=metrics.order):
        if not any(isinstance(r.get(field), int | float) for r in records):
            continue
        table.add_row(_text(label(field)), *(_text(format_cell(r.get(field), field))
                                             for r in records))
    return table


def pivot_view(title: str, rows: Sequence[str], columns: Sequence[str],
               cells: dict[tuple[str, str], Any], field: str, *, caption: str = "") -> Table:
    """Rows by columns of one field (segments by period)."""
    table = _table(title, caption)
    table.add_column("", justify="left")
    for column in columns:
        table.add_column(escape_controls(column), justify="right")
    for row in rows:
        table.add_row(_text(escape_controls(row)),
                      *(_text(format_cell(cells.get((row, c)), field)) for c in columns))
    return table


def pairs_view(title: str, record: dict[str, Any]) -> Table:
    """One object as label / value lines."""
    table = _table(title)
    table.add_column("", justify="left")
    table.add_column("", justify="left", overflow="fold")
    for field, value in record.items():
        table.add_row(_text(label(field)), _text(format_cell(value, field)))
    return table
