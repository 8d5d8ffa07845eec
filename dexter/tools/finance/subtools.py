"""The sub-tools the routing model may call, each bound to a data-source capability.

A sub-tool has a pydantic parameter model (its JSON schema is what the router sees), the
capability it needs, the coroutine that asks one source, and the fields that name its
result in the merged output (``income_statements[AAPL, quarterly]``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, model_validator

from dexter.data.base import (
    Capability,
    DataError,
    DataResult,
    DataSource,
    DateFilter,
    NotFoundError,
)
from dexter.providers.base import ToolSpec
from dexter.tools.finance.datatables import (
    TableBuilder,
    default_tables,
    holdings_tables,
    insider_tables,
    no_tables,
    peer_tables,
    release_tables,
    segment_tables,
)
from dexter.tools.finance.formatting import (
    render_filing_items,
    render_holdings,
    render_insiders,
    render_peers,
    render_releases,
    render_result,
    render_search,
    render_segments,
)

IsoDate = Annotated[str, Field(pattern=r"^\d{4}-\d{2}-\d{2}$", description="YYYY-MM-DD")]
Ticker = Annotated[str, Field(min_length=1, max_length=20,
                              description="Stock ticker, e.g. AAPL (not the company name)")]


# --------------------------------------------------------------------------------------------
# Parameter models
# --------------------------------------------------------------------------------------------


class ReportPeriodBounds(BaseModel):
    """Optional bounds on the period end date."""

    report_period_gt: IsoDate | None = None
    report_period_gte: IsoDate | None = None
    report_period_lt: IsoDate | None = None
    report_period_lte: IsoDate | None = None

    def filters(self) -> DateFilter:
        """The bounds as a ``DateFilter``."""
        return DateFilter(gt=self.report_period_gt, gte=self.report_period_gte,
                          lt=self.report_period_lt, lte=self.report_period_lte)


class ExactReportPeriod(ReportPeriodBounds):
    """Bounds on the period end date, or one exact period end."""

    report_period: IsoDate | None = Field(None, description="Exactly this period end")

    def filters(self) -> DateFilter:
        """The bounds and the exact date as a ``DateFilter``."""
        return DateFilter(eq=self.report_period, gt=self.report_period_gt,
                          gte=self.report_period_gte, lt=self.report_period_lt,
                          lte=self.report_period_lte)


class FilingDateBounds(BaseModel):
    """Optional bounds on the filing date, or one exact filing date."""

    filing_date: IsoDate | None = Field(None, description="Exactly this filing date")
    filing_date_gt: IsoDate | None = None
    filing_date_gte: IsoDate | None = None
    filing_date_lt: IsoDate | None = None
    filing_date_lte: IsoDate | None = None

    def filters(self) -> DateFilter:
        """The bounds as a ``DateFilter``."""
        return DateFilter(eq=self.filing_date, gt=self.filing_date_gt,
                          gte=self.filing_date_gte, lt=self.filing_date_lt,
                          lte=self.filing_date_lte)


class StatementArgs(ReportPeriodBounds):
    ticker: Ticker
    period: Literal["annual", "quarterly", "ttm"] = "annual"
    limit: int = Field(4, ge=1, le=40, description="Number of periods, newest first")


class RatioArgs(ExactReportPeriod):
    ticker: Ticker
    period: Literal["annual", "quarterly", "ttm"] = "ttm"
    limit: int = Field(4, ge=1, le=40)


Accession = Annotated[str, Field(pattern=r"^\d{10}-?\d{2}-?\d{6}$",
                                 description="SEC accession number, e.g. 0000320193-24-000123")]


class SegmentArgs(BaseModel):
    ticker: Ticker
    period: Literal["annual", "quarterly"] = "annual"
    limit: int = Field(4, ge=1, le=20, description="Number of fiscal periods, newest first")
    axis: str | None = Field(None, description="segment (business segments), geography, "
                             "product (products and services), or another XBRL axis name; "
                             "omit for all three")
    member: str | None = Field(None, description="Only this member, e.g. Services, Greater "
                               "China, iPhone")
    metrics: list[str] = Field(default_factory=list, description="revenue, operating_income, "
                               "gross_profit, cost_of_revenue, net_income, long_lived_assets "
                               "or an XBRL concept; omit for revenue, operating income and "
                               "gross profit")
    accession_number: Accession | None = Field(None, description="Read this 10-K/10-Q only")


class EarningsArgs(BaseModel):
    ticker: Ticker | None = Field(None, description="Omit for the market-wide feed")
    limit: int | None = Field(None, ge=1, le=100)


class TickerArgs(BaseModel):
    ticker: Ticker


class NoArgs(BaseModel):
    pass


class PriceArgs(BaseModel):
    ticker: Ticker
    interval: Literal["day", "week", "month", "year"] = "day"
    start_date: IsoDate
    end_date: IsoDate


class CryptoPriceArgs(BaseModel):
    ticker: str = Field(min_length=3, description="Pair such as BTC-USD")
    interval: Literal["minute", "day", "week", "month", "year"] = "day"
    interval_multiplier: int = Field(1, ge=1, le=60)
    start_date: IsoDate
    end_date: IsoDate


class NewsArgs(BaseModel):
    ticker: Ticker | None = Field(None, description="Omit for broad market news")
    limit: int = Field(5, ge=1, le=10)


class InsiderTradeArgs(FilingDateBounds):
    ticker: Ticker
    limit: int = Field(10, ge=1, le=1000)
    name: str | None = Field(None, description="Insider's name as the user wrote it; "
                                               "SEC spellings are matched automatically")
    accession_number: Accession | None = Field(None, description="Read this Form 4 only")


class InsiderOwnershipArgs(FilingDateBounds):
    ticker: Ticker
    limit: int = Field(10, ge=1, le=1000)
    name: str | None = None
    form_type: Literal["3", "3/A", "5", "5/A"] | None = None


class HolderArgs(BaseModel):
    ticker: Ticker | None = Field(None, description="Company held")
    filer_name: str | None = Field(None, description="Institution, e.g. Berkshire Hathaway")
    filer_cik: str | None = None
    limit: int = Field(10, ge=1, le=1000)

    @model_validator(mode="after")
    def _exactly_one(self) -> HolderArgs:
        given = [v for v in (self.ticker, self.filer_name, self.filer_cik) if v]
        if len(given) != 1:
            raise ValueError("give exactly one of ticker, filer_name or filer_cik")
        return self


class InstitutionalArgs(HolderArgs, ExactReportPeriod):
    quarter: str | None = Field(None, description="Calendar quarter of the 13F, e.g. 2024Q4 "
                                "(SEC EDGAR; omit for the latest)")
    compare_to: str | None = Field(None, description="'previous' or a quarter such as 2024Q3: "
                                   "return each position's change since then (SEC EDGAR)")
    accession_number: Accession | None = Field(None, description="Read this 13F filing only")


class BeneficialArgs(HolderArgs, FilingDateBounds):
    type: Literal["activist", "passive"] | None = None
    history: bool = False


class FilingListArgs(BaseModel):
    ticker: Ticker
    filing_types: list[str] = Field(default_factory=list, description="Forms, e.g. 10-K, "
                                    "10-Q, 8-K, 4, 13F-HR, DEF 14A; omit for all")
    items: list[str] = Field(default_factory=list, description="8-K items, e.g. 2.02")
    limit: int = Field(10, ge=1, le=50)


class EarningsReleaseArgs(FilingDateBounds):
    ticker: Ticker
    limit: int = Field(1, ge=1, le=4, description="How many of the latest releases")
    accession_number: Accession | None = Field(None, description="Read this 8-K only")


class FullTextArgs(BaseModel):
    query: str = Field(min_length=1, description="Words to find; a phrase in double quotes")
    forms: list[str] = Field(default_factory=list, description="e.g. 10-K, 8-K")
    start_date: IsoDate | None = Field(None, description="Filed on or after")
    end_date: IsoDate | None = Field(None, description="Filed on or before")
    entity: str | None = Field(None, description="Only this filer: ticker or CIK")
    limit: int = Field(20, ge=1, le=100)


class PeerArgs(BaseModel):
    ticker: Ticker
    metric: str = Field("revenue", description="revenue, net_income, operating_income, "
                        "gross_profit, total_assets, ... or net_margin, operating_margin, "
                        "gross_margin")
    period: str | None = Field(None, pattern=r"^CY\d{4}(Q[1-4])?$",
                               description="CY2024 or CY2024Q3; omit for the last full year")
    limit: int = Field(10, ge=1, le=50, description="Peers besides the company")


class AnnualReportArgs(BaseModel):
    ticker: Ticker
    items: list[str] = Field(min_length=1, description="e.g. Item-1A (risk factors), Item-1 "
                             "(business), Item-7 (MD&A), Item-7A, Item-8 (financial statements)")
    accession_number: str | None = Field(None, description="Omit for the latest 10-K")
    fiscal_year: int | None = Field(None, ge=1993, le=2100,
                                    description="Pick the 10-K whose period ends in this year")


class QuarterlyReportArgs(BaseModel):
    ticker: Ticker
    items: list[str] = Field(min_length=1, description="e.g. Part-1,Item-2 (MD&A), "
                             "Part-1,Item-1 (financial statements), Part-2,Item-1A (risks)")
    accession_number: str | None = Field(None, description="Omit for the latest 10-Q")
    period_end: str | None = Field(None, pattern=r"^\d{4}(-\d{2}(-\d{2})?)?$",
                                   description="Period end of the wanted 10-Q: YYYY-MM or "
                                               "YYYY-MM-DD")


class CurrentReportArgs(BaseModel):
    ticker: Ticker
    accession_number: str | None = Field(None, description="Omit for the latest 8-Ks")
    limit: int = Field(1, ge=1, le=5, description="How many of the latest 8-Ks to read")
    items: list[str] = Field(default_factory=list,
                             description="Only 8-Ks with these items, e.g. 2.02 (earnings)")


# --------------------------------------------------------------------------------------------
# The sub-tool record
# --------------------------------------------------------------------------------------------

Runner = Callable[[DataSource, Any], Awaitable[DataResult]]
Renderer = Callable[[DataResult], dict[str, Any]]


@dataclass(frozen=True)
class SubTool:
    """One routable data call."""

    name: str
    description: str
    params: type[BaseModel]
    capability: Capability
    run: Runner
    result_name: str
    key_fields: tuple[str, ...] = ("ticker",)
    render: Renderer = render_result
    tables: TableBuilder = default_tables

    def spec(self) -> ToolSpec:
        """The tool as the routing model sees it."""
        schema = self.params.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            if isinstance(prop, dict):
                prop.pop("title", None)
        schema.setdefault("properties", {})
        return ToolSpec(self.name, self.description, schema)

    def merge_key(self, args: BaseModel) -> str:
        """``income_statements[AAPL, quarterly]``: the name of this call's result."""
        parts = []
        for name in self.key_fields:
            value = getattr(args, name, None)
            if value is None or value == [] or value == "":
                continue
            if isinstance(value, list):
                value = "+".join(map(str, value))
            parts.append(str(value).upper() if name == "ticker" else str(value))
        return f"{self.result_name}[{', '.join(parts)}]" if parts else self.result_name


