"""The HTTP client every data source uses.

It wraps ``httpx.AsyncClient`` and adds: retries with exponential backoff on 429 and 5xx
(honouring ``Retry-After`` in seconds or as an HTTP date), an optional shared rate limiter,
and errors that tell the user what went wrong and what to do (``dexter.data.base``).
Cancelling the awaiting task (e.g. ``asyncio.wait_for`` timing out) closes the connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from dexter.data.base import (
    AuthError,
    DataError,
    DataTimeout,
    NotFoundError,
    PlanError,
    RateLimitError,
    UpstreamError,
)
from dexter.data.ratelimit import AsyncRateLimiter
from dexter.secrets import scrub, secret_values
from dexter.tls import httpx_context

if TYPE_CHECKING:
    import httpx  # imported on the first request: start-up does not pay for it

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
# Values: str/int/float/bool, a list or tuple (repeated key), or None (dropped).
Params = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how long to retry. Tests use tiny values."""

    max_retries: int = 3
    backoff_base: float = 0.5
    backoff_max: float = 8.0
    max_retry_after: float = 30.0

    def backoff(self, attempt: int) -> float:
        """Exponential backoff with a little jitter for attempt 0, 1, 2..."""
        base: float = min(self.backoff_max, self.backoff_base * (2**attempt))
        return base * (0.8 + 0.4 * random.random())


DEFAULT_RETRY = RetryPolicy()


@dataclass(frozen=True, slots=True)
class ServiceInfo:
    """Words used in error messages for one service."""

    name: str
    key_env: str | None = None
    forbidden_hint: str = ""


@dataclass(frozen=True, slots=True)
class HttpResponse:
    """A successful response: the parsed body (or text) and the full request URL."""

    data: Any
    url: str
    status: int


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta seconds or HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


def clean_params(params: Params | None) -> list[tuple[str, str | int | float | bool | None]]:
    """Drop ``None`` values, repeat list values as separate keys, render booleans in lowercase."""
    out: list[tuple[str, str | int | float | bool | None]] = []
    for key, value in (params or {}).items():
        if value is None:
            continue
        if isinstance(value, list | tuple):
            out.extend((key, str(v)) for v in value)
        elif isinstance(value, bool):
            out.append((key, "true" if value else "false"))
        else:
            out.append((key, str(value)))
    return out


