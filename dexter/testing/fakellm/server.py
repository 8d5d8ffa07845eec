"""The HTTP server: routes, the step queue, serving each step."""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import ssl
import struct
import threading
import time
import traceback
from collections import deque
from collections.abc import Iterable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from dexter.testing.fakellm.anthropic_wire import (
    _render_anthropic_json,
    _render_anthropic_stream,
    _sse,
)
from dexter.testing.fakellm.checks import (
    RecordedRequest,
    check_anthropic_messages,
    check_openai_messages,
    fake_embedding,
)
from dexter.testing.fakellm.openai_wire import _render_openai_json, _render_openai_stream
from dexter.testing.fakellm.steps import (
    _ANT_STATUS_TYPES,
    _CREATED,
    ConcreteStep,
    Delay,
    DropStream,
    Dynamic,
    HttpError,
    Malformed,
    MidStreamError,
    QueueRoute,
    Raw,
    Reply,
    Reset,
    Route,
    Stall,
    Step,
    Trickle,
    Truncate,
    _ant_body,
    _oai_body,
    load_script,
)
from dexter.testing.fakellm.wire import _Ctx, _dumps
from dexter.testing.server import BackgroundServer

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

    def reset(self) -> None:
        """Reset the connection: close with a zero linger, so the peer gets a TCP RST."""
        self.wfile.flush()
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeLLM


class FakeLLM(BackgroundServer):
    """Scripted fake OpenAI + Anthropic server on ``127.0.0.1``.

    Steps are popped FIFO: first from the request route's own queue (``enqueue(..,
    route="openai")``), then from the shared queue, then the ``set_default`` step. An empty
    queue answers a loud 500 ``fakellm: no responses queued`` (with ``x-should-retry: false``)
    and records a violation. Embeddings only use their own queue and otherwise return
    deterministic vectors. Given a server-side ``tls`` context it speaks HTTPS.
    """

    def __init__(
        self,
        steps: Iterable[Step | Mapping[str, Any]] = (),
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        embedding_dim: int = 16,
        log_path: str | Path | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.host = host
        self.tls = tls
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
        if self.tls is not None:
            server.socket = self.tls.wrap_socket(server.socket, server_side=True)
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
        """``http://127.0.0.1:PORT`` (``https`` when started with a server ``tls`` context)."""
        return f"{'https' if self.tls is not None else 'http'}://{self.host}:{self.port}"

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
            path, {k.lower(): v for k, v in h.headers.items()}, body, route, stream, method,
            raw=raw,
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
        elif isinstance(step, Trickle):
            h.send_head(200, headers, None)  # no length: the body ends with the connection
            for e in events[:k]:
                h.write(e)
            keep_alive = (b'event: ping\ndata: {"type": "ping"}\n\n' if ctx.route == "anthropic"
                          else b": keep-alive\n\n")
            self._trickle(h, step, keep_alive)
            for e in events[k:]:
                h.write(e)
        elif isinstance(step, Reset):
            k = min(k, len(events) - 1)
            h.send_head(200, headers, sum(len(e) for e in events))
            for e in events[:k]:
                h.write(e)
            h.reset()
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

    def _trickle(self, h: _Handler, step: Trickle, keep_alive: bytes) -> None:
        """Write ``keep_alive`` every interval until released, timed out or hung up on."""
        step.reached.set()
        deadline = time.monotonic() + step.timeout
        while not step.release.wait(step.interval_ms / 1000):
            if self._stopping.is_set() or time.monotonic() > deadline:
                return
            h.write(keep_alive)  # raises once the client has hung up
            step.pings += 1

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
        if isinstance(step, Trickle):  # spaces before the JSON, as some proxies send
            h.send_head(200, headers, None)
            self._trickle(h, step, b" ")
            h.write(data)
            return
        if isinstance(step, Reset):
            h.send_head(200, headers, len(data))
            h.write(data[: len(data) // 2])
            h.reset()
            return
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
