"""Render data-source results as compact text the model reads, keeping every field.

Statements become one table per call with a row per field and a column per period (so 25
line items over 4 periods stay small), followed by where each column came from and which
values were derived. Other record lists become row tables (long ones keep their first and
last rows and say how many were skipped); filing sections are kept verbatim.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from dexter.data.base import DataResult

# Record keys describing the period or provenance rather than a number in the table.
META_KEYS = frozenset({
    "ticker", "report_period", "fiscal_period", "period", "currency", "period_start",
    "source_filing", "field_sources", "derived", "accession_number", "calendar_date",
    "filing_date", "company_name",
})
RATIO_SUFFIXES = ("_margin", "_growth", "return_on_equity", "return_on_assets",
                  "return_on_invested_capital", "_yield", "payout_ratio")
MAX_ROWS = 40
# Prices keep their cents (and a penny stock's fractions): four significant digits would
# turn 312.61 into 312.6 and every market value computed from it with it.
PRICE_FIELDS = frozenset({"open", "high", "low", "close", "adj_close", "price",
                          "previous_close", "day_change"})


def fmt_value(name: str, value: Any) -> str:
    """One cell: integers with thousands separators, ratios as percentages, nulls as '-'."""
    if value is None or value == "":
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if name in PRICE_FIELDS:
            return f"{value:,.4f}".rstrip("0").rstrip(".")
        if name.endswith(RATIO_SUFFIXES) and abs(value) < 100:
            return f"{value * 100:.1f}%"
        if value.is_integer() and abs(value) >= 1000:
            return f"{int(value):,}"
        return f"{value:,.4g}" if abs(value) < 1000 else f"{value:,.2f}"
    if isinstance(value, list | dict):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return str(value).replace("|", "/").replace("\n", " ")


def _column_label(record: Mapping[str, Any]) -> str:
    period = record.get("fiscal_period") or record.get("period") or ""
    date = record.get("report_period") or ""
    return f"{period} ({date})" if period and date else str(period or date or "?")


def is_statement_records(data: Any) -> bool:
    """Lists of per-period records with a ``report_period`` render as a transposed table."""
    return (isinstance(data, list) and bool(data)
            and all(isinstance(r, dict) and "report_period" in r for r in data))


def statement_table(records: list[dict[str, Any]]) -> str:
    """Fields as rows, periods as columns, then sources and derivations."""
    fields: list[str] = []
    for record in records:
        fields.extend(k for k in record if k not in META_KEYS and k not in fields)
    header = "| field | " + " | ".join(_column_label(r) for r in records) + " |"
    lines = [header, "|---" * (len(records) + 1) + "|"]
    for name in fields:
        cells = " | ".join(fmt_value(name, r.get(name)) for r in records)
        lines.append(f"| {name} | {cells} |")
    currency = {r.get("currency") for r in records if r.get("currency")}
    if currency:
        lines.append(f"Currency: {', '.join(sorted(map(str, currency)))} (per-share values in "
                     "currency units, shares in units).")
    lines.extend(_provenance(records))
    return "\n".join(lines)


def _provenance(records: list[dict[str, Any]]) -> list[str]:
    lines: list[str] = []
    sources = []
    for record in records:
        filing = record.get("source_filing")
        if isinstance(filing, dict):
            sources.append(f"{_column_label(record)}: {filing.get('form')} "
                           f"{filing.get('accession_number')} filed {filing.get('filed')} "
                           f"{filing.get('url', '')}".rstrip())
        elif record.get("accession_number"):
            sources.append(f"{_column_label(record)}: accession {record['accession_number']}")
        for name, where in (record.get("field_sources") or {}).items():
            sources.append(f"{_column_label(record)} {name}: {where}")
    if sources:
        lines.append("Sources: " + "; ".join(sources))
    derived = derived_summary(records)
    if derived:
        lines.append("Derived (computed, not reported as such): " + "; ".join(derived))
    return lines


def derived_summary(records: list[dict[str, Any]]) -> list[str]:
    """One phrase per computation: fields computed the same way in the same periods share
    it (``revenue, net_income = FY (...) minus 9M YTD (...) [Q4 2024]``), so 8 cash flow
    fields over 20 quarters stay a few lines instead of 160."""
    periods_of: dict[str, dict[str, list[str]]] = {}
    all_periods: list[str] = []
    for record in records:
        period = str(record.get("fiscal_period") or record.get("report_period"))
        all_periods.append(period)
        for name, how in (record.get("derived") or {}).items():
            periods_of.setdefault(str(how), {}).setdefault(name, []).append(period)
    phrases: list[str] = []
    for how, fields in periods_of.items():
        by_periods: dict[tuple[str, ...], list[str]] = {}
        for name, periods in fields.items():
            by_periods.setdefault(tuple(periods), []).append(name)
        for group, names in by_periods.items():
            where = ("all periods" if len(all_periods) > 1 and list(group) == all_periods
                     else ", ".join(group))
            phrases.append(f"{', '.join(names)} = {how} [{where}]")
    return phrases


def records_table(records: list[Any], max_rows: int = MAX_ROWS) -> str:
    """Rows of records; keeps the first and last rows of a long list and counts the rest."""
    if not records:
        return "(none: the source returned no rows for these arguments)"
    if not all(isinstance(r, dict) for r in records):
        return ", ".join(fmt_value("", r) for r in records[: max_rows * 5]) + (
            f" ... and {len(records) - max_rows * 5} more" if len(records) > max_rows * 5 else "")
    columns: list[str] = []
    for record in records:
        columns.extend(k for k in record if k not in columns)
    shown: list[Any] = records
    skipped = 0
    if len(records) > max_rows:
        half = max_rows // 2
        skipped = len(records) - 2 * half
        shown = [*records[:half], None, *records[-half:]]
    lines = ["| " + " | ".join(columns) + " |", "|---" * len(columns) + "|"]
    for record in shown:
        if record is None:
            lines.append(f"| ... {skipped} rows skipped ... |")
            continue
        lines.append("| " + " | ".join(fmt_value(c, record.get(c)) for c in columns) + " |")
    lines.append(f"({len(records)} rows)")
    return "\n".join(lines)


def mapping_lines(data: Mapping[str, Any]) -> str:
    """``key: value`` lines for one object (snapshots, company facts)."""
    return "\n".join(f"- {k}: {fmt_value(k, v)}" for k, v in data.items())


def render_data(data: Any) -> str:
    """Pick the right layout for ``data``."""
    if is_statement_records(data):
        return statement_table(data)
    if isinstance(data, list):
        return records_table(data)
    if isinstance(data, dict):
        parts = []
        for key, value in data.items():
            if is_statement_records(value) or (isinstance(value, list) and value
                                               and isinstance(value[0], dict)):
                parts.append(f"{key}:\n{render_data(value)}")
            elif isinstance(value, list) and not value:
                parts.append(f"{key}: (none)")
            else:
                parts.append(f"- {key}: {fmt_value(key, value)}")
        return "\n".join(parts)
    return fmt_value("", data)


def render_result(result: DataResult) -> dict[str, Any]:
    """A merged-result entry: the source, the rendered data and caveats."""
    entry: dict[str, Any] = {"source": result.source, "data": render_data(result.data)}
    if result.notes:
        entry["notes"] = list(result.notes)
    return entry


def render_filing_items(result: DataResult) -> dict[str, Any]:
    """Filing sections: metadata lines, then each section's text verbatim."""
    data = result.data if isinstance(result.data, dict) else {"items": result.data}
    meta = {k: v for k, v in data.items() if k not in {"items", "available_items"}}
    parts = [mapping_lines(meta)] if meta else []
    for item in data.get("items") or []:
        if isinstance(item, dict):
            title = f" - {item['title']}" if item.get("title") else ""
            parts.append(f"## {item.get('name')}{title}\n{item.get('text', '')}")
    available = data.get("available_items")
    if available:
        parts.append("Available items: " + render_data(available)
                     if isinstance(available[0], dict) else
                     "Available items: " + ", ".join(map(str, available)))
    entry: dict[str, Any] = {"source": result.source, "data": "\n\n".join(parts)}
    if result.notes:
        entry["notes"] = list(result.notes)
    return entry
