"""How ``dexter data`` shows records on a terminal: rich tables with the lexicon's labels
and the report writers' number formats (:mod:`dexter.reports.presentation`): a statement's
amounts and share counts in millions, per-share values and prices to two decimals, ratios
as percentages and negatives in parentheses, each table captioned with the units it holds.

:func:`format_cell` is the one place a value becomes text here. Every text from outside (a
filer's name, a release's words) is shown with its control characters escaped, never
interpreted.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from dexter import metrics
from dexter.reports import presentation as fmt
from dexter.text import escape_controls

if TYPE_CHECKING:
    from rich.table import Table

    from dexter.data.base import DataResult


class Shown(Protocol):
    """What a command's view shows: the source's result, a title, whether to print text."""

    result: DataResult
    title: str
    show_text: bool


def kind_of(field: str) -> str:
    """The lexicon's kind of a field (``amount``, ``per_share``, ``shares``, ``ratio``,
    ``price``, ``count``), or ``text`` for a field it does not know."""
    if field == "n":
        return "count"  # a row number
    known = metrics.metric(field)
    return known.kind if known is not None else "text"


def format_cell(value: Any, field: str, *, scaled: bool = True) -> str:
    """One value for a reader, as the reports print it: amounts in $ millions (with the
    decimals a small one needs), share counts in millions when ``scaled`` (a statement)
    and whole otherwise (a trade's shares), per-share values and prices to two decimals,
    ratios as percentages, negatives in parentheses, '—' when missing."""
    if value is None or value == "":
        return fmt.MISSING
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
    if kind == "amount":
        return fmt.amount(number, fmt.MILLION, decimals=None)
    if kind == "shares":
        return fmt.amount(number, fmt.MILLION, decimals=None) if scaled else \
            fmt.number(float(round(number)))
    if kind == "ratio":
        return fmt.ratio(number)
    if kind in ("per_share", "price"):
        return fmt.per_share(number)
    return fmt.number(float(round(number)) if kind == "count" else number)


def units_caption(fields: Iterable[str], *, scaled: bool = True) -> str:
    """The caption naming the units of the numeric fields a table shows: ``USD millions,
    except per-share values; shares in millions``; empty when none needs one."""
    kinds = {kind_of(f) for f in fields}
    parts: list[str] = []
    if "amount" in kinds:
        text = "USD millions"
        exceptions = [name for kind, name in (("per_share", "per-share values"),
                                              ("price", "prices")) if kind in kinds]
        if exceptions:
            text += f", except {' and '.join(exceptions)} (USD)"
        parts.append(text)
    elif kinds & {"per_share", "price"}:
        parts.append("USD")
    if "shares" in kinds and scaled:
        parts.append("shares in millions")
    return "; ".join(parts) + "." if parts else ""


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
    cells = [[format_cell(r.get(f), f, scaled=False) for f in present] for r in records]
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


# --------------------------------------------------------------------------------------------
# One view per command
# --------------------------------------------------------------------------------------------

_META = frozenset({"ticker", "report_period", "fiscal_period", "period", "currency",
                   "period_start", "source_filing", "field_sources", "derived", "restated",
                   "split_adjusted", "accession_number", "period_label"})


def _numeric_fields(records: list[dict[str, Any]]) -> list[str]:
    out: list[str] = []
    for record in records:
        out.extend(k for k, v in record.items() if k not in _META and k not in out
                   and isinstance(v, int | float) and not isinstance(v, bool))
    return out


def show_statements(console: Any, fetched: Shown) -> None:

    data = fetched.result.data
    groups = data if isinstance(data, dict) else {fetched.title: data}
    for name, records in groups.items():
        records = [r for r in records if isinstance(r, dict)]
        if not records:
            console.print(f"No {name.replace('_', ' ')} in the data.", markup=False)
            continue
        title = fetched.title if not isinstance(data, dict) else \
            f"{fetched.title}: {name.replace('_', ' ')}"
        fields = _numeric_fields(records)
        console.print(periods_view(title, records, fields, caption=units_caption(fields)))


def show_segments(console: Any, fetched: Shown) -> None:

    records = [r for r in fetched.result.data if isinstance(r, dict)]
    for axis in dict.fromkeys(str(r.get("axis")) for r in records):
        rows = [r for r in records if r.get("axis") == axis]
        columns = list(dict.fromkeys(str(r.get("fiscal_period")) for r in rows))
        fields = [f for f in ("revenue", "share_of_total", "operating_income", "gross_profit",
                              "cost_of_revenue", "net_income", "long_lived_assets")
                  if any(isinstance(r.get(f), int | float) for r in rows)]
        fields += [f for f in dict.fromkeys(k for r in rows for k in r.get("concepts", {}))
                   if f not in fields]
        for name in fields:
            names = list(dict.fromkeys(str(r.get("segment")) for r in rows
                                       if r.get(name) is not None))
            cells = {(str(r.get("segment")), str(r.get("fiscal_period"))): r.get(name)
                     for r in rows}
            ticker = rows[0].get("ticker", "")
            console.print(pivot_view(f"{ticker} {label(name).lower()} by "
                                     f"{axis.lower()}", names, columns, cells, name,
                                     caption=units_caption([name])))


def show_facts(console: Any, fetched: Shown) -> None:

    data = fetched.result.data
    if isinstance(data, dict):
        console.print(pairs_view(fetched.title, data))


def show_filings(console: Any, fetched: Shown) -> None:

    console.print(records_view(fetched.title, list(fetched.result.data), (
        "filing_date", "filing_type", "report_date", "items", "accession_number",
        "description", "primary_document"), headers={
        "filing_date": "Filed", "filing_type": "Form", "report_date": "Period",
        "items": "Items", "accession_number": "Accession", "description": "Description",
        "primary_document": "Document"}))


def _numbered_links(console: Any, rows: list[dict[str, Any]]) -> None:
    from rich.text import Text

    lines = [f"[{n}] {r['url']}" for n, r in enumerate(rows, 1) if r.get("url")]
    if lines:
        console.print(Text(escape_controls("\n".join(lines))))


def show_documents(console: Any, fetched: Shown) -> None:

    rows = [{"n": n, **r} for n, r in enumerate(fetched.result.data, 1)]
    console.print(records_view(fetched.title, rows, ("n", "document", "document_type",
                                                     "description"),
                               headers={"n": "#", "document_type": "Type"}))
    _numbered_links(console, rows)


def show_releases(console: Any, fetched: Shown) -> None:
    from rich.text import Text


    show_text = fetched.show_text
    for release in fetched.result.data:
        filing = release.get("source_filing") or {}
        console.print(Text(escape_controls(
            f"{release.get('title') or 'Earnings release'}\n8-K {release.get('accession_number')}"
            f" filed {release.get('filing_date')} · {release.get('exhibit')} · "
            f"{filing.get('url', '')}"), style="bold"))
        figures = [f for f in release.get("figures") or [] if f.get("period")]
        fields = _numeric_fields(figures)
        if figures:
            console.print(periods_view("Figures from the release's tables", [
                {**f, "fiscal_period": f.get("fiscal_period") or f.get("period_label")}
                for f in figures], fields, caption=units_caption(fields)))
        outlook = release.get("outlook") or []
        if outlook:
            console.print(Text("Outlook and guidance", style="bold"))
        for paragraph in outlook:
            console.print(Text(escape_controls(str(paragraph))))
            console.print()
        if show_text and release.get("text"):
            console.print(Text(escape_controls(str(release["text"]))))


def show_insiders(console: Any, fetched: Shown) -> None:
    from dexter.data.insiders import CODE_WORDS

    rows = []
    for record in fetched.result.data:
        code = str(record.get("transaction_code") or "")
        rows.append({**record,
                     "code": f"{code} {CODE_WORDS.get(code, '')}".strip() or "holding",
                     "acquired_disposed": {"acquired": "A", "disposed": "D"}.get(str(record.get("acquired_disposed"))),
                     "direct_or_indirect": {"direct": "D", "indirect": "I"}.get(str(record.get("direct_or_indirect"))),
                     "is_derivative": "yes" if record.get("is_derivative") else None})
    console.print(records_view(fetched.title, rows, (
        "transaction_date", "owner", "role", "security", "code", "acquired_disposed",
        "transaction_shares", "transaction_price_per_share", "transaction_value",
        "shares_owned_after", "direct_or_indirect", "is_derivative"), headers={
        "transaction_date": "Date", "code": "Code", "acquired_disposed": "A/D",
        "transaction_shares": "Shares", "transaction_price_per_share": "Price",
        "transaction_value": "Value ($m)", "shares_owned_after": "Owned after",
        "direct_or_indirect": "D/I", "is_derivative": "Deriv."},
        caption="Code: the SEC's transaction code (S sale, P purchase, A grant, M option "
                "exercise, F tax withholding, G gift). A/D acquired or disposed; D/I direct or "
                "indirect ownership."))


def show_holdings(console: Any, fetched: Shown) -> None:

    rows = list(fetched.result.data)
    if rows and "status" in rows[0]:
        fields: tuple[str, ...] = ("issuer", "title_of_class", "cusip", "put_call", "status",
                                   "shares_before", "shares_after", "shares_change",
                                   "shares_change_pct", "value_before", "value_after",
                                   "value_change")
        title = (f"{fetched.title}: change from {rows[0].get('previous_period')} to "
                 f"{rows[0].get('report_period')}")
    else:
        fields = ("issuer", "title_of_class", "cusip", "value", "shares", "share_type",
                  "put_call", "investment_discretion")
        title = f"{fetched.title}, quarter ending {rows[0].get('report_period') if rows else ''}"
    console.print(records_view(title, rows, fields, caption=(
        "Values in USD millions. Type: SH shares, PRN principal amount. Discretion: SOLE, "
        "DFND (shared-defined), OTR (other). Voting authority: --json or --csv."),
        headers={"title_of_class": "Class", "cusip": "CUSIP", "value": "Value ($m)",
                 "shares": "Shares", "share_type": "Type", "put_call": "Put/call",
                 "investment_discretion": "Discretion", "value_before": "Before ($m)",
                 "value_after": "After ($m)", "value_change": "Change ($m)",
                 "shares_before": "Shares before", "shares_after": "Shares after",
                 "shares_change": "Change", "shares_change_pct": "Change %"}))


def show_search(console: Any, fetched: Shown) -> None:

    rows = [{"n": n, **r} for n, r in enumerate(fetched.result.data, 1)]
    console.print(records_view(fetched.title, rows, (
        "n", "filing_date", "form", "filer", "ticker", "document_type", "description"),
        headers={"n": "#", "filing_date": "Filed", "document_type": "Document"}))
    _numbered_links(console, rows)


def show_peers(console: Any, fetched: Shown) -> None:

    rows = list(fetched.result.data)
    metric = next((k for k in (rows[0] if rows else {}) if k not in (
        "ticker", "name", "cik", "sic", "is_subject", "period", "period_end", "source_filing",
        "rank")), "")
    console.print(records_view(fetched.title, rows, ("rank", "ticker", "name", metric,
                                                     "period_end", "is_subject", "cik"),
                               caption=units_caption([metric], scaled=False),
                               headers={"is_subject": "Subject",
                                                                "cik": "CIK"}))


def show_prices(console: Any, fetched: Shown) -> None:

    data = fetched.result.data
    rows = data.get("prices") if isinstance(data, dict) else []
    console.print(records_view(fetched.title, list(rows or []), (
        "date", "open", "high", "low", "close", "adj_close", "volume")))


def show_screen(console: Any, fetched: Shown) -> None:

    rows = list(fetched.result.data)
    fields = ["ticker", "name", *[k for k in (rows[0] if rows else {}) if k not in (
        "ticker", "name", "cik", "period")], "cik"]
    console.print(records_view(fetched.title, rows, fields,
                               caption=units_caption(fields, scaled=False),
                               headers={"cik": "CIK"}))
