"""What ``dexter data`` does: ask one keyless source, then show its records on the
terminal, print them as JSON or CSV, or write a report of their tables.

No model and no key are involved. The SEC sources are those the agent's tools use (same
hosts, User-Agent, limiter and cache), so a figure seen here is the figure the agent gets.
"""

from __future__ import annotations

import asyncio
import csv
import datetime as dt
import io
import json
import re
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dexter.cli import data_view as views
from dexter.data.base import (
    DataError,
    DataResult,
    DateFilter,
    ScreenFilter,
    UpstreamError,
)
from dexter.frontend import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    print_error,
    settings_for,
    stdout_console,
)
from dexter.text import escape_controls, escape_controls_value

if TYPE_CHECKING:
    from dexter.config import Settings
    from dexter.data.base import DataSource
    from dexter.evidence.tables import DataTable

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
OFFLINE_HINT = ("dexter data reads SEC EDGAR (www.sec.gov, data.sec.gov, efts.sec.gov) and "
                "Yahoo Finance over the internet: check the connection, or a proxy setting.")


@dataclass
class DataRequest:
    """One ``dexter data`` command: its name, the words typed (for a report's title), its
    parameters and where the records go."""

    command: str
    words: list[str]
    params: dict[str, Any]
    json_out: bool = False
    csv_out: bool = False
    output: Path | None = None
    config: Path | None = None


@dataclass
class Fetched:
    """A source's answer and how to present it."""

    result: DataResult
    title: str
    tables: list[DataTable] = field(default_factory=list)
    show: Callable[[Any, Fetched], None] | None = None
    show_text: bool = False


class UsageError(Exception):
    """A parameter the user must fix (exit code 2)."""


def run_data(request: DataRequest) -> int:
    """Run one ``dexter data`` command; the exit code (0 done, 1 data error, 2 usage)."""
    try:
        settings = settings_for(request.config)
    except CliError as exc:
        print_error(str(exc))
        return EXIT_USAGE
    if request.json_out and request.csv_out:
        print_error("Give --json or --csv, not both.")
        return EXIT_USAGE
    if request.output is not None:
        from dexter.reports.export import output_problem

        problem = output_problem(request.output, Path.cwd(), settings.home_path)
        if problem:
            print_error(problem)
            return EXIT_USAGE
    try:
        fetched = asyncio.run(_fetch(request, settings))
    except UsageError as exc:
        print_error(str(exc))
        return EXIT_USAGE
    except DataError as exc:
        message = str(exc)
        if isinstance(exc, UpstreamError) and exc.status is None and "reach" in message:
            message = f"{message} {OFFLINE_HINT}"
        print_error(message)
        return EXIT_FAILED
    except ValueError as exc:  # a setting a source refuses (an empty User-Agent)
        print_error(str(exc))
        return EXIT_USAGE
    return _emit(request, fetched, settings.home_path)


# --------------------------------------------------------------------------------------------
# Asking the sources
# --------------------------------------------------------------------------------------------


def _date(value: str | None, flag: str) -> str | None:
    if value is None:
        return None
    if not _DATE.fullmatch(value.strip()):
        raise UsageError(f"{flag} {value}: write the date as YYYY-MM-DD (e.g. 2024-08-01).")
    return value.strip()


def _choice(value: str, allowed: tuple[str, ...], flag: str) -> str:
    cleaned = value.strip().lower().replace("-", "_")
    if cleaned not in allowed:
        raise UsageError(f"{flag} {value}: use one of {', '.join(a.replace('_', '-') for a in allowed)}.")
    return cleaned


async def _fetch(request: DataRequest, settings: Settings) -> Fetched:
    from dexter.data.cache import DiskCache
    from dexter.tools.finance.sources import SourceOptions, sec_sources

    cache = DiskCache(settings.home_path / "cache")
    sources: list[DataSource] = list(sec_sources(settings, cache, SourceOptions()))
    if request.command == "prices":
        sources.append(_yahoo(settings, cache))
    by_name = {s.name: s for s in sources}
    try:
        return await COMMANDS[request.command](request.params, by_name)
    finally:
        for source in sources:
            await source.aclose()


def _yahoo(settings: Settings, cache: Any) -> DataSource:
    from dexter.data.http_source import SourceConnection
    from dexter.data.yahoo import YahooChartSource

    if not settings.tools.keyless_prices:
        raise UsageError("Keyless prices are off (tools.keyless_prices = false in the config, "
                         "or DEXTER_KEYLESS_PRICES=false); turn them on to use dexter data "
                         "prices.")
    return YahooChartSource(SourceConnection(settings.tools.yahoo_chart_base_url, cache),
                            user_agent=settings.tools.yahoo_user_agent)


