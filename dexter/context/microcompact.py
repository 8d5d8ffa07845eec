"""Microcompact: clear old results of re-fetchable tools from the view (no LLM).

Runs before every model call. The scratchpad keeps every result in full; only the message
list sent to the model changes. A cleared result keeps its role, call id and tool name, and
its text becomes a placeholder with a retrieval clue so the model can fetch it again on
purpose.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Set
from dataclasses import dataclass
from typing import Any, Literal

from dexter.config import ContextSettings
from dexter.context.results import persisted_path
from dexter.context.tokens import estimate_text_tokens
from dexter.messages import AssistantMessage, Message, ToolCall, ToolResultMessage

CLEARED_PREFIX = "[Old tool result content cleared]"

DEFAULT_COMPACTABLE_TOOLS: frozenset[str] = frozenset({
    "get_financials", "get_market_data", "read_filings", "stock_screener", "web_fetch",
    "web_search", "read_file", "memory_search", "memory_get",
})
"""Read-only tools whose results the model can fetch again."""

_QUERY_KEYS = ("query", "search", "question", "q", "text", "input", "prompt")
_LOCATOR_KEYS = ("path", "url", "file")
_CLUE_VALUE_CHARS = 200
_SOURCE_ID = re.compile(r"(?:^|\n)\[(S\d+)\] ")

Compactable = Callable[[str], bool] | Set[str]


@dataclass(frozen=True, slots=True)
class MicrocompactReport:
    """What one microcompact pass cleared."""

    cleared: int
    tokens_saved: int
    trigger: Literal["count", "tokens"]
    tool_call_ids: tuple[str, ...]
    """The cleared calls, oldest first (the scratchpad marks them as cleared)."""


def compactable_tools(extra: Iterable[str] = ()) -> frozenset[str]:
    """The default compactable tools plus ``extra`` (tools registered as re-fetchable)."""
    return DEFAULT_COMPACTABLE_TOOLS | frozenset(extra)


def microcompact(
    messages: list[Message],
    cfg: ContextSettings,
    compactable: Compactable = DEFAULT_COMPACTABLE_TOOLS,
) -> tuple[list[Message], MicrocompactReport | None]:
    """Clear all but the most recent compactable results when a trigger fires.

    Candidates are results of compactable tools that still hold real content: not already
    cleared and not errors (an error is the evidence that stops the model repeating a
    mistake, so it is never cleared and never counted). ``compactable`` is a tool-name set
    (used as given; see ``compactable_tools``) or a predicate.

    Count trigger: more than ``microcompact_count_trigger`` candidates. Otherwise the token
    trigger: their estimated tokens together above ``microcompact_token_trigger``. Either
    way all but the ``microcompact_keep_recent`` newest candidates are cleared, except the
    results of the latest round: the model has not seen them yet, so a round with more
    results than ``microcompact_keep_recent`` keeps them all until the next turn. Returns the
    same list and None when nothing changes (or when ``cfg.enabled`` is false).
    """
    if not cfg.enabled:
        return messages, None
    is_compactable = compactable if callable(compactable) else compactable.__contains__
    candidates = [
        (i, m) for i, m in enumerate(messages)
        if isinstance(m, ToolResultMessage) and not m.is_error
        and not m.content.startswith(CLEARED_PREFIX) and is_compactable(m.name)
    ]
    keep = max(cfg.microcompact_keep_recent, 0)
    if len(candidates) <= keep:
        return messages, None
    trigger: Literal["count", "tokens"]
    if len(candidates) > cfg.microcompact_count_trigger:
        trigger = "count"
    else:
        tokens = sum(estimate_text_tokens(m.content) for _, m in candidates)
        if tokens <= cfg.microcompact_token_trigger:
            return messages, None
        trigger = "tokens"
    unseen_from = _latest_round_start(messages)
    to_clear = [(i, m) for i, m in candidates[: len(candidates) - keep] if i < unseen_from]
    if not to_clear:
        return messages, None
    calls = _calls_by_id(messages)
    out = list(messages)
    saved = 0
    for i, old in to_clear:
        text = cleared_placeholder(old, calls.get(old.tool_call_id))
        out[i] = ToolResultMessage(old.tool_call_id, old.name, text, old.is_error)
        saved += estimate_text_tokens(old.content) - estimate_text_tokens(text)
    ids = tuple(old.tool_call_id for _, old in to_clear)
    return out, MicrocompactReport(len(to_clear), max(saved, 0), trigger, ids)


def cleared_placeholder(result: ToolResultMessage, call: ToolCall | None) -> str:
    """The text that replaces a cleared result: the marker, its source id (still citable:
    the ledger keeps it), then how to get it back."""
    parts = [CLEARED_PREFIX]
    source = _SOURCE_ID.search(result.content[:1_000])
    if source:
        parts.append(f"source={source.group(1)}")
    parts.append(f"tool={result.name}")
    saved = persisted_path(result.content)
    if call is not None:
        clue = retrieval_clue(call.arguments)
        if clue:
            parts.append(clue)
    text = " ".join(parts)
    if saved:
        return f"{text}. The full result is saved: read_file path={_quote(saved)}"
    return f"{text}. Call the tool again if you need this data."


def retrieval_clue(arguments: dict[str, Any]) -> str:
    """``query="..."``, ``path=...``/``url=...``, or the first string argument, else ""."""
    for key in _QUERY_KEYS:
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            return f"{key}={_quote(value, always=True)}"
    for key in _LOCATOR_KEYS:
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            return f"{key}={_quote(value)}"
    for key, value in arguments.items():
        if isinstance(value, str) and value.strip():
            return f"{key}={_quote(value, always=True)}"
    return ""


def _quote(value: str, *, always: bool = False) -> str:
    """A short, single-line rendering of an argument value."""
    value = value.strip()
    if len(value) > _CLUE_VALUE_CHARS:
        value = value[:_CLUE_VALUE_CHARS] + "…"
    if always or any(c.isspace() or c in "\"'" for c in value):
        return json.dumps(value, ensure_ascii=False)
    return value


def _latest_round_start(messages: list[Message]) -> int:
    """Index after the last assistant message: results from there on are not seen yet."""
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], AssistantMessage):
            return i + 1
    return 0


def _calls_by_id(messages: list[Message]) -> dict[str, ToolCall]:
    return {
        call.id: call
        for m in messages if isinstance(m, AssistantMessage)
        for call in m.tool_calls
    }
