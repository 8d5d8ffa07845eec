"""The data HTTP client: retries, Retry-After, error messages, cancellation; the rate limiter."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from dexter.data.base import (
    AuthError,
    DataError,
    NotFoundError,
    PlanError,
    RateLimitError,
    UpstreamError,
)
from dexter.data.http import HttpClient, RetryPolicy, ServiceInfo, clean_params, parse_retry_after
from dexter.data.ratelimit import AsyncRateLimiter
from dexter.testing.fakedata import FakeDataServer, Response

FD = ServiceInfo(name="Financial Datasets", key_env="FINANCIAL_DATASETS_API_KEY")
SEC = ServiceInfo(name="SEC EDGAR", forbidden_hint="Set SEC_EDGAR_USER_AGENT.")
FAST = RetryPolicy(max_retries=2, backoff_base=0.001, backoff_max=0.01, max_retry_after=0.05)
SECRET = "fd-secret-key-123"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeDataServer]:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    with FakeDataServer() as srv:
        yield srv


def client(service: ServiceInfo = FD, **kwargs: object) -> HttpClient:
    return HttpClient(service, headers={"x-api-key": SECRET}, retry=FAST, secrets=(SECRET,),
                      **kwargs)  # type: ignore[arg-type]


async def test_429_then_ok_is_retried_honouring_retry_after(server: FakeDataServer) -> None:
    server.route("/x", [Response(429, headers={"retry-after": "0.01"}), Response(body={"ok": 1})])
    http = client()
    got = await http.get_json(server.url + "/x", {"ticker": "AAPL"}, what="x")
    await http.aclose()
    assert got.data == {"ok": 1}
    assert len(server.requests_for("/x")) == 2
    assert got.url.endswith("/x?ticker=AAPL")


async def test_500_twice_then_ok_succeeds_but_three_failures_give_up(
        server: FakeDataServer) -> None:
    server.route("/flaky", [Response(500), Response(503), Response(body=[1])])
    http = client()
    assert (await http.get_json(server.url + "/flaky", what="flaky data")).data == [1]
    server.route("/down", Response(502))
    with pytest.raises(UpstreamError) as err:
        await http.get_json(server.url + "/down", what="the down data")
    await http.aclose()
    assert "HTTP 502" in str(err.value) and "3 attempts" in str(err.value)
    assert len(server.requests_for("/down")) == 3


async def test_persistent_429_says_rate_limited(server: FakeDataServer) -> None:
    server.route("/limited", Response(429, headers={"retry-after": "0"}))
    http = client()
    with pytest.raises(RateLimitError, match="rate limiting"):
        await http.get_json(server.url + "/limited", what="prices")
    await http.aclose()


@pytest.mark.parametrize(("status", "error", "words"), [
    (401, AuthError, "Check FINANCIAL_DATASETS_API_KEY"),
    (402, PlanError, "plan does not cover insider trades"),
    (403, PlanError, "plan does not cover insider trades"),
])
async def test_key_and_plan_errors_are_not_retried(
        server: FakeDataServer, status: int, error: type[DataError], words: str) -> None:
    server.route("/e", Response(status, {"error": f"nope {SECRET}"}))
    http = client()
    with pytest.raises(error) as err:
        await http.get_json(server.url + "/e", what="insider trades")
    await http.aclose()
    assert words in str(err.value)
    assert SECRET not in str(err.value)
    assert len(server.requests_for("/e")) == 1


async def test_sec_403_explains_the_user_agent_rule(server: FakeDataServer) -> None:
    server.route("/sec", Response(403, "<html>blocked</html>"))
    http = client(SEC)
    with pytest.raises(AuthError, match="SEC_EDGAR_USER_AGENT"):
        await http.get_json(server.url + "/sec", what="filings")
    await http.aclose()


async def test_404_with_ticker_suggests_a_search(server: FakeDataServer) -> None:
    server.route("/t", Response(404))
    http = client()
    with pytest.raises(NotFoundError) as err:
        await http.get_json(server.url + "/t", what="income statements", ticker="ZZZZ")
    with pytest.raises(NotFoundError, match="has no the index"):
        await http.get_json(server.url + "/t", what="the index")
    await http.aclose()
    assert "Unknown ticker 'ZZZZ'" in str(err.value) and "search" in str(err.value)


async def test_invalid_json_and_unreachable_host_are_clear(server: FakeDataServer) -> None:
    server.route("/html", Response(200, "<html>maintenance</html>"))
    http = client()
    with pytest.raises(UpstreamError, match="not JSON"):
        await http.get_json(server.url + "/html", what="news")
    with pytest.raises(UpstreamError, match="Could not reach"):
        await http.get_json("http://127.0.0.1:9/nothing", what="news")
    await http.aclose()


async def test_cancelling_a_slow_request_closes_the_connection(server: FakeDataServer) -> None:
    server.route("/slow", Response(body={"late": True}, delay=5.0))
    http = client()
    task = asyncio.create_task(http.get_json(server.url + "/slow", what="slow"))
    deadline = time.monotonic() + 30.0  # ceilings on waiting, not speed goals
    while not server.requests and time.monotonic() < deadline:
        await asyncio.sleep(0.02)  # cancel once the request is in flight (not before it is sent)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await http.aclose()
    while not server.disconnects and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert [r.path for r in server.disconnects] == ["/slow"]


def test_params_drop_none_repeat_lists_and_lowercase_booleans() -> None:
    assert clean_params({"a": None, "b": ["x", "y"], "c": True, "d": 3}) == [
        ("b", "x"), ("b", "y"), ("c", "true"), ("d", "3")]


def test_retry_after_accepts_seconds_and_http_dates() -> None:
    assert parse_retry_after("2.5") == 2.5
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:10 GMT", now=1445412480.0) == 10.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None


class FakeClock:
    """A clock that only moves when the code under test sleeps."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)  # let other tasks run, as a real sleep would