Sources = dict[str, Any]
Command = Callable[[dict[str, Any], Sources], Awaitable[Fetched]]


async def _statements(p: dict[str, Any], s: Sources) -> Fetched:
    from dexter.tools.finance.datatables import default_tables

    kind = _choice(p["kind"], ("income", "balance", "cash_flow", "all"), "--kind")
    period = _choice(p["period"], ("annual", "quarterly", "ttm"), "--period")
    result = await s["sec_edgar"].statements(kind, p["ticker"], period=period,
                                             limit=p["limit"], accession=p["accession"])
    names = {"income": "income statements", "balance": "balance sheets",
             "cash_flow": "cash flow statements", "all": "financial statements"}
    title = (f"{p['ticker'].upper()} {names[kind]}, "
             f"{'as filed in ' + p['accession'] if p['accession'] else period}")
    return Fetched(result, title, default_tables(title, result), views.show_statements)


async def _segments(p: dict[str, Any], s: Sources) -> Fetched:
    from dexter.tools.finance.datatables import segment_tables

    period = _choice(p["period"], ("annual", "quarterly"), "--period")
    result = await s["sec_edgar_segments"].segments(
        p["ticker"], period=period, limit=p["limit"], axis=p["axis"], member=p["member"],
        metrics=tuple(p["metrics"]), accession=p["accession"])
    title = f"{p['ticker'].upper()} segments, {period}"
    return Fetched(result, title, segment_tables(title, result), views.show_segments)


async def _facts(p: dict[str, Any], s: Sources) -> Fetched:
    from dexter.tools.finance.datatables import default_tables

    result = await s["sec_edgar"].company_facts(p["ticker"])
    title = f"{p['ticker'].upper()} company facts"
    return Fetched(result, title, default_tables(title, result), views.show_facts)


async def _filings(p: dict[str, Any], s: Sources) -> Fetched:
    edgar = s["sec_edgar"]
    if p["accession"]:
        from dexter.data.sec import normalize_accession

        company = await edgar.resolve_filer(p["ticker"])
        accession = normalize_accession(p["accession"])
        docs = await edgar.documents(company, accession)
        rows = [{"document": d.name, "document_type": d.type or None,
                 "description": d.description or None, "url": docs.url(d.name)}
                for d in docs.documents]
        result = DataResult(rows, "SEC EDGAR (filing index)", docs.urls,
                            tuple(f"{k.replace('_', ' ')}: {v}" for k, v in docs.header.items()
                                  if k in ("filing_date", "form", "period_of_report", "items")))
        return Fetched(result, f"Documents of filing {accession}", [], views.show_documents)
    forms = tuple(f.strip().upper() for f in p["forms"] if f.strip())
    items = tuple(p["items"])
    result = await edgar.filings(p["ticker"], filing_types=forms or (("8-K", "8-K/A") if items
                                                                     else ()),
                                 limit=p["limit"], items=items)
    title = f"{p['ticker'].upper()} filings" + (f" ({', '.join(forms)})" if forms else "")
    return Fetched(result, title, [], views.show_filings)


async def _releases(p: dict[str, Any], s: Sources) -> Fetched:
    from dexter.tools.finance.datatables import release_tables

    filters = DateFilter(gte=_date(p["since"], "--since"), lte=_date(p["until"], "--until"))
    result = await s["sec_edgar_releases"].earnings_releases(
        p["ticker"], limit=p["limit"], accession=p["accession"], filters=filters)
    title = f"{p['ticker'].upper()} earnings releases"
    return Fetched(result, title, release_tables(title, result), views.show_releases,
                   show_text=bool(p["text"]))


async def _insiders(p: dict[str, Any], s: Sources) -> Fetched:
    from dexter.tools.finance.datatables import insider_tables

    filters = DateFilter(gte=_date(p["since"], "--since"), lte=_date(p["until"], "--until"))
    source = s["sec_edgar_insiders"]
    if p["holdings"]:
        result = await source.insider_ownership(p["ticker"], limit=p["limit"], name=p["name"],
                                                filters=filters)
    else:
        result = await source.insider_trades(p["ticker"], limit=p["limit"], name=p["name"],
                                             filters=filters, accession=p["accession"])
    title = f"{p['ticker'].upper()} insider {'holdings' if p['holdings'] else 'transactions'}"
    return Fetched(result, title, insider_tables(title, result), views.show_insiders)


