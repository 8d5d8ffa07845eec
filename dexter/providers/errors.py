"""Provider errors: one exception type, classified into kinds the loop and the user understand.

``classify_error`` turns any exception raised while calling a provider (SDK status errors,
transport errors from httpx/httpx2, timeouts, malformed streams) into a ``ProviderError``
whose ``message`` says in plain words what happened, which key or model is involved and
what to do. Known API-key values and ``sk-...``-looking tokens are scrubbed from every text
that leaves this module.
"""

from __future__ import annotations

import email.utils
import json
import re
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from dexter.secrets import scrub, secret_values

ErrorKind = Literal[
    "context_overflow", "rate_limit", "billing", "auth", "timeout", "overloaded",
    "server", "connection", "not_found", "bad_request", "cancelled", "unknown",
]

NON_RETRYABLE: frozenset[str] = frozenset(
    {"context_overflow", "billing", "auth", "not_found", "bad_request", "cancelled", "unknown"}
)
RETRYABLE: frozenset[str] = frozenset(
    {"rate_limit", "overloaded", "server", "timeout", "connection"}
)


@dataclass
class ProviderError(Exception):
    """A failed provider call.

    ``message`` is plain words for the user (which key, which model, what to do) and never
    contains an API key. ``detail`` is the provider's own message, also scrubbed of keys.
    """

    kind: ErrorKind
    message: str
    provider: str = ""
    model: str = ""
    status: int | None = None
    retry_after: float | None = None
    detail: str = ""
    request_id: str = ""
    output_started: bool = False
    refused: bool = False
    """Nothing accepted the connection (``ECONNREFUSED``): the server is not running at
    that address, so a blocking retry of a stream cannot help either."""
    untrusted: bool = False
    """The server's TLS certificate was not trusted: the same call fails the same way until
    the user changes what is trusted, so it is never retried."""

    def __str__(self) -> str:
        return self.message

    @property
    def retryable(self) -> bool:
        """Whether trying the same call again may succeed (429, 5xx, overload, network)."""
        return self.kind in RETRYABLE and not self.untrusted


def is_context_overflow(err: BaseException) -> bool:
    """True when ``err`` says the prompt did not fit the model's context window."""
    return isinstance(err, ProviderError) and err.kind == "context_overflow"


def scrub_secrets(text: str, env: Mapping[str, str] | None = None, extra: tuple[str, ...] = ()) -> str:
    """Mask key values from ``env`` and ``extra``, and key-shaped tokens, for error messages."""
    return scrub(text, secret_values(env, extra), key_shaped=True)


# --------------------------------------------------------------------------------------------
# Retry-After
# --------------------------------------------------------------------------------------------