# --------------------------------------------------------------------------------------------
# Runners
# --------------------------------------------------------------------------------------------


def _statements(kind: Literal["income", "balance", "cash_flow", "all"]) -> Runner:
    async def run(source: DataSource, a: StatementArgs) -> DataResult:
        return await source.statements(kind, a.ticker, period=a.period, limit=a.limit,
                                       filters=a.filters())
    return run


async def _company_facts(source: DataSource, a: TickerArgs) -> DataResult:
    return await source.company_facts(a.ticker)


async def _ratios_snapshot(source: DataSource, a: TickerArgs) -> DataResult:
    return await source.key_ratios_snapshot(a.ticker)


async def _ratios_history(source: DataSource, a: RatioArgs) -> DataResult:
    return await source.historical_key_ratios(a.ticker, period=a.period, limit=a.limit,
                                              filters=a.filters())


async def _segments(source: DataSource, a: SegmentArgs) -> DataResult:
    return await source.segments(a.ticker, period=a.period, limit=a.limit, axis=a.axis,
                                 member=a.member, metrics=tuple(a.metrics),
                                 accession=a.accession_number)


async def _peers(source: DataSource, a: PeerArgs) -> DataResult:
    return await source.peers(a.ticker, metric=a.metric, period=a.period, limit=a.limit)