async def _holdings(p: dict[str, Any], s: Sources) -> Fetched:
    from dexter.tools.finance.datatables import holdings_tables

    manager = p["manager"].strip()
    digits = manager.upper().removeprefix("CIK").strip()
    result = await s["sec_edgar_13f"].institutional_holdings(
        filer_cik=digits if digits.isdigit() else None,
        filer_name=None if digits.isdigit() else manager, limit=p["limit"],
        quarter=p["quarter"], compare_to=p["compare"], accession=p["accession"])
    first = result.data[0] if result.data else {}
    title = f"13F holdings of {first.get('manager') or manager}"
    return Fetched(result, title, holdings_tables(title, result), views.show_holdings)


async def _search(p: dict[str, Any], s: Sources) -> Fetched:
    result = await s["sec_edgar_fts"].search_filings(
        p["query"], forms=tuple(p["forms"]), start_date=_date(p["since"], "--since"),
        end_date=_date(p["until"], "--until"), entity=p["entity"], limit=p["limit"])
    return Fetched(result, f"Full-text search: {p['query']}", [], views.show_search)


async def _peers(p: dict[str, Any], s: Sources) -> Fetched:
    from dexter.tools.finance.datatables import peer_tables

    result = await s["sec_edgar_peers"].peers(p["ticker"], metric=p["metric"],
                                              period=p["period"], limit=p["limit"], sic=p["sic"])
    title = f"Peers of {p['ticker'].upper()} by {p['metric']}"
    return Fetched(result, title, peer_tables(title, result), views.show_peers)


async def _prices(p: dict[str, Any], s: Sources) -> Fetched:
    from dexter.tools.finance.datatables import default_tables

    today = dt.date.today()
    end = _date(p["end"], "--end") or today.isoformat()
    start = _date(p["start"], "--start") or (today - dt.timedelta(days=30)).isoformat()
    interval = _choice(p["interval"], ("day", "week", "month"), "--interval")
    result = await s["yahoo_chart"].prices(p["ticker"], interval=interval, start_date=start,
                                           end_date=end)
    title = f"{p['ticker'].upper()} {interval} prices {start} to {end}"
    return Fetched(result, title, default_tables(title, result), views.show_prices)


_FILTER = re.compile(r"^\s*([a-z_]+)\s*(>=|<=|>|<|==|=)\s*(-?[\d.]+(?:e\d+)?)\s*$", re.I)
_OPERATORS = {">": "gt", ">=": "gte", "<": "lt", "<=": "lte", "=": "eq", "==": "eq"}


async def _screen(p: dict[str, Any], s: Sources) -> Fetched:
    from dexter.tools.finance.datatables import default_tables

    filters = []
    for text in p["filters"]:
        match = _FILTER.match(text)
        if not match:
            raise UsageError(f"'{text}' is not a condition; write it like revenue>1e11 or "
                             f"net_margin>=0.2 (margins as fractions).")
        filters.append(ScreenFilter(match.group(1).lower(), _OPERATORS[match.group(2)],  # type: ignore[arg-type]
                                    float(match.group(3))))
    result = await s["sec_edgar"].screen(tuple(filters), limit=p["limit"], period=p["period"])
    title = "Screen: " + " and ".join(p["filters"])
    return Fetched(result, title, default_tables(title, result), views.show_screen)


COMMANDS: dict[str, Command] = {
    "statements": _statements, "segments": _segments, "facts": _facts, "filings": _filings,
    "releases": _releases, "insiders": _insiders, "holdings": _holdings, "search": _search,
    "peers": _peers, "prices": _prices, "screen": _screen,
}


# --------------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------------


def _emit(request: DataRequest, fetched: Fetched, home: Path) -> int:
    if request.output is not None:
        return _write_report(request, fetched, home)
    if request.json_out:
        sys.stdout.write(json.dumps(escape_controls_value(fetched.result.data), indent=2,
                                    ensure_ascii=False, default=str) + "\n")
        return EXIT_OK
    if request.csv_out:
        sys.stdout.write(to_csv(csv_rows(request.command, fetched.result)))
        return EXIT_OK
    console = stdout_console()
    if fetched.show is not None:
        fetched.show(console, fetched)
    _footer(console, fetched.result)
    return EXIT_OK


def _flat(record: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flat(value, name + "."))
        elif isinstance(value, list):
            out[name] = "; ".join(json.dumps(v, ensure_ascii=False, default=str)
                                  if isinstance(v, dict | list) else str(v) for v in value)
        else:
            out[name] = value
    return out


