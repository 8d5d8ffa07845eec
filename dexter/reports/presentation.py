"""How a data table reads to a person: labels, periods, amounts, signs (pure functions).

Every front end that shows a :class:`~dexter.evidence.tables.DataTable` to a reader uses
these, so a figure reads the same in a report, a workbook's captions, a chart and the
terminal: the markdown, HTML and PDF writers, the chart titles, ``dexter ask --charts`` and
``/chart``, and ``dexter data``'s tables.

- **Labels** come from the metric lexicon (:mod:`dexter.metrics`): ``Cost of revenue``,
  never ``cost_of_revenue``; statement rows follow the statement's standard order.
- **Periods** read as fiscal periods: ``FY2024``, ``Q1 FY2025``, ``TTM Dec 2024``
  (:func:`period_label`), with the period's end date beside them where there is room.
- **Amounts** of a statement are in millions of the currency (thousands for a company
  whose amounts stay under a billion, as its filings print them), stated once in the
  caption (``USD millions, except per-share``): ``391,035``; share counts likewise;
  per-share values with two decimals (``2.40``); ratios as percentages with one decimal
  (``46.2%``); prices with two decimals. A negative value is in parentheses everywhere:
  ``(9,447)``, ``(0.12)``, ``(3.1%)``. A missing value is ``—``.
- **Width**: :func:`fit_periods` keeps the newest periods a page has room for and says
  which were left out; the latest period is always shown.

Nothing here imports a rendering library; the writers turn a :class:`TableView` into their
own markup.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from dexter import metrics
from dexter.evidence.tables import Cell, Column, DataTable

ValueKind = Literal["amount", "per_share", "shares", "ratio", "price", "count", "number",
                    "text"]
MISSING = "—"
MILLION = 1e6
THOUSAND = 1e3
SCALE_NAMES = {MILLION: "millions", THOUSAND: "thousands"}
STATEMENTS = ("income", "balance", "cash_flow")
PERIOD_NAMES = {"annual": "annual", "quarterly": "quarterly", "ttm": "trailing twelve months"}
STATEMENT_NAMES: dict[str, str] = {str(k): v for k, v in metrics.STATEMENT_NAMES.items()}
STATEMENT_RESULTS = frozenset({"income_statements", "balance_sheets", "cash_flow_statements",
                               "financial_statements"})
"""The finance tools' result names of statements (other results are titled by name)."""

_QUARTER = re.compile(r"^Q([1-4])\s*(?:FY)?\s*(\d{4})$", re.IGNORECASE)
_YEAR = re.compile(r"^FY\s?(\d{4})$", re.IGNORECASE)
_TTM = re.compile(r"^TTM(?: to)? (\d{4}-\d{2}-\d{2})$", re.IGNORECASE)
_DATED = re.compile(r"^(.*?) \((\d{4}-\d{2}-\d{2})\)$")
_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_KEY = re.compile(r"^([A-Za-z0-9_]+)\[(.*)\]( #\d+)?$")
_MCP = re.compile(r"^mcp__([^_]+(?:_[^_]+)*)__(.+)$")


# -- periods ------------------------------------------------------------------------------


def split_period(label: str) -> tuple[str, str]:
    """A table's period label as (period, end date): ``Q1 2025 (2024-12-28)`` ->
    (``Q1 2025``, ``2024-12-28``); a bare date is its own end."""
    text = " ".join(label.split())
    match = _DATED.match(text)
    if match:
        return match.group(1), match.group(2)
    return (text, text) if _ISO.match(text) else (text, "")


def period_label(label: str) -> str:
    """A period as a reader names it: ``FY2024``, ``Q1 FY2025`` (a fiscal quarter),
    ``TTM Dec 2024``; a date or anything else as written (without its end date)."""
    period, end = split_period(label)
    quarter = _QUARTER.match(period)
    if quarter:
        return f"Q{quarter.group(1)} FY{quarter.group(2)}"
    year = _YEAR.match(period)
    if year:
        return f"FY{year.group(1)}"
    ttm = _TTM.match(period)
    if ttm:
        return f"TTM {_month_year(ttm.group(1))}"
    return period or end


def period_end(label: str) -> str:
    """The end date a period label carries (``2024-12-28``), or ''."""
    return split_period(label)[1]


