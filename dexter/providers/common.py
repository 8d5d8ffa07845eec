"""Small conversion helpers both SDK adapters share."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from dexter.messages import Message, SystemMessage
from dexter.text import clean_value

ERROR_RESULT_PREFIX = "[tool error] "


def system_text(system: str, messages: Sequence[Message]) -> str:
    """The system prompt of a request: ``system`` plus any distinct ``SystemMessage`` text."""
    parts = [system] if system else []
    for message in messages:
        if isinstance(message, SystemMessage) and message.content and message.content not in parts:
            parts.append(message.content)
    return "\n\n".join(parts)


def parse_tool_arguments(raw: str) -> tuple[dict[str, Any], str | None]:
    """Parse streamed tool-call arguments: ``(arguments, None)`` or ``({}, raw)`` when invalid.

    An empty string means "no arguments" (several servers send that for parameterless tools).
    """
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: nested thousands deep
        return {}, raw
    if not isinstance(value, dict):
        return {}, raw
    return clean_value(value), None  # JSON escapes can carry half a surrogate pair


def error_result_text(content: str) -> str:
    """A failed tool result as the model sees it: marked so it knows the call did not work."""
    if content.startswith(ERROR_RESULT_PREFIX):
        return content
    return ERROR_RESULT_PREFIX + content


def new_call_id(prefix: str = "call") -> str:
    """An id for a tool call the server sent without one."""
    return f"{prefix}_{uuid.uuid4().hex[:24]}"


def field_of(obj: Any, name: str) -> Any:
    """Read a field from an SDK model or a plain dict (tests feed dicts)."""
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)
