"""The OpenAI Chat Completions adapter (OpenAI and every OpenAI-compatible server).

The converters are module-level pure functions so they can be tested without HTTP:
``to_openai_messages`` / ``to_openai_tools`` build the request, ``OpenAIStreamAccumulator``
reassembles a stream (tool calls by ``index``, possibly interleaved) and
``response_from_completion`` reads a blocking reply. The SDK is imported lazily.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar

from dexter.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ThinkingBlock,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    unchanged_prefix,
)
from dexter.providers.adapter import SDKChatModel, http_timeout
from dexter.providers.base import (
    CallTimeouts,
    ModelRequest,
    ModelResponse,
    StreamChunk,
    ToolSpec,
)
from dexter.providers.common import (
    error_result_text,
    field_of,
    new_call_id,
    parse_tool_arguments,
    system_text,
)
from dexter.providers.errors import ProviderError
from dexter.text import clean
from dexter.tls import sdk_http_client

if TYPE_CHECKING:
    from openai import AsyncOpenAI

# Providers whose assistant turns carry ``reasoning_content`` that must be sent back while a
# tool-calling turn is in progress.
REASONING_ECHO_PROVIDERS = frozenset({"deepseek", "moonshot"})

_STOP_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


# --------------------------------------------------------------------------------------------
# Request conversion
# --------------------------------------------------------------------------------------------


class OpenAIMessageCache:
    """Converted messages by object identity, for a model that sends a growing transcript.

    Messages are immutable, so a message converts to the same dict every time; each
    request converts only the messages the previous one did not hold (an assistant turn's
    tool-call arguments are JSON-encoded once, not on every later request), and the
    previous request's leading messages that are still in place are taken over as a
    slice. An entry holds its message, so the id cannot be reused while cached; entries of
    messages no longer sent are dropped. The dicts are shared between requests: nothing
    may modify them (the request body is only serialised). ``encode`` serialises a body
    the same way, each cached entry's JSON kept for the next request.
    """

    def __init__(self) -> None:
        self._known: dict[int, tuple[Message, dict[str, Any]]] = {}
        self._field: str | None = None
        self._view: list[Message] = []
        self._out: list[dict[str, Any]] = []  # _out[i] is _view[i] converted
        self._json: dict[int, tuple[dict[str, Any], bytes]] = {}  # by id of an _out entry

    def encode(self, body: dict[str, Any]) -> bytes:
        """``body`` as the UTF-8 JSON the SDK would send (``openapi_dumps``' settings), each
        cached entry of ``body["messages"]`` encoded once across requests."""
        known: dict[int, tuple[dict[str, Any], bytes]] = self._json
        fresh: dict[int, tuple[dict[str, Any], bytes]] = {}
        parts = []
        for entry in body["messages"]:
            cached = known.get(id(entry))
            if cached is None or cached[0] is not entry:
                cached = (entry, _dumps(entry))
            fresh[id(entry)] = cached
            parts.append(cached[1])
        self._json = fresh
        fields = [_dumps(key) + b":" + (b"[" + b",".join(parts) + b"]" if key == "messages"
                                         else _dumps(value)) for key, value in body.items()]
        return b"{" + b",".join(fields) + b"}"

    def convert(self, messages: Sequence[Message], reasoning_field: str | None) -> list[dict[str, Any]]:
        """``messages`` (no system messages) as Chat Completions entries."""
        if reasoning_field != self._field:
            self._known, self._view, self._out = {}, [], []
            self._field = reasoning_field
        old = self._view
        same = unchanged_prefix(old, messages)
        known = self._known
        added: list[tuple[Message, dict[str, Any]]] = []
        for message in messages[same:]:
            entry = known.get(id(message))
            if entry is None or entry[0] is not message:
                converted = _to_openai(message, reasoning_field)
                if converted is None:
                    raise ValueError(f"not a request message: {type(message).__name__}")
                entry = (message, converted)
            added.append(entry)
        for gone in old[same:]:  # messages that left the view (or moved) lose their entry
            known.pop(id(gone), None)
        out = self._out[:same]
        for entry in added:
            known[id(entry[0])] = entry
            out.append(entry[1])
        self._view, self._out = list(messages), out
        return list(out)


def _dumps(value: Any) -> bytes:
    """JSON as the OpenAI SDK sends it (``openai._utils._json.openapi_dumps``' settings)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def to_openai_messages(
    system: str, messages: Sequence[Message], *, reasoning_field: str | None = None,
    cache: OpenAIMessageCache | None = None,
) -> list[dict[str, Any]]:
    """Neutral messages to Chat Completions ``messages``.

    ``reasoning_field`` (e.g. ``"reasoning_content"``) echoes thinking text on assistant
    turns with tool calls, which DeepSeek and Moonshot need inside a tool loop. ``cache``
    reuses the conversions of messages an earlier request held (the same output).
    """
    out: list[dict[str, Any]] = []
    prompt = system_text(system, messages)
    if prompt:
        out.append({"role": "system", "content": prompt})
    rest = [m for m in messages if not isinstance(m, SystemMessage)]
    if cache is not None:
        return out + cache.convert(rest, reasoning_field)
    for message in rest:
        converted = _to_openai(message, reasoning_field)
        if converted is not None:
            out.append(converted)
    return out


def _to_openai(message: Message, reasoning_field: str | None) -> dict[str, Any] | None:
    if isinstance(message, UserMessage):
        return {"role": "user", "content": message.content}
    if isinstance(message, AssistantMessage):
        return _assistant_to_openai(message, reasoning_field)
    if isinstance(message, ToolResultMessage):
        content = error_result_text(message.content) if message.is_error else message.content
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": content}
    return None


def _assistant_to_openai(message: AssistantMessage, reasoning_field: str | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"role": "assistant", "content": message.text or None}
    if message.tool_calls:
        entry["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.arguments, ensure_ascii=False)},
            }
            for call in message.tool_calls
        ]
        reasoning = "".join(block.text for block in message.thinking)
        if reasoning_field and reasoning:
            entry[reasoning_field] = reasoning
    elif entry["content"] is None:
        entry["content"] = ""
    return entry