def date_text(iso: str) -> str:
    """``2024-09-28`` -> ``28 Sep 2024`` (anything else as given)."""
    try:
        day = dt.date.fromisoformat(iso[:10])
    except ValueError:
        return iso
    return f"{day.day} {day:%b %Y}"


def period_span(labels: Sequence[str]) -> str:
    """The first and last period: ``FY2021–FY2025`` (one period alone)."""
    shown = [period_label(label) for label in labels if label]
    if not shown:
        return ""
    return shown[0] if len(shown) == 1 or shown[0] == shown[-1] else f"{shown[0]}–{shown[-1]}"


def periods_text(labels: Sequence[str], order: Sequence[str]) -> str:
    """Periods as a reader lists them, runs of neighbours (in ``order``) joined:
    ``FY2023–FY2025, FY2021``."""
    wanted = set(labels)
    runs: list[list[str]] = []
    for label in order:
        if label in wanted:
            if runs and runs[-1][-1] == _previous(order, label):
                runs[-1].append(label)
            else:
                runs.append([label])
    return ", ".join(period_span(run) if len(run) > 2 else ", ".join(map(period_label, run))
                     for run in runs)


def _previous(order: Sequence[str], label: str) -> str:
    i = list(order).index(label)
    return order[i - 1] if i > 0 else ""


def _month_year(iso: str) -> str:
    try:
        return f"{dt.date.fromisoformat(iso):%b %Y}"
    except ValueError:
        return iso


# -- values -------------------------------------------------------------------------------


def value_kind(column: Column) -> ValueKind:
    """What a column's values are, from its unit and the lexicon."""
    if not column.numeric:
        return "text"
    unit = column.unit
    known = metrics.metric(column.name)
    if unit == "ratio" or (known is not None and known.kind == "ratio" and not unit):
        return "ratio"
    if unit.endswith("/share") or unit == "per share":
        return "per_share"
    if unit == "shares" or (known is not None and known.kind == "shares"):
        return "shares"
    if known is not None and known.kind == "price":
        return "price"
    if known is not None and known.kind == "count":
        return "count"
    if unit or (known is not None and known.kind == "amount"):
        return "amount"
    return "number"


def signed(text: str, negative: bool) -> str:
    """``text`` in parentheses when the value was negative."""
    return f"({text})" if negative else text


def amount(value: float, scale: float = MILLION, decimals: int | None = 0) -> str:
    """An amount in units of ``scale``: ``391,035`` (millions), ``(9,447)``. ``decimals``
    None: as many as a list of mixed sizes needs (none from 100 up, one from 1, two
    below)."""
    scaled = abs(value) / scale
    if decimals is None:
        decimals = 0 if scaled >= 100 or scaled.is_integer() else 1 if scaled >= 1 else 2
    if decimals == 0 and 0 < scaled < 0.5:
        decimals = 1  # a small amount reads 0.3, not 0
    return signed(f"{scaled:,.{decimals}f}", value < 0 and round(scaled, decimals) > 0)


def per_share(value: float) -> str:
    """``2.40``, ``(0.12)``."""
    return signed(f"{abs(value):,.2f}", value < 0 and round(abs(value), 2) > 0)


def ratio(value: float) -> str:
    """A fraction as a percentage with one decimal: ``46.2%``, ``(3.1%)``."""
    points = abs(value) * 100
    return signed(f"{points:,.1f}%", value < 0 and round(points, 1) > 0)


def number(value: float) -> str:
    """A plain number: thousands separators, up to two decimals, negatives in parentheses."""
    size = abs(float(value))
    if size.is_integer():
        text = f"{int(size):,}"
    elif size >= 1:
        text = f"{size:,.2f}".rstrip("0").rstrip(".")
    else:
        text = f"{size:.4g}"
    return signed(text, value < 0)


def format_value(value: Cell, kind: ValueKind, scale: float = 1.0,
                 decimals: int | None = 0) -> str:
    """One cell for a reader (see the module docstring); ``scale`` divides amounts and
    share counts (``MILLION`` in statements), shown with ``decimals`` (None: as a list of
    mixed sizes needs them)."""
    if value is None:
        return MISSING
    if isinstance(value, str):
        return " ".join(value.split()) or MISSING
    if kind == "ratio":
        return ratio(value)
    if kind in ("per_share", "price"):
        return per_share(value)
    if kind in ("amount", "shares") and scale != 1.0:
        return amount(value, scale, decimals)
    if kind in ("amount", "shares", "count"):
        return number(float(round(value))) if abs(value) >= 1000 else number(value)
    return number(value)


