"""The provider-neutral message model.

Every part of dexter (the loop, the context stages, the scratchpad, the provider adapters)
speaks in these types. Adapters translate them to and from each SDK's wire format; nothing
else knows about provider formats.

Messages are immutable: a context stage returns a new list with replaced messages, so the
same list can be compared before and after a stage (``is`` tells "nothing changed").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

UserKind = Literal["query", "history", "note", "queued", "summary"]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A call the model asked for. ``arguments`` is the parsed JSON object.

    When the model sent arguments that are not a JSON object, ``arguments`` is empty and
    ``invalid_arguments`` keeps the raw text so the executor can report it.
    """

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    invalid_arguments: str | None = None


@dataclass(frozen=True, slots=True)
class ThinkingBlock:
    """Model reasoning kept verbatim so it can be sent back (Anthropic needs the signature)."""

    text: str = ""
    signature: str | None = None
    redacted_data: str | None = None


@dataclass(frozen=True, slots=True)
class SystemMessage:
    """The system prompt. Always the first message of a request."""

    content: str
    role: Literal["system"] = "system"


@dataclass(frozen=True, slots=True)
class UserMessage:
    """Text from the user or injected on the user's side.

    ``kind`` says where it came from: the query of this run, earlier-session history, a
    note the loop appends (tool usage), a queued follow-up, or a compaction summary.
    """

    content: str
    kind: UserKind = "query"
    role: Literal["user"] = "user"


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    """A model reply: free text, reasoning blocks and tool calls."""

    text: str = ""
    thinking: tuple[ThinkingBlock, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    role: Literal["assistant"] = "assistant"


@dataclass(frozen=True, slots=True)
class ToolResultMessage:
    """The result of one tool call, paired with it by ``tool_call_id``."""

    tool_call_id: str
    name: str
    content: str
    is_error: bool = False
    role: Literal["tool"] = "tool"


Message = SystemMessage | UserMessage | AssistantMessage | ToolResultMessage


@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage reported by a provider for one call (or summed over calls)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )

    def to_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "total_tokens": self.total_tokens,
        }


def unchanged_prefix(old: Sequence[object], new: Sequence[object]) -> int:
    """How many leading entries of ``new`` are the very objects (``is``) at the same place
    in ``old``: what a per-message cache may reuse from the previous request."""
    same = 0
    for a, b in zip(old, new, strict=False):
        if a is not b:
            break
        same += 1
    return same


def head_length(messages: Sequence[Message]) -> int:
    """How many leading messages form the view's stable head: the system prompt, earlier
    history, the query, and the compaction summary right after the query.

    Truncation never drops the head, and it changes only when a compaction replaces its
    summary, so a prompt cache can keep it. Without a query message the head ends at the
    first summary, else at the first user message.
    """
    kinds = [m.kind if isinstance(m, UserMessage) else None for m in messages]
    if "query" in kinds:
        end = len(kinds) - kinds[::-1].index("query")
        while end < len(kinds) and kinds[end] == "summary":
            end += 1
        return end
    for wanted in ("summary", None):
        for i, kind in enumerate(kinds):
            if kind is not None and (wanted is None or kind == wanted):
                return i + 1
    return 1 if messages else 0


def message_text(message: Message) -> str:
    """All the text a message carries, for token estimation and search."""
    if isinstance(message, AssistantMessage):
        parts = [message.text]
        parts.extend(block.text for block in message.thinking)
        parts.extend(f"{call.name} {call.invalid_arguments or call.arguments}" for call in message.tool_calls)
        return "\n".join(p for p in parts if p)
    return message.content


def message_to_dict(message: Message) -> dict[str, Any]:
    """A JSON-ready form of a message (``--trace`` dumps, saved sessions, tests);
    :func:`message_from_dict` reads it back."""
    if isinstance(message, AssistantMessage):
        return {
            "role": "assistant",
            "text": message.text,
            "thinking": [
                {"text": b.text, "signature": b.signature, "redacted_data": b.redacted_data}
                for b in message.thinking
            ],
            "tool_calls": [
                {"id": c.id, "name": c.name, "arguments": c.arguments,
                 "invalid_arguments": c.invalid_arguments}
                for c in message.tool_calls
            ],
        }
    if isinstance(message, ToolResultMessage):
        return {"role": "tool", "tool_call_id": message.tool_call_id, "name": message.name,
                "content": message.content, "is_error": message.is_error}
    if isinstance(message, UserMessage):
        return {"role": "user", "kind": message.kind, "content": message.content}
    return {"role": "system", "content": message.content}


def message_from_dict(data: Any) -> Message:
    """The message :func:`message_to_dict` wrote (saved sessions read theirs back with it).

    Raises ``ValueError`` naming what is wrong when ``data`` is not such a dict.
    """
    if not isinstance(data, dict):
        raise ValueError("a message must be a JSON object")
    role = data.get("role")
    if role == "assistant":
        thinking = tuple(
            ThinkingBlock(text=_text(b, "text"), signature=_optional_text(b, "signature"),
                          redacted_data=_optional_text(b, "redacted_data"))
            for b in _objects(data, "thinking"))
        calls = []
        for c in _objects(data, "tool_calls"):
            arguments = c.get("arguments", {})
            if not isinstance(arguments, dict):
                raise ValueError("a tool call's arguments must be a JSON object")
            calls.append(ToolCall(id=_text(c, "id"), name=_text(c, "name"), arguments=arguments,
                                  invalid_arguments=_optional_text(c, "invalid_arguments")))
        return AssistantMessage(text=_text(data, "text"), thinking=thinking,
                                tool_calls=tuple(calls))
    if role == "tool":
        is_error = data.get("is_error", False)
        if not isinstance(is_error, bool):
            raise ValueError("a tool result's is_error must be true or false")
        return ToolResultMessage(tool_call_id=_text(data, "tool_call_id"),
                                 name=_text(data, "name"), content=_text(data, "content"),
                                 is_error=is_error)
    if role == "user":
        kind = data.get("kind", "query")
        if kind not in ("query", "history", "note", "queued", "summary"):
            raise ValueError(f"unknown user message kind {kind!r}")
        return UserMessage(_text(data, "content"), kind=kind)
    if role == "system":
        return SystemMessage(_text(data, "content"))
    raise ValueError(f"unknown message role {role!r}")


def _text(data: dict[str, Any], key: str) -> str:
    value = data.get(key, "")
    if not isinstance(value, str):
        raise ValueError(f"a message's {key!r} must be text")
    return value


def _optional_text(data: dict[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"a message's {key!r} must be text or null")
    return value


def _objects(data: dict[str, Any], key: str) -> list[dict[str, Any]]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise ValueError(f"a message's {key!r} must be a list of objects")
    return value
