"""The Anthropic Messages adapter: streaming, tool use, thinking blocks, prompt caching.

The converters are module-level pure functions so they can be tested without HTTP:
``to_anthropic_messages`` / ``to_anthropic_tools`` / ``request_params`` build the request,
``AnthropicStreamAccumulator`` folds raw stream events into chunks and one response, and
``response_from_message`` reads a blocking reply. The SDK is imported lazily.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from dexter.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ThinkingBlock,
    ToolCall,
    ToolResultMessage,
    Usage,
    head_length,
)
from dexter.providers.adapter import SDKChatModel, http_timeout
from dexter.providers.base import (
    CallTimeouts,
    ModelRequest,
    ModelResponse,
    StreamChunk,
    ToolSpec,
)
from dexter.providers.common import field_of, parse_tool_arguments, system_text
from dexter.providers.errors import ProviderError
from dexter.text import clean, clean_value
from dexter.tls import sdk_http_client

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

EPHEMERAL: dict[str, str] = {"type": "ephemeral"}
EMPTY_RESULT = "(no output)"


# --------------------------------------------------------------------------------------------
# Request conversion
# --------------------------------------------------------------------------------------------


def _assistant_blocks(message: AssistantMessage) -> list[dict[str, Any]]:
    """Thinking blocks first (verbatim, with signature), then text, then tool_use."""
    blocks: list[dict[str, Any]] = []
    for block in message.thinking:
        if block.redacted_data is not None:
            blocks.append({"type": "redacted_thinking", "data": block.redacted_data})
        elif block.signature:
            blocks.append({"type": "thinking", "thinking": block.text, "signature": block.signature})
        # Unsigned reasoning (from another provider) cannot be sent to Anthropic.
    if message.text.strip():
        blocks.append({"type": "text", "text": message.text})
    for call in message.tool_calls:
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments})
    return blocks


def _tool_result_block(message: ToolResultMessage) -> dict[str, Any]:
    block: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": message.tool_call_id,
        "content": message.content or EMPTY_RESULT,
    }
    if message.is_error:
        block["is_error"] = True
    return block


def _order_user_blocks(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Anthropic wants a user turn's tool_result blocks before any other block."""
    results = [b for b in blocks if b.get("type") == "tool_result"]
    others = [b for b in blocks if b.get("type") != "tool_result"]
    return results + others


