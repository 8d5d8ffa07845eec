"""``dexter data``: the keyless data sources as commands, with no model and no key.

Each command prints a table on a terminal (the lexicon's labels, amounts in $ millions),
or the records as JSON (``--json``) or CSV (``--csv``), or writes a report file
(``--output FILE.xlsx|.html|.md|.pdf``) through the report writers. Filing-based commands
take ``--accession NUMBER`` to read one filing directly (TICKER may then be the filer's
CIK). The machinery is imported when a command runs (``cli/data_run.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

data_app = typer.Typer(
    help="Financial data without a model or a key: SEC EDGAR statements, segments, filings, "
         "earnings releases, insider trades, 13F holdings, full-text search, peers and "
         "screens, and Yahoo Finance prices.",
    no_args_is_help=True, rich_markup_mode=None)

Ticker = Annotated[str, typer.Argument(help="Stock ticker (AAPL), or a CIK with --accession.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the records as JSON.")]
CsvOpt = Annotated[bool, typer.Option("--csv", help="Print the records as CSV.")]
OutputOpt = Annotated[Path | None, typer.Option(
    "--output", "-o", help="Write the tables as a report: .xlsx, .html, .md or .pdf.")]
AccessionOpt = Annotated[str | None, typer.Option(
    "--accession", help="Read this one filing (e.g. 0000320193-24-000123), not the latest.")]
ConfigOpt = Annotated[Path | None, typer.Option("--config", "-c", help="TOML config file.")]
SinceOpt = Annotated[str | None, typer.Option("--since", metavar="YYYY-MM-DD",
                                              help="Filed on or after this date.")]
UntilOpt = Annotated[str | None, typer.Option("--until", metavar="YYYY-MM-DD",
                                              help="Filed on or before this date.")]


def _run(command: str, words: list[str], *, json_out: bool, csv_out: bool,
         output: Path | None, config: Path | None, **params: Any) -> None:
    from dexter.cli.data_run import DataRequest, run_data

    raise typer.Exit(run_data(DataRequest(command, words, params, json_out=json_out,
                                          csv_out=csv_out, output=output, config=config)))


@data_app.command()
def statements(
    ticker: Ticker,
    kind: Annotated[str, typer.Option("--kind", help="income, balance, cash-flow or all.")] = "income",
    period: Annotated[str, typer.Option("--period", help="annual, quarterly or ttm.")] = "annual",
    limit: Annotated[int, typer.Option("--limit", min=1, max=40, help="Periods, newest first.")] = 4,
    accession: AccessionOpt = None, json_out: JsonOpt = False, csv_out: CsvOpt = False,
    output: OutputOpt = None, config: ConfigOpt = None,
) -> None:
    """Income statements, balance sheets or cash flows from SEC XBRL (company facts, or one
    filing as reported with --accession)."""
    _run("statements", ["statements", ticker], ticker=ticker, kind=kind, period=period,
         limit=limit, accession=accession, json_out=json_out, csv_out=csv_out, output=output,
         config=config)


@data_app.command()
def segments(
    ticker: Ticker,
    period: Annotated[str, typer.Option("--period", help="annual or quarterly.")] = "annual",
    axis: Annotated[str | None, typer.Option("--axis", help="segment, geography, product, or an XBRL axis name (default: all three).")] = None,
    member: Annotated[str | None, typer.Option("--member", help="Only this member, e.g. Services.")] = None,
    metric: Annotated[list[str] | None, typer.Option("--metric", help="revenue, operating_income, gross_profit, ... or an XBRL concept. Repeatable.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=20, help="Periods, newest first.")] = 3,
    accession: AccessionOpt = None, json_out: JsonOpt = False, csv_out: CsvOpt = False,
    output: OutputOpt = None, config: ConfigOpt = None,
) -> None:
    """Revenue and operating income by business segment, geography and product, from the
    10-K / 10-Q XBRL."""
    _run("segments", ["segments", ticker], ticker=ticker, period=period, axis=axis,
         member=member, metrics=list(metric or []), limit=limit, accession=accession,
         json_out=json_out, csv_out=csv_out, output=output, config=config)


@data_app.command()
def facts(ticker: Ticker, json_out: JsonOpt = False, csv_out: CsvOpt = False,
          output: OutputOpt = None, config: ConfigOpt = None) -> None:
    """Company profile: name, CIK, SIC industry, fiscal year end, shares outstanding."""
    _run("facts", ["facts", ticker], ticker=ticker, json_out=json_out, csv_out=csv_out,
         output=output, config=config)


@data_app.command()
def filings(
    ticker: Ticker,
    form: Annotated[list[str] | None, typer.Option("--form", help="Only this form (10-K, 8-K, 4, 13F-HR, ...). Repeatable.")] = None,
    item: Annotated[list[str] | None, typer.Option("--item", help="Only 8-Ks with this item (2.02). Repeatable.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=200)] = 20,
    accession: Annotated[str | None, typer.Option("--accession", help="List this filing's documents instead.")] = None,
    json_out: JsonOpt = False, csv_out: CsvOpt = False, output: OutputOpt = None,
    config: ConfigOpt = None,
) -> None:
    """A company's filings, newest first (or the documents of one filing)."""
    _run("filings", ["filings", ticker], ticker=ticker, forms=list(form or []),
         items=list(item or []), limit=limit, accession=accession, json_out=json_out,
         csv_out=csv_out, output=output, config=config)