def csv_rows(command: str, result: DataResult) -> list[dict[str, Any]]:
    """The records of a result as flat rows (nested fields as ``source_filing.url``)."""
    data = result.data
    if command == "releases":
        rows = []
        for release in data if isinstance(data, list) else []:
            for figure in release.get("figures") or []:
                rows.append({"ticker": release.get("ticker"),
                             "accession_number": release.get("accession_number"),
                             "filing_date": release.get("filing_date"),
                             "title": release.get("title"), **figure,
                             "url": (release.get("source_filing") or {}).get("url")})
        return rows
    if command == "prices" and isinstance(data, dict):
        return [{"ticker": data.get("ticker"), "currency": data.get("currency"), **row}
                for row in data.get("prices") or []]
    if isinstance(data, dict) and all(isinstance(v, list) for v in data.values()):
        return [_flat({"statement": key, **row}) for key, rows in data.items() for row in rows]
    if isinstance(data, dict):
        return [_flat(data)]
    return [_flat(r) for r in data if isinstance(r, dict)] if isinstance(data, list) else []


def to_csv(rows: list[dict[str, Any]]) -> str:
    """CSV text: every key as a column (first seen first); text cells with control
    characters escaped and a leading ``= + - @`` quoted, so no spreadsheet runs it."""
    columns: list[str] = []
    for row in rows:
        columns.extend(k for k in row if k not in columns)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _csv_cell(v) for k, v in row.items()})
    return out.getvalue()


def _csv_cell(value: Any) -> Any:
    if isinstance(value, str):
        text = escape_controls(value)
        return "'" + text if text[:1] in ("=", "+", "-", "@") else text
    return value


def _write_report(request: DataRequest, fetched: Fetched, home: Path) -> int:
    from dexter.reports import Report, ReportSource
    from dexter.reports.export import OutputRefused, open_output, report_time, save_report

    assert request.output is not None
    result = fetched.result
    links = filing_links(result)
    url = links[0][1] if links else (result.urls[0] if result.urls else "")
    sources = (ReportSource("S1", f"{result.source}: {fetched.title}", url, "dexter data",
                            True),)
    lines = [f"{fetched.title}, read from {result.source} by `dexter data` (no model)."]
    if links:
        lines.append("")
        lines.extend(f"- {what}: <{link}>" for what, link in links[:20])
    if not fetched.tables:
        lines.append("")
        lines.append("This result holds no figures to tabulate; use --json or --csv for its "
                     "records.")
    report = Report(question=" ".join(["dexter data", *request.words]), when=report_time(),
                    model="", answer="\n".join(lines), sources=sources, verification="",
                    notes=tuple(result.notes),
                    tables=tuple(t.with_source_id("S1") for t in fetched.tables))
    try:  # checked at the start (output_problem); opened here, no command runs between
        target = open_output(request.output, Path.cwd(), home)
    except OutputRefused as exc:
        print_error(str(exc))
        return EXIT_USAGE
    problem = save_report(report, target, home=home)
    if problem is not None:
        print_error(problem)
        return EXIT_FAILED
    stdout_console().print(f"Wrote {request.output} ({len(fetched.tables)} "
                           f"table{'s' if len(fetched.tables) != 1 else ''}).", markup=False)
    return EXIT_OK


def filing_links(result: DataResult) -> list[tuple[str, str]]:
    """Each filing the records name, once: ``(10-K 0000320193-24-000123 filed 2024-11-01,
    url)``."""
    seen: dict[str, tuple[str, str]] = {}

    def visit(value: Any) -> None:
        if isinstance(value, dict):
            filing = value.get("source_filing")
            if isinstance(filing, dict) and filing.get("url"):
                key = str(filing.get("accession_number") or filing["url"])
                what = " ".join(str(x) for x in (filing.get("form"), filing.get(
                    "accession_number"), f"filed {filing['filed']}" if filing.get("filed")
                    else "") if x)
                seen.setdefault(key, (what or "filing", str(filing["url"])))
            for item in value.values():
                if isinstance(item, list | dict):
                    visit(item)
        elif isinstance(value, list):
            for item in value:
                visit(item)

    visit(result.data)
    return list(seen.values())


def _footer(console: Any, result: DataResult) -> None:
    from rich.text import Text

    links = filing_links(result)
    lines = [f"Source: {result.source}"]
    if links:
        lines.extend(f"  {what}:\n    {url}" for what, url in links[:12])
        if len(links) > 12:
            lines.append(f"  ... and {len(links) - 12} more filings (--json lists them all)")
    elif result.urls:
        lines.append(f"  {result.urls[0]}")
    lines.extend(f"Note: {note}" for note in result.reader_notes or result.notes)
    console.print(Text(escape_controls("\n".join(lines)), style="dim"))
