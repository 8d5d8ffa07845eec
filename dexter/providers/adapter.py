"""The shared shell of the SDK adapters: error wrapping, stream folding, deadlines, closing.

Subclasses say how to open a stream, how to make a blocking call and which accumulator
folds their stream events; everything else (turning any failure into a classified,
key-free ``ProviderError``, yielding chunks then exactly one response, the first-byte and
whole-call deadlines of :class:`CallTimeouts`) lives here. The connect timeout and the
longest silence between reads are the SDK client's (``httpx`` timeouts); the deadlines are
kept here with ``asyncio`` because a server that trickles keep-alive bytes never lets a
read time out.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable
from typing import Any, ClassVar, Literal, Protocol, TypeVar

from dexter.providers.base import CallTimeouts, ModelRequest, ModelResponse, StreamChunk
from dexter.providers.errors import ProviderError, classify_error


class StreamAccumulator(Protocol):
    """Folds one provider's stream events into display chunks and one final response."""

    def add(self, event: Any) -> list[StreamChunk]:
        """Take one event; return what can be shown right away."""

    def finish(self) -> ModelResponse:
        """The complete reply; raises ``ProviderError`` if the stream never finished."""


_SDK_DEFAULT = "<the adapter's own>"
_T = TypeVar("_T")
Deadline = Literal["first_byte", "total"]
DEFAULT_TIMEOUTS = CallTimeouts()


def http_timeout(timeout_cls: Any, timeouts: CallTimeouts, *, blocking: bool = False) -> Any:
    """The SDK's ``httpx`` timeout for ``timeouts``: ``connect`` to connect (and to wait for
    a pooled connection); each read ``first_byte`` on a stream, the whole deadline for a
    blocking call, whose reply only comes when it is complete."""
    read = timeouts.total if blocking else timeouts.first_byte
    return timeout_cls(timeouts.total, connect=timeouts.connect, read=read,
                       write=timeouts.first_byte, pool=timeouts.connect)


