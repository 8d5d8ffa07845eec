"""A scripted fake LLM HTTP server for offline tests (stdlib only).

The real ``openai`` and ``anthropic`` SDKs talk real HTTP over loopback to this server, which
speaks both wire formats (OpenAI Chat Completions + embeddings, Anthropic Messages), serves
scripted steps from a FIFO queue, records every request and checks request invariants
(tool-call pairing, ``stream_options.include_usage``, ``max_tokens``, auth headers).

In-process::

    with FakeLLM() as fake:
        fake.enqueue(Reply(text="hi", tool_calls=[ToolCallSpec("web_search", {"q": "x"})]))
        client = openai.OpenAI(base_url=fake.openai_base_url, api_key="sk-test")
        ...
        fake.assert_no_violations()

Harness mode::

    python -m dexter.testing.fakellm --script scenario.json --port 0 --port-file PORT
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import json
import math
import signal
import socket
import struct
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal, TypeAlias

from dexter.testing.server import BackgroundServer

Route: TypeAlias = Literal["openai", "anthropic", "embeddings", "count_tokens", "models", "unknown"]
QueueRoute: TypeAlias = Literal["openai", "anthropic", "embeddings"]

_CREATED = 1700000000
_DEFAULT_PARTIAL = "This reply is going to be cut off somewhere in the middle, sorry."


# --------------------------------------------------------------------------------------------
# Steps
# --------------------------------------------------------------------------------------------


@dataclass
class Usage:
    """Token usage reported by a scripted reply."""

    input_tokens: int
    output_tokens: int
    cached_tokens: int = 0


@dataclass
class ToolCallSpec:
    """One tool call in a reply. A ``str`` ``arguments`` is sent verbatim (may be invalid JSON)."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None

    def arguments_json(self) -> str:
        """The arguments as the JSON text sent on the wire."""
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


@dataclass
class Reply:
    """A successful assistant turn, rendered in the requesting provider's wire format.

    ``thinking`` is only rendered on the Anthropic route. ``usage=None`` estimates tokens
    (request bytes / 4 in, reply chars / 4 out). ``stop_reason=None`` picks ``tool_calls`` /
    ``tool_use`` when there are tool calls, else ``stop`` / ``end_turn``; other values are
    translated between providers where there is an obvious equivalent.
    """

    text: str = ""
    tool_calls: list[ToolCallSpec] = field(default_factory=list)
    thinking: str | None = None
    thinking_signature: str = "sig=="
    usage: Usage | None = None
    chunk_size: int = 7
    stop_reason: str | None = None
    interleave_tool_calls: bool = False


