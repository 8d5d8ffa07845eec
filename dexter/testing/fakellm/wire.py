"""What both wire formats share when rendering a scripted reply."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from dexter.testing.fakellm.steps import Reply, Route, ToolCallSpec, Usage


@dataclass
class _Ctx:
    n: int
    route: Route
    body: dict[str, Any]
    raw_len: int
    stream: bool

    @property
    def model(self) -> str:
        default = "claude-fake" if self.route == "anthropic" else "gpt-fake"
        return str(self.body.get("model") or default)

    @property
    def include_usage(self) -> bool:
        opts = self.body.get("stream_options")
        return isinstance(opts, dict) and opts.get("include_usage") is True


def _pieces(text: str, size: int) -> list[str]:
    size = max(1, size)
    return [text[i : i + size] for i in range(0, len(text), size)]


def _usage(reply: Reply, ctx: _Ctx) -> Usage:
    if reply.usage is not None:
        return reply.usage
    out_chars = len(reply.text) + len(reply.thinking or "")
    out_chars += sum(len(tc.arguments_json()) + len(tc.name) for tc in reply.tool_calls)
    return Usage(max(1, ctx.raw_len // 4), max(1, out_chars // 4))


_TO_OPENAI = {
    "end_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "stop_sequence": "stop",
}
_TO_ANTHROPIC = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}


def _stop_reason(reply: Reply, route: Route) -> str:
    if route == "anthropic":
        if reply.stop_reason is None:
            return "tool_use" if reply.tool_calls else "end_turn"
        return _TO_ANTHROPIC.get(reply.stop_reason, reply.stop_reason)
    if reply.stop_reason is None:
        return "tool_calls" if reply.tool_calls else "stop"
    return _TO_OPENAI.get(reply.stop_reason, reply.stop_reason)


def _tool_id(tc: ToolCallSpec, ctx: _Ctx, i: int) -> str:
    if tc.id is not None:
        return tc.id
    return f"{'toolu' if ctx.route == 'anthropic' else 'call'}_fake{ctx.n}_{i}"


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"))
