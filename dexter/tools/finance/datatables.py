"""The data tables of the keyless SEC results (segments, insider trades, 13F holdings,
earnings releases, peers), for the source ledger, reports, spreadsheets and charts.

``evidence.tables.tables_from_data`` lays out any record list; these builders lay out the
records whose shape it cannot guess: segment records are one row per member *and* period
(a table per member, periods as rows, like a statement), insider trades and 13F positions
are rows of a list (no time series), a release's figures are statements of its own tables.
Every numeric column is a field of the metric lexicon (``dexter.metrics``), and its unit
comes from the lexicon's kind of that field.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from dexter import metrics
from dexter.data.base import DataResult
from dexter.evidence.tables import Cell, Column, DataTable, tables_from_data, unit_of

TableBuilder = Callable[[str, DataResult], list[DataTable]]


def unit_for(field: str, currency: str = "USD") -> str:
    """A field's unit from the lexicon's kind (amounts and prices in ``currency``,
    per-share values per share, share counts, ratios); else guessed from the name."""
    known = metrics.metric(field)
    if known is None:
        return unit_of(field, currency)
    return {"amount": currency, "price": currency, "per_share": f"{currency}/share",
            "shares": "shares", "ratio": "ratio", "count": ""}[known.kind]


def _cell(value: Any) -> Cell:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        return value
    return None


def _columns(rows: Sequence[dict[str, Any]], fields: Sequence[str],
             currency: str = "USD") -> tuple[Column, ...]:
    present = [f for f in fields if any(r.get(f) is not None for r in rows)]
    return tuple(Column(f, "" if not any(isinstance(r.get(f), int | float)
                                          and not isinstance(r.get(f), bool) for r in rows)
                        else unit_for(f, currency),
                        tuple(_cell(r.get(f)) for r in rows)) for f in present)


def default_tables(title: str, result: DataResult) -> list[DataTable]:
    """Tables found in any record list (the statements, prices, screens)."""
    return tables_from_data(title, result.data, result.source)


SEGMENT_FIELDS = ("revenue", "operating_income", "gross_profit", "cost_of_revenue",
                  "net_income", "long_lived_assets", "share_of_total")


def segment_tables(title: str, result: DataResult) -> list[DataTable]:
    """One statement-shaped table per axis member (totals included): a row per fiscal
    period, oldest first; title ``<title> · Business segment: Americas``."""
    records = [r for r in result.data if isinstance(r, dict)] \
        if isinstance(result.data, list) else []
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for record in records:
        groups.setdefault((str(record.get("axis")), str(record.get("segment"))),
                          []).append(record)
    tables = []
    for (axis, segment), rows in groups.items():
        rows.sort(key=lambda r: str(r.get("report_period")))
        extra = [f for r in rows for f in r if f not in SEGMENT_FIELDS
                 and isinstance(r.get(f), int | float) and not isinstance(r.get(f), bool)
                 and f not in ("is_total",)]
        fields = [*SEGMENT_FIELDS, *dict.fromkeys(extra)]
        tables.append(DataTable(
            title=f"{title} · {axis}: {segment}", source=result.source, index_name="period",
            index=tuple(f"{r.get('fiscal_period')} ({r.get('report_period')})" for r in rows),
            dates=tuple(str(r.get("report_period")) for r in rows),
            columns=_columns(rows, fields)))
    return tables


INSIDER_FIELDS = ("owner", "role", "security", "transaction_code", "transaction_type",
                  "acquired_disposed", "transaction_shares", "transaction_price_per_share",
                  "transaction_value", "shares_owned_after", "direct_or_indirect",
                  "is_derivative", "exercise_price", "underlying_shares", "filing_date")


def insider_tables(title: str, result: DataResult) -> list[DataTable]:
    """One row per reported transaction (or holding), labelled by date, owner and code."""
    rows = [r for r in result.data if isinstance(r, dict)] \
        if isinstance(result.data, list) else []
    if not rows or not any("transaction_shares" in r or "shares_owned_after" in r for r in rows):
        return default_tables(title, result)
    index = tuple(f"{r.get('transaction_date') or r.get('filing_date') or ''} · "
                  f"{r.get('owner', '')} · {r.get('transaction_code') or 'holding'}"
                  for r in rows)
    return [DataTable(title=title, source=result.source, index_name="transaction", index=index,
                      dates=(), columns=_columns(rows, INSIDER_FIELDS))]


HOLDING_FIELDS = ("cusip", "title_of_class", "value", "shares", "share_type", "put_call",
                  "investment_discretion", "voting_sole", "voting_shared", "voting_none",
                  "value_as_filed", "value_unit")
CHANGE_FIELDS = ("cusip", "title_of_class", "put_call", "status", "shares_before",
                 "shares_after", "shares_change", "shares_change_pct", "value_before",
                 "value_after", "value_change")


def holdings_tables(title: str, result: DataResult) -> list[DataTable]:
    """One row per 13F position (or per position's change between two quarters)."""
    rows = [r for r in result.data if isinstance(r, dict)] \
        if isinstance(result.data, list) else []
    if not rows:
        return []
    changes = "status" in rows[0]
    period = rows[0].get("report_period", "")
    name = f"{title} · {'change to ' if changes else ''}{period}"
    return [DataTable(title=name, source=result.source, index_name="issuer",
                      index=tuple(str(r.get("issuer", "")) for r in rows), dates=(),
                      columns=_columns(rows, CHANGE_FIELDS if changes else HOLDING_FIELDS))]


def release_tables(title: str, result: DataResult) -> list[DataTable]:
    """Per release, its figures as statements: one table of the periods' results and one
    of the balance-sheet dates, each row a period."""
    releases = [r for r in result.data if isinstance(r, dict)] \
        if isinstance(result.data, list) else []
    tables = []
    for release in releases:
        figures = [f for f in release.get("figures") or [] if isinstance(f, dict)]
        for kind, rows in (("results", [f for f in figures if f.get("period")]),
                           ("balance sheet", [f for f in figures if not f.get("period")])):
            if not rows:
                continue
            rows = sorted(rows, key=lambda r: str(r.get("report_period")))
            fields = [k for r in rows for k, v in r.items()
                      if isinstance(v, int | float) and not isinstance(v, bool)]
            tables.append(DataTable(
                title=f"{title} · {release.get('accession_number')} {kind}",
                source=result.source, index_name="period",
                index=tuple(f"{r.get('fiscal_period') or r.get('period_label')} "
                            f"({r.get('report_period')})" for r in rows),
                dates=tuple(str(r.get("report_period")) for r in rows),
                columns=_columns(rows, list(dict.fromkeys(fields)))))
    return tables


def peer_tables(title: str, result: DataResult) -> list[DataTable]:
    """One row per company, the subject included."""
    rows = [r for r in result.data if isinstance(r, dict)] \
        if isinstance(result.data, list) else []
    if not rows:
        return []
    metric_fields = [k for k in rows[0] if k not in ("ticker", "name", "cik", "sic",
                                                      "is_subject", "period", "period_end",
                                                      "source_filing", "rank")]
    index = tuple(str(r.get("ticker") or r.get("name")) for r in rows)
    return [DataTable(title=title, source=result.source, index_name="company", index=index,
                      dates=(), columns=_columns(rows, [*metric_fields, "name", "period",
                                                        "period_end", "cik"]))]


def no_tables(title: str, result: DataResult) -> list[DataTable]:
    """Results that hold no figures (full-text search hits)."""
    return []