@dataclass
class HttpError:
    """An HTTP error response. ``body=None`` renders a route-appropriate envelope from
    ``message`` and the status code."""

    status: int
    body: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    message: str = "fakellm scripted error"

    @classmethod
    def openai_context_overflow(cls, limit: int = 128000, requested: int = 130000) -> HttpError:
        """OpenAI 400 ``context_length_exceeded``."""
        msg = (
            f"This model's maximum context length is {limit} tokens. However, your messages "
            f"resulted in {requested} tokens. Please reduce the length of the messages."
        )
        return cls(
            400, _oai_body(msg, "invalid_request_error", "context_length_exceeded", "messages")
        )

    @classmethod
    def openai_rate_limit(cls, retry_after: str = "0.01") -> HttpError:
        """OpenAI 429 ``rate_limit_exceeded`` with ``retry-after``."""
        msg = (
            "Rate limit reached for gpt-fake in organization org-fake on requests per min (RPM): "
            "Limit 3, Used 3, Requested 1. Please try again in 20s."
        )
        return cls(
            429,
            _oai_body(msg, "requests", "rate_limit_exceeded"),
            {"retry-after": retry_after, "x-ratelimit-remaining-requests": "0"},
        )

    @classmethod
    def openai_insufficient_quota(cls) -> HttpError:
        """OpenAI billing 429 that must not be retried (``x-should-retry: false``)."""
        msg = (
            "You exceeded your current quota, please check your plan and billing details. "
            "For more information on this error, read the docs: "
            "https://platform.openai.com/docs/guides/error-codes/api-errors."
        )
        return cls(
            429,
            _oai_body(msg, "insufficient_quota", "insufficient_quota"),
            {"x-should-retry": "false"},
        )

    @classmethod
    def openai_auth(cls) -> HttpError:
        """OpenAI 401 ``invalid_api_key``."""
        msg = (
            "Incorrect API key provided: sk-test***. You can find your API key at "
            "https://platform.openai.com/account/api-keys."
        )
        return cls(401, _oai_body(msg, "invalid_request_error", "invalid_api_key"))

    @classmethod
    def server_error(cls, status: int = 500, retry_after_ms: str = "10") -> HttpError:
        """A 5xx whose body is shaped for whichever route serves it (retried by the SDKs)."""
        return cls(status, None, {"retry-after-ms": retry_after_ms}, "Internal server error")

    @classmethod
    def anthropic_prompt_too_long(cls, n: int = 205351, max: int = 200000) -> HttpError:
        """Anthropic 400 ``prompt is too long: N tokens > M maximum``."""
        return cls(
            400,
            _ant_body("invalid_request_error", f"prompt is too long: {n} tokens > {max} maximum"),
        )

    @classmethod
    def anthropic_overloaded(cls, retry_after_ms: str = "10") -> HttpError:
        """Anthropic 529 ``overloaded_error`` (retried by the SDK)."""
        return cls(
            529, _ant_body("overloaded_error", "Overloaded"), {"retry-after-ms": retry_after_ms}
        )

    @classmethod
    def anthropic_auth(cls) -> HttpError:
        """Anthropic 401 ``authentication_error``."""
        return cls(401, _ant_body("authentication_error", "invalid x-api-key"))

    @classmethod
    def anthropic_rate_limit(cls, retry_after: str = "0.01") -> HttpError:
        """Anthropic 429 ``rate_limit_error`` with ``retry-after``."""
        msg = (
            "This request would exceed the rate limit for your organization of 50 requests "
            "per minute. Please try again later."
        )
        return cls(
            429,
            _ant_body("rate_limit_error", msg),
            {"retry-after": retry_after, "anthropic-ratelimit-requests-remaining": "0"},
        )


@dataclass
class DropStream:
    """Send the first ``after_chunks`` events, promising more bytes than sent, then close."""

    after_chunks: int = 2
    reply: Reply = field(default_factory=lambda: Reply(text=_DEFAULT_PARTIAL))


@dataclass
class Truncate:
    """Send at most ``after_chunks`` events and end the body cleanly with no terminal event."""

    after_chunks: int = 2
    reply: Reply = field(default_factory=lambda: Reply(text=_DEFAULT_PARTIAL))


@dataclass
class MidStreamError:
    """Send ``after_chunks`` events then an in-stream error event (HTTP status stays 200)."""

    after_chunks: int = 2
    reply: Reply = field(default_factory=lambda: Reply(text=_DEFAULT_PARTIAL))
    error_type: str = "overloaded_error"
    message: str = "Overloaded"


@dataclass
class Malformed:
    """Send ``after_chunks`` events then a ``data:`` line that is not valid JSON, then close."""

    after_chunks: int = 2
    reply: Reply = field(default_factory=lambda: Reply(text=_DEFAULT_PARTIAL))


@dataclass
class Stall:
    """Send ``after_chunks`` events, set ``reached``, wait for ``gate`` (or ``timeout``), finish."""

    gate: threading.Event = field(default_factory=threading.Event)
    after_chunks: int = 2
    reply: Reply = field(default_factory=lambda: Reply(text=_DEFAULT_PARTIAL))
    timeout: float = 30.0
    reached: threading.Event = field(default_factory=threading.Event, repr=False)


@dataclass
class Delay:
    """Sleep ``seconds`` and then serve ``step``."""

    seconds: float
    step: Step


@dataclass
class Raw:
    """Serve a literal response body (e.g. an HTML 502 page from a proxy)."""

    status: int = 200
    body: str = ""
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "text/plain"})


@dataclass
class Dynamic:
    """Compute the step from the request itself: ``respond(request)`` returns any other step.

    For replies that depend on what was sent, e.g. a summarizer that echoes the numbers in
    its input. The request is already recorded (and checked) when ``respond`` runs; an
    exception in ``respond`` is a violation and answers a 500. Queue it or make it the
    default step (not inside ``Delay``); not loadable from JSON.
    """

    respond: Callable[[RecordedRequest], ConcreteStep]


