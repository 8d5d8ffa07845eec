"""A scripted in-process ``ChatModel`` for tests that need a model but no HTTP.

    model = ScriptedModel(["first reply", AssistantMessage(tool_calls=(...,)), ProviderError(...)])
    ...
    assert model.requests[0].tools == ()

Each call (``stream`` or ``complete``) takes the next reply from the queue: a string becomes
an assistant text reply, an ``AssistantMessage`` or ``ModelResponse`` is returned as is, an
exception is raised, and a callable is called with the request and its result used as the
reply (so a test can answer from what it was sent). Every request is recorded in
``requests``, in order. Running out of replies fails the test with a clear message.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable
from typing import TypeAlias

from dexter.context.tokens import estimate_message_tokens, estimate_text_tokens
from dexter.messages import AssistantMessage, Usage
from dexter.providers.base import ModelRequest, ModelResponse, StreamChunk

Reply: TypeAlias = (
    "str | AssistantMessage | ModelResponse | BaseException | Callable[[ModelRequest], Reply]"
)


class ScriptedModel:
    """A ``ChatModel`` answering from a queue of scripted replies."""

    def __init__(self, replies: Iterable[Reply] = (), model: str = "fake",
                 provider_id: str = "openai", chunk_chars: int = 16) -> None:
        self.replies: deque[Reply] = deque(replies)
        self.requests: list[ModelRequest] = []
        self.chunk_chars = chunk_chars
        self.closed = False
        self._model = model
        self._provider_id = provider_id

    @property
    def model(self) -> str:
        return self._model

    @property
    def provider_id(self) -> str:
        return self._provider_id

    def add(self, *replies: Reply) -> None:
        """Queue more replies."""
        self.replies.extend(replies)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Record ``request`` and return (or raise) the next scripted reply."""
        self.requests.append(request)
        return self._next(request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk | ModelResponse]:
        """Record ``request``; yield the reply's text in chunks, then the response."""
        self.requests.append(request)
        response = self._next(request)
        text = response.message.text
        for start in range(0, len(text), self.chunk_chars):
            yield StreamChunk("text", text[start : start + self.chunk_chars])
        yield response

    async def aclose(self) -> None:
        self.closed = True

    def _next(self, request: ModelRequest) -> ModelResponse:
        if not self.replies:
            raise AssertionError(
                f"ScriptedModel {self._model!r}: no scripted reply left for request "
                f"#{len(self.requests)} (add more replies to the script)"
            )
        reply = self.replies.popleft()
        while callable(reply) and not isinstance(reply, BaseException):
            reply = reply(request)
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, ModelResponse):
            return reply
        message = reply if isinstance(reply, AssistantMessage) else AssistantMessage(text=reply)
        usage = Usage(
            input_tokens=estimate_message_tokens(request.messages, request.system),
            output_tokens=estimate_text_tokens(message.text),
        )
        return ModelResponse(message=message, usage=usage, stop_reason="end_turn",
                             model=self._model)