async def _earnings(source: DataSource, a: EarningsArgs) -> DataResult:
    return await source.earnings(a.ticker, limit=a.limit)


async def _price(source: DataSource, a: TickerArgs) -> DataResult:
    return await source.price_snapshot(a.ticker)


async def _prices(source: DataSource, a: PriceArgs) -> DataResult:
    return await source.prices(a.ticker, interval=a.interval, start_date=a.start_date,
                               end_date=a.end_date)


async def _stock_tickers(source: DataSource, a: NoArgs) -> DataResult:
    return await source.stock_tickers()


async def _crypto_price(source: DataSource, a: TickerArgs) -> DataResult:
    return await source.crypto_price_snapshot(a.ticker)


async def _crypto_prices(source: DataSource, a: CryptoPriceArgs) -> DataResult:
    return await source.crypto_prices(a.ticker, interval=a.interval,
                                      interval_multiplier=a.interval_multiplier,
                                      start_date=a.start_date, end_date=a.end_date)


async def _crypto_tickers(source: DataSource, a: NoArgs) -> DataResult:
    return await source.crypto_tickers()


async def _news(source: DataSource, a: NewsArgs) -> DataResult:
    return await source.news(a.ticker, limit=a.limit)


async def _insider_trades(source: DataSource, a: InsiderTradeArgs) -> DataResult:
    return await source.insider_trades(a.ticker, limit=a.limit, name=a.name, filters=a.filters(),
                                       accession=a.accession_number)