ConcreteStep: TypeAlias = (
    Reply | HttpError | DropStream | Truncate | MidStreamError | Malformed | Stall | Delay | Raw
)
Step: TypeAlias = ConcreteStep | Dynamic

# Module-level aliases for the presets.
openai_context_overflow = HttpError.openai_context_overflow
openai_rate_limit = HttpError.openai_rate_limit
openai_insufficient_quota = HttpError.openai_insufficient_quota
openai_auth = HttpError.openai_auth
server_error = HttpError.server_error
anthropic_prompt_too_long = HttpError.anthropic_prompt_too_long
anthropic_overloaded = HttpError.anthropic_overloaded
anthropic_auth = HttpError.anthropic_auth
anthropic_rate_limit = HttpError.anthropic_rate_limit
PRESETS: dict[str, Any] = {
    name: getattr(HttpError, name)
    for name in (
        "openai_context_overflow",
        "openai_rate_limit",
        "openai_insufficient_quota",
        "openai_auth",
        "server_error",
        "anthropic_prompt_too_long",
        "anthropic_overloaded",
        "anthropic_auth",
        "anthropic_rate_limit",
    )
}


def _oai_body(
    message: str, type_: str, code: str | None, param: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def _ant_body(type_: str, message: str, request_id: str = "req_fake") -> dict[str, Any]:
    return {"type": "error", "error": {"type": type_, "message": message}, "request_id": request_id}


_ANT_STATUS_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


# --------------------------------------------------------------------------------------------
# Loading steps from JSON
# --------------------------------------------------------------------------------------------


def _reply_from_dict(d: Mapping[str, Any]) -> Reply:
    usage = d.get("usage")
    return Reply(
        text=str(d.get("text", "")),
        tool_calls=[
            ToolCallSpec(str(tc["name"]), tc.get("arguments", {}), tc.get("id"))
            for tc in d.get("tool_calls", [])
        ],
        thinking=d.get("thinking"),
        thinking_signature=str(d.get("thinking_signature", "sig==")),
        usage=Usage(**usage) if usage is not None else None,
        chunk_size=int(d.get("chunk_size", 7)),
        stop_reason=d.get("stop_reason"),
        interleave_tool_calls=bool(d.get("interleave_tool_calls", False)),
    )


def step_from_dict(d: Mapping[str, Any]) -> Step:
    """Build a step from its JSON form, e.g. ``{"type": "reply", "text": "hi"}``.

    Types: ``reply``, ``http_error`` (``preset`` + preset kwargs, or ``status``/``body``/
    ``headers``/``message``), ``drop_stream``/``truncate``/``malformed`` (``after_chunks``,
    ``reply``), ``mid_stream_error`` (+ ``error_type``, ``message``), ``stall`` (+ ``timeout``;
    the gate is never set, so it acts as a mid-stream pause), ``delay`` (``seconds``, ``step``)
    and ``raw`` (``status``, ``body``, ``headers``).
    """
    kind = d.get("type", "reply")
    rest = {k: v for k, v in d.items() if k != "type"}
    if kind == "reply":
        return _reply_from_dict(rest)
    if kind == "http_error":
        if "preset" in rest:
            preset = rest.pop("preset")
            if preset not in PRESETS:
                raise ValueError(f"unknown http_error preset {preset!r}; known: {sorted(PRESETS)}")
            step: HttpError = PRESETS[preset](**rest)
            return step
        return HttpError(
            int(rest["status"]),
            rest.get("body"),
            dict(rest.get("headers", {})),
            str(rest.get("message", "fakellm scripted error")),
        )
    if kind == "delay":
        return Delay(float(rest["seconds"]), step_from_dict(rest["step"]))
    if kind == "raw":
        return Raw(
            int(rest.get("status", 200)),
            str(rest.get("body", "")),
            dict(rest.get("headers", {"content-type": "text/plain"})),
        )
    fault = {
        "drop_stream": DropStream,
        "truncate": Truncate,
        "mid_stream_error": MidStreamError,
        "malformed": Malformed,
        "stall": Stall,
    }.get(kind)
    if fault is None:
        raise ValueError(f"unknown step type {kind!r}")
    if "reply" in rest:
        rest["reply"] = _reply_from_dict(rest["reply"])
    result: Step = fault(**rest)
    return result


def load_script(source: str | Path | Sequence[Mapping[str, Any] | Step]) -> list[Step]:
    """Load steps from a JSON file path, or convert a list of step dicts / steps."""
    items: Any
    if isinstance(source, str | Path):
        items = json.loads(Path(source).read_text(encoding="utf-8"))
        if not isinstance(items, list):
            raise ValueError(f"{source}: a fakellm script must be a JSON list of steps")
    else:
        items = source
    return [item if not isinstance(item, Mapping) else step_from_dict(item) for item in items]


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
            "cache_creation_input_tokens": 0,
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


# --------------------------------------------------------------------------------------------
# Server
# --------------------------------------------------------------------------------------------


def _route_for(method: str, path: str) -> Route:
    if method == "GET":
        return "models" if path.rstrip("/").endswith("/models") else "unknown"
    if path.endswith("/chat/completions"):
        return "openai"
    if path.endswith("/messages/count_tokens"):
        return "count_tokens"
    if path.endswith("/messages"):
        return "anthropic"
    if path.endswith("/embeddings"):
        return "embeddings"
    return "unknown"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default stderr access log."""

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("transfer-encoding") or "").lower():
            data = b""
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("content-length") or 0))

    def _handle(self, method: str) -> None:
        fake = self.server.fake
        try:
            raw = self._read_body() if method == "POST" else b""
            fake._dispatch(self, method, raw)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            pass  # the client went away (interrupt / dropped stream test)
        except Exception:
            fake._add_violation(f"fakellm internal error:\n{traceback.format_exc()}")
            with contextlib.suppress(OSError):
                self.send_json(500, _oai_body("fakellm internal error", "server_error", None))
        finally:
            self.close_connection = True

    def send_head(self, status: int, headers: Mapping[str, str], length: int | None) -> None:
        """Write the status line and headers (always ``Connection: close``)."""
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        if length is not None:
            self.send_header("Content-Length", str(length))
        self.send_header("Connection", "close")
        self.end_headers()

    def send_json(self, status: int, obj: Any, headers: Mapping[str, str] | None = None) -> None:
        """Send a complete JSON response."""
        data = json.dumps(obj).encode()
        self.send_head(status, {"Content-Type": "application/json", **(headers or {})}, len(data))
        self.wfile.write(data)

    def write(self, data: bytes) -> None:
        """Write body bytes and flush them to the socket."""
        self.wfile.write(data)
        self.wfile.flush()

    def abort(self) -> None:
        """Close the socket abruptly."""
        self.wfile.flush()
        self.connection.shutdown(socket.SHUT_RDWR)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeLLM


class FakeLLM(BackgroundServer):
    """Scripted fake OpenAI + Anthropic server on ``127.0.0.1``.

    Steps are popped FIFO: first from the request route's own queue (``enqueue(..,
    route="openai")``), then from the shared queue, then the ``set_default`` step. An empty
    queue answers a loud 500 ``fakellm: no responses queued`` (with ``x-should-retry: false``)
    and records a violation. Embeddings only use their own queue and otherwise return
    deterministic vectors.
    """

    def __init__(
        self,
        steps: Iterable[Step | Mapping[str, Any]] = (),
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        embedding_dim: int = 16,
        log_path: str | Path | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.embedding_dim = embedding_dim
        self.log_path = Path(log_path) if log_path is not None else None
        self._lock = threading.Lock()
        self._shared: deque[Step] = deque()
        self._routed: dict[str, deque[Step]] = {
            "openai": deque(),
            "anthropic": deque(),
            "embeddings": deque(),
        }
        self._default: Step | None = None
        self._requests: list[RecordedRequest] = []
        self._violations: list[str] = []
        self._server: _Server | None = None
        self._stopping = threading.Event()
        self.enqueue(*steps)

    # ---- lifecycle ---------------------------------------------------------------------

    def start(self) -> FakeLLM:
        """Bind and serve in a background thread; returns ``self``."""
        if self._server is not None:
            return self
        server = _Server((self.host, self.port), _Handler)
        server.fake = self
        self.port = server.server_address[1]
        self._stopping.clear()
        self._serve_in_background(server, "fakellm")
        return self

    def stop(self) -> None:
        """Shut the server down and release any stalled streams."""
        self._stopping.set()
        super().stop()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://{self.host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """Base URL for the OpenAI SDK (``url + "/v1"``)."""
        return self.url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        """Base URL for the Anthropic SDK (the SDK appends ``/v1/messages``)."""
        return self.url

    # ---- script ------------------------------------------------------------------------

    def enqueue(self, *steps: Step | Mapping[str, Any], route: QueueRoute | None = None) -> None:
        """Append steps to the shared queue, or to ``route``'s own queue."""
        loaded = load_script(list(steps))
        with self._lock:
            (self._shared if route is None else self._routed[route]).extend(loaded)

    def set_default(self, step: Step | Mapping[str, Any] | None) -> None:
        """Step served whenever the queues are empty (``None`` restores the loud 500)."""
        with self._lock:
            self._default = load_script([step])[0] if step is not None else None

    def remaining(self) -> int:
        """Number of queued steps not served yet (the default step is not counted)."""
        with self._lock:
            return len(self._shared) + sum(len(q) for q in self._routed.values())

    def _next_step(self, route: Route) -> Step | None:
        with self._lock:
            own = self._routed.get(route)
            if own:
                return own.popleft()
            if route == "embeddings":
                return None
            if self._shared:
                return self._shared.popleft()
            return self._default

    # ---- recording ---------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of all recorded requests, oldest first."""
        with self._lock:
            return list(self._requests)

    def requests_for(self, route: Route) -> list[RecordedRequest]:
        """Recorded requests for one route."""
        return [r for r in self.requests if r.route == route]

    @property
    def last_request(self) -> RecordedRequest:
        """The most recent request (``AssertionError`` if none)."""
        reqs = self.requests
        assert reqs, "fakellm: no requests recorded"
        return reqs[-1]

    @property
    def violations(self) -> list[str]:
        """Readable invariant violations found so far."""
        with self._lock:
            return list(self._violations)

    def assert_no_violations(self) -> None:
        """Raise ``AssertionError`` listing every violation."""
        found = self.violations
        assert not found, "fakellm violations:\n" + "\n".join(f"- {v}" for v in found)

    def assert_all_consumed(self) -> None:
        """Raise ``AssertionError`` if scripted steps were left unserved."""
        left = self.remaining()
        assert left == 0, f"fakellm: {left} scripted step(s) never served"

    def _add_violation(self, text: str) -> None:
        with self._lock:
            self._violations.append(text)

    def _check(self, rec: RecordedRequest, n: int) -> list[str]:
        problems: list[str] = []
        body = rec.body if isinstance(rec.body, dict) else {}
        if rec.route in ("openai", "anthropic", "embeddings") and not isinstance(rec.body, dict):
            problems.append("request body is not a JSON object")
        if rec.route in ("openai", "embeddings") and "authorization" not in rec.headers:
            problems.append("missing Authorization header")
        if rec.route == "openai":
            problems += check_openai_messages(body.get("messages"))
            if rec.stream and not _Ctx(n, rec.route, body, 0, True).include_usage:
                problems.append("streaming request without stream_options.include_usage=true")
        if rec.route in ("anthropic", "count_tokens"):
            if "x-api-key" not in rec.headers and "authorization" not in rec.headers:
                problems.append("missing x-api-key / Authorization header")
            problems += check_anthropic_messages(body.get("messages"))
            if rec.route == "anthropic" and "max_tokens" not in body:
                problems.append("request without max_tokens")
        return [f"request #{n} ({rec.route} {rec.path}): {p}" for p in problems]

    # ---- serving -----------------------------------------------------------------------

    def _dispatch(self, h: _Handler, method: str, raw: bytes) -> None:
        path = h.path.split("?", 1)[0]
        route = _route_for(method, path)
        body: Any = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
        stream = isinstance(body, dict) and body.get("stream") is True
        rec = RecordedRequest(
            path, {k.lower(): v for k, v in h.headers.items()}, body, route, stream, method
        )
        with self._lock:
            self._requests.append(rec)
            n = len(self._requests)
        problems = self._check(rec, n)
        with self._lock:
            self._violations.extend(problems)
        if self.log_path is not None:
            line: dict[str, Any] = {
                "n": n,
                "method": method,
                "path": path,
                "route": route,
                "stream": stream,
                "body": body,
                "violations": problems,
            }
            with self._lock, self.log_path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(line) + "\n")
        ctx = _Ctx(n, route, body if isinstance(body, dict) else {}, len(raw), stream)
        if route == "models":
            self._serve_models(h)
        elif route == "count_tokens":
            h.send_json(200, {"input_tokens": max(1, len(raw) // 4)})
        elif route == "unknown":
            h.send_json(
                404,
                _oai_body(f"fakellm: no route for {method} {path}", "invalid_request_error", None),
            )
        else:
            step = self._next_step(route)
            if step is None and route == "embeddings":
                self._serve_embeddings(h, ctx)
            elif step is None:
                self._add_violation(f"request #{n} ({route} {path}): no responses queued")
                msg = "fakellm: no responses queued"
                h.send_json(
                    500,
                    _oai_body(msg, "fakellm_error", "no_responses_queued")
                    if route != "anthropic"
                    else _ant_body("api_error", msg),
                    {"x-should-retry": "false"},
                )
            else:
                concrete = step.respond(rec) if isinstance(step, Dynamic) else step
                if isinstance(concrete, Dynamic):
                    raise TypeError("Dynamic.respond must return a concrete step, not Dynamic")
                self._serve(h, concrete, ctx)

    def _serve_models(self, h: _Handler) -> None:
        if "anthropic-version" in h.headers:
            data = [
                {
                    "type": "model",
                    "id": "claude-fake",
                    "display_name": "Claude Fake",
                    "created_at": "2026-01-01T00:00:00Z",
                }
            ]
            h.send_json(
                200,
                {
                    "data": data,
                    "has_more": False,
                    "first_id": "claude-fake",
                    "last_id": "claude-fake",
                },
            )
        else:
            models: list[dict[str, Any]] = [
                {"id": m, "object": "model", "created": _CREATED, "owned_by": "fakellm"}
                for m in ("gpt-fake", "text-embedding-fake")
            ]
            h.send_json(200, {"object": "list", "data": models})

    def _serve_embeddings(self, h: _Handler, ctx: _Ctx) -> None:
        inputs = ctx.body.get("input", "")
        texts = [inputs] if isinstance(inputs, str) else [str(x) for x in inputs]
        dim = int(ctx.body.get("dimensions") or self.embedding_dim)
        data = []
        for i, text in enumerate(texts):
            vec = fake_embedding(text, dim)
            emb: Any = vec
            if ctx.body.get("encoding_format") == "base64":
                emb = base64.b64encode(struct.pack(f"<{dim}f", *vec)).decode()
            data.append({"object": "embedding", "index": i, "embedding": emb})
        tokens = sum(max(1, len(t) // 4) for t in texts)
        h.send_json(
            200,
            {
                "object": "list",
                "data": data,
                "model": ctx.body.get("model", "text-embedding-fake"),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            },
        )

    def _error_body(
        self, step: HttpError | MidStreamError, ctx: _Ctx, status: int
    ) -> dict[str, Any]:
        if isinstance(step, HttpError) and step.body is not None:
            return step.body
        message = step.message
        if ctx.route == "anthropic":
            kind = (
                step.error_type
                if isinstance(step, MidStreamError)
                else _ANT_STATUS_TYPES.get(
                    status, "api_error" if status >= 500 else "invalid_request_error"
                )
            )
            return _ant_body(kind, message, f"req_fake{ctx.n}")
        kind = (
            step.error_type
            if isinstance(step, MidStreamError)
            else ("server_error" if status >= 500 else "invalid_request_error")
        )
        return _oai_body(message, kind, None)

    def _serve(self, h: _Handler, step: ConcreteStep, ctx: _Ctx) -> None:
        if isinstance(step, Delay):
            time.sleep(step.seconds)
            if isinstance(step.step, Dynamic):
                raise TypeError("Dynamic cannot be delayed; make respond() return a Delay instead")
            self._serve(h, step.step, ctx)
            return
        ids = (
            {"request-id": f"req_fake{ctx.n}"}
            if ctx.route == "anthropic"
            else {"x-request-id": f"req_fake{ctx.n}"}
        )
        if isinstance(step, HttpError):
            h.send_json(
                step.status, self._error_body(step, ctx, step.status), {**ids, **step.headers}
            )
            return
        if isinstance(step, Raw):
            data = step.body.encode()
            h.send_head(step.status, step.headers, len(data))
            h.write(data)
            return
        if ctx.route == "embeddings":
            self._serve_embeddings(h, ctx)
            return
        reply = step if isinstance(step, Reply) else step.reply
        if not ctx.stream:
            self._serve_json_reply(h, step, reply, ctx, ids)
            return
        render = _render_anthropic_stream if ctx.route == "anthropic" else _render_openai_stream
        events, body_end = render(reply, ctx)
        k = max(0, step.after_chunks) if not isinstance(step, Reply) else len(events)
        headers = {
            "Content-Type": "text/event-stream; charset=utf-8",
            "Cache-Control": "no-cache",
            **ids,
        }
        if isinstance(step, Reply):
            self._send_events(h, headers, events)
        elif isinstance(step, Truncate):
            self._send_events(h, headers, events[: min(k, body_end)])
        elif isinstance(step, DropStream):
            k = min(k, len(events) - 1)
            h.send_head(200, headers, sum(len(e) for e in events))
            for e in events[:k]:
                h.write(e)
            h.abort()
        elif isinstance(step, MidStreamError | Malformed):
            if isinstance(step, Malformed):
                tail = b"data: {not valid json\n\n"
                if ctx.route == "anthropic":
                    tail = b"event: content_block_delta\n" + tail
            elif ctx.route == "anthropic":
                tail = _sse(self._error_body(step, ctx, 200))
            else:
                tail = f"data: {_dumps(self._error_body(step, ctx, 200))}\n\n".encode()
            self._send_events(h, headers, [*events[: min(k, body_end)], tail])
        else:  # Stall
            h.send_head(200, headers, sum(len(e) for e in events))
            for e in events[:k]:
                h.write(e)
            self._wait_gate(step)
            for e in events[k:]:
                h.write(e)

    def _wait_gate(self, step: Stall) -> None:
        step.reached.set()
        deadline = time.monotonic() + step.timeout
        while not step.gate.wait(0.02):
            if self._stopping.is_set() or time.monotonic() > deadline:
                return

    def _send_events(self, h: _Handler, headers: Mapping[str, str], events: list[bytes]) -> None:
        h.send_head(200, headers, sum(len(e) for e in events))
        for e in events:
            h.write(e)

    def _serve_json_reply(
        self, h: _Handler, step: Step, reply: Reply, ctx: _Ctx, ids: Mapping[str, str]
    ) -> None:
        if isinstance(step, MidStreamError):
            status = 529 if step.error_type == "overloaded_error" else 500
            h.send_json(
                status, self._error_body(step, ctx, status), {**ids, "retry-after-ms": "10"}
            )
            return
        obj = (
            _render_anthropic_json(reply, ctx)
            if ctx.route == "anthropic"
            else _render_openai_json(reply, ctx)
        )
        data = json.dumps(obj).encode()
        headers = {"Content-Type": "application/json", **ids}
        if isinstance(step, Stall):
            self._wait_gate(step)
        if isinstance(step, DropStream):  # promise the whole body, send half, hang up
            h.send_head(200, headers, len(data))
            h.write(data[: len(data) // 2])
            h.abort()
            return
        if isinstance(step, Truncate):  # a complete HTTP body holding half a JSON document
            data = data[: len(data) // 2]
        elif isinstance(step, Malformed):
            data = b"{not valid json"
        h.send_head(200, headers, len(data))
        h.write(data)


# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m dexter.testing.fakellm --script S.json --port 0 --port-file P``."""
    parser = argparse.ArgumentParser(
        prog="python -m dexter.testing.fakellm", description="Scripted fake LLM HTTP server."
    )
    parser.add_argument("--script", help="JSON list of steps served FIFO")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", help="write the bound port here once listening")
    parser.add_argument("--default", help="a JSON step served when the queue is empty")
    parser.add_argument("--log", help="append one JSON line per request (body + violations)")
    args = parser.parse_args(argv)

    fake = FakeLLM(
        load_script(args.script) if args.script else (),
        host=args.host,
        port=args.port,
        log_path=args.log,
    )
    if args.default:
        fake.set_default(json.loads(args.default))
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    fake.start()
    if args.port_file:
        tmp = Path(args.port_file + ".tmp")
        tmp.write_text(str(fake.port), encoding="utf-8")
        tmp.replace(args.port_file)
    print(f"fakellm listening on {fake.url}", file=sys.stderr, flush=True)
    try:
        while not done.wait(0.2):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        fake.stop()
        for v in fake.violations:
            print(f"fakellm violation: {v}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