def scale_of(table: DataTable) -> float:
    """The divisor a table's amounts and share counts are shown in, as filings choose it:
    millions once its amounts reach a billion, thousands once they reach a million (a
    smaller company's statement), else units."""
    largest = max((abs(v) for c in table.columns if value_kind(c) in ("amount", "shares")
                   for v in c.values if isinstance(v, float)), default=0.0)
    return MILLION if largest >= 1e9 else THOUSAND if largest >= MILLION else 1.0


def unit_note(table: DataTable, scale: float | None = None) -> str:
    """The caption's unit line: ``USD millions, except per-share; shares in millions``."""
    scale = scale_of(table) if scale is None else scale
    kinds = {value_kind(c) for c in table.columns}
    currency = _currency(table)
    parts = []
    scaled = SCALE_NAMES.get(scale, "")
    if "amount" in kinds:
        text = f"{currency} {scaled}".strip() if scaled else currency or ""
        if "per_share" in kinds:
            text += ", except per-share" if text else "per-share"
        if text:
            parts.append(text.strip())
    elif "per_share" in kinds and currency:
        parts.append(f"{currency} per share")
    if "shares" in kinds and scaled:
        parts.append(f"shares in {scaled}")
    return "; ".join(parts)


def _currency(table: DataTable) -> str:
    units = Counter(c.unit.split("/")[0] for c in table.columns
                    if value_kind(c) in ("amount", "per_share", "price") and c.unit
                    and c.unit not in ("ratio", "shares", "per share"))
    return units.most_common(1)[0][0] if units else ""


# -- what a table is ----------------------------------------------------------------------


def statement_kind(table: DataTable) -> str:
    """``income``, ``balance`` or ``cash_flow`` when most of a table's known line items
    belong to that statement; '' otherwise (prices, lists, mixed records)."""
    found = Counter(m.statement for c in table.columns
                    if (m := metrics.metric(c.name)) is not None and m.statement in STATEMENTS)
    if not found:
        return ""
    kind, count = found.most_common(1)[0]
    return kind if count * 2 > sum(found.values()) else ""


def period_kind(table: DataTable) -> str:
    """``annual``, ``quarterly`` or ``ttm``: as the records say, else from the labels."""
    if table.period in PERIOD_NAMES:
        return table.period
    labels = [split_period(label)[0] for label in table.index]
    if labels and all(_YEAR.match(label) for label in labels):
        return "annual"
    if labels and all(_QUARTER.match(label) for label in labels):
        return "quarterly"
    if labels and all(label.upper().startswith("TTM") for label in labels):
        return "ttm"
    return ""


def entity_of(table: DataTable) -> str:
    """The company a table is about (``Apple Inc.``), else the ticker its title names."""
    if table.entity:
        return table.entity
    key = _KEY.match(table.title.split(" · ")[0])
    if key:
        first = key.group(2).split(",")[0].strip()
        if first.isupper() and 0 < len(first) <= 10:
            return first
    return ""


def short_entity(entity: str) -> str:
    """A company's name in a few letters: ``Apple Inc.`` -> ``Apple``; a ticker as is."""
    words = entity.replace(",", " ").split()
    if not words:
        return ""
    if len(words) == 1:
        return words[0]
    return words[0] if len(words[0]) > 2 else " ".join(words[:2])


def table_qualifier(table: DataTable) -> str:
    """What narrows a table down, in words, as its title's later parts say it (``Product
    or service: Services`` for one segment's table); '' when nothing does."""
    parts = [p.strip() for p in table.title.split(" · ")[1:]]
    return " · ".join(p for p in parts if p and not re.fullmatch(r"[a-z0-9_]+", p)
                      and p != table.source)