def to_openai_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """Tool specs to Chat Completions function tools."""
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
    ]


def request_params(request: ModelRequest, model: str, provider_id: str,
                   cache: OpenAIMessageCache | None = None) -> dict[str, Any]:
    """The keyword arguments for ``chat.completions.create`` (without ``stream``)."""
    reasoning_field = "reasoning_content" if provider_id in REASONING_ECHO_PROVIDERS else None
    params: dict[str, Any] = {
        "model": model,
        "messages": to_openai_messages(request.system, request.messages,
                                       reasoning_field=reasoning_field, cache=cache),
    }
    # OpenAI's reasoning models refuse ``max_tokens``; compatible servers may not know the new name.
    limit_key = "max_completion_tokens" if provider_id == "openai" else "max_tokens"
    params[limit_key] = request.max_tokens
    if request.tools:
        params["tools"] = to_openai_tools(request.tools)
    if request.temperature is not None:
        params["temperature"] = request.temperature
    if request.json_output:
        params["response_format"] = {"type": "json_object"}
    return params


# --------------------------------------------------------------------------------------------
# Response conversion
# --------------------------------------------------------------------------------------------


def usage_from_openai(usage: Any) -> Usage:
    """Chat Completions usage to neutral usage (cached prompt tokens as cache reads)."""
    if usage is None:
        return Usage()
    details = field_of(usage, "prompt_tokens_details")
    cached = field_of(details, "cached_tokens") or field_of(usage, "prompt_cache_hit_tokens") or field_of(usage, "cached_tokens") or 0
    return Usage(
        input_tokens=int(field_of(usage, "prompt_tokens") or 0),
        output_tokens=int(field_of(usage, "completion_tokens") or 0),
        cache_read_tokens=int(cached),
    )


def _stop_reason(finish_reason: str | None) -> str:
    if finish_reason is None:
        return ""
    return _STOP_REASONS.get(finish_reason, finish_reason)


def _tool_call(call_id: str | None, name: str, raw_args: str) -> ToolCall:
    arguments, invalid = parse_tool_arguments(raw_args)
    return ToolCall(id=call_id or new_call_id(), name=name, arguments=arguments, invalid_arguments=invalid)


def content_parts(content: Any) -> tuple[str, str]:
    """(text, thinking) of a message's ``content``: a string, or a list of parts as
    Mistral and others send (``{"type": "text", "text": ...}``, ``{"type": "thinking",
    "thinking": [...]}``). Never the Python repr of a list."""
    if content is None:
        return "", ""
    if isinstance(content, str):
        return content, ""
    if not isinstance(content, list):
        return str(content), ""
    text: list[str] = []
    thinking: list[str] = []
    for part in content:
        if isinstance(part, str):
            text.append(part)
            continue
        kind = field_of(part, "type")
        if kind in {"thinking", "reasoning"}:
            inner = field_of(part, "thinking") or field_of(part, "reasoning") or field_of(part, "text")
            thinking.append(content_parts(inner)[0] if isinstance(inner, list) else str(inner or ""))
        elif kind in {"text", "output_text", None}:
            value = field_of(part, "text")
            text.append(value if isinstance(value, str) else "")
    return "".join(text), "".join(thinking)


def _reasoning_of(obj: Any) -> str:
    """The reasoning text a server put beside the content (``reasoning_content`` for
    DeepSeek and Moonshot, ``reasoning`` for Groq, Cerebras, Ollama, OpenRouter, Bedrock)."""
    for name in ("reasoning_content", "reasoning"):
        value = field_of(obj, name)
        if isinstance(value, str) and value:
            return value
    return ""


