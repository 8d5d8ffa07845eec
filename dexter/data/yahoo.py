"""Yahoo Finance's chart endpoint: a keyless source of daily, weekly and monthly prices.

One endpoint (host configurable for tests): ``{yahoo_chart_base_url}/v8/finance/chart/
{SYMBOL}?period1=..&period2=..&interval=1d|1wk|1mo``. Its reply is ``chart.result[0]`` with
``meta`` (currency, exchange, ``regularMarketPrice``...), ``timestamp`` (bar starts, epoch
seconds) and ``indicators.quote[0]`` (parallel ``open``/``high``/``low``/``close``/``volume``
lists) plus ``indicators.adjclose[0].adjclose``; or ``chart.error`` for an unknown symbol.
Real replies hold ``null`` bars (a holiday, a halted day, a bar not yet closed).

The endpoint is unofficial: Yahoo documents no API and publishes no terms for it, it has
switched off sibling endpoints before, and it answers HTTP 429 to clients that send no
browser-like User-Agent or ask too often. So every result is labelled as such, replies are
cached, requests share a modest process-wide rate limiter, and every failure tells the user
that a Financial Datasets key gives a supported price source.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Final
from urllib.parse import quote

from dexter.data.base import (
    AuthError,
    Capability,
    DataError,
    DataResult,
    NotFoundError,
    PriceInterval,
    UnsupportedError,
    UpstreamError,
)
from dexter.data.cache import TTL_15M, TTL_24H, is_closed_window
from dexter.data.fetching import CachePolicy
from dexter.data.http import ServiceInfo
from dexter.data.http_source import HttpSource, SourceConnection
from dexter.data.ratelimit import AsyncRateLimiter

LABEL: Final = "Yahoo Finance chart API (keyless, unofficial)"
CACHE_NAMESPACE: Final = "yahoo/chart"
SERVICE = ServiceInfo(
    name="Yahoo Finance (chart API)",
    forbidden_hint="Yahoo refuses some clients; set tools.yahoo_user_agent to a browser-like "
                   "User-Agent, or set FINANCIAL_DATASETS_API_KEY.",
)
KEY_HINT: Final = ("The keyless Yahoo Finance chart API is unofficial and may refuse, "
                   "rate-limit or change without notice; set FINANCIAL_DATASETS_API_KEY to get "
                   "prices from Financial Datasets instead.")
TERMS_NOTE: Final = ("Prices from Yahoo Finance's unofficial chart endpoint (no key): for "
                     "personal research; close is split-adjusted, adj_close also adjusts for "
                     "dividends.")
INTERVALS: Final[dict[str, str]] = {"day": "1d", "week": "1wk", "month": "1mo"}
SNAPSHOT_TTL: Final = 60.0
"""Seconds a latest-price reply is reused: the quote is delayed anyway, and asking again
within a minute would only spend the rate limit."""

YAHOO_RATE_LIMITER = AsyncRateLimiter(2, 1.0)
"""Yahoo publishes no limit; two requests a second for the whole process stays well under
what it is seen to tolerate."""

# Class shares: BRK.B and BRK/B are BRK-B on Yahoo. Exchange suffixes (.L, .F, .TO, .SS) stay.
_SHARE_CLASSES = frozenset("ABC")


def yahoo_symbol(ticker: str) -> str:
    """Upper-case; ``BRK.B`` / ``BRK/B`` -> ``BRK-B``; exchange suffixes such as ``.L`` kept."""
    cleaned = ticker.strip().upper().replace("/", "-")
    if not cleaned:
        raise DataError("A ticker is required (e.g. AAPL). Give the company's stock symbol.")
    base, dot, suffix = cleaned.rpartition(".")
    if dot and base and suffix in _SHARE_CLASSES:
        cleaned = f"{base}-{suffix}"
    return cleaned


def _epoch(day: dt.date) -> int:
    return int(dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).timestamp())


def _iso_date(text: str, name: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise DataError(f"{name} '{text}' is not an ISO date (YYYY-MM-DD).") from None


def _number(value: Any) -> float | int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value


class YahooChartSource(HttpSource):
    """Daily/weekly/monthly OHLCV and the latest (delayed) price from Yahoo's chart API."""

    name = "yahoo_chart"
    label = LABEL
    capabilities = frozenset({Capability.PRICES})
    default_rate_limiter = YAHOO_RATE_LIMITER

    def __init__(self, connection: SourceConnection, *, user_agent: str) -> None:
        if not user_agent.strip():
            raise ValueError("The Yahoo Finance chart API refuses requests without a "
                             "User-Agent; set tools.yahoo_user_agent.")
        super().__init__(connection, SERVICE, headers={"User-Agent": user_agent,
                                                       "Accept": "application/json"})

    def _url(self, symbol: str) -> str:
        return f"{self.base_url}/v8/finance/chart/{quote(symbol, safe='')}"

    async def _chart(self, symbol: str, params: dict[str, Any], *, policy: CachePolicy,
                     what: str) -> tuple[dict[str, Any], str]:
        """The reply's ``chart.result[0]`` and the request URL; every failure as a DataError
        that says what to do."""
        try:
            data, url = await self._fetch(self._url(symbol), namespace=CACHE_NAMESPACE,
                                          policy=policy, what=what, params=params,
                                          ticker=symbol)
        except NotFoundError as exc:
            raise NotFoundError(f"Unknown ticker '{symbol}' at Yahoo Finance (HTTP 404 for "
                                f"{what}). Check the symbol; Yahoo writes class shares with a "
                                f"dash (BRK-B) and foreign listings with a suffix (7203.T).",
                                status=exc.status, url=exc.url) from None
        except AuthError as exc:
            raise AuthError(f"Yahoo Finance refused the request for {what} (HTTP "
                            f"{exc.status}). {KEY_HINT}", status=exc.status, url=exc.url) \
                from None
        except DataError as exc:
            raise type(exc)(f"{exc.message} {KEY_HINT}", status=exc.status, url=exc.url) \
                from None
        try:
            return self._result(data, symbol, what, url), url
        except DataError:
            # a JSON reply of the wrong shape was cached like a good one: do not keep it
            self._forget(self._url(symbol), namespace=CACHE_NAMESPACE, params=params)
            raise

    @staticmethod
    def _result(data: Any, symbol: str, what: str, url: str) -> dict[str, Any]:
        chart = data.get("chart") if isinstance(data, dict) else None
        if not isinstance(chart, dict):
            raise UpstreamError(f"Yahoo Finance sent a reply without a 'chart' object for "
                                f"{what}. {KEY_HINT}", url=url)
        error = chart.get("error")
        if error:
            detail = (error.get("description") or error.get("code") if isinstance(error, dict)
                      else str(error))
            raise NotFoundError(f"Yahoo Finance has no {what}: {str(detail)[:200]}. Check the "
                                f"symbol '{symbol}'.", url=url)
        results = chart.get("result")
        if not isinstance(results, list) or not results or not isinstance(results[0], dict):
            raise UpstreamError(f"Yahoo Finance sent an empty chart for {what}. {KEY_HINT}",
                                url=url)
        result: dict[str, Any] = results[0]
        if not isinstance(result.get("meta"), dict):
            raise UpstreamError(f"Yahoo Finance's chart for {what} has no 'meta' block. "
                                f"{KEY_HINT}", url=url)
        return result

    @staticmethod
    def _bars(result: dict[str, Any], what: str, url: str) -> list[dict[str, Any]]:
        """Rows ``date, open, high, low, close, adj_close, volume``; a bar whose close is
        null keeps ``close: None`` here (the caller drops it and says so)."""
        stamps = result.get("timestamp")
        if stamps is None:
            return []  # no bar in the window (a weekend, a holiday)
        indicators = result.get("indicators")
        quotes = indicators.get("quote") if isinstance(indicators, dict) else None
        quote_block = quotes[0] if isinstance(quotes, list) and quotes else None
        if not isinstance(stamps, list) or not isinstance(quote_block, dict):
            raise UpstreamError(f"Yahoo Finance's chart for {what} has no timestamp list or "
                                f"no indicators.quote block. {KEY_HINT}", url=url)
        columns = {name: quote_block.get(name) for name in ("open", "high", "low", "close",
                                                             "volume")}
        adj_blocks = indicators.get("adjclose") if isinstance(indicators, dict) else None
        adj = (adj_blocks[0].get("adjclose") if isinstance(adj_blocks, list) and adj_blocks
               and isinstance(adj_blocks[0], dict) else None)
        if adj is not None:
            columns["adj_close"] = adj
        for name, values in columns.items():
            if values is not None and (not isinstance(values, list)
                                       or len(values) != len(stamps)):
                raise UpstreamError(f"Yahoo Finance's chart for {what}: the '{name}' list does "
                                    f"not match the {len(stamps)} timestamps. {KEY_HINT}",
                                    url=url)
        meta = result["meta"]
        # Yahoo sends float32 values (312.6099853515625); priceHint is the decimals it shows
        hint = meta.get("priceHint")
        digits = hint if isinstance(hint, int) and 0 <= hint <= 8 else 2
        offset = meta.get("gmtoffset")
        shift = dt.timedelta(seconds=offset if isinstance(offset, int) else 0)
        rows: list[dict[str, Any]] = []
        for i, stamp in enumerate(stamps):
            if not isinstance(stamp, int | float):
                continue
            day = (dt.datetime.fromtimestamp(stamp, dt.UTC) + shift).date()
            row: dict[str, Any] = {"date": day.isoformat()}
            for name in ("open", "high", "low", "close", "adj_close", "volume"):
                values = columns.get(name)
                value = _number(values[i]) if isinstance(values, list) else None
                if isinstance(value, float) and name != "volume":
                    value = round(value, digits + (2 if name == "adj_close" else 0))
                row[name] = value
            rows.append(row)
        return rows

    async def prices(
        self, ticker: str, *, interval: PriceInterval = "day", start_date: str, end_date: str
    ) -> DataResult:
        """Bars between two ISO dates, both included; cached 24h once the window is closed
        (Yahoo re-adjusts old bars after a split), 15 minutes while it is open."""
        symbol = yahoo_symbol(ticker)
        code = INTERVALS.get(interval)
        if code is None:
            raise DataError(f"The Yahoo Finance chart API has no {interval} bars (day, week "
                            f"and month only). Ask for monthly prices and take each year's "
                            f"last close, or set FINANCIAL_DATASETS_API_KEY.")
        start, end = _iso_date(start_date, "start_date"), _iso_date(end_date, "end_date")
        if start > end:
            start, end = end, start
        what = f"{interval} prices for {symbol}"
        policy = CachePolicy(ttl=TTL_24H if is_closed_window(end.isoformat(), self._today)
                             else TTL_15M)
        params = {"period1": _epoch(start), "period2": _epoch(end + dt.timedelta(days=1)),
                  "interval": code, "includeAdjustedClose": "true", "events": "div,split"}
        result, url = await self._chart(symbol, params, policy=policy, what=what)
        rows = self._bars(result, what, url)
        kept = [r for r in rows if r["close"] is not None
                and start.isoformat() <= r["date"] <= end.isoformat()]
        empty_days = [r["date"] for r in rows if r["close"] is None]
        notes = [TERMS_NOTE]
        if empty_days:
            shown = ", ".join(empty_days[:5]) + (" ..." if len(empty_days) > 5 else "")
            notes.append(f"Skipped {len(empty_days)} bar(s) that Yahoo sent without prices "
                         f"(null values: {shown}); no value was filled in.")
        meta = result["meta"]
        data = {
            "ticker": symbol,
            "source": LABEL,
            "currency": meta.get("currency"),
            "exchange": meta.get("fullExchangeName") or meta.get("exchangeName"),
            "interval": interval,
            "prices": kept,
        }
        return DataResult(data, LABEL, (url,), tuple(notes))

    async def price_snapshot(self, ticker: str) -> DataResult:
        """The latest (delayed) price, with the change from the previous close, from the
        same chart endpoint (five daily bars; reused for a minute)."""
        symbol = yahoo_symbol(ticker)
        what = f"the price of {symbol}"
        result, url = await self._chart(symbol, {"range": "5d", "interval": "1d"},
                                        policy=CachePolicy(ttl=SNAPSHOT_TTL), what=what)
        meta = result["meta"]
        closes = [r["close"] for r in self._bars(result, what, url) if r["close"] is not None]
        price = _number(meta.get("regularMarketPrice"))
        if price is None:
            if not closes:
                raise UpstreamError(f"Yahoo Finance's chart for {what} holds no price. "
                                    f"{KEY_HINT}", url=url)
            price = closes[-1]
        # the last bar is the latest session; the close before it is the previous close
        previous = closes[-2] if len(closes) >= 2 else _number(
            meta.get("chartPreviousClose") or meta.get("previousClose"))
        when = meta.get("regularMarketTime")
        snapshot: dict[str, Any] = {
            "ticker": symbol,
            "source": LABEL,
            "price": price,
            "previous_close": previous,
            "day_change": round(price - previous, 4) if previous else None,
            "day_change_percent": round((price - previous) / previous * 100, 4)
            if previous else None,
            "currency": meta.get("currency"),
            "exchange": meta.get("fullExchangeName") or meta.get("exchangeName"),
            "time": dt.datetime.fromtimestamp(when, dt.UTC).isoformat().replace("+00:00", "Z")
            if isinstance(when, int) else None,
        }
        return DataResult(snapshot, LABEL, (url,), (
            TERMS_NOTE, "The price may be delayed; 'time' is when Yahoo last saw a trade."))

    async def stock_tickers(self) -> DataResult:
        """Yahoo gives no ticker list; say what to do instead."""
        raise UnsupportedError(
            "The Yahoo Finance chart API has no list of tickers; any Yahoo symbol (AAPL, "
            "BRK-B, 7203.T) works with get_stock_prices. The list needs "
            "FINANCIAL_DATASETS_API_KEY.", capability=Capability.PRICES)