def table_title(table: DataTable) -> str:
    """What a table is, for its caption, sheet and chart: ``Apple Inc. — Income statement,
    annual``; prices as ``AAPL — Share prices``; another tool's result by its name and
    what narrows it (``AAPL — Segments · Product or service: Services``); anything else by
    its title in words."""
    entity = entity_of(table)
    key = _KEY.match(table.title.split(" · ")[0])
    result = key.group(1) if key else ""
    qualifier = table_qualifier(table)
    kind = statement_kind(table)
    if kind and (not key or result in STATEMENT_RESULTS):
        period = PERIOD_NAMES.get(period_kind(table), "")
        what = STATEMENT_NAMES[kind] + (f", {period}" if period else "")
        what += f" · {qualifier}" if qualifier and key else ""
        return f"{entity} — {what}" if entity else what
    if _is_prices(table):
        return f"{entity} — Share prices" if entity else "Share prices"
    if key:
        name = metrics.label(result) + (f" · {qualifier}" if qualifier else "")
        return f"{entity} — {name}" if entity else name
    name = readable_title(table.title)
    return f"{entity} — {name}" if entity and entity not in name else name


def readable_title(title: str) -> str:
    """A tool's result key in words: ``income_statements[AAPL, quarterly]`` -> ``Income
    statements: AAPL, quarterly``; ``mcp__prices__daily`` -> ``Daily (prices)``; a file
    name or page title as written."""
    parts = []
    for part in title.split(" · "):
        part = part.strip()
        mcp = _MCP.match(part)
        if mcp:
            parts.append(f"{metrics.label(mcp.group(2))} ({mcp.group(1).replace('_', ' ')})")
            continue
        key = _KEY.match(part)
        if key:
            what = metrics.label(key.group(1))
            parts.append(f"{what}: {key.group(2)}" if key.group(2) else what)
        elif "_" in part and " " not in part and "." not in part:
            parts.append(metrics.label(part))
        else:
            parts.append(part)
    return " · ".join(p for p in parts if p) or "Table"


def _is_prices(table: DataTable) -> bool:
    kinds = [m.statement for c in table.numeric_columns() if (m := metrics.metric(c.name))]
    return bool(kinds) and kinds.count("market") * 2 > len(kinds) and table.is_time_series


# -- a table laid out for reading -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Row:
    """One line of a table as shown: its label and a text per column."""

    label: str
    cells: tuple[str, ...]
    kind: ValueKind = "number"
    field: str = ""
    """The column of the table this row shows (a statement's line item), '' for records."""
    total: bool = False
    """A statement's total (set on a rule, in bold)."""
    group: str = ""
    """Its statement kind (``income``, ``ratio``): a writer may space the groups apart."""


@dataclass(frozen=True, slots=True)
class TableView:
    """A table ready to lay out: a header, a row per line item (statements) or record,
    the caption's parts and any notes."""

    title: str
    unit: str
    """``USD millions, except per-share`` ('' when nothing needs saying)."""
    corner: str
    """The header above the labels (``Fiscal year``, ``Date``, ``Company``)."""
    header: tuple[str, ...]
    """Column headers after the label column (periods, or fields with their units)."""
    subheader: tuple[str, ...]
    """Under each period header, its end date (``28 Sep 2024``); () for records."""
    rows: tuple[Row, ...]
    numeric: tuple[bool, ...]
    """Per column after the labels: right-aligned numbers."""
    source_id: str = ""
    notes: tuple[str, ...] = ()
    skipped: int = 0
    """Rows left out after ``skip_at`` (a long record list keeps its first and last)."""
    skip_at: int = 0
    periods: bool = True
    """Columns are periods (statements); False: a row per record."""

    @property
    def caption(self) -> str:
        """``Apple Inc. — Income statement, annual · USD millions, except per-share``."""
        return " · ".join(p for p in (self.title, self.unit) if p)


def view(table: DataTable, max_rows: int | None = None) -> TableView:
    """A table laid out for a reader: statements with a row per line item in statement
    order and a column per period; other tables with a row per record (``max_rows``: the
    first and last rows of a longer list are kept)."""
    if table.index_name == "period":
        return _statement_view(table)
    return _records_view(table, max_rows)


def statement_order(columns: Sequence[Column]) -> list[Column]:
    """Line items in their statement's order; those the lexicon does not know after the
    known ones of their kind, in the order the table had them."""
    return sorted(columns, key=lambda c: metrics.order(c.name)[:2])