async def _insider_names(source: DataSource, a: TickerArgs) -> DataResult:
    return await source.insider_names(a.ticker)


async def _insider_ownership(source: DataSource, a: InsiderOwnershipArgs) -> DataResult:
    return await source.insider_ownership(a.ticker, limit=a.limit, name=a.name,
                                          form_type=a.form_type, filters=a.filters())


async def _institutional(source: DataSource, a: InstitutionalArgs) -> DataResult:
    return await source.institutional_holdings(ticker=a.ticker, filer_name=a.filer_name,
                                               filer_cik=a.filer_cik, limit=a.limit,
                                               filters=ExactReportPeriod.filters(a),
                                               quarter=a.quarter, compare_to=a.compare_to,
                                               accession=a.accession_number)


async def _beneficial(source: DataSource, a: BeneficialArgs) -> DataResult:
    return await source.beneficial_ownership(ticker=a.ticker, filer_name=a.filer_name,
                                             filer_cik=a.filer_cik, type=a.type,
                                             history=a.history, limit=a.limit,
                                             filters=FilingDateBounds.filters(a))


async def _filing_list(source: DataSource, a: FilingListArgs) -> DataResult:
    if not a.items:
        return await source.filings(a.ticker, filing_types=tuple(a.filing_types),
                                    limit=a.limit)
    wanted = {i.replace("Item", "").replace("-", "").strip() for i in a.items}
    listing = await source.filings(a.ticker, filing_types=tuple(a.filing_types) or ("8-K",),
                                   limit=max(a.limit * 10, 100))
    rows = [r for r in listing.data
            if wanted & {x.strip() for x in str(r.get("items", "")).split(",")}]
    return DataResult(rows[: a.limit], listing.source, listing.urls, listing.notes)


