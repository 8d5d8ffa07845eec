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
from typing import TYPE_CHECKING, Any

from dexter.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ThinkingBlock,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from dexter.providers.adapter import SDKChatModel
from dexter.providers.base import ModelRequest, ModelResponse, StreamChunk, ToolSpec
from dexter.providers.common import (
    error_result_text,
    field_of,
    new_call_id,
    parse_tool_arguments,
    system_text,
)
from dexter.providers.errors import ProviderError

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


def to_openai_messages(
    system: str, messages: Sequence[Message], *, reasoning_field: str | None = None
) -> list[dict[str, Any]]:
    """Neutral messages to Chat Completions ``messages``.

    ``reasoning_field`` (e.g. ``"reasoning_content"``) echoes thinking text on assistant
    turns with tool calls, which DeepSeek and Moonshot need inside a tool loop.
    """
    out: list[dict[str, Any]] = []
    prompt = system_text(system, messages)
    if prompt:
        out.append({"role": "system", "content": prompt})
    for message in messages:
        if isinstance(message, SystemMessage):
            continue
        if isinstance(message, UserMessage):
            out.append({"role": "user", "content": message.content})
        elif isinstance(message, AssistantMessage):
            out.append(_assistant_to_openai(message, reasoning_field))
        elif isinstance(message, ToolResultMessage):
            content = error_result_text(message.content) if message.is_error else message.content
            out.append({"role": "tool", "tool_call_id": message.tool_call_id, "content": content})
    return out


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


def request_params(request: ModelRequest, model: str, provider_id: str) -> dict[str, Any]:
    """The keyword arguments for ``chat.completions.create`` (without ``stream``)."""
    reasoning_field = "reasoning_content" if provider_id in REASONING_ECHO_PROVIDERS else None
    params: dict[str, Any] = {
        "model": model,
        "messages": to_openai_messages(request.system, request.messages, reasoning_field=reasoning_field),
    }
    # OpenAI's reasoning models refuse ``max_tokens``; compatible servers may not know the new name.
    limit_key = "max_completion_tokens" if provider_id == "openai" else "max_tokens"
    params[limit_key] = request.max_tokens
    if request.tools:
        params["tools"] = to_openai_tools(request.tools)
    if request.temperature is not None:
        params["temperature"] = request.temperature
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
    reasoning = field_of(msg, "reasoning_content") or ""
    message = AssistantMessage(
        text=field_of(msg, "content") or "",
        thinking=(ThinkingBlock(text=reasoning),) if reasoning else (),
        tool_calls=calls,
    )
    return ModelResponse(
        message=message,
        usage=usage_from_openai(field_of(completion, "usage")),
        stop_reason=_stop_reason(field_of(choice, "finish_reason")),
        model=field_of(completion, "model") or "",
    )


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

    def add(self, chunk: Any) -> list[StreamChunk]:
        """Take one ``ChatCompletionChunk``; return what can be shown right away."""
        out: list[StreamChunk] = []
        self.model = self.model or (field_of(chunk, "model") or "")
        usage = field_of(chunk, "usage")
        if usage is not None:
            self.usage = usage_from_openai(usage)
        for choice in field_of(chunk, "choices") or []:
            delta = field_of(choice, "delta")
            reasoning = field_of(delta, "reasoning_content") or field_of(delta, "reasoning")
            if isinstance(reasoning, str) and reasoning:
                self.reasoning.append(reasoning)
                out.append(StreamChunk("thinking", reasoning))
            content = field_of(delta, "content")
            if content:
                self.text.append(content)
                out.append(StreamChunk("text", content))
            for fragment in field_of(delta, "tool_calls") or []:
                piece = self._add_tool_fragment(fragment)
                if piece:
                    out.append(StreamChunk("tool_input", piece))
            finish = field_of(choice, "finish_reason")
            if finish:
                self.finish_reason = finish
        return out

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
        args = field_of(function, "arguments") or ""
        if args:
            current.arguments.append(args)
        return str(args)

    def finish(self) -> ModelResponse:
        """The complete reply. Raises ``ProviderError`` when the stream never finished."""
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

    def __init__(
        self,
        *,
        model: str,
        api_key: str,
        base_url: str,
        provider_id: str = "openai",
        provider_display: str = "OpenAI",
        key_env: str | None = "OPENAI_API_KEY",
        timeout: float = 600.0,
        client: AsyncOpenAI | None = None,
    ) -> None:
        if client is None:
            from openai import AsyncOpenAI

            client = AsyncOpenAI(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout)
        super().__init__(model=model, provider_id=provider_id, provider_display=provider_display,
                         key_env=key_env, base_url=base_url, api_key=api_key, client=client)
        self._client: AsyncOpenAI = client

    def _accumulator(self) -> OpenAIStreamAccumulator:
        return OpenAIStreamAccumulator()

    async def _open_stream(self, request: ModelRequest) -> Any:
        params = request_params(request, self._model, self._provider_id)
        return await self._client.chat.completions.create(
            **params, stream=True, stream_options={"include_usage": True}
        )

    async def _blocking(self, request: ModelRequest) -> ModelResponse:
        params = request_params(request, self._model, self._provider_id)
        return response_from_completion(await self._client.chat.completions.create(**params))
