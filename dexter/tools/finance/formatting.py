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


# --------------------------------------------------------------------------------------------
# The keyless SEC results: segments, insider trades, 13F holdings, releases, search, peers
# --------------------------------------------------------------------------------------------


def _entry(result: DataResult, text: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"source": result.source, "data": text}
    if result.notes:
        entry["notes"] = list(result.notes)
    return entry


def _sources_line(records: list[dict[str, Any]]) -> str:
    seen: dict[str, str] = {}
    for record in records:
        filing = record.get("source_filing")
        if isinstance(filing, dict) and filing.get("accession_number"):
            seen.setdefault(str(filing["accession_number"]),
                            f"{filing.get('form') or ''} {filing['accession_number']} filed "
                            f"{filing.get('filed') or '?'} {filing.get('url', '')}".strip())
    return ("Sources: " + "; ".join(seen.values())) if seen else ""


def render_segments(result: DataResult) -> dict[str, Any]:
    """Per axis and metric, a table of members (rows) by fiscal period (columns)."""
    records = [r for r in result.data if isinstance(r, dict)] if isinstance(result.data, list) \
        else []
    parts: list[str] = []
    axes = list(dict.fromkeys(str(r.get("axis")) for r in records))
    for axis in axes:
        rows = [r for r in records if r.get("axis") == axis]
        periods = list(dict.fromkeys(
            f"{r.get('fiscal_period')} ({r.get('report_period')})" for r in rows))
        fields = [f for f in ("revenue", "share_of_total", "operating_income", "gross_profit",
                              "cost_of_revenue", "net_income", "long_lived_assets")
                  if any(f in r for r in rows)]
        fields += list(dict.fromkeys(k for r in rows for k in r.get("concepts", {})
                                     if k not in fields))
        ticker = rows[0].get("ticker", "")
        for field in fields:
            segments = list(dict.fromkeys(str(r.get("segment")) for r in rows if field in r))
            lines = [f"{ticker} {field} by {axis.lower()}:",
                     "| segment | " + " | ".join(periods) + " |",
                     "|---" * (len(periods) + 1) + "|"]
            for segment in segments:
                cells = []
                for period in periods:
                    match = next((r for r in rows if r.get("segment") == segment and
                                  f"{r.get('fiscal_period')} ({r.get('report_period')})" == period),
                                 None)
                    cells.append(fmt_value(field, match.get(field) if match else None))
                lines.append(f"| {segment} | " + " | ".join(cells) + " |")
            parts.append("\n".join(lines))
    line = _sources_line(records)
    if line:
        parts.append(line)
    derived = derived_summary(records)
    if derived:
        parts.append("Derived: " + "; ".join(derived))
    return _entry(result, "\n\n".join(parts) or "(no segment figures)")


def _rows_text(records: list[dict[str, Any]], columns: tuple[str, ...]) -> str:
    shown = [{c: r.get(c) for c in columns if c in r or c == columns[0]} for r in records]
    return records_table(shown)


INSIDER_COLUMNS = ("transaction_date", "owner", "role", "security", "transaction_code",
                   "transaction_type", "acquired_disposed", "transaction_shares",
                   "transaction_price_per_share", "transaction_value", "shares_owned_after",
                   "direct_or_indirect", "is_derivative", "rule_10b5_1_plan", "filing_date")


def render_insiders(result: DataResult) -> dict[str, Any]:
    """Transactions as rows, then the filings they came from."""
    records = [r for r in result.data if isinstance(r, dict)] if isinstance(result.data, list) \
        else []
    if records and "transaction_code" not in records[0] and "name" in records[0]:
        return render_result(result)  # insider names
    text = _rows_text(records, INSIDER_COLUMNS)
    line = _sources_line(records)
    return _entry(result, text + ("\n" + line if line else ""))


HOLDING_COLUMNS = ("issuer", "title_of_class", "cusip", "value", "shares", "share_type",
                   "put_call", "investment_discretion", "voting_sole", "voting_shared",
                   "voting_none")
CHANGE_COLUMNS = ("issuer", "title_of_class", "cusip", "put_call", "status", "shares_before",
                  "shares_after", "shares_change", "shares_change_pct", "value_before",
                  "value_after", "value_change")


def render_holdings(result: DataResult) -> dict[str, Any]:
    """The manager and quarter, then positions (or their changes) as rows, value in USD."""
    records = [r for r in result.data if isinstance(r, dict)] if isinstance(result.data, list) \
        else []
    if not records:
        return _entry(result, "(no positions)")
    first = records[0]
    head = (f"Manager: {first.get('manager')} · quarter ending {first.get('report_period')}"
            f"{' (compared with ' + str(first.get('previous_period')) + ')' if 'status' in first else ''}"
            f" · values in US dollars")
    columns = CHANGE_COLUMNS if "status" in first else HOLDING_COLUMNS
    line = _sources_line(records)
    return _entry(result, "\n".join([head, _rows_text(records, columns), line]).strip())


def render_releases(result: DataResult) -> dict[str, Any]:
    """Each release: its filing, headline, figures (a statement table), outlook, text."""
    parts: list[str] = []
    for release in result.data if isinstance(result.data, list) else []:
        if not isinstance(release, dict):
            continue
        filing = release.get("source_filing") or {}
        parts.append(f"## {release.get('ticker')} earnings release: {release.get('title')}\n"
                     f"8-K {release.get('accession_number')} filed {release.get('filing_date')} "
                     f"(items {release.get('items') or '2.02'}), exhibit "
                     f"{release.get('exhibit')}: {filing.get('url', '')}")
        figures = [f for f in release.get("figures") or [] if isinstance(f, dict)]
        results = [f for f in figures if f.get("period")] or figures
        if results:
            parts.append("Figures from the release's tables (US dollars):\n" +
                         statement_table([{**f, "fiscal_period": f.get("fiscal_period")
                                           or f.get("period_label")} for f in results]))
        outlook_ = release.get("outlook") or []
        if outlook_:
            parts.append("Outlook / guidance:\n" + "\n\n".join(str(o) for o in outlook_))
        if release.get("text"):
            parts.append("Release text:\n" + str(release["text"]))
    return _entry(result, "\n\n".join(parts) or "(no releases)")


SEARCH_COLUMNS = ("filing_date", "form", "filer", "ticker", "document_type", "description",
                  "items", "url")


def render_search(result: DataResult) -> dict[str, Any]:
    """Hits as rows, each with its link."""
    records = [r for r in result.data if isinstance(r, dict)] if isinstance(result.data, list) \
        else []
    return _entry(result, _rows_text(records, SEARCH_COLUMNS))


def render_peers(result: DataResult) -> dict[str, Any]:
    """Companies as rows, the subject marked."""
    records = [r for r in result.data if isinstance(r, dict)] if isinstance(result.data, list) \
        else []
    shown = [{k: v for k, v in r.items() if k != "source_filing"} for r in records]
    return _entry(result, records_table(shown) + ("\n" + _sources_line(records)
                                                  if _sources_line(records) else ""))