async def _earnings_releases(source: DataSource, a: EarningsReleaseArgs) -> DataResult:
    return await source.earnings_releases(a.ticker, limit=a.limit,
                                          accession=a.accession_number, filters=a.filters())


async def _search_filings(source: DataSource, a: FullTextArgs) -> DataResult:
    return await source.search_filings(a.query, forms=tuple(a.forms), start_date=a.start_date,
                                       end_date=a.end_date, entity=a.entity, limit=a.limit)


def _filing_matches(row: dict[str, Any], accession: str | None, period_prefix: str | None) -> bool:
    if accession and row.get("accession_number") != accession:
        return False
    return not period_prefix or str(row.get("report_date") or "").startswith(period_prefix)


def _pick_filing(rows: list[dict[str, Any]], form: str, accession: str | None,
                 period_prefix: str | None, ticker: str) -> dict[str, Any]:
    for row in rows:
        if _filing_matches(row, accession, period_prefix):
            return row
    wanted = accession or (f"period {period_prefix}" if period_prefix else "any")
    raise NotFoundError(f"No {form} for {ticker.upper()} matching {wanted}. List the filings "
                        f"first to see what is available.")


async def _read_items(source: DataSource, ticker: str, form: str, row: dict[str, Any],
                      items: list[str], list_urls: tuple[str, ...]) -> DataResult:
    result = await source.filing_items(ticker, filing_type=form,
                                       accession_number=str(row["accession_number"]),
                                       items=tuple(items))
    return DataResult(result.data, result.source, (*list_urls, *result.urls), result.notes)


async def _read_10k(source: DataSource, a: AnnualReportArgs) -> DataResult:
    period = str(a.fiscal_year) if a.fiscal_year else None
    listing = await source.filings(a.ticker, filing_types=("10-K",), limit=30,
                                   until=lambda r: _filing_matches(r, a.accession_number, period))
    row = _pick_filing(listing.data, "10-K", a.accession_number, period, a.ticker)
    return await _read_items(source, a.ticker, "10-K", row, a.items, listing.urls)


async def _read_10q(source: DataSource, a: QuarterlyReportArgs) -> DataResult:
    listing = await source.filings(
        a.ticker, filing_types=("10-Q",), limit=40,
        until=lambda r: _filing_matches(r, a.accession_number, a.period_end))
    row = _pick_filing(listing.data, "10-Q", a.accession_number, a.period_end, a.ticker)
    return await _read_items(source, a.ticker, "10-Q", row, a.items, listing.urls)


async def _read_8k(source: DataSource, a: CurrentReportArgs) -> DataResult:
    listing = await source.filings(a.ticker, filing_types=("8-K",), limit=40)
    rows = list(listing.data)
    if a.accession_number:
        rows = [_pick_filing(rows, "8-K", a.accession_number, None, a.ticker)]
    elif a.items:
        wanted = {i.replace("Item-", "").replace("Item ", "").strip() for i in a.items}
        rows = [r for r in rows if wanted & {x.strip() for x in str(r.get("items", "")).split(",")}]
    if not rows:
        raise NotFoundError(f"No 8-K for {a.ticker.upper()} with items {', '.join(a.items)}.")
    filings: list[Any] = []
    urls: list[str] = list(listing.urls)
    source_name = listing.source
    for row in rows[: a.limit]:
        try:
            result = await source.filing_items(a.ticker, filing_type="8-K",
                                               accession_number=str(row["accession_number"]))
        except DataError as exc:
            filings.append({"accession_number": row.get("accession_number"), "error": str(exc)})
            continue
        filings.append(result.data)
        urls.extend(result.urls)
        source_name = result.source
    data = filings[0] if len(filings) == 1 else {"filings": filings}
    return DataResult(data, source_name, tuple(urls))