@data_app.command()
def releases(
    ticker: Ticker,
    limit: Annotated[int, typer.Option("--limit", min=1, max=8, help="How many of the latest releases.")] = 1,
    since: SinceOpt = None, until: UntilOpt = None,
    text: Annotated[bool, typer.Option("--text", help="Also print the release's text.")] = False,
    accession: AccessionOpt = None, json_out: JsonOpt = False, csv_out: CsvOpt = False,
    output: OutputOpt = None, config: ConfigOpt = None,
) -> None:
    """Earnings press releases (8-K Item 2.02, Exhibit 99.1): figures from their tables
    and the outlook."""
    _run("releases", ["releases", ticker], ticker=ticker, limit=limit, since=since,
         until=until, text=text, accession=accession, json_out=json_out, csv_out=csv_out,
         output=output, config=config)


@data_app.command()
def insiders(
    ticker: Ticker,
    limit: Annotated[int, typer.Option("--limit", min=1, max=200, help="How many of the latest Form 4s to read.")] = 10,
    name: Annotated[str | None, typer.Option("--name", help="Only this insider (any spelling: Tim Cook).")] = None,
    since: SinceOpt = None, until: UntilOpt = None,
    holdings: Annotated[bool, typer.Option("--holdings", help="Forms 3 and 5 (holdings) instead of Form 4 trades.")] = False,
    accession: AccessionOpt = None, json_out: JsonOpt = False, csv_out: CsvOpt = False,
    output: OutputOpt = None, config: ConfigOpt = None,
) -> None:
    """Insider transactions from Form 4 (and 4/A): owner, role, code, shares, price."""
    _run("insiders", ["insiders", ticker], ticker=ticker, limit=limit, name=name,
         since=since, until=until, holdings=holdings, accession=accession,
         json_out=json_out, csv_out=csv_out, output=output, config=config)


@data_app.command()
def holdings(
    manager: Annotated[str, typer.Argument(help="The manager: CIK, ticker or name (Berkshire Hathaway).")],
    quarter: Annotated[str | None, typer.Option("--quarter", help="Calendar quarter, e.g. 2024Q4 (default: the latest).")] = None,
    compare: Annotated[str | None, typer.Option("--compare", help="'previous' or a quarter: show each position's change since then.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=0, help="Largest positions shown (0: all).")] = 50,
    accession: AccessionOpt = None, json_out: JsonOpt = False, csv_out: CsvOpt = False,
    output: OutputOpt = None, config: ConfigOpt = None,
) -> None:
    """A manager's 13F-HR holdings for a quarter, values in dollars."""
    _run("holdings", ["holdings", manager], manager=manager, quarter=quarter, compare=compare,
         limit=limit, accession=accession, json_out=json_out, csv_out=csv_out, output=output,
         config=config)


@data_app.command()
def search(
    query: Annotated[str, typer.Argument(help="Words to find; a phrase in double quotes.")],
    form: Annotated[list[str] | None, typer.Option("--form", help="Only this form. Repeatable.")] = None,
    since: SinceOpt = None, until: UntilOpt = None,
    entity: Annotated[str | None, typer.Option("--entity", help="Only this filer (ticker or CIK).")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=500)] = 20,
    json_out: JsonOpt = False, csv_out: CsvOpt = False, output: OutputOpt = None,
    config: ConfigOpt = None,
) -> None:
    """EDGAR full-text search: documents that mention the words, with links."""
    _run("search", ["search", query], query=query, forms=list(form or []), since=since,
         until=until, entity=entity, limit=limit, json_out=json_out, csv_out=csv_out,
         output=output, config=config)


@data_app.command()
def peers(
    ticker: Ticker,
    metric: Annotated[str, typer.Option("--metric", help="revenue, net_income, total_assets, net_margin, ...")] = "revenue",
    period: Annotated[str | None, typer.Option("--period", help="CY2024 or CY2024Q3 (default: the last full year).")] = None,
    sic: Annotated[str | None, typer.Option("--sic", help="Another SIC code than the company's.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=100)] = 10,
    json_out: JsonOpt = False, csv_out: CsvOpt = False, output: OutputOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Companies sharing the company's SIC code, ranked by one reported metric."""
    _run("peers", ["peers", ticker], ticker=ticker, metric=metric, period=period, sic=sic,
         limit=limit, json_out=json_out, csv_out=csv_out, output=output, config=config)


@data_app.command()
def prices(
    ticker: Ticker,
    start: Annotated[str | None, typer.Option("--start", metavar="YYYY-MM-DD", help="First day (default: 30 days ago).")] = None,
    end: Annotated[str | None, typer.Option("--end", metavar="YYYY-MM-DD", help="Last day (default: today).")] = None,
    interval: Annotated[str, typer.Option("--interval", help="day, week or month.")] = "day",
    json_out: JsonOpt = False, csv_out: CsvOpt = False, output: OutputOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Daily, weekly or monthly prices (Yahoo Finance's chart endpoint, unofficial)."""
    _run("prices", ["prices", ticker], ticker=ticker, start=start, end=end,
         interval=interval, json_out=json_out, csv_out=csv_out, output=output, config=config)


@data_app.command()
def screen(
    filters: Annotated[list[str], typer.Argument(help="Conditions like 'revenue>1e11' 'net_margin>=0.2'.")],
    period: Annotated[str | None, typer.Option("--period", help="CY2024 or CY2024Q3 (default: the last full year).")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=200)] = 25,
    json_out: JsonOpt = False, csv_out: CsvOpt = False, output: OutputOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Companies passing every condition in SEC's XBRL frames for one calendar period."""
    _run("screen", ["screen", *filters], filters=list(filters), period=period, limit=limit,
         json_out=json_out, csv_out=csv_out, output=output, config=config)
