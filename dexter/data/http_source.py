"""What the HTTP data sources share: connection settings and the constructor that uses them.

``SourceConnection`` says where a source is and how to reach it: base URL, disk cache,
retry policy, timeout, rate limiter and today's date. ``HttpSource`` turns it into an
``HttpClient`` and offers the cached GET every source makes. The wire format (service name
in errors, headers and keys, paths, cache namespaces, what a reply must hold) stays with
each source.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, ClassVar, Final, Literal

from dexter.data.base import DataSource
from dexter.data.cache import DiskCache
from dexter.data.fetching import CachePolicy, cache_key, cached_get
from dexter.data.http import DEFAULT_RETRY, HttpClient, Params, RetryPolicy, ServiceInfo
from dexter.data.ratelimit import AsyncRateLimiter


class _SourceDefault(Enum):
    LIMITER = "the source's own rate limiter"


SOURCE_LIMITER: Final = _SourceDefault.LIMITER
"""``SourceConnection.rate_limiter`` default: the source's ``default_rate_limiter``."""


@dataclass(frozen=True, slots=True)
class SourceConnection:
    """Where a source is and how to reach it; no headers, keys or paths.

    ``rate_limiter``: a shared limiter, ``None`` for none, or ``SOURCE_LIMITER`` for the
    source's own default (SEC EDGAR: the process-wide SEC limiter; others: none).
    ``today``: the date to reason with (tests pin it); ``None`` means the real date.
    """

    base_url: str
    cache: DiskCache | None
    retry: RetryPolicy = DEFAULT_RETRY
    timeout: float = 30.0
    rate_limiter: AsyncRateLimiter | Literal[_SourceDefault.LIMITER] | None = SOURCE_LIMITER
    today: dt.date | None = None


class HttpSource(DataSource):
    """A data source over HTTP: ``base_url`` (no trailing slash), the cache, ``client``.

    A subclass checks its own settings, then calls ``__init__`` with its ``ServiceInfo``
    and request headers; it may set ``default_rate_limiter``.
    """

    default_rate_limiter: ClassVar[AsyncRateLimiter | None] = None

    def __init__(
        self,
        connection: SourceConnection,
        service: ServiceInfo,
        *,
        headers: Mapping[str, str],
        secrets: tuple[str, ...] = (),
    ) -> None:
        limiter = connection.rate_limiter
        if isinstance(limiter, _SourceDefault):
            limiter = self.default_rate_limiter
        self.base_url = connection.base_url.rstrip("/")
        self._cache = connection.cache
        self._today = connection.today
        self.client = HttpClient(
            service, headers=headers, timeout=connection.timeout, retry=connection.retry,
            rate_limiter=limiter, secrets=secrets,
        )

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self.client.aclose()

    def _date(self) -> dt.date:
        return self._today or dt.date.today()

    async def _fetch(
        self, url: str, *, namespace: str, policy: CachePolicy, what: str,
        params: Params | None = None, ticker: str | None = None,
        key_extra: dict[str, Any] | None = None, as_json: bool = True,
    ) -> tuple[Any, str]:
        """GET ``url`` through the cache (see ``cached_get``): the data (parsed JSON, or
        the text with ``as_json=False``) and the full URL."""
        response = await cached_get(
            self.client, self._cache, namespace=namespace, url=url, params=params,
            policy=policy, what=what, ticker=ticker, key_extra=key_extra, as_json=as_json,
        )
        return response.data, response.url

    def _forget(self, url: str, *, namespace: str, params: Params | None = None,
                key_extra: dict[str, Any] | None = None) -> None:
        """Drop a cached reply that turned out unusable, so the next call asks again."""
        if self._cache is not None:
            self._cache.delete(namespace, cache_key(url, params, key_extra))