def _render_8k(result: DataResult) -> dict[str, Any]:
    data = result.data
    if isinstance(data, dict) and "filings" in data:
        parts = [render_filing_items(DataResult(f, result.source))["data"]
                 for f in data["filings"] if isinstance(f, dict)]
        return {"source": result.source, "data": "\n\n---\n\n".join(parts)}
    return render_filing_items(result)


# --------------------------------------------------------------------------------------------
# Catalogs
# --------------------------------------------------------------------------------------------

S = Capability
FINANCIALS: tuple[SubTool, ...] = (
    SubTool("get_income_statements", "Income statements: revenue, costs, operating income, "
            "net income, EPS, share counts, margins.", StatementArgs, S.STATEMENTS,
            _statements("income"), "income_statements", ("ticker", "period")),
    SubTool("get_balance_sheets", "Balance sheets: assets, liabilities, cash, debt, equity, "
            "shares outstanding.", StatementArgs, S.STATEMENTS, _statements("balance"),
            "balance_sheets", ("ticker", "period")),
    SubTool("get_cash_flow_statements", "Cash flow statements: operating cash flow, capex, free "
            "cash flow, dividends, buybacks.", StatementArgs, S.STATEMENTS,
            _statements("cash_flow"), "cash_flow_statements", ("ticker", "period")),
    SubTool("get_all_financial_statements", "Income, balance sheet and cash flow together (use "
            "for broad fundamental or valuation work such as a DCF).", StatementArgs,
            S.STATEMENTS, _statements("all"), "financial_statements", ("ticker", "period")),
    SubTool("get_company_facts", "Company profile: name, CIK, industry, exchange, fiscal year "
            "end, shares outstanding.", TickerArgs, S.COMPANY_FACTS, _company_facts,
            "company_facts"),
    SubTool("get_key_ratios", "Latest valuation and profitability snapshot: market cap, P/E, "
            "P/S, P/B, EV/EBITDA, margins, ROE, growth, debt/equity.", TickerArgs, S.METRICS,
            _ratios_snapshot, "key_ratios"),
    SubTool("get_historical_key_ratios", "Key ratios over past periods (trend of P/E, margins, "
            "ROE, growth).", RatioArgs, S.METRICS, _ratios_history, "historical_key_ratios",
            ("ticker", "period")),
    SubTool("get_financial_segments", "Revenue, operating income and gross profit by "
            "business segment, geography and product line (or any member the user names), "
            "with each member's share of total revenue; read from the 10-K/10-Q XBRL.",
            SegmentArgs, S.SEGMENTS, _segments, "segments",
            ("ticker", "period", "axis", "member", "accession_number"), render_segments,
            segment_tables),
    SubTool("get_peers", "Industry peers: companies sharing the company's SIC code, ranked "
            "by one reported metric for a calendar year (a comps set).", PeerArgs, S.PEERS,
            _peers, "peers", ("ticker", "metric", "period"), render_peers, peer_tables),
    SubTool("get_earnings", "Earnings reports: actual vs estimated EPS and revenue, surprises. "
            "Omit ticker for the market-wide feed.", EarningsArgs, S.EARNINGS, _earnings,
            "earnings"),
)

