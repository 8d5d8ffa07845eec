"""The shared shell of the SDK adapters: error wrapping, stream folding, closing.

Subclasses say how to open a stream, how to make a blocking call and which accumulator
folds their stream events; everything else (turning any failure into a classified,
key-free ``ProviderError``, yielding chunks then exactly one response) lives here.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from typing import Any, ClassVar, Protocol

from dexter.providers.base import ModelRequest, ModelResponse, StreamChunk
from dexter.providers.errors import ProviderError, classify_error


class StreamAccumulator(Protocol):
    """Folds one provider's stream events into display chunks and one final response."""

    def add(self, event: Any) -> list[StreamChunk]:
        """Take one event; return what can be shown right away."""

    def finish(self) -> ModelResponse:
        """The complete reply; raises ``ProviderError`` if the stream never finished."""


_SDK_DEFAULT = "<the adapter's own>"


class SDKChatModel(ABC):
    """Base class of the SDK adapters (implements the ``ChatModel`` protocol).

    A subclass names its provider (``provider_id``, ``provider_display``, ``key_env``) and
    how to build its SDK client (``_new_client``); the constructor is shared. The client is
    created without SDK retries (the caller retries, honouring ``Retry-After``).
    """

    provider_id_default: ClassVar[str]
    provider_display_default: ClassVar[str]
    key_env_default: ClassVar[str | None]

    def __init__(self, *, model: str, api_key: str, base_url: str,
                 provider_id: str = _SDK_DEFAULT, provider_display: str = _SDK_DEFAULT,
                 key_env: str | None = _SDK_DEFAULT, timeout: float = 600.0,
                 client: Any = None) -> None:
        self._model = model
        self._provider_id = self.provider_id_default if provider_id == _SDK_DEFAULT else provider_id
        self._display = (self.provider_display_default if provider_display == _SDK_DEFAULT
                         else provider_display)
        self._key_env = self.key_env_default if key_env == _SDK_DEFAULT else key_env
        self._base_url = base_url
        self._api_key = api_key
        self._client = client if client is not None else self._new_client(api_key, base_url, timeout)

    @classmethod
    @abstractmethod
    def _new_client(cls, api_key: str, base_url: str, timeout: float) -> Any:
        """The SDK's async client for this provider."""

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

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk | ModelResponse]:
        """Stream the reply: text/thinking/tool_input chunks, then one ``ModelResponse``."""
        acc = self._accumulator()
        try:
            async with await self._open_stream(request) as events:
                async for event in events:
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
        """One blocking call. Raises ``ProviderError`` on failure."""
        try:
            return await self._blocking(request)
        except Exception as exc:
            err = self._error(exc)
            if err is exc:
                raise
            raise err from exc

    async def aclose(self) -> None:
        """Release HTTP connections."""
        await self._client.close()