class HttpClient:
    """A retrying, rate-limited JSON/text client for one service.

    ``secrets`` are scrubbed from any text that ends up in an error message.
    """

    def __init__(
        self,
        service: ServiceInfo,
        *,
        headers: Mapping[str, str] | None = None,
        timeout: float = 30.0,
        retry: RetryPolicy = DEFAULT_RETRY,
        rate_limiter: AsyncRateLimiter | None = None,
        secrets: tuple[str, ...] = (),
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.service = service
        self._headers = dict(headers or {})
        self._timeout = timeout
        self._retry = retry
        self._limiter = rate_limiter
        self._secrets = tuple(s for s in secrets if s)
        self._sleep = sleep
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        self.request_count = 0

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            import httpx

            self._client = httpx.AsyncClient(
                headers=self._headers,
                timeout=self._timeout,
                follow_redirects=True,
                transport=self._transport,
                verify=httpx_context(),
            )
        return self._client

    async def aclose(self) -> None:
        """Close pooled connections."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def get_json(
        self, url: str, params: Params | None = None, *, what: str, ticker: str | None = None
    ) -> HttpResponse:
        """GET ``url`` and parse JSON. ``what`` names the data for error messages."""
        return await self._request("GET", url, params, None, what=what, ticker=ticker, as_json=True)

    async def get_text(
        self, url: str, params: Params | None = None, *, what: str, ticker: str | None = None
    ) -> HttpResponse:
        """GET ``url`` and return the body as text (HTML documents)."""
        return await self._request(
            "GET", url, params, None, what=what, ticker=ticker, as_json=False
        )

    async def post_json(self, url: str, body: Any, *, what: str) -> HttpResponse:
        """POST a JSON body and parse the JSON reply."""
        return await self._request("POST", url, None, body, what=what, ticker=None, as_json=True)

    async def _request(
        self, method: str, url: str, params: Params | None, body: Any, *, what: str,
        ticker: str | None, as_json: bool,
    ) -> HttpResponse:
        import httpx

        query = clean_params(params)
        attempt = 0
        while True:
            self.request_count += 1
            try:
                async with self._limiter.slot() if self._limiter else contextlib.nullcontext():
                    response = await self._http().request(method, url, params=query, json=body)
            except httpx.TimeoutException:
                raise DataTimeout(
                    f"{self.service.name} did not answer in time for {what} "
                    f"(timeout {self._timeout:g}s). Try again or ask for less data.",
                    url=url,
                ) from None
            except httpx.HTTPError as exc:
                if attempt < self._retry.max_retries:
                    await self._sleep(self._retry.backoff(attempt))
                    attempt += 1
                    continue
                host = urlsplit(url).netloc
                raise UpstreamError(
                    f"Could not reach {self.service.name} at {host} for {what}: "
                    f"{self._scrub(type(exc).__name__ + ': ' + str(exc))}.",
                    url=url,
                ) from None
            full_url = str(response.request.url)
            if response.status_code in RETRY_STATUSES and attempt < self._retry.max_retries:
                delay = parse_retry_after(response.headers.get("retry-after"))
                if delay is None:
                    delay = self._retry.backoff(attempt)
                await self._sleep(min(delay, self._retry.max_retry_after))
                attempt += 1
                continue
            if response.status_code >= 400:
                raise self._error(response, what=what, ticker=ticker, attempts=attempt + 1,
                                  url=full_url)
            return HttpResponse(self._decode(response, what, full_url, as_json), full_url,
                                response.status_code)

    def _decode(self, response: httpx.Response, what: str, url: str, as_json: bool) -> Any:
        if not as_json:
            return response.text
        try:
            return response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise UpstreamError(
                f"{self.service.name} sent a reply that is not JSON for {what} "
                f"(HTTP {response.status_code}). The service may be down; try again later.",
                status=response.status_code, url=url,
            ) from None

    def _scrub(self, text: str) -> str:
        return scrub(text, secret_values(extra=self._secrets))

    def _detail(self, response: httpx.Response) -> str:
        try:
            body = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            return ""
        if isinstance(body, dict):
            for key in ("error", "message", "detail"):
                if isinstance(body.get(key), str):
                    return self._scrub(str(body[key]))[:300]
        return ""

    def _error(
        self, response: httpx.Response, *, what: str, ticker: str | None, attempts: int, url: str
    ) -> DataError:
        status = response.status_code
        name = self.service.name
        detail = self._detail(response)
        suffix = f" ({detail})" if detail else ""
        if status == 401:
            fix = f" Check {self.service.key_env}." if self.service.key_env else ""
            return AuthError(f"{name} rejected the API key (HTTP 401) for {what}.{fix}",
                             status=status, url=url)
        if status == 402 or (status == 403 and self.service.key_env):
            return PlanError(
                f"Your {name} plan does not cover {what} (HTTP {status}){suffix}. "
                f"Upgrade the plan, or ask for data the plan includes.",
                status=status, url=url,
            )
        if status == 403:
            return AuthError(f"{name} refused the request for {what} (HTTP 403). "
                             f"{self.service.forbidden_hint}".strip(), status=status, url=url)
        if status == 404:
            if ticker:
                return NotFoundError(
                    f"Unknown ticker '{ticker}' at {name} (HTTP 404 for {what}). Check the "
                    f"symbol, or search for the company name to find its ticker.",
                    status=status, url=url,
                )
            return NotFoundError(f"{name} has no {what} (HTTP 404).", status=status, url=url)
        if status == 429:
            return RateLimitError(
                f"{name} is rate limiting requests (HTTP 429) for {what}; gave up after "
                f"{attempts} attempts. Wait a minute and try again.",
                status=status, url=url,
            )
        if status >= 500:
            return UpstreamError(
                f"{name} failed with HTTP {status} for {what} after {attempts} attempts. "
                f"The service may be down; try again later.",
                status=status, url=url,
            )
        return DataError(f"{name} rejected the request for {what} (HTTP {status}){suffix}.",
                         status=status, url=url)
