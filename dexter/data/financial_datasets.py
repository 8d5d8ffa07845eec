"""The Financial Datasets API (https://financialdatasets.ai), header ``x-api-key``.

Every endpoint the reference uses, with its cache TTL. Records are returned as the API sends
them (all fields kept: accession numbers, currency and period say where a number came from).
Without a key this source must not be built: ``FinancialDatasetsSource`` refuses an empty key.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from typing import Any, NoReturn

from dexter.data.base import (
    NO_DATES,
    Capability,
    DataError,
    DataResult,
    DateFilter,
    NotFoundError,
    Period,
    PriceInterval,
    ScreenFilter,
    StatementKind,
    UnsupportedError,
)
from dexter.data.cache import (
    NEVER_EXPIRES,
    TTL_1H,
    TTL_6H,
    TTL_15M,
    TTL_24H,
    is_closed_window,
)
from dexter.data.fetching import NO_CACHE, CachePolicy
from dexter.data.http import Params, ServiceInfo
from dexter.data.http_source import HttpSource, SourceConnection

KEY_ENV = "FINANCIAL_DATASETS_API_KEY"
SERVICE = ServiceInfo(name="Financial Datasets", key_env=KEY_ENV)

STATEMENT_ENDPOINTS: dict[str, tuple[str, str, str]] = {
    "income": ("/financials/income-statements/", "income_statements", "income statements"),
    "balance": ("/financials/balance-sheets/", "balance_sheets", "balance sheets"),
    "cash_flow": ("/financials/cash-flow-statements/", "cash_flow_statements",
                  "cash flow statements"),
    "all": ("/financials/", "financials", "financial statements"),
}

def normalize_ticker(ticker: str) -> str:
    """Trim and upper-case a ticker; raises ``DataError`` when it is empty."""
    cleaned = ticker.strip().upper()
    if not cleaned:
        raise DataError("A ticker is required (e.g. AAPL). Give the company's stock symbol.")
    return cleaned


def match_insider_names(query: str, candidates: list[str]) -> list[str]:
    """Candidates whose name tokens all pair up with the query's, in any order.

    A token matches when one is a prefix of the other, so "Tim Cook" finds "COOK TIMOTHY D".
    """
    tokens = [t for t in re.split(r"[^a-z0-9]+", query.lower()) if t]
    if not tokens:
        return []
    found: list[str] = []
    for candidate in candidates:
        cand_tokens = [t for t in re.split(r"[^a-z0-9]+", candidate.lower()) if t]
        if all(any(c.startswith(t) or t.startswith(c) for c in cand_tokens) for t in tokens):
            found.append(candidate)
    return found


class FinancialDatasetsSource(HttpSource):
    """Financial Datasets: statements, metrics, prices, news, ownership, filings, screener.

    The key travels in the ``x-api-key`` header and is scrubbed from error messages.
    """

    name = "financial_datasets"
    label = "Financial Datasets"
    capabilities = frozenset(Capability) - {Capability.EARNINGS_RELEASES,
                                            Capability.FULL_TEXT_SEARCH, Capability.PEERS}

    def __init__(self, connection: SourceConnection, *, api_key: str) -> None:
        if not api_key.strip():
            raise ValueError(f"{KEY_ENV} is empty; the Financial Datasets source needs a key.")
        super().__init__(connection, SERVICE,
                         headers={"x-api-key": api_key.strip(), "accept": "application/json"},
                         secrets=(api_key,))

    def _url(self, path: str) -> str:
        return self.base_url + path

    async def _get(
        self, path: str, params: Params, *, policy: CachePolicy, what: str,
        ticker: str | None = None,
    ) -> tuple[Any, str]:
        return await self._fetch(self._url(path), namespace="fd" + path, params=params,
                                 policy=policy, what=what, ticker=ticker)

    async def _records(
        self, path: str, key: str, params: Params, *, policy: CachePolicy, what: str,
        ticker: str | None = None,
    ) -> DataResult:
        data, url = await self._get(path, params, policy=policy, what=what, ticker=ticker)
        if not isinstance(data, dict) or key not in data:
            raise DataError(f"Financial Datasets sent an unexpected reply for {what} "
                            f"(no '{key}' field).", url=url)
        return DataResult(data[key], self.label, (url,))

    # Fundamentals -----------------------------------------------------------------------

    async def statements(
        self, kind: StatementKind, ticker: str, *, period: Period = "annual", limit: int = 4,
        filters: DateFilter = NO_DATES,
    ) -> DataResult:
        """GET one of the statement endpoints (24h cache)."""
        ticker = normalize_ticker(ticker)
        path, key, label = STATEMENT_ENDPOINTS[kind]
        params: dict[str, Any] = {"ticker": ticker, "period": period, "limit": limit,
                                  **filters.as_params("report_period")}
        return await self._records(path, key, params, policy=CachePolicy(ttl=TTL_24H),
                                   what=f"{period} {label} for {ticker}", ticker=ticker)

    async def company_facts(self, ticker: str) -> DataResult:
        """GET /company/facts/ (24h cache)."""
        ticker = normalize_ticker(ticker)
        return await self._records("/company/facts/", "company_facts", {"ticker": ticker},
                                   policy=CachePolicy(ttl=TTL_24H),
                                   what=f"company facts for {ticker}", ticker=ticker)

    async def key_ratios_snapshot(self, ticker: str) -> DataResult:
        """GET /financial-metrics/snapshot/ (1h cache)."""
        ticker = normalize_ticker(ticker)
        return await self._records("/financial-metrics/snapshot/", "snapshot", {"ticker": ticker},
                                   policy=CachePolicy(ttl=TTL_1H),
                                   what=f"the key ratios snapshot for {ticker}", ticker=ticker)

    async def historical_key_ratios(
        self, ticker: str, *, period: Period = "ttm", limit: int = 4,
        filters: DateFilter = NO_DATES,
    ) -> DataResult:
        """GET /financial-metrics/ (6h cache)."""
        ticker = normalize_ticker(ticker)
        params: dict[str, Any] = {"ticker": ticker, "period": period, "limit": limit,
                                  **filters.as_params("report_period")}
        return await self._records("/financial-metrics/", "financial_metrics", params,
                                   policy=CachePolicy(ttl=TTL_6H),
                                   what=f"{period} key ratios for {ticker}", ticker=ticker)

    async def segments(
        self, ticker: str, *, period: str = "annual", limit: int = 4, axis: str | None = None,
        member: str | None = None, metrics: tuple[str, ...] = (),
        accession: str | None = None,
    ) -> DataResult:
        """GET /financials/segments/ (24h cache). An axis, member, metric or filing named
        is SEC EDGAR's to answer (the router falls back to it)."""
        if axis or member or metrics or accession:
            self._keyless_only("a segment axis, member, metric or filing",
                               Capability.SEGMENTS)
        ticker = normalize_ticker(ticker)
        params = {"ticker": ticker, "period": period, "limit": limit}
        return await self._records("/financials/segments/", "segmented_financials", params,
                                   policy=CachePolicy(ttl=TTL_24H),
                                   what=f"{period} segments for {ticker}", ticker=ticker)

    async def earnings(self, ticker: str | None, *, limit: int | None = None) -> DataResult:
        """GET /earnings (24h cache); market-wide feed when ``ticker`` is None."""
        tick = normalize_ticker(ticker) if ticker else None
        params = {"ticker": tick, "limit": limit}
        what = f"earnings for {tick}" if tick else "the earnings feed"
        return await self._records("/earnings", "earnings", params,
                                   policy=CachePolicy(ttl=TTL_24H), what=what, ticker=tick)

    # Market data ------------------------------------------------------------------------

    async def price_snapshot(self, ticker: str) -> DataResult:
        """GET /prices/snapshot/ (never cached: it is the live price)."""
        ticker = normalize_ticker(ticker)
        return await self._records("/prices/snapshot/", "snapshot", {"ticker": ticker},
                                   policy=NO_CACHE, what=f"the price of {ticker}", ticker=ticker)

    def _window(self, start_date: str, end_date: str) -> tuple[str, CachePolicy]:
        """Widen a zero-width range (the API rejects it); closed windows never expire."""
        if start_date >= end_date:
            try:
                start_date = (dt.date.fromisoformat(end_date) - dt.timedelta(days=7)).isoformat()
            except ValueError:
                raise DataError(f"end_date '{end_date}' is not an ISO date (YYYY-MM-DD).") from None
        closed = is_closed_window(end_date, self._today)
        return start_date, CachePolicy(ttl=NEVER_EXPIRES) if closed else CachePolicy(ttl=TTL_15M)

    async def prices(
        self, ticker: str, *, interval: PriceInterval = "day", start_date: str, end_date: str
    ) -> DataResult:
        """GET /prices/ (cached forever once the window is closed)."""
        ticker = normalize_ticker(ticker)
        start_date, policy = self._window(start_date, end_date)
        params = {"ticker": ticker, "interval": interval, "interval_multiplier": 1,
                  "start_date": start_date, "end_date": end_date}
        return await self._records("/prices/", "prices", params, policy=policy,
                                   what=f"{interval} prices for {ticker}", ticker=ticker)

    async def stock_tickers(self) -> DataResult:
        """GET /prices/snapshot/tickers/ (24h cache)."""
        return await self._records("/prices/snapshot/tickers/", "tickers", {},
                                   policy=CachePolicy(ttl=TTL_24H), what="the stock ticker list")

    async def crypto_price_snapshot(self, ticker: str) -> DataResult:
        """GET /crypto/prices/snapshot/ (never cached)."""
        ticker = normalize_ticker(ticker)
        return await self._records("/crypto/prices/snapshot/", "snapshot", {"ticker": ticker},
                                   policy=NO_CACHE, what=f"the price of {ticker}", ticker=ticker)

    async def crypto_prices(
        self, ticker: str, *, interval: PriceInterval = "day", interval_multiplier: int = 1,
        start_date: str, end_date: str,
    ) -> DataResult:
        """GET /crypto/prices/ (cached forever once the window is closed)."""
        ticker = normalize_ticker(ticker)
        start_date, policy = self._window(start_date, end_date)
        params = {"ticker": ticker, "interval": interval,
                  "interval_multiplier": interval_multiplier,
                  "start_date": start_date, "end_date": end_date}
        return await self._records("/crypto/prices/", "prices", params, policy=policy,
                                   what=f"{interval} prices for {ticker}", ticker=ticker)

    async def crypto_tickers(self) -> DataResult:
        """GET /crypto/prices/tickers/ (24h cache)."""
        return await self._records("/crypto/prices/tickers/", "tickers", {},
                                   policy=CachePolicy(ttl=TTL_24H), what="the crypto ticker list")

    async def news(self, ticker: str | None, *, limit: int = 5) -> DataResult:
        """GET /news (15 min cache); at most 10 articles."""
        tick = normalize_ticker(ticker) if ticker else None
        params = {"ticker": tick, "limit": max(1, min(limit, 10))}
        what = f"news for {tick}" if tick else "market news"
        return await self._records("/news", "news", params, policy=CachePolicy(ttl=TTL_15M),
                                   what=what, ticker=tick)

    # Ownership --------------------------------------------------------------------------

    async def insider_names(self, ticker: str) -> DataResult:
        """GET /insider-trades/names/ (1h cache)."""
        ticker = normalize_ticker(ticker)
        return await self._records("/insider-trades/names/", "names", {"ticker": ticker},
                                   policy=CachePolicy(ttl=TTL_1H),
                                   what=f"insider names for {ticker}", ticker=ticker)

    async def insider_trades(
        self, ticker: str, *, limit: int = 10, name: str | None = None,
        filters: DateFilter = NO_DATES, accession: str | None = None,
    ) -> DataResult:
        """GET /insider-trades/ (1h cache). A ``name`` is matched against the SEC spellings
        first; each matching spelling is fetched and the rows merged, newest first."""
        if accession:
            self._keyless_only("one Form 4 by accession number", Capability.INSIDER)
        ticker = normalize_ticker(ticker)
        base: dict[str, Any] = {"ticker": ticker, "limit": limit,
                                **filters.as_params("filing_date")}
        spellings: list[str | None] = [None]
        notes: list[str] = []
        urls: list[str] = []
        if name:
            names = await self.insider_names(ticker)
            urls.extend(names.urls)
            matches = match_insider_names(name, [str(n) for n in names.data or []])
            spellings = list(matches) or [name]
            if matches:
                notes.append(f"'{name}' matched SEC spelling(s): {', '.join(matches)}")
        rows: list[dict[str, Any]] = []
        for spelling in spellings:
            result = await self._records(
                "/insider-trades/", "insider_trades", {**base, "name": spelling},
                policy=CachePolicy(ttl=TTL_1H), what=f"insider trades for {ticker}",
                ticker=ticker,
            )
            rows.extend(result.data or [])
            urls.extend(result.urls)
        rows.sort(key=lambda r: str(r.get("filing_date", "")), reverse=True)
        return DataResult(rows[:limit], self.label, tuple(urls), tuple(notes))

    async def insider_ownership(
        self, ticker: str, *, limit: int = 10, name: str | None = None,
        form_type: str | None = None, filters: DateFilter = NO_DATES,
    ) -> DataResult:
        """GET /insider-ownership/ (1h cache)."""
        ticker = normalize_ticker(ticker)
        params: dict[str, Any] = {"ticker": ticker, "limit": limit, "name": name,
                                  "form_type": form_type, **filters.as_params("filing_date")}
        return await self._records("/insider-ownership/", "insider_ownership", params,
                                   policy=CachePolicy(ttl=TTL_1H),
                                   what=f"insider ownership for {ticker}", ticker=ticker)

    async def _filer_cik(self, path: str, key: str, cik_field: str, name: str) -> tuple[str, str]:
        data, url = await self._get(path, {"name": name}, policy=CachePolicy(ttl=TTL_24H),
                                    what=f"filers named '{name}'")
        rows = data.get(key) if isinstance(data, dict) else None
        if not rows:
            raise NotFoundError(f"No filer found matching '{name}'. Try the filer's legal name "
                                f"or its CIK.", url=url)
        return str(rows[0][cik_field]).zfill(10), url

    def _keyless_only(self, what: str, capability: Capability) -> NoReturn:
        raise UnsupportedError(f"{self.label} does not read {what}; SEC EDGAR does.",
                               capability=capability)

    @staticmethod
    def _one_subject(ticker: str | None, filer_name: str | None, filer_cik: str | None) -> None:
        given = [v for v in (ticker, filer_name, filer_cik) if v]
        if len(given) != 1:
            raise DataError("Give exactly one of ticker, filer_name or filer_cik.")

    async def institutional_holdings(
        self, *, ticker: str | None = None, filer_name: str | None = None,
        filer_cik: str | None = None, limit: int = 10, filters: DateFilter = NO_DATES,
        quarter: str | None = None, compare_to: str | None = None,
        accession: str | None = None,
    ) -> DataResult:
        """GET /institutional-holdings/ by held ticker or by filer (1h cache)."""
        if quarter or compare_to or accession:
            self._keyless_only("a 13F quarter, a quarter-to-quarter change or one 13F filing",
                               Capability.INSTITUTIONAL)
        self._one_subject(ticker, filer_name, filer_cik)
        urls: list[str] = []
        if filer_name:
            filer_cik, url = await self._filer_cik("/institutional-holdings/investors",
                                                   "investors", "cik", filer_name)
            urls.append(url)
        tick = normalize_ticker(ticker) if ticker else None
        params: dict[str, Any] = {"ticker": tick, "filer_cik": filer_cik, "limit": limit,
                                  **filters.as_params("report_period")}
        result = await self._records("/institutional-holdings/", "institutional_holdings",
                                     params, policy=CachePolicy(ttl=TTL_1H),
                                     what=f"institutional holdings for {tick or filer_cik}",
                                     ticker=tick)
        return DataResult(result.data, self.label, (*urls, *result.urls))

    async def beneficial_ownership(
        self, *, ticker: str | None = None, filer_name: str | None = None,
        filer_cik: str | None = None, type: str | None = None, history: bool = False,
        limit: int = 10, filters: DateFilter = NO_DATES,
    ) -> DataResult:
        """GET /beneficial-ownership/ (13D/13G; 1h cache)."""
        self._one_subject(ticker, filer_name, filer_cik)
        urls: list[str] = []
        if filer_name:
            filer_cik, url = await self._filer_cik("/beneficial-ownership/filers/", "filers",
                                                   "filer_cik", filer_name)
            urls.append(url)
        tick = normalize_ticker(ticker) if ticker else None
        params: dict[str, Any] = {"ticker": tick, "filer_cik": filer_cik, "type": type,
                                  "history": True if history else None, "limit": limit,
                                  **filters.as_params("filing_date")}
        result = await self._records("/beneficial-ownership/", "beneficial_owners", params,
                                     policy=CachePolicy(ttl=TTL_1H),
                                     what=f"beneficial ownership for {tick or filer_cik}",
                                     ticker=tick)
        return DataResult(result.data, self.label, (*urls, *result.urls))

    # Filings ----------------------------------------------------------------------------

    async def filings(
        self, ticker: str, *, filing_types: tuple[str, ...] = (), limit: int = 10,
        until: Callable[[dict[str, Any]], bool] | None = None,
    ) -> DataResult:
        """GET /filings/ (1h cache; one page, so ``until`` changes nothing)."""
        ticker = normalize_ticker(ticker)
        params: dict[str, Any] = {"ticker": ticker, "limit": limit,
                                  "filing_type": list(filing_types) or None}
        return await self._records("/filings/", "filings", params, policy=CachePolicy(ttl=TTL_1H),
                                   what=f"filings for {ticker}", ticker=ticker)

    async def filing_items(
        self, ticker: str, *, filing_type: str, accession_number: str,
        items: tuple[str, ...] = (),
    ) -> DataResult:
        """GET /filings/items/ (never expires: a filing does not change)."""
        ticker = normalize_ticker(ticker)
        params: dict[str, Any] = {"ticker": ticker, "filing_type": filing_type,
                                  "accession_number": accession_number,
                                  "item": list(items) or None}
        data, url = await self._get("/filings/items/", params, policy=CachePolicy(ttl=None),
                                    what=f"{filing_type} {accession_number} sections",
                                    ticker=ticker)
        return DataResult(data, self.label, (url,))

    # Screening --------------------------------------------------------------------------

    async def screener_filters(self) -> DataResult:
        """GET /financials/search/screener/filters/ (24h cache)."""
        data, url = await self._get("/financials/search/screener/filters/", {},
                                    policy=CachePolicy(ttl=TTL_24H),
                                    what="the screener field catalog")
        return DataResult(data, self.label, (url,))

    async def screen(
        self, filters: tuple[ScreenFilter, ...], *, currency: str = "USD", limit: int = 25,
        period: str | None = None,
    ) -> DataResult:
        """POST /financials/search/screener/ (never cached)."""
        body = {
            "filters": [{"field": f.field, "operator": f.operator, "value": f.value}
                        for f in filters],
            "currency": currency,
            "limit": limit,
        }
        url = self._url("/financials/search/screener/")
        response = await self.client.post_json(url, body, what="the stock screen")
        return DataResult(response.data, self.label, (response.url,))