def response_from_completion(completion: Any) -> ModelResponse:
    """A blocking ``ChatCompletion`` (SDK object or dict) to a ``ModelResponse``."""
    choices = field_of(completion, "choices") or []
    if not choices:
        raise ProviderError("bad_request", "The server returned a reply with no choices.")
    choice = choices[0]
    msg = field_of(choice, "message")
    calls = tuple(
        _tool_call(field_of(tc, "id"), field_of(field_of(tc, "function"), "name") or "",
                   field_of(field_of(tc, "function"), "arguments") or "")
        for tc in (field_of(msg, "tool_calls") or [])
    )
    text, part_thinking = content_parts(field_of(msg, "content"))
    splitter = ThinkTagSplitter()
    pieces = splitter.feed(text) + splitter.flush()
    text = "".join(p.text for p in pieces if p.kind == "text")
    reasoning = _reasoning_of(msg) + part_thinking + "".join(
        p.text for p in pieces if p.kind == "thinking")
    message = AssistantMessage(
        text=clean(text),
        thinking=(ThinkingBlock(text=clean(reasoning)),) if reasoning else (),
        tool_calls=calls,
    )
    return ModelResponse(
        message=message,
        usage=usage_from_openai(field_of(completion, "usage")),
        stop_reason=_stop_reason(field_of(choice, "finish_reason")),
        model=field_of(completion, "model") or "",
    )


_OPEN, _CLOSE = "<think>", "</think>"


@dataclass
class ThinkTagSplitter:
    """Splits ``<think>...</think>`` out of streamed content (DeepSeek-R1 on some hosts
    writes its reasoning into ``content``), also when a tag arrives in pieces."""

    inside: bool = False
    pending: str = ""

    def feed(self, piece: str) -> list[StreamChunk]:
        """The text and thinking chunks ``piece`` completes."""
        data = self.pending + piece
        self.pending = ""
        out: list[StreamChunk] = []
        while data:
            tag = _CLOSE if self.inside else _OPEN
            at = data.find(tag)
            if at < 0:
                keep = _partial_tag_suffix(data, tag)
                emit, self.pending = (data[:-keep], data[-keep:]) if keep else (data, "")
                if emit:
                    out.append(StreamChunk("thinking" if self.inside else "text", emit))
                break
            if at:
                out.append(StreamChunk("thinking" if self.inside else "text", data[:at]))
            data = data[at + len(tag):]
            self.inside = not self.inside
        return out

    def flush(self) -> list[StreamChunk]:
        """Whatever was held back waiting for the rest of a tag."""
        rest, self.pending = self.pending, ""
        return [StreamChunk("thinking" if self.inside else "text", rest)] if rest else []


def _partial_tag_suffix(data: str, tag: str) -> int:
    """How many characters at the end of ``data`` could start ``tag``."""
    for size in range(min(len(tag) - 1, len(data)), 0, -1):
        if tag.startswith(data[-size:]):
            return size
    return 0


