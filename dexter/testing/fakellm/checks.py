"""What the fake records of each request, and the request invariants it checks."""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any

from dexter.testing.fakellm.steps import Route

# --------------------------------------------------------------------------------------------
# Recording and invariants
# --------------------------------------------------------------------------------------------


@dataclass
class RecordedRequest:
    """One request as received by the fake."""

    path: str
    headers: dict[str, str]
    body: Any
    route: Route
    stream: bool
    method: str = "POST"
    raw: bytes = b""
    """The body exactly as it came over the wire."""


def check_openai_messages(messages: Any) -> list[str]:
    """Tool-call pairing problems in an OpenAI ``messages`` list."""
    problems: list[str] = []
    if not isinstance(messages, list):
        return ["'messages' is missing or not a list"]
    issued: set[str] = set()
    pending: list[str] = []

    def flush(where: str) -> None:
        if pending:
            problems.append(f"assistant tool_calls {pending} not answered by tool messages {where}")
            pending.clear()

    for i, msg in enumerate(messages):
        role = msg.get("role") if isinstance(msg, dict) else None
        if role == "tool":
            tcid = msg.get("tool_call_id")
            if tcid not in issued:
                problems.append(
                    f"messages[{i}]: tool message answers unknown tool_call_id {tcid!r}"
                )
            elif tcid in pending:
                pending.remove(tcid)
            else:
                problems.append(f"messages[{i}]: tool_call_id {tcid!r} answered twice")
            continue
        flush(f"before messages[{i}] (role={role!r})")
        if role == "assistant":
            for tc in msg.get("tool_calls") or []:
                tcid = tc.get("id") if isinstance(tc, dict) else None
                if tcid in issued:
                    problems.append(f"messages[{i}]: duplicate tool_call id {tcid!r}")
                issued.add(str(tcid))
                pending.append(str(tcid))
    flush("at the end of the request")
    return problems


def _blocks(msg: Any, kind: str) -> list[dict[str, Any]]:
    content = msg.get("content") if isinstance(msg, dict) else None
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == kind]


def check_anthropic_messages(messages: Any) -> list[str]:
    """Tool-use pairing problems in an Anthropic ``messages`` list."""
    problems: list[str] = []
    if not isinstance(messages, list):
        return ["'messages' is missing or not a list"]
    for i, msg in enumerate(messages):
        role = msg.get("role") if isinstance(msg, dict) else None
        prev = messages[i - 1] if i > 0 else None
        prev_uses = [b.get("id") for b in _blocks(prev, "tool_use")]
        prev_is_assistant = isinstance(prev, dict) and prev.get("role") == "assistant"
        results = [b.get("tool_use_id") for b in _blocks(msg, "tool_result")]
        if role == "user":
            for rid in results:
                if not prev_is_assistant or rid not in prev_uses:
                    problems.append(
                        f"messages[{i}]: tool_result {rid!r} has no matching tool_use in the "
                        "immediately previous assistant message"
                    )
        elif results:
            problems.append(f"messages[{i}]: tool_result blocks in a {role!r} message")
        if prev_is_assistant and prev_uses:
            missing = [u for u in prev_uses if role != "user" or u not in results]
            if missing:
                problems.append(
                    f"messages[{i - 1}]: tool_use {missing} not answered in messages[{i}]"
                )
    if messages and isinstance(messages[-1], dict) and messages[-1].get("role") == "assistant":
        last_uses = [b.get("id") for b in _blocks(messages[-1], "tool_use")]
        if last_uses:
            problems.append(f"messages[{len(messages) - 1}]: tool_use {last_uses} never answered")
    return problems


def fake_embedding(text: str, dim: int = 16) -> list[float]:
    """A deterministic unit vector derived from a hash of ``text``."""
    raw = b""
    counter = 0
    while len(raw) < dim * 2:
        raw += hashlib.sha256(f"{counter}:{text}".encode()).digest()
        counter += 1
    values = [(int.from_bytes(raw[2 * i : 2 * i + 2], "big") / 32767.5) - 1.0 for i in range(dim)]
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return [v / norm for v in values]


# --------------------------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------------------------
