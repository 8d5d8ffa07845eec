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

A statement table also keeps where each value came from, for a report's sources: the
company it is about (``entity``), its period kind, the filings its records name
(:class:`Filing`: form, accession number, filing date, the period it reports on, its
document's URL) and, per cell, the accession numbers it came from and how it was derived
(``gross_profit / revenue``), when the records say.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
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
    "filing_date", "split_adjusted", "company_name",
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


ACCESSION = re.compile(r"\b(\d{10}-\d{2}-\d{6})\b")
_FILED = re.compile(r"(\S+) (\d{10}-\d{2}-\d{6})(?: filed (\d{4}-\d{2}-\d{2}))?")
_ARCHIVE_FOLDER = re.compile(r"^(.*/Archives/edgar/data/\d+/)\d{18}/")


@dataclass(frozen=True, slots=True)
class Filing:
    """A filing a table's values came from (as its records name it)."""

    accession: str
    form: str = ""
    filed: str = ""
    period: str = ""
    """The fiscal period the filing reports on (``FY2024``, ``Q1 2025``), when known."""
    url: str = ""
    """Its primary document (``.../aapl-20240928.htm``), else its folder, else ''."""


@dataclass(frozen=True, slots=True)
class Column:
    """One field of a table: its name, unit and one value per row (None: missing).

    ``sources`` and ``derived`` are empty, or hold one entry per row: the accession
    numbers the value came from (space-separated, '' when unknown) and how it was computed
    ('' when it was reported as such)."""

    name: str
    unit: str
    values: tuple[Cell, ...]
    sources: tuple[str, ...] = ()
    derived: tuple[str, ...] = ()

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
    """The company the table is about (``Apple Inc.``, else its ticker), when one is."""
    ticker: str = ""
    """The ticker its records are of, when they name one company (the figure check binds
    a cell to its company by it)."""
    period: str = ""
    """``annual``, ``quarterly`` or ``ttm`` for a statement whose records say so."""
    filings: tuple[Filing, ...] = ()
    """The filings its cells' ``sources`` name."""

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
                               tuple(fn(v) if isinstance(v, str) else v for v in c.values),
                               c.sources, tuple(fn(d) for d in c.derived))
                        for c in self.columns)
        filings = tuple(Filing(f.accession, fn(f.form), f.filed, fn(f.period), fn(f.url))
                        for f in self.filings)
        return dataclasses.replace(self, title=fn(self.title), source=fn(self.source),
                                   index=tuple(fn(i) for i in self.index), columns=columns,
                                   entity=fn(self.entity), ticker=fn(self.ticker),
                                   filings=filings)

    def with_source_id(self, source_id: str) -> DataTable:
        """This table as part of the source ``source_id``."""
        return dataclasses.replace(self, source_id=source_id)

    def filing(self, accession: str) -> Filing | None:
        """The filing with this accession number, when the table names it."""
        return next((f for f in self.filings if f.accession == accession), None)


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
             currency: str = "", ticker: str = "") -> None:
    if depth > 3 or len(found) >= MAX_TABLES:
        return
    if isinstance(data, list):
        table = records_table(title, data, source, currency=currency, ticker=ticker)
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
    named = next((data[k] for k in ("company_name", "ticker", "symbol")
                  if isinstance(data.get(k), str) and data[k]), "")
    held = next((data[k] for k in ENTITY_KEYS if isinstance(data.get(k), str) and data[k]),
                ticker)
    for key, value in nested:
        before = len(found)
        _collect(f"{title} · {key}" if title else str(key), value, source, found, depth + 1,
                 inner, held)
        if named:  # an envelope's company is its records' ({"ticker": "AAPL", "prices": [...]})
            found[before:] = [t if t.entity else dataclasses.replace(t, entity=named)
                              for t in found[before:]]
    if not any(isinstance(v, list) and v and isinstance(v[0], Mapping) for _, v in nested):
        table = records_table(title, [data], source)
        if table is not None:
            found.append(table)