def to_anthropic_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Neutral messages to Anthropic ``messages`` (system messages are left out).

    Consecutive messages of the same role are merged into one turn, because Anthropic
    requires user and assistant turns to alternate: tool results become ``tool_result``
    blocks of one user turn, followed by any user text (e.g. the tool-usage note).
    """
    return _convert(messages)[0]


def _convert(messages: Sequence[Message]) -> tuple[list[dict[str, Any]], list[dict[str, Any] | None]]:
    """The turns, and for each message its last block (None for a message that made none)."""
    turns: list[dict[str, Any]] = []
    last_blocks: list[dict[str, Any] | None] = []
    for message in messages:
        role: str
        blocks: list[dict[str, Any]]
        last_blocks.append(None)
        if isinstance(message, SystemMessage):
            continue
        if isinstance(message, AssistantMessage):
            role, blocks = "assistant", _assistant_blocks(message)
        elif isinstance(message, ToolResultMessage):
            role, blocks = "user", [_tool_result_block(message)]
        else:
            if not message.content.strip():
                continue
            role, blocks = "user", [{"type": "text", "text": message.content}]
        if not blocks:
            continue
        last_blocks[-1] = blocks[-1]
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    for turn in turns:
        if turn["role"] == "user":
            turn["content"] = _order_user_blocks(turn["content"])
    return turns, last_blocks


def to_anthropic_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """Tool specs to Anthropic tools; the last one carries the cache breakpoint."""
    out: list[dict[str, Any]] = [
        {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools
    ]
    if out:
        out[-1]["cache_control"] = dict(EPHEMERAL)
    return out


_CACHEABLE = frozenset({"text", "tool_result", "tool_use"})
"""Block types a cache breakpoint may sit on (not thinking blocks: the API refuses them)."""


def request_params(request: ModelRequest, model: str) -> dict[str, Any]:
    """Keyword arguments for ``messages.create`` (without ``stream``).

    Cache breakpoints, at most the API's four: the last tool, the system prompt, the end of
    the view's stable head (the query, or the compaction summary after it:
    ``messages.head_length``) and the end of the conversation. The last one is the final
    block of the request, so each loop iteration reads the previous iteration's prefix
    from the cache; in a side request (``request.continuation``) it stays on the last
    block before the final assistant turn, where the main request before had it, so the
    side request reads the cache and writes none of its own tail.
    """
    messages, last_blocks = _convert(request.messages)
    marks: list[dict[str, Any]] = []
    head = head_length(request.messages)
    head_block = last_blocks[head - 1] if 0 < head < len(request.messages) else None
    if head_block is not None:
        marks.append(head_block)
    tail = _conversation_end(messages, continuation=request.continuation)
    if tail is not None:
        marks.append(tail)
    for turn in messages:
        turn["content"] = [
            {**block, "cache_control": dict(EPHEMERAL)}
            if any(block is m for m in marks) and block.get("type") in _CACHEABLE else block
            for block in turn["content"]
        ]
    params: dict[str, Any] = {"model": model, "max_tokens": request.max_tokens, "messages": messages}
    prompt = system_text(request.system, request.messages)
    if prompt:
        params["system"] = [{"type": "text", "text": prompt, "cache_control": dict(EPHEMERAL)}]
    if request.tools:
        params["tools"] = to_anthropic_tools(request.tools)
    if request.temperature is not None:
        params["temperature"] = request.temperature
    return params


def _conversation_end(turns: list[dict[str, Any]], *, continuation: bool) -> dict[str, Any] | None:
    """The block of the conversation's cache breakpoint: the last block of the request, or
    for a side request the last block before its final assistant turn."""
    if not turns:
        return None
    end = len(turns)
    if continuation:
        assistant = [i for i, turn in enumerate(turns) if turn["role"] == "assistant"]
        if assistant and assistant[-1] > 0:
            end = assistant[-1]
    content = turns[end - 1]["content"]
    return content[-1] if content else None


# --------------------------------------------------------------------------------------------
# Response conversion
# --------------------------------------------------------------------------------------------


def usage_from_anthropic(usage: Any) -> Usage:
    """Anthropic usage to neutral usage; ``input_tokens`` is the full prompt size.

    Anthropic reports cached prompt tokens separately from ``input_tokens``; the context
    threshold needs the whole prompt, so the three are added up.
    """
    if usage is None:
        return Usage()
    fresh = int(field_of(usage, "input_tokens") or 0)
    written = int(field_of(usage, "cache_creation_input_tokens") or 0)
    read = int(field_of(usage, "cache_read_input_tokens") or 0)
    return Usage(
        input_tokens=fresh + written + read,
        output_tokens=int(field_of(usage, "output_tokens") or 0),
        cache_read_tokens=read,
        cache_write_tokens=written,
    )


def message_from_blocks(blocks: Sequence[Any]) -> AssistantMessage:
    """Content blocks (SDK objects or dicts) to an ``AssistantMessage``."""
    text: list[str] = []
    thinking: list[ThinkingBlock] = []
    calls: list[ToolCall] = []
    for block in blocks:
        kind = field_of(block, "type")
        if kind == "text":
            text.append(field_of(block, "text") or "")
        elif kind == "thinking":
            thinking.append(ThinkingBlock(text=clean(field_of(block, "thinking") or ""),
                                          signature=field_of(block, "signature") or None))
        elif kind == "redacted_thinking":
            thinking.append(ThinkingBlock(redacted_data=field_of(block, "data") or ""))
        elif kind == "tool_use":
            raw = field_of(block, "input")
            if isinstance(raw, dict):
                calls.append(ToolCall(id=field_of(block, "id"), name=field_of(block, "name"),
                                      arguments=clean_value(raw)))
            else:
                invalid = raw if isinstance(raw, str) else json.dumps(raw)
                calls.append(ToolCall(id=field_of(block, "id"), name=field_of(block, "name"),
                                      invalid_arguments=invalid))
    return AssistantMessage(text=clean("".join(text)), thinking=tuple(thinking),
                            tool_calls=tuple(calls))


def response_from_message(message: Any) -> ModelResponse:
    """A blocking Anthropic ``Message`` (SDK object or dict) to a ``ModelResponse``."""
    return ModelResponse(
        message=message_from_blocks(field_of(message, "content") or []),
        usage=usage_from_anthropic(field_of(message, "usage")),
        stop_reason=field_of(message, "stop_reason") or "",
        model=field_of(message, "model") or "",
    )


@dataclass
class _Block:
    type: str
    text: list[str] = field(default_factory=list)
    signature: str = ""
    data: str = ""
    id: str = ""
    name: str = ""
    input: dict[str, Any] = field(default_factory=dict)
    partial_json: list[str] = field(default_factory=list)


@dataclass
class AnthropicStreamAccumulator:
    """Folds raw Messages stream events into display chunks and one final response."""

    blocks: dict[int, _Block] = field(default_factory=dict)
    usage: Any = None
    output_tokens: int = 0
    stop_reason: str | None = None
    model: str = ""
    stopped: bool = False

    def add(self, event: Any) -> list[StreamChunk]:
        """Take one raw stream event; return what can be shown right away."""
        kind = field_of(event, "type")
        if kind == "message_start":
            message = field_of(event, "message")
            self.model = field_of(message, "model") or ""
            self.usage = _usage_dict(field_of(message, "usage"))
        elif kind == "content_block_start":
            self._start_block(field_of(event, "index"), field_of(event, "content_block"))
        elif kind == "content_block_delta":
            return self._delta(field_of(event, "index"), field_of(event, "delta"))
        elif kind == "message_delta":
            delta = field_of(event, "delta")
            self.stop_reason = field_of(delta, "stop_reason") or self.stop_reason
            self._update_usage(field_of(event, "usage"))
        elif kind == "message_stop":
            self.stopped = True
        return []

    def _start_block(self, index: int, block: Any) -> None:
        kind = field_of(block, "type") or ""
        state = _Block(type=kind)
        if kind == "text" and field_of(block, "text"):
            state.text.append(field_of(block, "text"))
        elif kind == "thinking":
            state.text.append(field_of(block, "thinking") or "")
            state.signature = field_of(block, "signature") or ""
        elif kind == "redacted_thinking":
            state.data = field_of(block, "data") or ""
        elif kind == "tool_use":
            state.id = field_of(block, "id") or ""
            state.name = field_of(block, "name") or ""
            initial = field_of(block, "input")
            state.input = dict(initial) if isinstance(initial, Mapping) else {}
        self.blocks[index] = state

    def _delta(self, index: int, delta: Any) -> list[StreamChunk]:
        state = self.blocks.get(index)
        if state is None:
            state = self.blocks[index] = _Block(type="text")
        kind = field_of(delta, "type")
        if kind == "text_delta":
            piece = clean(field_of(delta, "text") or "")
            state.text.append(piece)
            return [StreamChunk("text", piece)] if piece else []
        if kind == "thinking_delta":
            piece = clean(field_of(delta, "thinking") or "")
            state.text.append(piece)
            return [StreamChunk("thinking", piece)] if piece else []
        if kind == "signature_delta":
            state.signature += field_of(delta, "signature") or ""
        elif kind == "input_json_delta":
            piece = clean(field_of(delta, "partial_json") or "")
            state.partial_json.append(piece)
            return [StreamChunk("tool_input", piece)] if piece else []
        return []

    def _update_usage(self, usage: Any) -> None:
        if usage is None:
            return
        current = dict(self.usage or {})
        for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
                    "output_tokens"):
            value = field_of(usage, key)
            if value is not None:
                current[key] = value
        self.usage = current

    def finish(self) -> ModelResponse:
        """The complete reply. Raises ``ProviderError`` when ``message_stop`` never came."""
        if not self.stopped:
            raise ProviderError(
                "connection", "The stream ended early (no message_stop). Try again.",
                detail="stream ended early",
            )
        blocks: list[dict[str, Any]] = []
        for _, state in sorted(self.blocks.items()):
            if state.type == "text":
                blocks.append({"type": "text", "text": "".join(state.text)})
            elif state.type == "thinking":
                blocks.append({"type": "thinking", "thinking": "".join(state.text),
                               "signature": state.signature})
            elif state.type == "redacted_thinking":
                blocks.append({"type": "redacted_thinking", "data": state.data})
            elif state.type == "tool_use":
                raw = "".join(state.partial_json)
                if raw.strip():
                    arguments, invalid = parse_tool_arguments(raw)
                    blocks.append({"type": "tool_use", "id": state.id, "name": state.name,
                                   "input": arguments if invalid is None else invalid})
                else:
                    blocks.append({"type": "tool_use", "id": state.id, "name": state.name,
                                   "input": state.input})
        return ModelResponse(
            message=message_from_blocks(blocks),
            usage=usage_from_anthropic(self.usage),
            stop_reason=self.stop_reason or "",
            model=self.model,
        )


def _usage_dict(usage: Any) -> dict[str, Any]:
    keys = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
    return {k: field_of(usage, k) for k in keys if field_of(usage, k) is not None}


# --------------------------------------------------------------------------------------------
# The adapter
# --------------------------------------------------------------------------------------------


class AnthropicModel(SDKChatModel):
    """``ChatModel`` over ``anthropic.AsyncAnthropic`` Messages (retries are the caller's)."""

    provider_id_default: ClassVar[str] = "anthropic"
    provider_display_default: ClassVar[str] = "Anthropic"
    key_env_default: ClassVar[str | None] = "ANTHROPIC_API_KEY"
    _client: AsyncAnthropic

    @classmethod
    def _new_client(cls, api_key: str, base_url: str, timeouts: CallTimeouts) -> AsyncAnthropic:
        from anthropic import AsyncAnthropic, DefaultAsyncHttpxClient, Timeout

        timeout = http_timeout(Timeout, timeouts)
        return AsyncAnthropic(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout,
                              http_client=sdk_http_client(DefaultAsyncHttpxClient, base_url,
                                                          timeout))

    def _accumulator(self) -> AnthropicStreamAccumulator:
        return AnthropicStreamAccumulator()

    async def _open_stream(self, request: ModelRequest) -> Any:
        return await self._client.messages.create(**request_params(request, self._model), stream=True)

    async def _blocking(self, request: ModelRequest) -> ModelResponse:
        from anthropic import Timeout

        timeout = http_timeout(Timeout, self._timeouts, blocking=True)
        message = await self._client.messages.create(**request_params(request, self._model),
                                                     timeout=timeout)
        return response_from_message(message)
