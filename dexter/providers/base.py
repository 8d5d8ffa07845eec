"""The model interface the loop talks to, independent of any SDK.

A ``ChatModel`` takes a ``ModelRequest`` (system prompt, neutral messages, tool specs) and
either streams ``StreamChunk``s ending in one ``ModelResponse``, or returns the response in
one blocking call. Adapters in ``openai_chat.py`` and ``anthropic_messages.py`` implement it
over the official SDKs; tests can implement it with a scripted queue.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from dexter.messages import AssistantMessage, Message, Usage

ChunkKind = Literal["text", "thinking", "tool_input"]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as the model sees it."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One call to a model. ``tools`` empty means no tools are bound (compaction)."""

    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    max_tokens: int = 8192
    temperature: float | None = None
    json_output: bool = False
    """Ask for one JSON object as the reply: OpenAI-compatible servers get
    ``response_format={"type": "json_object"}``; the Anthropic Messages API has no such
    mode, so there the prompt itself must ask for JSON (the reply is parsed either way)."""
    continuation: bool = False
    """A side request (memory flush, compaction) that repeats the main conversation and
    adds one final instruction no later request will extend. Anthropic's conversation
    cache breakpoint then stays where the main request put it (the end of the round before
    the last assistant turn), so the request reads the cached prefix and writes none of
    its own tail (dexter.context.continuation)."""


@dataclass(frozen=True, slots=True)
class StreamChunk:
    """A piece of streamed output."""

    kind: ChunkKind
    text: str


@dataclass(frozen=True, slots=True)
class ModelResponse:
    """The complete reply of one call."""

    message: AssistantMessage
    usage: Usage = field(default_factory=Usage)
    stop_reason: str = ""
    model: str = ""


@dataclass(frozen=True, slots=True)
class CallTimeouts:
    """How long one model call may take, in seconds (the ``*_timeout`` settings).

    ``connect``: to open the connection. ``first_byte``: from sending the request to the
    first piece of a streamed reply (keep-alive comments and pings do not count), and the
    longest silence between two reads. ``total``: the whole call, stream included, however
    busy the server keeps the line. A blocking call has only ``connect`` and ``total``
    (its reply comes whole, at the end).
    """

    connect: float = 10.0
    first_byte: float = 120.0
    total: float = 600.0

    @classmethod
    def within(cls, total: float) -> CallTimeouts:
        """The defaults, none longer than ``total`` (the whole call's deadline)."""
        default = cls()
        return cls(min(default.connect, total), min(default.first_byte, total), total)


@runtime_checkable
class ChatModel(Protocol):
    """What every provider adapter offers."""

    @property
    def model(self) -> str:
        """The model id sent to the provider."""

    @property
    def provider_id(self) -> str:
        """The provider id (``openai``, ``anthropic``, ...)."""

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk | ModelResponse]:
        """Stream chunks, then exactly one ``ModelResponse`` last.

        Raises ``ProviderError`` (from ``dexter.providers.errors``) on failure.
        """

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """One blocking call. Raises ``ProviderError`` on failure."""

    async def aclose(self) -> None:
        """Release HTTP connections."""
