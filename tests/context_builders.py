"""Small transcript builders shared by the ``test_context_*`` tests."""

from __future__ import annotations

from typing import Any

from dexter.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)


def head(query: str = "What was NVDA's revenue growth?") -> list[Message]:
    """System prompt and query."""
    return [SystemMessage("You are dexter."), UserMessage(query, kind="query")]


def call(call_id: str, tool: str = "get_financials", **args: Any) -> ToolCall:
    return ToolCall(call_id, tool, args or {"query": f"query for {call_id}"})


def tool_round(call_id: str, content: str = "revenue 26.97B", tool: str = "get_financials",
               *, is_error: bool = False, text: str = "", **args: Any) -> list[Message]:
    """One assistant message with one tool call, and its result."""
    return [
        AssistantMessage(text=text, tool_calls=(call(call_id, tool, **args),)),
        ToolResultMessage(call_id, tool, content, is_error=is_error),
    ]


def rounds(count: int, content: str = "revenue 26.97B", tool: str = "get_financials",
           prefix: str = "c") -> list[Message]:
    """``count`` rounds with call ids ``c1``..``cN``."""
    out: list[Message] = []
    for n in range(1, count + 1):
        out += tool_round(f"{prefix}{n}", content, tool)
    return out


def results_of(messages: list[Message]) -> list[ToolResultMessage]:
    return [m for m in messages if isinstance(m, ToolResultMessage)]