async def test_rate_limiter_gives_ten_slots_then_waits_a_window_after_the_first_response() -> None:
    clock = FakeClock()
    limiter = AsyncRateLimiter(10, 1.0, clock=clock, sleep=clock.sleep)
    for _ in range(10):
        await limiter.acquire()
    assert clock.sleeps == []
    clock.now = 0.3  # the first response arrives late (slow connection set-up)
    limiter.release()
    await limiter.acquire()  # the 11th starts a full window after that response
    assert clock.now == pytest.approx(1.3)


async def test_rate_limiter_waits_while_every_slot_is_in_flight() -> None:
    clock = FakeClock()
    limiter = AsyncRateLimiter(2, 1.0, clock=clock, sleep=clock.sleep)
    await limiter.acquire()
    await limiter.acquire()
    waiter = asyncio.ensure_future(limiter.acquire())
    for _ in range(5):
        await asyncio.sleep(0)
    assert not waiter.done() and clock.sleeps  # polling: no response has come back yet
    limiter.release()
    await asyncio.wait_for(waiter, 5)
    assert clock.now >= 1.0


async def test_a_cancelled_request_frees_its_slot() -> None:
    clock = FakeClock()
    limiter = AsyncRateLimiter(1, 1.0, clock=clock, sleep=clock.sleep)

    async def request() -> None:
        async with limiter.slot():
            await asyncio.Event().wait()

    task = asyncio.ensure_future(request())
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    clock.now = 5.0
    assert limiter.wait_time() == 0.0


async def test_rate_limited_client_sleeps_before_the_eleventh_request(
        server: FakeDataServer) -> None:
    clock = FakeClock()
    limiter = AsyncRateLimiter(10, 1.0, clock=clock, sleep=clock.sleep)
    server.route("/r", Response(body={}))
    http = client(SEC, rate_limiter=limiter)
    for _ in range(11):
        await http.get_json(server.url + "/r", what="r")
    await http.aclose()
    assert clock.sleeps == [1.0]  # the fake clock stood still: the first response was at 0
    assert len(server.requests_for("/r")) == 11


async def test_sec_limit_holds_as_the_server_counts_arrivals(server: FakeDataServer) -> None:
    """25 concurrent requests over real loopback connections, each opening its own client
    (connection set-up delays some): no one-second window at the server holds more than 10."""
    server.route("/r", Response(body={}))
    limiter = AsyncRateLimiter(10, 1.0)

    async def one() -> None:
        http = client(SEC, rate_limiter=limiter)
        try:
            await http.get_json(server.url + "/r", what="r")
        finally:
            await http.aclose()

    await asyncio.gather(*(one() for _ in range(25)))
    arrivals = sorted(r.at for r in server.requests_for("/r"))
    assert len(arrivals) == 25
    assert max(sum(1 for a in arrivals if t <= a < t + 1.0) for t in arrivals) <= 10