def parse_retry_after(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms``, else ``retry-after`` (seconds or an HTTP date)."""
    if not headers:
        return None
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms:
        try:
            ms = float(raw_ms)
        except ValueError:
            ms = -1.0
        if ms >= 0:
            return ms / 1000.0
    raw = lowered.get("retry-after", "").strip()
    if not raw:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError, IndexError):
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
        return max(0.0, seconds)
    return seconds if seconds >= 0 else None


# --------------------------------------------------------------------------------------------
# Text classification
# --------------------------------------------------------------------------------------------

_RATE_TEXT = re.compile(
    r"rate[_ ]?limit|too many requests|tokens per min|requests per min|\btpm\b|\brpm\b"
    r"|per minute|resource[_ ]exhausted|resource has been exhausted|cooling down",
    re.IGNORECASE,
)
_OVERFLOW_TEXT = re.compile(
    r"context[_ ]length[_ ]exceeded|maximum context length|context window|context limit"
    r"|prompt is too long|too many tokens|request[_ ]too[_ ]large|input is too long"
    r"|input too long|input length .*exceed|model token limit|context overflow"
    r"|reduce the length of the messages|maximum prompt length|exceeds? the (?:model'?s? )?context"
    r"|上下文过长|上下文超出|超出最大上下文",
    re.IGNORECASE,
)
_BILLING_TEXT = re.compile(
    r"insufficient[_ ]quota|exceeded your current quota|credit balance|insufficient (?:credits|balance)"
    r"|payment required|billing",
    re.IGNORECASE,
)
_AUTH_TEXT = re.compile(
    r"invalid[_ ]?(?:x-)?api[_ ]?key|incorrect api key|invalid token|authentication"
    r"|unauthorized|no api key",
    re.IGNORECASE,
)
_OVERLOAD_TEXT = re.compile(r"overloaded|service unavailable|high demand", re.IGNORECASE)
_TIMEOUT_TEXT = re.compile(r"timed out|timeout|deadline exceeded", re.IGNORECASE)
_LIMIT_NUMBERS = (
    re.compile(r"maximum context length is (\d[\d,]*)", re.IGNORECASE),
    re.compile(r"> ?(\d[\d,]*) maximum", re.IGNORECASE),
    re.compile(r"context window of (\d[\d,]*)", re.IGNORECASE),
)

# Anthropic error ``type`` values and what HTTP status they stand for (a mid-stream ``error``
# event arrives with HTTP 200, so the type is all there is).
_ANTHROPIC_TYPE_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
    "server_error": 500,
}


def is_overflow_text(text: str) -> bool:
    """True for context-overflow wording, never for rate-limit or tokens-per-minute wording."""
    return bool(_OVERFLOW_TEXT.search(text)) and not _RATE_TEXT.search(text)


def context_limit_from_error(err: ProviderError) -> int | None:
    """The window size an overflow message states (``maximum context length is N``), if any."""
    for pattern in _LIMIT_NUMBERS:
        match = pattern.search(err.detail or err.message)
        if match:
            return int(match.group(1).replace(",", ""))
    return None


@dataclass(frozen=True, slots=True)
class _Facts:
    """What can be read off an exception, whatever library raised it."""

    status: int | None
    code: str
    type: str
    text: str
    headers: Mapping[str, str] | None
    request_id: str
    exc_names: frozenset[str]
    refused: bool = False
    untrusted: str = ""


def _error_dict(body: Any) -> dict[str, Any]:
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except (ValueError, RecursionError):  # RecursionError: nested thousands deep
            return {}
    if not isinstance(body, dict):
        return {}
    inner = body.get("error")
    if isinstance(inner, dict):
        return inner
    return body


def _facts(exc: BaseException) -> _Facts:
    body = getattr(exc, "body", None)
    err = _error_dict(body)
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int):
        status = None
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) if response is not None else None
    code = err.get("code") or getattr(exc, "code", None) or ""
    details = err.get("details")
    if not code and isinstance(details, dict):
        code = details.get("error_code") or ""
    err_type = err.get("type") or getattr(exc, "type", None) or ""
    message = err.get("message")
    text = str(message) if message else str(exc)
    if isinstance(body, str) and not err and body.strip():
        text = f"{text} {body.strip()[:500]}"
    request_id = getattr(exc, "request_id", None) or ""
    if not request_id and isinstance(body, dict):
        request_id = str(body.get("request_id") or "")
    if not request_id and headers is not None:
        try:
            request_id = headers.get("request-id") or headers.get("x-request-id") or ""
        except AttributeError:
            request_id = ""
    names = frozenset(cls.__name__ for cls in type(exc).__mro__)
    refused = _refused(exc)
    untrusted = _untrusted_certificate(exc)
    if status == 200 or (status is None and err_type in _ANTHROPIC_TYPE_STATUS):
        # A mid-stream error event: classify by the error type in the body.
        status = _ANTHROPIC_TYPE_STATUS.get(str(err_type), 500)
    return _Facts(status, str(code), str(err_type), text, headers, str(request_id), names,
                  refused, untrusted)


_REFUSED_TEXT = re.compile(r"connection refused|errno 111\b|ECONNREFUSED", re.IGNORECASE)


def _refused(exc: BaseException) -> bool:
    """Whether the connection was refused, anywhere in the exception's chain (the SDKs
    wrap httpx's ``ConnectError``, which wraps the ``ConnectionRefusedError``)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError) or _REFUSED_TEXT.search(str(current)):
            return True
        current = current.__cause__ or current.__context__
    return False


def _untrusted_certificate(exc: BaseException) -> str:
    """The verifier's reason when the server's TLS certificate was not trusted, anywhere in
    the exception's chain ("" when it was not that)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ssl.SSLCertVerificationError):
            return str(current.verify_message or current.reason or "certificate verify failed")
        current = current.__cause__ or current.__context__
    return ""


_TIMEOUT_NAMES = frozenset({"APITimeoutError", "TimeoutException", "TimeoutError", "ReadTimeout",
                            "ConnectTimeout", "WriteTimeout", "PoolTimeout"})
_CONNECTION_NAMES = frozenset({"APIConnectionError", "TransportError", "NetworkError",
                               "ProtocolError", "RemoteProtocolError", "ConnectError",
                               "ReadError", "WriteError", "StreamError", "ConnectionError",
                               "JSONDecodeError", "IncompleteRead"})


def _kind(f: _Facts) -> ErrorKind:
    code = f.code.lower()
    etype = f.type.lower()
    status = f.status
    if status != 429 and (
        code == "context_length_exceeded" or etype == "request_too_large" or status == 413
        or is_overflow_text(f.text)
    ):
        return "context_overflow"
    if (status == 402 or code in {"insufficient_quota", "billing_hard_limit_reached"}
            or etype in {"insufficient_quota", "billing_error"}
            or (status in {None, 400, 403, 429} and _BILLING_TEXT.search(f.text))):
        return "billing"
    if status == 429 or code in {"rate_limit_exceeded", "slow_down"} or etype == "rate_limit_error":
        return "rate_limit"
    if status in {401, 403} or etype in {"authentication_error", "permission_error"} or code == "invalid_api_key":
        return "auth"
    if status == 404 or etype == "not_found_error" or code == "model_not_found":
        return "not_found"
    if status in {503, 529} or etype == "overloaded_error":
        return "overloaded"
    if status in {408, 504} or f.exc_names & _TIMEOUT_NAMES:
        return "timeout"
    if status is not None and status >= 500:
        return "server"
    if status is not None and 400 <= status < 500:
        return "bad_request"
    if f.exc_names & _CONNECTION_NAMES:
        return "connection"
    return _kind_from_text(f.text)


def _kind_from_text(text: str) -> ErrorKind:
    if is_overflow_text(text):
        return "context_overflow"
    if _BILLING_TEXT.search(text):
        return "billing"
    if _RATE_TEXT.search(text):
        return "rate_limit"
    if _AUTH_TEXT.search(text):
        return "auth"
    if _OVERLOAD_TEXT.search(text):
        return "overloaded"
    if _TIMEOUT_TEXT.search(text):
        return "timeout"
    return "unknown"


# --------------------------------------------------------------------------------------------
# Messages
# --------------------------------------------------------------------------------------------


def _http(status: int | None) -> str:
    return f" (HTTP {status})" if status else ""


def _untrusted_message(who: str, base_url: str, reason: str) -> str:
    where = f" at {base_url}" if base_url else ""
    return (f"{who}{where} could not be reached securely: its TLS certificate is not trusted "
            f"({reason}). If the server or a proxy on the way uses a private or company CA, "
            "set SSL_CERT_FILE to that CA's certificate file (PEM), then try again.")


def _message(kind: ErrorKind, who: str, model: str, key_env: str | None, status: int | None,
             retry_after: float | None, detail: str, base_url: str,
             refused: bool = False) -> str:
    model_part = f" for model {model}" if model else ""
    key_where = f"the key in {key_env}" if key_env else "the configured credentials"
    if kind == "context_overflow":
        return (f"The conversation is too long for the context window of {model or 'the model'} "
                f"({who}). Start a new conversation, or use a model with a larger context window.")
    if kind == "billing":
        return (f"{who} says the account behind {key_where} has no credit left or is over its "
                f"quota{_http(status)}. Add credit in the {who} billing dashboard or use another "
                "key, then try again.")
    if kind == "rate_limit":
        wait = f" {who} asked to wait {retry_after:.1f} s." if retry_after else ""
        return (f"{who} rate limit reached{model_part}{_http(status)}.{wait} Wait a moment and "
                "try again, or use a key with higher limits.")
    if kind == "auth":
        if status == 403:
            return (f"{who} refused access{model_part} with {key_where}{_http(status)}. Check "
                    "that the key is allowed to use this model.")
        if key_env:
            return (f"{who} rejected the API key in {key_env}{_http(status)}. Check the key in "
                    "your .env or shell, then try again.")
        return f"{who} refused the request{_http(status)}. Check the server's authentication settings."
    if kind == "not_found":
        return (f"{who} does not know the model '{model}'{_http(status)}. Check the name "
                "(`dexter models` lists known models) and that your key has access to it.")
    if kind == "overloaded":
        return f"{who} is overloaded right now{_http(status)}. Try again in a moment."
    if kind == "server":
        return f"{who} had a server error{_http(status)}. Try again in a moment."
    if kind == "timeout":
        return (f"The request to {who}{model_part} timed out. Try again, or raise "
                "connect_timeout, first_byte_timeout or request_timeout in the config.")
    if kind == "connection" and refused:
        where = f"the server at {base_url}" if base_url else f"{who}'s server"
        return (f"Connection refused: is {where} running? Start it (for Ollama: ollama serve), "
                "or check the provider's base URL, then try again.")
    if kind == "connection":
        where = f" at {base_url}" if base_url else ""
        return (f"Lost the connection to {who}{where} ({detail or 'network error'}). Check your "
                "network and the provider's base URL, then try again.")
    if kind == "bad_request":
        return f"{who} rejected the request{model_part}{_http(status)}: {detail}"
    if kind == "cancelled":
        return f"The request to {who} was cancelled."
    return f"The call to {who}{model_part} failed{_http(status)}: {detail}"


def _build(facts: _Facts, provider_display: str, model: str, key_env: str | None,
           base_url: str, env: Mapping[str, str] | None) -> ProviderError:
    kind = _kind(facts)
    who = provider_display or "The provider"
    retry_after = parse_retry_after(facts.headers)
    detail = scrub_secrets(" ".join(facts.text.split())[:1000], env)
    refused = kind == "connection" and facts.refused
    if kind == "connection" and facts.untrusted:
        message = _untrusted_message(who, base_url, facts.untrusted)
    else:
        message = _message(kind, who, model, key_env, facts.status, retry_after, detail,
                           base_url, refused)
    return ProviderError(
        kind=kind, message=scrub_secrets(message, env), provider=provider_display, model=model,
        status=facts.status, retry_after=retry_after, detail=detail, request_id=facts.request_id,
        refused=refused, untrusted=kind == "connection" and bool(facts.untrusted),
    )


def classify_error(
    exc: BaseException,
    provider_display: str = "",
    model: str = "",
    key_env: str | None = None,
    *,
    base_url: str = "",
    env: Mapping[str, str] | None = None,
) -> ProviderError:
    """Turn any exception from a provider call into a classified, key-free ``ProviderError``."""
    if isinstance(exc, ProviderError):
        return exc
    return _build(_facts(exc), provider_display, model, key_env, base_url, env)


def error_from_text(
    text: str, provider_display: str = "", model: str = "", key_env: str | None = None,
    *, status: int | None = None, env: Mapping[str, str] | None = None,
) -> ProviderError:
    """Classify an error known only by its text (and maybe a status), e.g. a stream error line."""
    facts = _Facts(status, "", "", text, None, "", frozenset())
    return _build(facts, provider_display, model, key_env, "", env)
