"""An async rate limiter that holds as the *server* counts: at most ``rate`` requests
arrive in any window of ``per`` seconds.

A client cannot see when its request reaches the server; it only knows the arrival lies
between the moment it started the request and the moment the response came back
(connection set-up can delay the first request by a large part of a second, so spacing
the *starts* one second apart lets 11 arrive within 0.7 s). So every request holds its slot
while it is in flight and for ``per`` seconds after its response; a new request may start
only while fewer than ``rate`` slots are held. Then any ``rate + 1`` arrivals span at least
``per`` seconds, whatever the network or the machine's load does.

It keeps no asyncio primitive, so one instance can be shared by every event loop of the
process (SEC's fair-access limit is per client machine, not per loop). A waiter that is
cancelled holds nothing; a request that is cancelled releases its slot like any other.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

# How often a waiter looks again while every slot is held by a request still in flight.
POLL_SECONDS = 0.02


class AsyncRateLimiter:
    """In-flight plus recently finished requests, at most ``rate`` (``clock``/``sleep``
    are injectable for tests)."""

    def __init__(
        self,
        rate: int,
        per: float = 1.0,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if rate < 1 or per <= 0:
            raise ValueError("rate must be at least 1 and per must be positive")
        self.rate = rate
        self.per = per
        self._clock = clock
        self._sleep = sleep
        self._in_flight = 0
        self._finished: deque[float] = deque()

    def wait_time(self) -> float:
        """Seconds until a slot is free (0 when one is free now)."""
        now = self._clock()
        while self._finished and self._finished[0] <= now - self.per:
            self._finished.popleft()
        if self._in_flight + len(self._finished) < self.rate:
            return 0.0
        if self._finished:
            return max(self._finished[0] + self.per - now, 1e-6)
        return POLL_SECONDS

    async def acquire(self) -> None:
        """Wait for a free slot and take it; call :meth:`release` when the response is in."""
        while (delay := self.wait_time()) > 0:
            await self._sleep(delay)
        self._in_flight += 1

    def release(self) -> None:
        """The request's response arrived (or it failed): its slot frees ``per`` s from now."""
        self._in_flight = max(0, self._in_flight - 1)
        self._finished.append(self._clock())

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """``async with limiter.slot(): <one request>``."""
        await self.acquire()
        try:
            yield
        finally:
            self.release()


# SEC asks every client to stay at or under 10 requests per second, across all its hosts.
SEC_RATE_LIMITER = AsyncRateLimiter(10, 1.0)