def _statement_view(table: DataTable) -> TableView:
    scale = scale_of(table)
    columns = statement_order(table.columns)
    rows = []
    for column in columns:
        kind = value_kind(column)
        known = metrics.metric(column.name)
        rows.append(Row(metrics.label(column.name),
                        tuple(format_value(v, kind, scale) for v in column.values),
                        kind, column.name, metrics.is_total(column.name),
                        known.statement if known is not None else "other"))
    period = period_kind(table)
    corner = {"annual": "Fiscal year", "quarterly": "Fiscal quarter",
              "ttm": "Twelve months to"}.get(period, "Period")
    notes = [f"The oldest {table.dropped_rows:,} periods are left out."] \
        if table.dropped_rows else []
    return TableView(title=table_title(table), unit=unit_note(table, scale), corner=corner,
                     header=tuple(period_label(label) for label in table.index),
                     subheader=tuple(date_text(period_end(label)) if period_end(label) else ""
                                     for label in table.index),
                     rows=tuple(rows), numeric=(True,) * len(table.index),
                     source_id=table.source_id, notes=tuple(notes), periods=True)


def _records_view(table: DataTable, max_rows: int | None) -> TableView:
    kinds = [value_kind(c) for c in table.columns]
    # per column: amounts in millions once they reach a million, counts (volume) in full
    scales = [MILLION if k == "amount" and max((abs(v) for v in c.values
                                                 if isinstance(v, float)), default=0) >= MILLION
              else 1.0 for c, k in zip(table.columns, kinds, strict=True)]
    header = tuple(column_label(c, k, scale)
                   for c, k, scale in zip(table.columns, kinds, scales, strict=True))
    order = list(range(len(table.index)))
    skipped = skip_at = 0
    if max_rows is not None and len(order) > max_rows:
        half = max(1, max_rows // 2)
        skipped, skip_at = len(order) - 2 * half, half
        order = order[:half] + order[-half:]
    labels = [date_text(label) if table.index_name == "date" else label
              for label in table.index]
    rows = tuple(Row(labels[i], tuple(format_value(c.values[i], k, scale, None)
                                      for c, k, scale
                                      in zip(table.columns, kinds, scales, strict=True)))
                 for i in order)
    notes = [f"The oldest {table.dropped_rows:,} rows are left out."] if table.dropped_rows else []
    corner = {"date": "Date", "ticker": "Company", "symbol": "Company"}.get(
        table.index_name, metrics.label(table.index_name) if table.index_name != "row" else "")
    return TableView(title=table_title(table), unit="", corner=corner, header=header,
                     subheader=(), rows=rows, numeric=tuple(k != "text" for k in kinds),
                     source_id=table.source_id, notes=tuple(notes), skipped=skipped,
                     skip_at=skip_at, periods=False)


def column_label(column: Column, kind: ValueKind | None = None, scale: float = 1.0) -> str:
    """A record column's header: its label with its unit (``Close (USD)``, ``Market
    capitalisation (USD m)``, ``Net margin (%)``)."""
    kind = kind or value_kind(column)
    name = metrics.label(column.name)
    currency = column.unit.split("/")[0] if column.unit not in ("ratio", "shares", "per share") \
        else ""
    unit = {"ratio": "%", "per_share": f"{currency}/share" if currency else "per share",
            "price": currency,
            "amount": f"{currency} m" if scale == MILLION else currency,
            "shares": "m" if scale == MILLION else ""}.get(kind, "")  # records: per column
    return f"{name} ({unit})" if unit else name


def fit_periods(table: TableView, room: int) -> TableView:
    """The view with at most ``room`` period columns: the newest are kept and a note names
    the periods left out (the workbook has them all). Record views are returned as they
    are."""
    if not table.periods or len(table.header) <= room:
        return table
    keep = max(1, room)
    dropped = table.header[:len(table.header) - keep]
    note = (f"{period_span(dropped)} not shown here for width"
            f" ({len(dropped)} older period{'s' * (len(dropped) != 1)}); the .xlsx report "
            "has every period.")
    cut = len(table.header) - keep
    rows = tuple(dataclasses.replace(row, cells=row.cells[cut:]) for row in table.rows)
    return dataclasses.replace(table, header=table.header[cut:],
                               subheader=table.subheader[cut:] if table.subheader else (),
                               rows=rows, numeric=table.numeric[cut:],
                               notes=(*table.notes, note))