@dataclass
class _PendingCall:
    id: str | None = None
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class OpenAIStreamAccumulator:
    """Reassembles a Chat Completions stream into chunks for display and one final response."""

    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: dict[int, _PendingCall] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    saw_usage: bool = False
    think: ThinkTagSplitter = field(default_factory=ThinkTagSplitter)

    def add(self, chunk: Any) -> list[StreamChunk]:
        """Take one ``ChatCompletionChunk``; return what can be shown right away."""
        out: list[StreamChunk] = []
        self.model = self.model or (field_of(chunk, "model") or "")
        usage = field_of(chunk, "usage")
        if usage is not None:
            self.usage = usage_from_openai(usage)
            self.saw_usage = True
        for choice in field_of(chunk, "choices") or []:
            delta = field_of(choice, "delta")
            reasoning = clean(_reasoning_of(delta))
            if reasoning:
                self.reasoning.append(reasoning)
                out.append(StreamChunk("thinking", reasoning))
            text, part_thinking = content_parts(field_of(delta, "content"))
            if part_thinking:
                self.reasoning.append(clean(part_thinking))
                out.append(StreamChunk("thinking", clean(part_thinking)))
            out.extend(self._content(self.think.feed(clean(text))) if text else [])
            for fragment in field_of(delta, "tool_calls") or []:
                piece = self._add_tool_fragment(fragment)
                if piece:
                    out.append(StreamChunk("tool_input", piece))
            finish = field_of(choice, "finish_reason")
            if finish:
                self.finish_reason = finish
        return out

    def _content(self, pieces: list[StreamChunk]) -> list[StreamChunk]:
        for piece in pieces:
            (self.reasoning if piece.kind == "thinking" else self.text).append(piece.text)
        return pieces

    def _add_tool_fragment(self, fragment: Any) -> str:
        index = field_of(fragment, "index")
        if not isinstance(index, int):
            index = len(self.calls)
        frag_id = field_of(fragment, "id")
        function = field_of(fragment, "function")
        current = self.calls.get(index)
        # Some servers send every call as a complete fragment with index 0 and its own id.
        if current is not None and frag_id and current.id and frag_id != current.id:
            index = max(self.calls) + 1
            current = None
        if current is None:
            current = self.calls[index] = _PendingCall()
        if frag_id and not current.id:
            current.id = frag_id
        name = field_of(function, "name")
        if name and not current.name:
            current.name = name
        args = clean(field_of(function, "arguments") or "")
        if args:
            current.arguments.append(args)
        return str(args)

    def finish(self) -> ModelResponse:
        """The complete reply. Raises ``ProviderError`` when the stream never finished.

        A stream that ends with its usage chunk but no ``finish_reason`` (Snowflake and
        other compatible servers) is complete: usage is sent last, after the final choice.
        """
        self._content(self.think.flush())
        if self.finish_reason is None and self.saw_usage:
            self.finish_reason = "tool_calls" if self.calls else "stop"
        if self.finish_reason is None:
            raise ProviderError(
                "connection", "The stream ended early (no finish reason). Try again.",
                detail="stream ended early",
            )
        calls = tuple(
            _tool_call(c.id, c.name, "".join(c.arguments))
            for _, c in sorted(self.calls.items())
        )
        reasoning = "".join(self.reasoning)
        message = AssistantMessage(
            text="".join(self.text),
            thinking=(ThinkingBlock(text=reasoning),) if reasoning else (),
            tool_calls=calls,
        )
        return ModelResponse(message=message, usage=self.usage,
                             stop_reason=_stop_reason(self.finish_reason), model=self.model)


# --------------------------------------------------------------------------------------------
# The adapter
# --------------------------------------------------------------------------------------------


class OpenAIChatModel(SDKChatModel):
    """``ChatModel`` over ``openai.AsyncOpenAI`` Chat Completions (retries are the caller's)."""

    provider_id_default: ClassVar[str] = "openai"
    provider_display_default: ClassVar[str] = "OpenAI"
    key_env_default: ClassVar[str | None] = "OPENAI_API_KEY"
    _client: AsyncOpenAI

    @classmethod
    def _new_client(cls, api_key: str, base_url: str, timeouts: CallTimeouts) -> AsyncOpenAI:
        from openai import AsyncOpenAI, DefaultAsyncHttpxClient, Timeout

        timeout = http_timeout(Timeout, timeouts)
        return AsyncOpenAI(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout,
                           http_client=sdk_http_client(DefaultAsyncHttpxClient, base_url, timeout))

    def _accumulator(self) -> OpenAIStreamAccumulator:
        return OpenAIStreamAccumulator()

    @cached_property
    def _messages_cache(self) -> OpenAIMessageCache:
        return OpenAIMessageCache()

    async def _open_stream(self, request: ModelRequest) -> Any:
        """Stream the request, its body sent as built.

        ``chat.completions.create`` runs the SDK's parameter transform over the whole body
        on every call (``_async_transform_recursive``, type-driven and pure Python): 71% of
        the time per iteration at 1,000 messages. The body ``request_params`` builds is
        already plain JSON, so it goes through the same client's ``post`` (its HTTP
        connection pool, auth, timeouts and error classes) with the same response types,
        encoded as the SDK would encode it, each earlier message's JSON reused
        (``OpenAIMessageCache.encode``).
        """
        from openai import AsyncStream
        from openai.types.chat import ChatCompletion, ChatCompletionChunk

        cache = self._messages_cache
        body = {**request_params(request, self._model, self._provider_id, cache),
                "stream": True,
                "stream_options": {"include_usage": True}}
        return await self._client.post(
            "/chat/completions", content=cache.encode(body), cast_to=ChatCompletion, stream=True,
            stream_cls=AsyncStream[ChatCompletionChunk],
            options={"security": {"bearer_auth": True}},
        )

    async def _blocking(self, request: ModelRequest) -> ModelResponse:
        """One blocking request, its body sent as built (as ``_open_stream`` does): the
        same client's ``post`` with the options ``chat.completions.create`` would pass
        (bearer auth, the blocking timeout), so retries, auth and error classes stay the
        SDK's."""
        from openai import Timeout
        from openai.types.chat import ChatCompletion

        cache = self._messages_cache
        body = request_params(request, self._model, self._provider_id, cache)
        timeout = http_timeout(Timeout, self._timeouts, blocking=True)
        completion = await self._client.post(
            "/chat/completions", content=cache.encode(body), cast_to=ChatCompletion,
            options={"timeout": timeout, "security": {"bearer_auth": True}},
        )
        return response_from_completion(completion)
