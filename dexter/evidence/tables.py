"""The data tables a source holds: fetched records kept as numbers, for deliverables.

A finance tool's text for the model is formatted (``46.2%``, ``391,035,000,000``); a report,
a spreadsheet or a chart needs the values themselves. So when a tool fetches records it also
hands over :class:`DataTable` s built from the raw data, and the source ledger keeps them
beside the source (``Source.tables``). Pure functions; nothing here formats for a reader.

A table has one row per record (a period, a day, a company) and one :class:`Column` per
field. Rows with a date (``report_period``, ``time``, ``date``) make a time series, sorted
oldest first. Each column carries its unit, inferred from the field's name and the
records' currency: ``USD``, ``USD/share``, ``shares``, ``ratio`` (a fraction shown as a
percentage) or ``""`` when nothing says.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Cell = float | str | None

MAX_ROWS = 5_000
"""Rows kept per table; a longer record list keeps its newest rows and says so."""
MAX_TABLES = 40
"""Tables kept per source."""
MAX_JSON_CHARS = 2_000_000
"""A JSON result longer than this is not scanned for tables."""

# Keys that describe a statement record rather than hold one of its figures.
STATEMENT_META = frozenset({
    "ticker", "report_period", "fiscal_period", "period", "currency", "period_start",
    "source_filing", "field_sources", "derived", "accession_number", "calendar_date",
    "filing_date", "split_adjusted",
})
DATE_KEYS = ("report_period", "time", "date", "datetime", "timestamp", "report_date",
             "transaction_date", "filing_date", "published_at")
LABEL_KEYS = ("ticker", "symbol", "name", "title", "label", "id")
ENTITY_KEYS = ("ticker", "symbol")
"""Keys naming the company a record is of."""
RATIO_SUFFIXES = ("_margin", "_growth", "return_on_equity", "return_on_assets",
                  "return_on_invested_capital", "_yield", "payout_ratio", "_ratio_pct")
PRICE_FIELDS = frozenset({"open", "high", "low", "close", "adj_close", "adjclose", "price",
                          "vwap", "previous_close", "day_high", "day_low"})


@dataclass(frozen=True, slots=True)
class Column:
    """One field of a table: its name, unit and one value per row (None: missing)."""

    name: str
    unit: str
    values: tuple[Cell, ...]

    @property
    def numeric(self) -> bool:
        """Whether every present value is a number (and at least one is present)."""
        present = [v for v in self.values if v is not None]
        return bool(present) and all(isinstance(v, float) for v in present)


@dataclass(frozen=True, slots=True)
class DataTable:
    """Records a source returned, as numbers.

    ``index`` labels each row (``Q1 FY2025 (2024-12-28)``, ``2024-01-02``, ``AAPL``);
    ``dates`` holds each row's ISO date, or '' for every row when the rows are not periods.
    """

    title: str
    source: str
    index_name: str
    index: tuple[str, ...]
    dates: tuple[str, ...]
    columns: tuple[Column, ...]
    source_id: str = ""
    dropped_rows: int = 0
    """Rows left out beyond :data:`MAX_ROWS` (the oldest)."""
    entity: str = ""
    """The company the records are of (their ticker), when they name one company."""

    @property
    def is_time_series(self) -> bool:
        """Whether every row has a date (rows sorted oldest first)."""
        return bool(self.dates) and all(self.dates)

    def numeric_columns(self) -> list[Column]:
        """The columns holding numbers."""
        return [c for c in self.columns if c.numeric]

    def map_text(self, fn: Callable[[str], str]) -> DataTable:
        """This table with ``fn`` applied to every text (titles, labels, text cells): the
        executor passes the secret scrubber."""
        columns = tuple(Column(fn(c.name), c.unit,
                               tuple(fn(v) if isinstance(v, str) else v for v in c.values))
                        for c in self.columns)
        return DataTable(fn(self.title), fn(self.source), self.index_name,
                         tuple(fn(i) for i in self.index), self.dates, columns,
                         self.source_id, self.dropped_rows, fn(self.entity))

    def with_source_id(self, source_id: str) -> DataTable:
        """This table as part of the source ``source_id``."""
        return DataTable(self.title, self.source, self.index_name, self.index, self.dates,
                         self.columns, source_id, self.dropped_rows, self.entity)


def unit_of(name: str, currency: str = "") -> str:
    """The unit of a field, from its name and the records' currency."""
    lowered = name.lower()
    if lowered.endswith(RATIO_SUFFIXES) or lowered in {"margin", "growth", "yield"}:
        return "ratio"
    if "per_share" in lowered or lowered in {"eps", "earnings_per_share",
                                             "earnings_per_share_diluted", "dividend"}:
        return f"{currency}/share" if currency else "per share"
    if "shares" in lowered or lowered == "volume":
        return "shares"
    if lowered in PRICE_FIELDS or lowered.startswith("price"):
        return currency
    if lowered in {"employees", "count", "number_of_employees"} or lowered.endswith("_count"):
        return ""
    return currency