class SDKChatModel(ABC):
    """Base class of the SDK adapters (implements the ``ChatModel`` protocol).

    A subclass names its provider (``provider_id``, ``provider_display``, ``key_env``) and
    how to build its SDK client (``_new_client``); the constructor is shared. The client is
    created without SDK retries (the caller retries, honouring ``Retry-After``).
    ``timeout`` is a :class:`CallTimeouts`, or one number: the whole call's deadline.
    """

    provider_id_default: ClassVar[str]
    provider_display_default: ClassVar[str]
    key_env_default: ClassVar[str | None]

    def __init__(self, *, model: str, api_key: str, base_url: str,
                 provider_id: str = _SDK_DEFAULT, provider_display: str = _SDK_DEFAULT,
                 key_env: str | None = _SDK_DEFAULT,
                 timeout: float | CallTimeouts = DEFAULT_TIMEOUTS, client: Any = None) -> None:
        self._model = model
        self._provider_id = self.provider_id_default if provider_id == _SDK_DEFAULT else provider_id
        self._display = (self.provider_display_default if provider_display == _SDK_DEFAULT
                         else provider_display)
        self._key_env = self.key_env_default if key_env == _SDK_DEFAULT else key_env
        self._base_url = base_url
        self._api_key = api_key
        self._timeouts = (timeout if isinstance(timeout, CallTimeouts)
                          else CallTimeouts.within(float(timeout)))
        self._client = (client if client is not None
                        else self._new_client(api_key, base_url, self._timeouts))

    @classmethod
    @abstractmethod
    def _new_client(cls, api_key: str, base_url: str, timeouts: CallTimeouts) -> Any:
        """The SDK's async client for this provider (``http_timeout(timeouts)``'s limits)."""

    @property
    def timeouts(self) -> CallTimeouts:
        """The connect, first-byte and whole-call limits of every call."""
        return self._timeouts

    @property
    def model(self) -> str:
        """The model id sent to the provider."""
        return self._model

    @property
    def provider_id(self) -> str:
        """The provider id (``openai``, ``anthropic``, ...)."""
        return self._provider_id

    @abstractmethod
    def _accumulator(self) -> StreamAccumulator:
        """A fresh accumulator for one stream."""

    @abstractmethod
    async def _open_stream(self, request: ModelRequest) -> Any:
        """Start a streaming call; returns the SDK's async stream (a context manager)."""

    @abstractmethod
    async def _blocking(self, request: ModelRequest) -> ModelResponse:
        """Make one blocking call and convert its reply."""

    def _error(self, exc: BaseException) -> ProviderError:
        if isinstance(exc, ProviderError):
            err = exc
            if not err.provider:
                err.message = f"{self._display} ({self._model}): {err.message}"
            err.provider, err.model = self._display, self._model
        else:
            err = classify_error(exc, self._display, self._model, self._key_env, base_url=self._base_url)
        if self._api_key and len(self._api_key) >= 6:
            err.message = err.message.replace(self._api_key, "***")
            err.detail = err.detail.replace(self._api_key, "***")
        return err

    def _deadline_error(self, which: Deadline) -> ProviderError:
        """The timeout error of a missed deadline, naming the setting that sets it."""
        who = f"{self._display} ({self._model})"
        if which == "first_byte":
            seconds, key = self._timeouts.first_byte, "first_byte_timeout"
            what = f"{who} sent no reply within {seconds:g} s"
        else:
            seconds, key = self._timeouts.total, "request_timeout"
            what = f"The call to {who} did not finish within {seconds:g} s"
        return ProviderError(
            "timeout", f"{what} ({key}). Try again, or raise {key} in the config.",
            provider=self._display, model=self._model, detail=f"{key} = {seconds:g} s")

    def _limit(self, waited: float, started: bool) -> tuple[float, Deadline]:
        """Seconds left to wait for the server, and which limit that is."""
        left = self._timeouts.total - waited
        if started or self._timeouts.first_byte >= self._timeouts.total:
            return left, "total"
        return self._timeouts.first_byte - waited, "first_byte"

    async def _by(self, seconds: float, which: Deadline, step: Awaitable[_T]) -> _T:
        """Await ``step``, or raise the timeout error of ``which`` after ``seconds``."""
        limit = asyncio.timeout(max(seconds, 0.0))
        try:
            async with limit:
                return await step
        except TimeoutError:
            if limit.expired():
                raise self._deadline_error(which) from None
            raise

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk | ModelResponse]:
        """Stream the reply: text/thinking/tool_input chunks, then one ``ModelResponse``.

        The first event must arrive within ``first_byte`` seconds and the whole stream
        within ``total`` (:class:`CallTimeouts`); a missed limit is a ``timeout`` error.
        The limits count the time spent waiting for the server, not the caller's time
        between chunks, and only those waits are ever cancelled.
        """
        acc = self._accumulator()
        clock = asyncio.get_running_loop().time
        waited, started = 0.0, False

        async def wait(step: Awaitable[_T]) -> _T:
            nonlocal waited
            seconds, which = self._limit(waited, started)
            begun = clock()
            try:
                return await self._by(seconds, which, step)
            finally:
                waited += clock() - begun

        try:
            opened = await wait(self._open_stream(request))
            async with opened as events:
                iterator = aiter(events)
                while True:
                    try:
                        event = await wait(anext(iterator))
                    except StopAsyncIteration:
                        break
                    started = True
                    for piece in acc.add(event):
                        yield piece
            response = acc.finish()
        except Exception as exc:  # includes httpx2 transport errors, which escape the SDK's APIError
            err = self._error(exc)
            if err is exc:
                raise
            raise err from exc
        yield response

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """One blocking call within the whole-call limit. Raises ``ProviderError``."""
        try:
            return await self._by(self._timeouts.total, "total", self._blocking(request))
        except Exception as exc:
            err = self._error(exc)
            if err is exc:
                raise
            raise err from exc

    async def aclose(self) -> None:
        """Release HTTP connections."""
        await self._client.close()
