"""Tables in text a run read: CSV and TSV files, markdown pipe tables in files and pages.

A JSON result becomes tables through :mod:`dexter.evidence.tables`; a table a run read as
text (``revenue.csv``, a markdown file, a web page converted to markdown) must reach the
report and the workbook too, as numbers. Pure functions: text in, :class:`DataTable` s out.

A cell is a number when it reads as one the way people write them: ``1,234``, ``-5.2``,
``(9,447)`` (negative), ``$1.5``, ``12.5%`` (stored as 0.125 in a ratio column). A table
whose first row names periods (``FY2024``, ``Q1 2025``, ``2024-09-28``) beside a first
column of line items (``Revenue``) is a statement laid out the way filings print it, and is
read as one: a row per period, a column per line item, named by the metric lexicon when it
knows the label. Any other table keeps a row per row, its first column as the labels.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from dexter import metrics
from dexter.evidence.tables import MAX_ROWS, MAX_TABLES, Cell, Column, DataTable

MAX_TEXT_CHARS = 2_000_000
"""Longer text is not scanned for tables."""
MAX_COLUMNS = 200

_NUMBER = re.compile(r"^(?P<open>\()?(?P<sign>[-+−])?(?P<cur>[$€£¥])?(?P<sign2>[-+−])?"
                     r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
                     r"(?P<scale>bn|mn|mm|[kKmMbBtT])?(?P<pct>%)?(?P<close>\))?$")
_SCALES = {"k": 1e3, "m": 1e6, "mm": 1e6, "mn": 1e6, "b": 1e9, "bn": 1e9, "t": 1e12}
_PERIOD = re.compile(r"^(?:FY\s?\d{4}|Q[1-4]\s?(?:FY)?\s?\d{4}|\d{4}-\d{2}-\d{2}|"
                     r"(?:CY|H[12]\s?)\d{4}|TTM.*|\d{4})$", re.IGNORECASE)
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")
_DELIMITER_ROW = re.compile(r"^\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_CURRENCIES = {"$": "USD", "€": "EUR", "£": "GBP", "¥": "JPY"}


@dataclass(frozen=True, slots=True)
class Written:
    """A number as someone wrote it: its value (a percentage as a fraction) and how it
    was written, so a workbook can show it the same way."""

    value: float
    decimals: int
    currency: str = ""
    """The symbol written before it (``$``), or ''."""
    scale: str = ""
    """The scale letter written after it (``B``, ``bn``, ``M``), or ''."""
    percent: bool = False
    parentheses: bool = False
    grouped: bool = False
    """Written with thousands separators."""


def parse_written(text: str) -> Written | None:
    """A written number (``$119.6B``, ``(9,447)``, ``46.2%``, ``2.40``), or None when the
    text is not one."""
    cleaned = text.strip().replace("\u00a0", "").replace(" ", "").replace("*", "")
    match = _NUMBER.match(cleaned)
    if match is None or bool(match["open"]) != bool(match["close"]):
        return None
    if match["scale"] and match["pct"]:
        return None
    digits = match["num"]
    value = float(digits.replace(",", "")) * _SCALES.get((match["scale"] or "").lower(), 1)
    negative = bool(match["open"]) or bool({match["sign"], match["sign2"]} & {"-", "−"})
    if negative:
        value = -value
    if match["pct"]:
        value /= 100
    return Written(value, len(digits.split(".")[1]) if "." in digits else 0,
                   match["cur"] or "", match["scale"] or "", bool(match["pct"]),
                   bool(match["open"]), "," in digits)


def parse_number(text: str) -> tuple[float, str] | None:
    """A written number as ``(value, kind)``: kind ``%`` (value as a fraction), a currency
    code (``USD``) or ''. None when the text is not a number."""
    written = parse_written(text)
    if written is None:
        return None
    if written.percent:
        return written.value, "%"
    return written.value, _CURRENCIES.get(written.currency, "")


def tables_from_csv(title: str, text: str, delimiter: str = ",", source: str = "") -> list[DataTable]:
    """The table of a CSV (or, with ``delimiter="\\t"``, TSV) text; [] when it holds no
    number."""
    if len(text) > MAX_TEXT_CHARS:
        return []
    try:
        rows = [row for row in csv.reader(io.StringIO(text), delimiter=delimiter)
                if any(cell.strip() for cell in row)]
    except csv.Error:
        return []
    table = grid_table(title, rows, source)
    return [table] if table is not None else []


def tables_from_markdown(title: str, text: str, source: str = "") -> list[DataTable]:
    """Every pipe table in a markdown text that holds numbers, titled ``title`` (``title ·
    table 2`` for the second and later)."""
    if len(text) > MAX_TEXT_CHARS:
        return []
    found: list[DataTable] = []
    for n, rows in enumerate(_pipe_tables(text), 1):
        table = grid_table(title if n == 1 else f"{title} · table {n}", rows, source)
        if table is not None:
            found.append(table)
        if len(found) >= MAX_TABLES:
            break
    return found


def tables_from_file(name: str, text: str, source: str = "") -> list[DataTable]:
    """The tables of a file's text by its name: CSV, TSV, JSON, else markdown tables."""
    from dexter.evidence.tables import tables_from_json_text

    lowered = name.lower()
    if lowered.endswith(".csv"):
        return tables_from_csv(name, text, ",", source)
    if lowered.endswith((".tsv", ".tab")):
        return tables_from_csv(name, text, "\t", source)
    if lowered.endswith(".json"):
        return tables_from_json_text(name, text, source)
    return tables_from_markdown(name, text, source)


