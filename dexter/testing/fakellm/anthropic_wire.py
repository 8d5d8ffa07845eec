"""Rendering a reply in Anthropic's Messages wire format (JSON and SSE)."""

from __future__ import annotations

import contextlib
import json
from typing import Any

from dexter.testing.fakellm.steps import Reply
from dexter.testing.fakellm.wire import _Ctx, _dumps, _pieces, _stop_reason, _tool_id, _usage


def _ant_content(reply: Reply, ctx: _Ctx) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    if reply.thinking is not None:
        content.append(
            {"type": "thinking", "thinking": reply.thinking, "signature": reply.thinking_signature}
        )
    if reply.text or not reply.tool_calls:
        content.append({"type": "text", "text": reply.text})
    for i, tc in enumerate(reply.tool_calls):
        args: Any = tc.arguments
        if isinstance(args, str):
            with contextlib.suppress(ValueError):  # else a bare string: the SDK won't check
                args = json.loads(args)
        content.append(
            {"type": "tool_use", "id": _tool_id(tc, ctx, i), "name": tc.name, "input": args}
        )
    return content


def _render_anthropic_json(reply: Reply, ctx: _Ctx) -> dict[str, Any]:
    u = _usage(reply, ctx)
    return {
        "id": f"msg_fake{ctx.n}",
        "type": "message",
        "role": "assistant",
        "model": ctx.model,
        "content": _ant_content(reply, ctx),
        "stop_reason": _stop_reason(reply, ctx.route),
        "stop_sequence": None,
        "usage": {
            "input_tokens": u.input_tokens,
            "output_tokens": u.output_tokens,
            "cache_read_input_tokens": u.cached_tokens,
            "cache_creation_input_tokens": u.written_tokens,
        },
    }


def _sse(event: dict[str, Any]) -> bytes:
    return f"event: {event['type']}\ndata: {_dumps(event)}\n\n".encode()


def _render_anthropic_stream(reply: Reply, ctx: _Ctx) -> tuple[list[bytes], int]:
    """SSE events for an Anthropic stream, and the index where the terminal events start."""
    u = _usage(reply, ctx)
    start = _render_anthropic_json(reply, ctx)
    start.update(content=[], stop_reason=None)
    start["usage"] = {**start["usage"], "output_tokens": 1}
    events = [_sse({"type": "message_start", "message": start}), _sse({"type": "ping"})]
    tools = iter(reply.tool_calls)
    for index, block in enumerate(_ant_content(reply, ctx)):
        kind = block["type"]
        deltas: list[dict[str, Any]]
        opening: dict[str, Any]
        if kind == "thinking":
            opening = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [
                {"type": "thinking_delta", "thinking": p}
                for p in _pieces(block["thinking"], reply.chunk_size)
            ]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif kind == "text":
            opening = {"type": "text", "text": ""}
            deltas = [
                {"type": "text_delta", "text": p} for p in _pieces(block["text"], reply.chunk_size)
            ]
        else:
            opening = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            pieces = _pieces(next(tools).arguments_json(), reply.chunk_size)
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in ["", *pieces]]
        events.append(
            _sse({"type": "content_block_start", "index": index, "content_block": opening})
        )
        events += [
            _sse({"type": "content_block_delta", "index": index, "delta": d}) for d in deltas
        ]
        events.append(_sse({"type": "content_block_stop", "index": index}))
    body_end = len(events)
    events.append(
        _sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": _stop_reason(reply, ctx.route), "stop_sequence": None},
                "usage": {"output_tokens": u.output_tokens},
            }
        )
    )
    events.append(_sse({"type": "message_stop"}))
    return events, body_end
