"""An async rate limiter: at most ``rate`` starts in any window of ``per`` seconds.

It keeps no asyncio primitive, so one instance can be shared by every event loop of the
process (SEC's fair-access limit is per client machine, not per loop). Each ``acquire``
reserves the earliest free slot synchronously, then sleeps until it; a cancelled waiter
simply wastes its slot, which errs on the polite side.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable


class AsyncRateLimiter:
    """Sliding-window limiter. ``clock`` and ``sleep`` are injectable for tests."""

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
        self._slots: deque[float] = deque()

    def reserve(self) -> float:
        """Book the next free slot; returns how many seconds to wait before starting."""
        now = self._clock()
        while self._slots and self._slots[0] <= now - self.per:
            self._slots.popleft()
        if len(self._slots) < self.rate:
            start = now
        else:
            start = max(now, self._slots[-self.rate] + self.per)
        self._slots.append(start)
        return start - now

    async def acquire(self) -> None:
        """Wait until this caller may start a request."""
        delay = self.reserve()
        if delay > 0:
            await self._sleep(delay)


# SEC asks every client to stay at or under 10 requests per second, across all its hosts.
SEC_RATE_LIMITER = AsyncRateLimiter(10, 1.0)