def grid_table(title: str, rows: Sequence[Sequence[str]], source: str = "") -> DataTable | None:
    """A header row and body rows of text as a table (see the module docstring); None when
    no column holds a number."""
    if len(rows) < 2:
        return None
    header = [" ".join(h.split()) for h in rows[0][:MAX_COLUMNS]]
    body = [[" ".join(c.split()) for c in row[:len(header)]] + [""] * (len(header) - len(row))
            for row in rows[1:MAX_ROWS + 1]]
    if len(header) < 2:
        return None
    periods = header[1:]
    if sum(bool(_PERIOD.match(p)) for p in periods) * 2 > len(periods) and \
            all(row[0] for row in body):
        return _statement(title, header, body, source)
    return _records(title, header, body, source)


def _statement(title: str, header: list[str], body: list[list[str]],
               source: str) -> DataTable | None:
    """Line items down, periods across: a row per period, a column per line item."""
    periods = header[1:]
    order = sorted(range(len(periods)), key=lambda i: _period_key(periods[i]))
    columns = []
    for row in body:
        cells = [_cell(row[1 + i]) for i in order]
        name = _field(row[0])
        unit = _unit(cells, metrics.metric(name))
        columns.append(Column(name, unit, tuple(v for v, _ in cells)))
    if not any(c.numeric for c in columns):
        return None
    index = tuple(periods[i] for i in order)
    # the periods are the dates: each row is one, in order (a chart needs no more)
    return DataTable(title=title, source=source, index_name="period", index=index,
                     dates=index, columns=tuple(columns))


def _records(title: str, header: list[str], body: list[list[str]],
             source: str) -> DataTable | None:
    """A row per row; the first column labels the rows (dates make a time series)."""
    labels = tuple(row[0] for row in body)
    dated = bool(labels) and all(_DATE.match(label) for label in labels)
    periods = bool(labels) and not dated and all(_PERIOD.match(label) for label in labels)
    columns = []
    for n, name in enumerate(header[1:], 1):
        cells = [_cell(row[n]) for row in body]
        field = _field(name)
        columns.append(Column(field, _unit(cells, metrics.metric(field)),
                              tuple(v for v, _ in cells)))
    if not any(c.numeric for c in columns):
        return None
    if dated or periods:
        order = sorted(range(len(labels)), key=lambda i: _period_key(labels[i]))
        columns = [Column(c.name, c.unit, tuple(c.values[i] for i in order)) for c in columns]
        index = tuple(labels[i][:10] if dated else labels[i] for i in order)
        return DataTable(title=title, source=source, index_name="date" if dated else "period",
                         index=index, dates=index, columns=tuple(columns))
    return DataTable(title=title, source=source, index_name=header[0] or "row",
                     index=labels, dates=(), columns=tuple(columns))


def _cell(text: str) -> tuple[Cell, str]:
    if text.strip() in ("", "-", "—", "–", "n/a", "N/A", "NA", "nm", "NM"):
        return None, ""
    parsed = parse_number(text)
    if parsed is None:
        return text, ""
    return parsed


def _unit(cells: Sequence[tuple[Cell, str]], known: metrics.Metric | None) -> str:
    kinds = {kind for value, kind in cells if isinstance(value, float)}
    if kinds == {"%"} or (known is not None and known.kind == "ratio" and "%" in kinds):
        return "ratio"
    if known is not None and known.kind == "per_share":
        currency = next((k for k in kinds if k and k != "%"), "")
        return f"{currency}/share" if currency else "per share"
    if known is not None and known.kind == "shares":
        return "shares"
    return next((k for k in kinds if k and k != "%"), "")


def _field(label: str) -> str:
    """The lexicon's field when ``label`` is exactly one of its phrases (``Net sales`` ->
    ``revenue``), else the label as written."""
    return metrics.field_for_label(label) or label


def _period_key(label: str) -> tuple[str, str]:
    """Oldest first: by the year, then the quarter (``Q1 2025`` after ``FY2024``)."""
    year = re.search(r"\d{4}", label)
    quarter = re.search(r"Q([1-4])", label, re.IGNORECASE)
    return (label[:10] if _DATE.match(label) else (year.group(0) if year else label),
            quarter.group(1) if quarter else "")


def _pipe_tables(text: str) -> Iterator[list[list[str]]]:
    """The rows of each pipe table (header, then body; the delimiter row dropped)."""
    lines = text.splitlines()
    i = 0
    while i < len(lines) - 1:
        if "|" in lines[i] and _DELIMITER_ROW.match(lines[i + 1].strip()):
            rows = [_split_row(lines[i])]
            i += 2
            while i < len(lines) and "|" in lines[i] and lines[i].strip():
                rows.append(_split_row(lines[i]))
                i += 1
            yield rows
        else:
            i += 1


def _split_row(line: str) -> list[str]:
    text = line.strip()
    if text.startswith("|"):
        text = text[1:]
    if text.endswith("|") and not text.endswith("\\|"):
        text = text[:-1]
    return [cell.replace("\\|", "|").strip() for cell in re.split(r"(?<!\\)\|", text)]
