"""Scripted steps: replies, errors, stream faults, and loading them from JSON."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

if TYPE_CHECKING:
    from dexter.testing.fakellm.checks import RecordedRequest



Route: TypeAlias = Literal["openai", "anthropic", "embeddings", "count_tokens", "models", "unknown"]
QueueRoute: TypeAlias = Literal["openai", "anthropic", "embeddings"]

_CREATED = 1700000000
_DEFAULT_PARTIAL = "This reply is going to be cut off somewhere in the middle, sorry."


# --------------------------------------------------------------------------------------------
# Steps
# --------------------------------------------------------------------------------------------


@dataclass
class Usage:
    """Token usage reported by a scripted reply.

    ``input_tokens`` is reported as each wire does: OpenAI's ``prompt_tokens`` includes
    ``cached_tokens``; Anthropic's ``input_tokens`` leaves out the cache reads
    (``cached_tokens``) and writes (``written_tokens``), reported beside it.
    """

    input_tokens: int
    output_tokens: int
    cached_tokens: int = 0
    written_tokens: int = 0


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
class Trickle:
    """Send ``after_chunks`` events, then keep the line busy with a keep-alive every
    ``interval_ms`` (an SSE comment on the OpenAI route, a ``ping`` event on Anthropic's, a
    space before a blocking JSON reply) until ``release`` is set, ``timeout`` seconds pass
    or the client hangs up; then the rest of the reply. ``pings`` counts the keep-alives
    sent; ``reached`` is set when the trickle starts."""

    after_chunks: int = 0
    interval_ms: int = 20
    reply: Reply = field(default_factory=lambda: Reply(text=_DEFAULT_PARTIAL))
    timeout: float = 30.0
    release: threading.Event = field(default_factory=threading.Event, repr=False)
    reached: threading.Event = field(default_factory=threading.Event, repr=False)
    pings: int = 0


@dataclass
class Reset:
    """Send ``after_chunks`` events (half the body of a blocking reply), then reset the
    connection (a TCP RST, as a crashed proxy or a NAT timeout does)."""

    after_chunks: int = 2
    reply: Reply = field(default_factory=lambda: Reply(text=_DEFAULT_PARTIAL))


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
    Reply | HttpError | DropStream | Truncate | MidStreamError | Malformed | Stall | Trickle
    | Reset | Delay | Raw
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
    the gate is never set, so it acts as a mid-stream pause), ``trickle`` (``after_chunks``,
    ``interval_ms``, ``timeout``, ``reply``; never released), ``reset`` (``after_chunks``,
    ``reply``), ``delay`` (``seconds``, ``step``) and ``raw`` (``status``, ``body``,
    ``headers``).
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
        "trickle": Trickle,
        "reset": Reset,
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