def records_table(title: str, records: Sequence[Any], source: str = "", *,
                  currency: str = "", ticker: str = "") -> DataTable | None:
    """One table of a list of records (dicts), or None when they hold no number.
    ``currency``: the records' currency when none of them names one; ``ticker``: the
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
    ordered = [rows[i] for i in order]
    filings = _filings(ordered) if statement else ()
    columns = tuple(_column(name, "" if name == "currency" else unit_of(name, currency),
                            ordered, bool(filings))
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
                     entity=_shared(rows, "company_name") or _shared(rows, "ticker")
                     or _shared(rows, "symbol"), ticker=own or ticker,
                     period=_shared(rows, "period") if statement else "", filings=filings)


def _column(name: str, unit: str, rows: Sequence[Mapping[str, Any]], traced: bool) -> Column:
    values = tuple(_cell(r.get(name)) for r in rows)
    if not traced:
        return Column(name, unit, values)
    sources = tuple("" if v is None else " ".join(_cell_accessions(r, name))
                    for r, v in zip(rows, values, strict=True))
    derived = tuple(str((r.get("derived") or {}).get(name) or "")
                    if isinstance(r.get("derived"), Mapping) else "" for r in rows)
    return Column(name, unit, values, sources, derived if any(derived) else ())


def _cell_accessions(record: Mapping[str, Any], name: str) -> list[str]:
    """The filings one value came from: those a derivation names (a quarter computed from
    a 10-K and a 10-Q), else the field's own filing, else the record's."""
    derived = record.get("derived")
    how = str(derived.get(name) or "") if isinstance(derived, Mapping) else ""
    named = ACCESSION.findall(how)
    if named:
        return list(dict.fromkeys(named))
    others = record.get("field_sources")
    where = str(others.get(name) or "") if isinstance(others, Mapping) else ""
    found = ACCESSION.findall(where)
    if found:
        return found[:1]
    main = record.get("source_filing")
    accession = main.get("accession_number") if isinstance(main, Mapping) else \
        record.get("accession_number")
    return [str(accession)] if isinstance(accession, str) and accession else []


def _filings(rows: Sequence[Mapping[str, Any]]) -> tuple[Filing, ...]:
    """Every filing the records name: their ``source_filing`` (with its document), then the
    filings named only in ``field_sources`` or a derivation (with the folder URL, when
    another filing of the company shows where its archive is)."""
    known: dict[str, Filing] = {}
    for row in rows:
        main = row.get("source_filing")
        if isinstance(main, Mapping) and isinstance(main.get("accession_number"), str):
            accession = str(main["accession_number"])
            known.setdefault(accession, Filing(
                accession, str(main.get("form") or ""), str(main.get("filed") or ""),
                str(main.get("fiscal_period") or ""), str(main.get("url") or "")))
        elif isinstance(row.get("accession_number"), str) and row["accession_number"]:
            known.setdefault(str(row["accession_number"]), Filing(str(row["accession_number"])))
    folder = next((m.group(1) for f in known.values() if (m := _ARCHIVE_FOLDER.match(f.url))),
                  "")
    for row in rows:
        texts = [str(v) for key in ("field_sources", "derived")
                 if isinstance(row.get(key), Mapping) for v in row[key].values()]
        for text in texts:
            for form, accession, filed in _FILED.findall(text):
                if accession not in known:
                    url = f"{folder}{accession.replace('-', '')}/" if folder else ""
                    known[accession] = Filing(accession, form.strip("("), filed, "", url)
    return tuple(known.values())


def _shared(rows: Sequence[Mapping[str, Any]], key: str) -> str:
    """The value of ``key`` when every row has the same text there, else ''."""
    found = {r.get(key) for r in rows}
    value = found.pop() if len(found) == 1 else None
    return value if isinstance(value, str) else ""


def table_to_dict(table: DataTable) -> dict[str, Any]:
    """A JSON-ready form (saved sessions keep their sources' tables)."""
    data: dict[str, Any] = {
        "title": table.title, "source": table.source, "index_name": table.index_name,
        "index": list(table.index), "dates": list(table.dates),
        "columns": [{"name": c.name, "unit": c.unit, "values": list(c.values),
                     **({"sources": list(c.sources)} if c.sources else {}),
                     **({"derived": list(c.derived)} if c.derived else {})}
                    for c in table.columns],
        "source_id": table.source_id, "dropped_rows": table.dropped_rows}
    if table.entity:
        data["entity"] = table.entity
    if table.ticker:
        data["ticker"] = table.ticker
    if table.period:
        data["period"] = table.period
    if table.filings:
        data["filings"] = [dataclasses.asdict(f) for f in table.filings]
    return data


def table_from_dict(data: Any) -> DataTable:
    """The table :func:`table_to_dict` wrote; ``ValueError`` when ``data`` is not one."""
    if not isinstance(data, Mapping):
        raise ValueError("a table must be a JSON object")
    try:
        index = tuple(str(i) for i in data["index"])
        dates = tuple(str(d) for d in data.get("dates", []))
        columns = tuple(Column(str(c["name"]), str(c.get("unit", "")),
                               tuple(_cell(v) for v in c["values"]),
                               tuple(str(v) for v in c.get("sources", [])),
                               tuple(str(v) for v in c.get("derived", [])))
                        for c in data["columns"])
        filings = tuple(Filing(str(f["accession"]), str(f.get("form", "")),
                               str(f.get("filed", "")), str(f.get("period", "")),
                               str(f.get("url", "")))
                        for f in data.get("filings", []))
    except (KeyError, TypeError) as exc:
        raise ValueError(f"a table is missing or has a wrong field ({exc})") from None
    if any(len(c.values) != len(index) for c in columns) or (dates and len(dates) != len(index)):
        raise ValueError("a table's columns and index differ in length")
    if any(len(part) not in (0, len(index)) for c in columns for part in (c.sources, c.derived)):
        raise ValueError("a table's cell sources and index differ in length")
    return DataTable(title=str(data.get("title", "")), source=str(data.get("source", "")),
                     index_name=str(data.get("index_name", "row")), index=index, dates=dates,
                     columns=columns, source_id=str(data.get("source_id", "")),
                     dropped_rows=int(data.get("dropped_rows", 0) or 0),
                     entity=str(data.get("entity", "")), ticker=str(data.get("ticker", "")),
                     period=str(data.get("period", "")),
                     filings=filings)


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