def tables_from_data(title: str, data: Any, source: str = "") -> list[DataTable]:
    """Every table in ``data`` as a source returned it: a list of records, an object holding
    lists of records, or one object of figures (a snapshot). Empty when it holds none."""
    found: list[DataTable] = []
    _collect(title, data, source, found, depth=0)
    return found[:MAX_TABLES]


def tables_from_json_text(title: str, text: str, source: str = "") -> list[DataTable]:
    """The tables of a JSON result (an MCP tool's, say); [] when ``text`` is not JSON. A
    ``{"data": ...}`` envelope is looked into."""
    stripped = text.lstrip()
    if stripped[:1] not in ("{", "[") or len(stripped) > MAX_JSON_CHARS:
        return []
    try:
        data = json.loads(stripped)
    except (ValueError, RecursionError):
        return []
    if isinstance(data, dict) and set(data) <= {"data", "source_urls"} and "data" in data:
        data = data["data"]
    return tables_from_data(title, data, source)


def _collect(title: str, data: Any, source: str, found: list[DataTable], depth: int,
             currency: str = "", entity: str = "") -> None:
    if depth > 3 or len(found) >= MAX_TABLES:
        return
    if isinstance(data, list):
        table = records_table(title, data, source, currency=currency, entity=entity)
        if table is not None:
            found.append(table)
        return
    if not isinstance(data, Mapping):
        return
    nested = [(k, v) for k, v in data.items() if isinstance(v, list | Mapping)]
    # an object's currency is its records' when they name none ({"currency": "USD",
    # "prices": [...]}, as the keyless price source returns them)
    own = data.get("currency")
    inner = own if isinstance(own, str) and own else currency
    named = next((data[k] for k in ENTITY_KEYS if isinstance(data.get(k), str) and data[k]),
                 entity)
    for key, value in nested:
        _collect(f"{title} · {key}" if title else str(key), value, source, found, depth + 1,
                 inner, named)
    if not any(isinstance(v, list) and v and isinstance(v[0], Mapping) for _, v in nested):
        table = records_table(title, [data], source)
        if table is not None:
            found.append(table)


