"""Rendering a reply in OpenAI's Chat Completions wire format (JSON and SSE)."""

from __future__ import annotations

from typing import Any

from dexter.testing.fakellm.steps import _CREATED, Reply, Usage
from dexter.testing.fakellm.wire import _Ctx, _dumps, _pieces, _stop_reason, _tool_id, _usage


def _oai_usage(u: Usage) -> dict[str, Any]:
    return {
        "prompt_tokens": u.input_tokens,
        "completion_tokens": u.output_tokens,
        "total_tokens": u.input_tokens + u.output_tokens,
        "prompt_tokens_details": {"cached_tokens": u.cached_tokens},
    }


def _render_openai_json(reply: Reply, ctx: _Ctx) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None, "refusal": None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": _tool_id(tc, ctx, i),
                "type": "function",
                "function": {"name": tc.name, "arguments": tc.arguments_json()},
            }
            for i, tc in enumerate(reply.tool_calls)
        ]
    return {
        "id": f"chatcmpl-fake{ctx.n}",
        "object": "chat.completion",
        "created": _CREATED,
        "model": ctx.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": _stop_reason(reply, ctx.route),
            }
        ],
        "usage": _oai_usage(_usage(reply, ctx)),
    }


def _render_openai_stream(reply: Reply, ctx: _Ctx) -> tuple[list[bytes], int]:
    """SSE events for an OpenAI stream, and the index where the terminal events start."""
    head = {
        "id": f"chatcmpl-fake{ctx.n}",
        "object": "chat.completion.chunk",
        "created": _CREATED,
        "model": ctx.model,
    }
    extra = {"usage": None} if ctx.include_usage else {}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return f"data: {_dumps({**head, 'choices': [choice], **extra})}\n\n".encode()

    events = [chunk({"role": "assistant", "content": "" if reply.text else None})]
    events += [chunk({"content": p}) for p in _pieces(reply.text, reply.chunk_size)]
    per_call: list[list[bytes]] = []
    for i, tc in enumerate(reply.tool_calls):
        first = {
            "index": i,
            "id": _tool_id(tc, ctx, i),
            "type": "function",
            "function": {"name": tc.name, "arguments": ""},
        }
        frags = [chunk({"tool_calls": [first]})]
        frags += [
            chunk({"tool_calls": [{"index": i, "function": {"arguments": p}}]})
            for p in _pieces(tc.arguments_json(), reply.chunk_size)
        ]
        per_call.append(frags)
    if reply.interleave_tool_calls:
        longest = max((len(f) for f in per_call), default=0)
        events += [f[j] for j in range(longest) for f in per_call if j < len(f)]
    else:
        events += [e for f in per_call for e in f]
    body_end = len(events)
    events.append(chunk({}, _stop_reason(reply, ctx.route)))
    if ctx.include_usage:
        usage_chunk = {**head, "choices": [], "usage": _oai_usage(_usage(reply, ctx))}
        events.append(f"data: {_dumps(usage_chunk)}\n\n".encode())
    events.append(b"data: [DONE]\n\n")
    return events, body_end
