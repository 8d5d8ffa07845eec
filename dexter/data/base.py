"""The data-source interface: capabilities, typed filters, results and errors.

A source (Financial Datasets, SEC EDGAR, ...) subclasses ``DataSource``, lists what it can
answer in ``capabilities`` and overrides the matching methods. Every method returns a
``DataResult``: plain JSON-ready data (lists of dicts with the documented keys below), the
name of the source and the URL of every request the numbers came from.

Record keys shared by both sources (statements): ``ticker``, ``report_period`` (period end,
ISO date), ``fiscal_period`` (e.g. ``FY2024``, ``Q3 2024``), ``period`` (annual, quarterly,
ttm), ``currency`` and the line items named as in the Financial Datasets API
(``revenue``, ``net_income``, ``earnings_per_share_diluted``, ``total_debt``,
``outstanding_shares``, ``capital_expenditure``, ``free_cash_flow``, ...). EDGAR records add
``company_name``, ``source_filing`` (form, accession number, filed date, the fiscal period it
reports on, the URL of its primary document), ``field_sources`` for fields taken from
another filing, and ``derived`` (field -> how it was computed).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal, NoReturn

Period = Literal["annual", "quarterly", "ttm"]
StatementKind = Literal["income", "balance", "cash_flow", "all"]
PriceInterval = Literal["minute", "day", "week", "month", "year"]
FilingType = Literal["10-K", "10-Q", "8-K"]
ScreenOperator = Literal["gt", "gte", "lt", "lte", "eq", "in"]


class Capability(StrEnum):
    """Kinds of data a source can give."""

    STATEMENTS = "statements"
    COMPANY_FACTS = "company_facts"
    METRICS = "metrics"
    SEGMENTS = "segments"
    EARNINGS = "earnings"
    PRICES = "prices"
    STOCK_TICKERS = "stock_tickers"
    CRYPTO = "crypto"
    NEWS = "news"
    INSIDER = "insider"
    INSTITUTIONAL = "institutional"
    FILINGS = "filings"
    FILING_SECTIONS = "filing_sections"
    SCREENER = "screener"
    BENEFICIAL = "beneficial"
    EARNINGS_RELEASES = "earnings_releases"
    FULL_TEXT_SEARCH = "full_text_search"
    PEERS = "peers"


CAPABILITY_LABELS: dict[Capability, str] = {
    Capability.STATEMENTS: "financial statements",
    Capability.COMPANY_FACTS: "company facts",
    Capability.METRICS: "key ratios and valuation metrics",
    Capability.SEGMENTS: "segment financials",
    Capability.EARNINGS: "earnings reports and estimates",
    Capability.PRICES: "stock prices",
    Capability.STOCK_TICKERS: "stock ticker lists",
    Capability.CRYPTO: "crypto prices",
    Capability.NEWS: "company news",
    Capability.INSIDER: "insider trades and ownership",
    Capability.INSTITUTIONAL: "institutional (13F) holdings",
    Capability.FILINGS: "SEC filings lists",
    Capability.FILING_SECTIONS: "SEC filing sections",
    Capability.SCREENER: "stock screening",
    Capability.BENEFICIAL: "beneficial ownership (13D/13G)",
    Capability.EARNINGS_RELEASES: "earnings press releases (8-K Item 2.02)",
    Capability.FULL_TEXT_SEARCH: "full-text search of SEC filings",
    Capability.PEERS: "industry peers",
}


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


class DataError(Exception):
    """A data request failed; ``message`` tells the user what happened and what to do.

    Messages never contain API keys (keys travel in headers, never in URLs).
    """

    def __init__(self, message: str, *, status: int | None = None, url: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.url = url

    def __str__(self) -> str:
        return self.message


class AuthError(DataError):
    """The API key is missing or was rejected (HTTP 401)."""


class PlanError(DataError):
    """The key works but the plan does not cover this data (HTTP 402/403)."""


class NotFoundError(DataError):
    """Unknown ticker, filing or path (HTTP 404)."""


class RateLimitError(DataError):
    """Still rate limited (HTTP 429) after the retries."""


class UpstreamError(DataError):
    """The service failed (5xx, bad JSON, network error) after the retries."""


class DataTimeout(DataError):
    """The request took too long and was cancelled."""


class UnsupportedError(DataError):
    """This source does not provide that kind of data."""

    def __init__(self, message: str, *, capability: Capability) -> None:
        super().__init__(message)
        self.capability = capability


# --------------------------------------------------------------------------------------------
# Inputs and results
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DateFilter:
    """Bounds on an ISO date field (``report_period`` or ``filing_date``); all optional."""

    eq: str | None = None
    gt: str | None = None
    gte: str | None = None
    lt: str | None = None
    lte: str | None = None

    def as_params(self, prefix: str) -> dict[str, str]:
        """Query parameters in the Financial Datasets style (``prefix``, ``prefix_gte``...)."""
        params: dict[str, str] = {}
        if self.eq:
            params[prefix] = self.eq
        for op in ("gt", "gte", "lt", "lte"):
            value = getattr(self, op)
            if value:
                params[f"{prefix}_{op}"] = value
        return params

    def matches(self, date: str) -> bool:
        """True when ``date`` (ISO, compared as text) is within every bound."""
        checks = (
            self.eq is None or date == self.eq,
            self.gt is None or date > self.gt,
            self.gte is None or date >= self.gte,
            self.lt is None or date < self.lt,
            self.lte is None or date <= self.lte,
        )
        return all(checks)

    def is_empty(self) -> bool:
        """True when no bound is set."""
        return not any((self.eq, self.gt, self.gte, self.lt, self.lte))


NO_DATES = DateFilter()


@dataclass(frozen=True, slots=True)
class ScreenFilter:
    """One screening condition, e.g. ``revenue gt 1e11``."""

    field: str
    operator: ScreenOperator
    value: float | str | list[float] | list[str]


@dataclass(frozen=True, slots=True)
class DataResult:
    """What a source returns: the data, who gave it, the request URLs and caveats.

    ``notes`` are for the model and may name the data's fields; ``reader_notes``, when a
    source sets them, say the same to a person (``dexter data`` prints them), in words."""

    data: Any
    source: str
    urls: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)
    reader_notes: tuple[str, ...] = field(default_factory=tuple)


# --------------------------------------------------------------------------------------------
# The interface
# --------------------------------------------------------------------------------------------


class DataSource:
    """Base class of every data source.

    Subclasses set ``name`` (machine id), ``label`` (what the user reads) and
    ``capabilities``, and override the methods they support. The defaults raise
    ``UnsupportedError`` so a caller can ask any source and get a clear answer.
    """

    name: str = "base"
    label: str = "data source"
    capabilities: frozenset[Capability] = frozenset()

    def supports(self, capability: Capability) -> bool:
        """True when this source offers ``capability``."""
        return capability in self.capabilities

    def _unsupported(self, capability: Capability) -> NoReturn:
        raise UnsupportedError(
            f"{self.label} does not provide {CAPABILITY_LABELS[capability]}.",
            capability=capability,
        )

    async def aclose(self) -> None:
        """Release network connections."""

    # Fundamentals -----------------------------------------------------------------------

    async def statements(
        self, kind: StatementKind, ticker: str, *, period: Period = "annual", limit: int = 4,
        filters: DateFilter = NO_DATES,
    ) -> DataResult:
        """Income statements, balance sheets, cash flow statements or all three, newest first."""
        self._unsupported(Capability.STATEMENTS)

    async def company_facts(self, ticker: str) -> DataResult:
        """Name, CIK, industry, exchange, fiscal year end, shares outstanding..."""
        self._unsupported(Capability.COMPANY_FACTS)

    async def key_ratios_snapshot(self, ticker: str) -> DataResult:
        """The latest valuation and profitability metrics."""
        self._unsupported(Capability.METRICS)

    async def historical_key_ratios(
        self, ticker: str, *, period: Period = "ttm", limit: int = 4,
        filters: DateFilter = NO_DATES,
    ) -> DataResult:
        """Metrics per reporting period, newest first."""
        self._unsupported(Capability.METRICS)

    async def segments(
        self, ticker: str, *, period: str = "annual", limit: int = 4, axis: str | None = None,
        member: str | None = None, metrics: tuple[str, ...] = (),
        accession: str | None = None,
    ) -> DataResult:
        """Revenue and other metrics split by business segment, geography or product
        (``axis``; a ``member`` of it; an XBRL filing by ``accession``)."""
        self._unsupported(Capability.SEGMENTS)

    async def earnings(self, ticker: str | None, *, limit: int | None = None) -> DataResult:
        """Earnings releases (one company, or the market-wide feed when ``ticker`` is None)."""
        self._unsupported(Capability.EARNINGS)

    # Market data ------------------------------------------------------------------------

    async def price_snapshot(self, ticker: str) -> DataResult:
        """The latest stock price."""
        self._unsupported(Capability.PRICES)

    async def prices(
        self, ticker: str, *, interval: PriceInterval = "day", start_date: str, end_date: str
    ) -> DataResult:
        """Historical OHLCV bars between two ISO dates."""
        self._unsupported(Capability.PRICES)

    async def stock_tickers(self) -> DataResult:
        """Tickers with price data."""
        self._unsupported(Capability.PRICES)

    async def crypto_price_snapshot(self, ticker: str) -> DataResult:
        """The latest price of a crypto pair such as ``BTC-USD``."""
        self._unsupported(Capability.CRYPTO)

    async def crypto_prices(
        self, ticker: str, *, interval: PriceInterval = "day", interval_multiplier: int = 1,
        start_date: str, end_date: str,
    ) -> DataResult:
        """Historical crypto bars."""
        self._unsupported(Capability.CRYPTO)

    async def crypto_tickers(self) -> DataResult:
        """Crypto pairs with price data."""
        self._unsupported(Capability.CRYPTO)

    async def news(self, ticker: str | None, *, limit: int = 5) -> DataResult:
        """Recent news articles (market-wide when ``ticker`` is None)."""
        self._unsupported(Capability.NEWS)

    # Ownership --------------------------------------------------------------------------

    async def insider_trades(
        self, ticker: str, *, limit: int = 10, name: str | None = None,
        filters: DateFilter = NO_DATES, accession: str | None = None,
    ) -> DataResult:
        """Form 4 insider transactions, newest first (one Form 4 by ``accession``)."""
        self._unsupported(Capability.INSIDER)

    async def insider_names(self, ticker: str) -> DataResult:
        """The insiders' names as spelled in SEC filings."""
        self._unsupported(Capability.INSIDER)

    async def insider_ownership(
        self, ticker: str, *, limit: int = 10, name: str | None = None,
        form_type: str | None = None, filters: DateFilter = NO_DATES,
    ) -> DataResult:
        """Form 3/5 ownership reports."""
        self._unsupported(Capability.INSIDER)

    async def institutional_holdings(
        self, *, ticker: str | None = None, filer_name: str | None = None,
        filer_cik: str | None = None, limit: int = 10, filters: DateFilter = NO_DATES,
        quarter: str | None = None, compare_to: str | None = None,
        accession: str | None = None,
    ) -> DataResult:
        """13F holdings, by company held or by filer (for a ``quarter``; the change since
        ``compare_to``; one 13F by ``accession``)."""
        self._unsupported(Capability.INSTITUTIONAL)

    async def beneficial_ownership(
        self, *, ticker: str | None = None, filer_name: str | None = None,
        filer_cik: str | None = None, type: str | None = None, history: bool = False,
        limit: int = 10, filters: DateFilter = NO_DATES,
    ) -> DataResult:
        """13D/13G beneficial ownership reports."""
        self._unsupported(Capability.BENEFICIAL)

    # Filings ----------------------------------------------------------------------------

    async def filings(
        self, ticker: str, *, filing_types: tuple[str, ...] = (), limit: int = 10,
        until: Callable[[dict[str, Any]], bool] | None = None,
    ) -> DataResult:
        """SEC filings, newest first: ``accession_number``, ``filing_type``,
        ``report_date``, ``filing_date``, ``url``. ``until``: a source that pages through
        history may stop once a row satisfies it (the row the caller is looking for)."""
        self._unsupported(Capability.FILINGS)

    async def filing_items(
        self, ticker: str, *, filing_type: str, accession_number: str,
        items: tuple[str, ...] = (),
    ) -> DataResult:
        """The text of filing sections (``Item-1A``, ``Part-1,Item-2``...); all when empty."""
        self._unsupported(Capability.FILING_SECTIONS)

    async def earnings_releases(
        self, ticker: str, *, limit: int = 1, accession: str | None = None,
        filters: DateFilter = NO_DATES, with_text: bool = True,
    ) -> DataResult:
        """8-K Item 2.02 press releases: text, figures from their tables, outlook."""
        self._unsupported(Capability.EARNINGS_RELEASES)

    async def search_filings(
        self, query: str, *, forms: tuple[str, ...] = (), start_date: str | None = None,
        end_date: str | None = None, entity: str | None = None, limit: int = 20,
        offset: int = 0,
    ) -> DataResult:
        """Full-text search of filings: hits with form, filer, date and link."""
        self._unsupported(Capability.FULL_TEXT_SEARCH)

    async def peers(
        self, ticker: str, *, metric: str = "revenue", period: str | None = None,
        limit: int = 10, sic: str | None = None,
    ) -> DataResult:
        """Companies sharing the company's industry (SIC) code, with one metric each."""
        self._unsupported(Capability.PEERS)

    # Screening --------------------------------------------------------------------------

    async def screener_filters(self) -> DataResult:
        """The catalog of fields the screener accepts."""
        self._unsupported(Capability.SCREENER)

    async def screen(
        self, filters: tuple[ScreenFilter, ...], *, currency: str = "USD", limit: int = 25,
        period: str | None = None,
    ) -> DataResult:
        """Companies matching every filter."""
        self._unsupported(Capability.SCREENER)