def records_table(title: str, records: Sequence[Any], source: str = "", *,
                  currency: str = "", entity: str = "") -> DataTable | None:
    """One table of a list of records (dicts), or None when they hold no number.
    ``currency``: the records' currency when none of them names one; ``entity``: the
    company they are of when none of them names one."""
    rows = [r for r in records if isinstance(r, Mapping)]
    if not rows:
        return None
    statement = all("report_period" in r for r in rows)
    date_key = "report_period" if statement else next(
        (k for k in DATE_KEYS if all(isinstance(r.get(k), str) and r.get(k) for r in rows)),
        None)
    currency = _currency(rows) or currency
    skip = set(STATEMENT_META) if statement else set()
    if date_key:
        skip.add(date_key)
    names: list[str] = []
    for row in rows:
        names.extend(k for k in row if k not in skip and k not in names
                     and _scalar(row[k]))
    order = sorted(range(len(rows)), key=lambda i: _date(rows[i].get(date_key))) \
        if date_key else list(range(len(rows)))
    dropped = max(0, len(order) - MAX_ROWS)
    order = order[dropped:]
    label_key = None if date_key else next(
        (k for k in LABEL_KEYS if all(isinstance(r.get(k), str) for r in rows)), None)
    if label_key in names and label_key is not None:
        names.remove(label_key)
    columns = tuple(Column(name, "" if name == "currency" else unit_of(name, currency),
                           tuple(_cell(rows[i].get(name)) for i in order))
                    for name in names)
    if not any(c.numeric for c in columns):
        return None
    if statement:
        index = tuple(_period_label(rows[i]) for i in order)
    elif date_key:
        index = tuple(_date(rows[i].get(date_key)) for i in order)
    elif label_key:
        index = tuple(str(rows[i][label_key]) for i in order)
    else:
        index = tuple(str(n) for n in range(1, len(order) + 1))
    dates = tuple(_date(rows[i].get(date_key)) for i in order) if date_key else ()
    index_name = "period" if statement else "date" if date_key else (label_key or "row")
    named = {str(r[k]) for r in rows for k in ENTITY_KEYS[:2] if isinstance(r.get(k), str)
             and r[k]}
    own = named.pop() if len(named) == 1 and label_key is None else ""
    return DataTable(title=title, source=source, index_name=index_name, index=index,
                     dates=dates, columns=columns, dropped_rows=dropped,
                     entity=own or entity)


def table_to_dict(table: DataTable) -> dict[str, Any]:
    """A JSON-ready form (saved sessions keep their sources' tables)."""
    return {"title": table.title, "source": table.source, "index_name": table.index_name,
            "index": list(table.index), "dates": list(table.dates),
            "columns": [{"name": c.name, "unit": c.unit, "values": list(c.values)}
                        for c in table.columns],
            "source_id": table.source_id, "dropped_rows": table.dropped_rows,
            **({"entity": table.entity} if table.entity else {})}


def table_from_dict(data: Any) -> DataTable:
    """The table :func:`table_to_dict` wrote; ``ValueError`` when ``data`` is not one."""
    if not isinstance(data, Mapping):
        raise ValueError("a table must be a JSON object")
    try:
        index = tuple(str(i) for i in data["index"])
        dates = tuple(str(d) for d in data.get("dates", []))
        columns = tuple(Column(str(c["name"]), str(c.get("unit", "")),
                               tuple(_cell(v) for v in c["values"]))
                        for c in data["columns"])
    except (KeyError, TypeError) as exc:
        raise ValueError(f"a table is missing or has a wrong field ({exc})") from None
    if any(len(c.values) != len(index) for c in columns) or (dates and len(dates) != len(index)):
        raise ValueError("a table's columns and index differ in length")
    return DataTable(title=str(data.get("title", "")), source=str(data.get("source", "")),
                     index_name=str(data.get("index_name", "row")), index=index, dates=dates,
                     columns=columns, source_id=str(data.get("source_id", "")),
                     dropped_rows=int(data.get("dropped_rows", 0) or 0),
                     entity=str(data.get("entity", "") or ""))


def _scalar(value: Any) -> bool:
    return value is None or (isinstance(value, str | int | float) and not isinstance(value, bool))


def _cell(value: Any) -> Cell:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        number = float(value)
        return number if math.isfinite(number) else None
    if isinstance(value, str):
        return value
    return None


def _currency(rows: Sequence[Mapping[str, Any]]) -> str:
    found = {str(r["currency"]) for r in rows if isinstance(r.get("currency"), str)
             and r["currency"]}
    return found.pop() if len(found) == 1 else ""


def _date(value: Any) -> str:
    """The ISO date of a date or timestamp field ('' when it is none)."""
    text = str(value or "")
    return text[:10] if len(text) >= 10 and text[4:5] == "-" and text[7:8] == "-" else text


def _period_label(record: Mapping[str, Any]) -> str:
    period = str(record.get("fiscal_period") or "")
    date = _date(record.get("report_period"))
    return f"{period} ({date})" if period and date else period or date or "?"