MARKET_DATA: tuple[SubTool, ...] = (
    SubTool("get_stock_price", "Latest stock price and the change from the previous close.",
            TickerArgs, S.PRICES, _price, "price_snapshot"),
    SubTool("get_stock_prices", "Historical stock prices (OHLCV) between two dates, both "
            "included.",
            PriceArgs, S.PRICES, _prices, "prices",
            ("ticker", "interval", "start_date", "end_date")),
    SubTool("get_available_stock_tickers", "Tickers with price data.", NoArgs,
            S.STOCK_TICKERS,
            _stock_tickers, "stock_tickers", ()),
    SubTool("get_crypto_price_snapshot", "Latest crypto price of a pair such as BTC-USD.",
            TickerArgs, S.CRYPTO, _crypto_price, "crypto_price_snapshot"),
    SubTool("get_crypto_prices", "Historical crypto prices between two dates.",
            CryptoPriceArgs, S.CRYPTO, _crypto_prices, "crypto_prices",
            ("ticker", "interval", "start_date", "end_date")),
    SubTool("get_available_crypto_tickers", "Crypto pairs with price data.", NoArgs, S.CRYPTO,
            _crypto_tickers, "crypto_tickers", ()),
    SubTool("get_company_news", "Recent news articles with links (omit ticker for market "
            "news).", NewsArgs, S.NEWS, _news, "news"),
    SubTool("get_insider_trades", "Insider buys, sells, grants and option exercises (Form 4): "
            "owner, role, date, code, shares, price, shares owned after, direct or indirect; "
            "optionally for one person (names are matched to SEC spellings automatically).",
            InsiderTradeArgs, S.INSIDER, _insider_trades, "insider_trades",
            ("ticker", "name", "accession_number"), render_insiders, insider_tables),
    SubTool("get_insider_names", "Names of a company's insiders as spelled in SEC filings.",
            TickerArgs, S.INSIDER, _insider_names, "insider_names"),
    SubTool("get_insider_ownership", "Insider ownership reports (Forms 3 and 5).",
            InsiderOwnershipArgs, S.INSIDER, _insider_ownership, "insider_ownership",
            ("ticker", "name")),
    SubTool("get_institutional_holdings", "13F institutional holdings: what a manager holds "
            "in a quarter (issuer, CUSIP, value in dollars, shares, put/call, discretion) and "
            "the change since an earlier quarter; who holds a ticker needs "
            "FINANCIAL_DATASETS_API_KEY.", InstitutionalArgs, S.INSTITUTIONAL, _institutional,
            "institutional_holdings",
            ("ticker", "filer_name", "filer_cik", "quarter", "compare_to", "accession_number"),
            render_holdings, holdings_tables),
    SubTool("get_beneficial_ownership", "13D/13G beneficial owners (over 5%), activist or "
            "passive.", BeneficialArgs, S.BENEFICIAL, _beneficial, "beneficial_ownership",
            ("ticker", "filer_name", "filer_cik", "type")),
)

FILINGS: tuple[SubTool, ...] = (
    SubTool("list_filings", "List a company's SEC filings of any form (accession numbers, "
            "dates, forms, 8-K items).", FilingListArgs, S.FILINGS, _filing_list, "filings",
            ("ticker", "filing_types", "items")),
    SubTool("get_earnings_releases", "The company's earnings press releases (8-K Item 2.02, "
            "Exhibit 99.1): the quarter's headline figures from the release's own tables, "
            "the outlook/guidance paragraphs, and the release text.", EarningsReleaseArgs,
            S.EARNINGS_RELEASES, _earnings_releases, "earnings_releases",
            ("ticker", "accession_number"), render_releases, release_tables),
    SubTool("search_filings", "EDGAR full-text search across all filers' documents since "
            "2001: which filings mention a word or phrase, by form, date range and filer; "
            "hits with form, filer, date and link.", FullTextArgs, S.FULL_TEXT_SEARCH,
            _search_filings, "search", ("query", "forms", "entity", "start_date",
                                        "end_date"), render_search, no_tables),
    SubTool("read_10k_items", "Read sections of a 10-K annual report (latest unless "
            "fiscal_year or accession_number is given).", AnnualReportArgs, S.FILING_SECTIONS,
            _read_10k, "10-K", ("ticker", "fiscal_year", "accession_number", "items"),
            render_filing_items),
    SubTool("read_10q_items", "Read sections of a 10-Q quarterly report (latest unless "
            "period_end or accession_number is given).", QuarterlyReportArgs,
            S.FILING_SECTIONS, _read_10q, "10-Q",
            ("ticker", "period_end", "accession_number", "items"), render_filing_items),
    SubTool("read_8k", "Read the latest 8-K current reports (material events, earnings "
            "releases with their press-release exhibits).", CurrentReportArgs,
            S.FILING_SECTIONS, _read_8k, "8-K", ("ticker", "accession_number", "items"),
            _render_8k),
)
