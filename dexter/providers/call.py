"""The provider-neutral call driver the agent loop uses, and the adapter factory.

``generate`` streams one model call with the retry policy:

- a stream that fails before producing anything falls back to one blocking ``complete()``
  call, which itself gets the retry policy (not after a timeout: that stream is retried);
- each call has a connect timeout, a first-byte timeout and a whole-call deadline
  (``connect_timeout``, ``first_byte_timeout``, ``request_timeout``: see
  ``providers.base.CallTimeouts``), so a dead server costs at most ``max_retries + 1``
  first-byte waits and a server that trickles keep-alive bytes one deadline per try;
- retryable failures (rate limit, overload, 5xx, timeout, connection) are retried up to
  ``max_retries`` times with backoff (``Retry-After`` honoured, capped at 60 s; otherwise
  0.5 s * 2^n with jitter, capped at 8 s), each announced by a ``ProviderRetry`` event;
- a failure after output started re-issues the call; its ``ProviderRetry`` reason says the
  stream restarts, so renderers drop the partial text;
- everything else (auth, billing, context overflow, not found, bad request) raises at once.

``asyncio.CancelledError`` is never caught.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import random
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping

from dexter.config import Settings
from dexter.events import ProviderRetry
from dexter.providers.adapter import SDKChatModel
from dexter.providers.base import (
    CallTimeouts,
    ChatModel,
    ModelRequest,
    ModelResponse,
    StreamChunk,
)
from dexter.providers.errors import ProviderError, classify_error
from dexter.providers.registry import (
    MissingKeyError,
    ResolvedModel,
    api_key_for,
    base_url_for,
    missing_key_message,
    resolve_model,
)

MAX_RETRY_AFTER_S = 60.0
BASE_DELAY_S = 0.5
MAX_BACKOFF_S = 8.0
STREAM_RESTART = "stream restarted"
NO_KEY_PLACEHOLDER = "not-needed"

Sleep = Callable[[float], Awaitable[object]]


def retry_delay(err: ProviderError, retry_index: int, rand: Callable[[], float] = random.random) -> float:
    """Seconds to wait before retry number ``retry_index`` (0-based)."""
    if err.retry_after is not None and err.retry_after > 0:
        return min(err.retry_after, MAX_RETRY_AFTER_S)
    backoff = min(BASE_DELAY_S * 2.0**retry_index, MAX_BACKOFF_S)
    return backoff * (1.0 - 0.25 * rand())


@contextlib.asynccontextmanager
async def _closing(
    items: AsyncIterator[StreamChunk | ModelResponse],
) -> AsyncIterator[AsyncIterator[StreamChunk | ModelResponse]]:
    """Close an abandoned stream (its HTTP response) as soon as we stop reading it."""
    try:
        yield items
    finally:
        aclose = getattr(items, "aclose", None)
        if aclose is not None:
            await aclose()


def _as_provider_error(exc: Exception, model: ChatModel) -> ProviderError:
    return classify_error(exc, model.provider_id, model.model)


def _give_up(err: ProviderError, retries: int, output_started: bool) -> ProviderError:
    message = err.message
    if retries:
        message = f"{message} (gave up after {retries} {'retry' if retries == 1 else 'retries'})"
    return dataclasses.replace(err, message=message, output_started=output_started)


async def generate(
    model: ChatModel,
    request: ModelRequest,
    *,
    max_retries: int = 3,
    stream: bool = True,
    sleep: Sleep = asyncio.sleep,
) -> AsyncGenerator[StreamChunk | ProviderRetry | ModelResponse, None]:
    """Call ``model`` with retries; yield chunks, ``ProviderRetry`` events, then one response.

    Raises ``ProviderError`` when the call cannot succeed (see the module docstring).
    """
    use_stream = stream
    retries = 0
    attempt = 0
    while True:
        produced = False
        try:
            if use_stream:
                async with _closing(model.stream(request)) as items:
                    async for item in items:
                        if isinstance(item, ModelResponse):
                            yield item
                            return
                        produced = True
                        yield item
                raise ProviderError("connection", "The stream ended without a reply.",
                                    provider=model.provider_id, model=model.model)
            yield await model.complete(request)
            return
        except ProviderError as exc:
            err = exc
        except Exception as exc:
            err = _as_provider_error(exc, model)
        if not err.retryable:
            raise _give_up(err, 0, produced) from err
        # A stream that failed before any output is tried once without streaming, unless
        # it timed out (a server too slow to stream is no faster when asked to block) or
        # nothing accepted the connection (no server there answers a blocking call either).
        fallback = use_stream and not produced and err.kind != "timeout" and not err.refused
        if not fallback:
            if retries >= max_retries:
                # every try after the first was announced as a ProviderRetry: count those
                raise _give_up(err, attempt, produced) from err
            retries += 1
        delay = retry_delay(err, retries if fallback else retries - 1)
        attempt += 1
        yield ProviderRetry(attempt=attempt, delay_s=round(delay, 3), reason=_reason(err, fallback, produced))
        if fallback:
            use_stream = False
        await sleep(delay)


_LABELS = {
    "rate_limit": "rate limit reached",
    "overloaded": "provider overloaded",
    "server": "server error",
    "timeout": "request timed out",
    "connection": "connection lost",
}


def _reason(err: ProviderError, fallback: bool, produced: bool) -> str:
    """A short line for the retry notice: what failed and what happens next."""
    who = err.provider or "provider"
    status = f" (HTTP {err.status})" if err.status else ""
    detail = f": {err.detail[:160]}" if err.detail and not err.refused else ""
    label = "connection refused" if err.refused else _LABELS.get(err.kind, err.kind)
    text = f"{who} {label}{status}{detail}"
    if fallback:
        return f"{text}; retrying without streaming"
    if produced:
        return f"{text}; {STREAM_RESTART}, partial output discarded"
    return f"{text}; retrying"


def create_chat_model(
    resolved: ResolvedModel,
    settings: Settings,
    *,
    env: Mapping[str, str] | None = None,
    fast: bool = False,
) -> ChatModel:
    """Build the SDK adapter for ``resolved`` (or its fast model when ``fast``).

    Raises ``ConfigError`` naming the variable to set when the provider's key is missing.
    """
    env = os.environ if env is None else env
    if fast and resolved.fast_model != resolved.name:
        resolved = resolve_model(resolved.fast_model, settings)
    provider = resolved.provider
    key = api_key_for(provider, env)
    if key is None and provider.api_key_env is not None:
        raise MissingKeyError(missing_key_message(resolved))
    base_url = base_url_for(provider, settings, env)
    adapter: type[SDKChatModel]
    if provider.kind == "anthropic":
        from dexter.providers.anthropic_messages import AnthropicModel as adapter
    else:
        from dexter.providers.openai_chat import OpenAIChatModel as adapter
    return adapter(
        model=resolved.model, api_key=key or NO_KEY_PLACEHOLDER, base_url=base_url,
        provider_id=provider.id, provider_display=provider.display_name,
        key_env=provider.api_key_env,
        timeout=CallTimeouts(connect=settings.connect_timeout,
                             first_byte=settings.first_byte_timeout,
                             total=settings.request_timeout),
    )
