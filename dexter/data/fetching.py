"""Cached GET: look in the disk cache, else fetch and store with the endpoint's TTL."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dexter.data.cache import DiskCache
from dexter.data.http import HttpClient, HttpResponse, Params


@dataclass(frozen=True, slots=True)
class CachePolicy:
    """Whether and how long to cache. ``ttl=None`` with ``enabled`` means forever."""

    enabled: bool = True
    ttl: float | None = None


NO_CACHE = CachePolicy(enabled=False)


def cache_key(url: str, params: Params | None,
              key_extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The cache key of a GET: its URL, ``key_extra`` (not sent) and its parameters."""
    return {"_url": url, **(key_extra or {}), **dict(params or {})}


async def cached_get(
    client: HttpClient,
    cache: DiskCache | None,
    *,
    namespace: str,
    url: str,
    params: Params | None,
    policy: CachePolicy,
    what: str,
    ticker: str | None = None,
    as_json: bool = True,
    key_extra: dict[str, Any] | None = None,
) -> HttpResponse:
    """GET through the cache. ``namespace`` + ``url`` + ``params`` (+ ``key_extra``, which is
    not sent, e.g. the ticker that names the cache file) form the key."""
    key = cache_key(url, params, key_extra)
    use_cache = cache is not None and policy.enabled
    if use_cache and cache is not None:
        hit = cache.get(namespace, key)
        if hit is not None:
            return HttpResponse(hit.value, hit.url, 200)
    if as_json:
        response = await client.get_json(url, params, what=what, ticker=ticker)
    else:
        response = await client.get_text(url, params, what=what, ticker=ticker)
    if use_cache and cache is not None:
        cache.set(namespace, key, response.data, url=response.url, ttl=policy.ttl)
    return response
