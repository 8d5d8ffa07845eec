"""Keyless prices from Yahoo Finance's chart endpoint, offline against real recorded replies
(tests/fixtures/prices-real) served by the fake data server: the bars and the latest price,
null bars, the label on every result, the cache, the rate limiter, every failure's message
and the router's fallback."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dexter.config import ConfigError, Settings, load_settings
from dexter.data.base import DataError, NotFoundError, RateLimitError, UpstreamError
from dexter.data.cache import DiskCache
from dexter.data.http import RetryPolicy
from dexter.data.http_source import SourceConnection
from dexter.data.ratelimit import AsyncRateLimiter
from dexter.data.yahoo import LABEL, YAHOO_RATE_LIMITER, YahooChartSource, yahoo_symbol
from dexter.testing.fakedata import (
    REAL_PRICES,
    YAHOO_CHART_PATH,
    FakeDataServer,
    Response,
    point_settings_at,
)
from dexter.tools.base import ToolContext, ToolOutput
from dexter.tools.finance import RouterConfig, SourceOptions, finance_tools
from dexter.tools.finance.router import QueryArgs
from tests.test_finance_tools import KEYED, ScriptedModel

FAST = RetryPolicy(max_retries=1, backoff_base=0.001)
TODAY = dt.date(2025, 3, 1)
GS_WINDOW = {"start_date": "2023-10-02", "end_date": "2023-10-09"}
REAL = REAL_PRICES / "v8" / "finance" / "chart"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeDataServer]:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.delenv("FINANCIAL_DATASETS_API_KEY", raising=False)
    with FakeDataServer() as srv:
        yield srv


def source(server: FakeDataServer, *, cache: DiskCache | None = None,
           limiter: AsyncRateLimiter | None = None) -> YahooChartSource:
    return YahooChartSource(
        SourceConnection(server.url, cache, retry=FAST, rate_limiter=limiter, today=TODAY),
        user_agent=Settings().tools.yahoo_user_agent)


# --------------------------------------------------------------------------------------------
# The source
# --------------------------------------------------------------------------------------------


async def test_a_real_reply_becomes_labelled_daily_bars(server: FakeDataServer) -> None:
    src = source(server)
    result = await src.prices("GS", interval="day", **GS_WINDOW)
    await src.aclose()
    assert result.source == LABEL == "Yahoo Finance chart API (keyless, unofficial)"
    data = result.data
    assert (data["ticker"], data["currency"], data["source"]) == ("GS", "USD", LABEL)
    bars = data["prices"]
    assert [b["date"] for b in bars] == ["2023-10-02", "2023-10-03", "2023-10-04",
                                         "2023-10-05", "2023-10-06", "2023-10-09"]
    assert bars[0]["close"] == 318.5 and bars[0]["volume"] == 1303800
    assert bars[-1]["close"] == 312.61  # 312.6099853515625 on the wire, priceHint 2
    assert bars[-1]["adj_close"] == bars[-1]["close"]
    assert "unofficial" in result.notes[0]
    (request,) = server.requests_for(f"{YAHOO_CHART_PATH}GS")
    # the window is both days included, as epoch seconds; a browser-like User-Agent
    assert request.param("period1") == "1696204800"  # 2023-10-02 00:00 UTC
    assert request.param("period2") == "1696896000"  # 2023-10-10 00:00 UTC
    assert request.param("interval") == "1d"
    assert request.headers["user-agent"].startswith("Mozilla/5.0")
    assert result.urls == (f"{server.url}{YAHOO_CHART_PATH}GS?period1=1696204800&period2="
                           f"1696896000&interval=1d&includeAdjustedClose=true&events=div%2Csplit",)


async def test_bars_outside_the_window_asked_for_are_left_out(server: FakeDataServer) -> None:
    src = source(server)
    result = await src.prices("GS", interval="week", start_date="2023-10-04",
                              end_date="2023-10-05")
    await src.aclose()
    assert [b["date"] for b in result.data["prices"]] == ["2023-10-04", "2023-10-05"]
    assert server.requests[-1].param("interval") == "1wk"


async def test_null_bars_of_a_real_reply_are_skipped_and_named(server: FakeDataServer) -> None:
    src = source(server)
    result = await src.prices("600497.ss", start_date="2017-11-01", end_date="2017-11-30")
    await src.aclose()
    bars = result.data["prices"]
    assert len(bars) == 8 and bars[0]["date"] == "2017-11-16"
    assert all(b["close"] is not None for b in bars)
    assert result.data["currency"] == "CNY"
    assert ("Skipped 1 bar(s) that Yahoo sent without prices (null values: 2017-11-15); no "
            "value was filled in.") in result.notes


async def test_the_latest_price_comes_from_the_same_endpoint(server: FakeDataServer) -> None:
    src = source(server)
    result = await src.price_snapshot("gs")
    await src.aclose()
    snap = result.data
    assert result.source == LABEL and snap["source"] == LABEL
    assert snap["price"] == 312.61
    # the close before the last session's bar, not chartPreviousClose (the window's start)
    assert snap["previous_close"] == 312.48
    assert snap["day_change"] == 0.13
    assert snap["time"] == "2023-10-09T20:00:02Z"
    (request,) = server.requests_for(f"{YAHOO_CHART_PATH}GS")
    assert (request.param("range"), request.param("interval")) == ("5d", "1d")


async def test_replies_are_cached(server: FakeDataServer, tmp_path: Path) -> None:
    cache = DiskCache(tmp_path / "cache")
    first = source(server, cache=cache)
    await first.prices("GS", **GS_WINDOW)
    await first.aclose()
    second = source(server, cache=cache)  # another tool call, same cache
    again = await second.prices("GS", **GS_WINDOW)
    await second.aclose()
    assert len(server.requests_for(f"{YAHOO_CHART_PATH}GS")) == 1
    assert again.data["prices"][0]["close"] == 318.5 and again.source == LABEL


async def test_an_unusable_reply_is_not_kept_in_the_cache(server: FakeDataServer,
                                                           tmp_path: Path) -> None:
    cache = DiskCache(tmp_path / "cache")
    server.route(f"{YAHOO_CHART_PATH}GS", [
        Response(body={"chart": {"result": [], "error": None}}),
        Response(body=(REAL / "GS.json").read_bytes(), content_type="application/json")])
    src = source(server, cache=cache)
    with pytest.raises(UpstreamError):
        await src.prices("GS", **GS_WINDOW)
    again = await src.prices("GS", **GS_WINDOW)  # asks again instead of the cached reply
    await src.aclose()
    assert len(server.requests_for(f"{YAHOO_CHART_PATH}GS")) == 2
    assert again.data["prices"][0]["close"] == 318.5


async def test_requests_wait_for_the_shared_rate_limiter(server: FakeDataServer) -> None:
    now = [0.0]
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        now[0] += seconds

    limiter = AsyncRateLimiter(1, 5.0, clock=lambda: now[0], sleep=sleep)
    src = source(server, limiter=limiter)
    await src.prices("GS", **GS_WINDOW)
    await src.price_snapshot("GS")
    await src.aclose()
    assert len(server.requests) == 2
    assert waits and sum(waits) == pytest.approx(5.0)
    # by default every Yahoo source shares one process-wide limiter
    default = YahooChartSource(SourceConnection(server.url, None), user_agent="Mozilla/5.0")
    assert default.client._limiter is YAHOO_RATE_LIMITER
    await default.aclose()


@pytest.mark.parametrize(("reply", "error", "says"), [
    (Response(429, "Edge: Too Many Requests", content_type="text/plain"), RateLimitError,
     "rate limiting requests (HTTP 429)"),
    (Response(503), UpstreamError, "failed with HTTP 503"),
    (Response(body="<html>consent</html>"), UpstreamError, "a reply that is not JSON"),
    (Response(body={"finance": {"result": None}}), UpstreamError, "without a 'chart' object"),
    (Response(body={"chart": {"result": [], "error": None}}), UpstreamError, "empty chart"),
    (Response(body={"chart": {"result": [{"meta": {}, "timestamp": [1, 2],
                                          "indicators": {"quote": [{"close": [1.0]}]}}]}}),
     UpstreamError, "the 'close' list does not match the 2 timestamps"),
    (Response(body={"chart": {"result": [{"meta": {}, "timestamp": [1]}]}}), UpstreamError,
     "no indicators.quote block"),
], ids=["429", "503", "not-json", "no-chart", "empty", "ragged", "no-quote"])
async def test_failures_say_what_failed_and_what_to_do(
        server: FakeDataServer, reply: Response, error: type[DataError], says: str) -> None:
    server.route(f"{YAHOO_CHART_PATH}GS", reply)
    src = source(server)
    with pytest.raises(error) as err:
        await src.prices("GS", **GS_WINDOW)
    await src.aclose()
    assert says in str(err.value)
    assert "set FINANCIAL_DATASETS_API_KEY" in str(err.value)


async def test_an_unknown_ticker_is_named(server: FakeDataServer) -> None:
    src = source(server)
    with pytest.raises(NotFoundError) as err:
        await src.prices("NOSUCH", **GS_WINDOW)
    server.route(f"{YAHOO_CHART_PATH}GS", Response(body={"chart": {"result": None, "error": {
        "code": "Not Found", "description": "No data found, symbol may be delisted"}}}))
    with pytest.raises(NotFoundError) as err200:
        await src.price_snapshot("GS")
    await src.aclose()
    assert str(err.value).startswith("Unknown ticker 'NOSUCH' at Yahoo Finance (HTTP 404")
    assert "No data found, symbol may be delisted" in str(err200.value)


async def test_yearly_bars_are_refused_with_what_to_ask_instead(server: FakeDataServer) -> None:
    src = source(server)
    with pytest.raises(DataError) as err:
        await src.prices("GS", interval="year", **GS_WINDOW)
    await src.aclose()
    assert "Ask for monthly prices" in str(err.value)
    assert server.requests == []


@pytest.mark.parametrize(("given", "sent"), [
    ("aapl", "AAPL"), ("BRK.B", "BRK-B"), ("brk/b", "BRK-B"), ("VOD.L", "VOD.L"),
    ("600497.SS", "600497.SS"), ("SAP.F", "SAP.F"),
])
def test_symbols_are_written_as_yahoo_writes_them(given: str, sent: str) -> None:
    assert yahoo_symbol(given) == sent


# --------------------------------------------------------------------------------------------
# Through get_market_data
# --------------------------------------------------------------------------------------------


def market_data(settings: Settings, env: dict[str, str] | None = None) -> Any:
    built = finance_tools(settings, config=RouterConfig(),
                          source_options=SourceOptions(retry=FAST, sec_rate_limiter=None,
                                                       yahoo_rate_limiter=None, today=TODAY),
                          env=env if env is not None else {})
    return {t.name: t for t in built}["get_market_data"]


async def ask(settings: Settings, model: ScriptedModel, query: str,
              env: dict[str, str] | None = None) -> ToolOutput:
    ctx = ToolContext(settings=settings, cwd=Path.cwd(), home=settings.home_path,
                      progress=lambda _: None, fast_model=model)
    out = await market_data(settings, env).run(QueryArgs(query=query), ctx)
    assert isinstance(out, ToolOutput)
    return out


@pytest.fixture
def settings(server: FakeDataServer, tmp_path: Path) -> Settings:
    return point_settings_at(Settings(), server, tmp_path / "home")


async def test_without_a_key_market_data_offers_keyless_prices(settings: Settings) -> None:
    model = ScriptedModel([("get_stock_prices", {"ticker": "GS", **GS_WINDOW}),
                           ("get_stock_price", {"ticker": "GS"})])
    out = await ask(settings, model, "Goldman Sachs prices in early October 2023")
    # keyless: Yahoo's prices, and SEC EDGAR's Form 4s and 13F reports
    assert sorted(model.offered()) == ["get_insider_names", "get_insider_ownership",
                                       "get_insider_trades", "get_institutional_holdings",
                                       "get_stock_price", "get_stock_prices"]
    # the unavailable block names what needs the key; nothing says prices need it
    system = model.requests[0].system
    assert "get_company_news" in system and "get_stock_prices" not in system.split(
        "Not available")[1]
    body = json.loads(out.content)
    entry = body["data"]["prices[GS, day, 2023-10-02, 2023-10-09]"]
    assert entry["source"] == LABEL
    assert "| 2023-10-09 | 308.9 | 313.48 | 308.37 | 312.61 | 312.61 | 1,094,400 |" in entry["data"]
    assert "source: Yahoo Finance chart API (keyless, unofficial)" in entry["data"]
    assert "- price: 312.61\n- previous_close: 312.48" in body["data"]["price_snapshot[GS]"]["data"]
    assert out.title is not None and out.title.endswith(" · " + LABEL)
    assert out.source_urls and all("/v8/finance/chart/GS" in u for u in out.source_urls)
    # the ledger keeps the bars as numbers, in dollars, oldest first (reports, charts)
    table = next(t for t in out.tables if t.title.startswith("prices[GS"))
    assert table.is_time_series and table.index[-1] == "2023-10-09"
    close = next(c for c in table.columns if c.name == "close")
    assert (close.unit, close.values[-1]) == ("USD", 312.61)


async def test_a_failing_keyless_source_says_to_set_the_key(settings: Settings,
                                                            server: FakeDataServer) -> None:
    server.route(f"{YAHOO_CHART_PATH}GS", Response(503))
    model = ScriptedModel([("get_stock_price", {"ticker": "GS"})])
    out = await ask(settings, model, "GS price")
    assert out.is_error
    assert out.content.startswith("Yahoo Finance (chart API) failed with HTTP 503 for the "
                                  "price of GS after 2 attempts.")
    assert "set FINANCIAL_DATASETS_API_KEY to get prices from Financial Datasets" in out.content


async def test_with_a_key_a_plan_without_prices_falls_back_to_yahoo(
        settings: Settings, server: FakeDataServer) -> None:
    server.route("/prices/", Response(402, {"error": "upgrade your plan"}))
    model = ScriptedModel([("get_stock_prices", {"ticker": "GS", **GS_WINDOW})])
    out = await ask(settings, model, "GS prices", env=KEYED)
    entry = json.loads(out.content)["data"]["prices[GS, day, 2023-10-02, 2023-10-09]"]
    assert entry["source"] == LABEL
    assert entry["notes"][0].startswith(f"Fell back to {LABEL}: Your Financial Datasets plan "
                                        f"does not cover")
    assert len(server.requests_for("/prices/")) == 1


async def test_the_switch_turns_the_keyless_source_off(settings: Settings,
                                                       server: FakeDataServer) -> None:
    settings.tools.keyless_prices = False
    model = ScriptedModel([("get_stock_prices", {"ticker": "GS", **GS_WINDOW})])
    out = await ask(settings, model, "GS prices", env=KEYED)
    assert not any(r.path.startswith(YAHOO_CHART_PATH) for r in server.requests)
    assert "Yahoo" not in out.content


def test_the_switch_and_the_url_come_from_the_environment(tmp_path: Path) -> None:
    empty = tmp_path / "config.toml"
    empty.write_text("")
    env = {"DEXTER_CONFIG": str(empty), "DEXTER_KEYLESS_PRICES": "false",
           "YAHOO_CHART_BASE_URL": "http://127.0.0.1:9", "YAHOO_USER_AGENT": "Mozilla/5.0 test"}
    settings = load_settings(env=env)
    assert settings.tools.keyless_prices is False
    assert settings.tools.yahoo_chart_base_url == "http://127.0.0.1:9"
    assert settings.tools.yahoo_user_agent == "Mozilla/5.0 test"
    with pytest.raises(ConfigError) as err:
        load_settings(env={**env, "YAHOO_CHART_BASE_URL": "finance.yahoo.com"})
    assert "YAHOO_CHART_BASE_URL" in str(err.value)


def test_the_tool_descriptions_say_prices_need_no_key() -> None:
    """The main model reads these: prices are keyless, and without ratios it computes the
    multiples from the price and the reported shares."""
    by_name = {t.name: t for t in finance_tools(Settings())}
    market = by_name["get_market_data"].description
    assert "Stock prices need no key (Yahoo Finance)" in market
    assert "Needs FINANCIAL_DATASETS_API_KEY." not in market
    assert "compute multiples from get_market_data's price" in by_name["get_financials"].description
