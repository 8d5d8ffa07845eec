"""One verifying TLS context per HTTP library and process, shared by every client dexter opens.

Building a verifying context loads the whole trust store (a hundred and more certificates):
about a tenth of a CPU-second each time, and the SDKs and httpx build a new one for every
client. A run opens several (the model, the side model, embeddings, the data sources, each
web fetch), so dexter builds each library's default context once and hands that one to
all its clients. The context is the library's own default, made by the library's own
function, so ``SSL_CERT_FILE`` and ``SSL_CERT_DIR`` mean to dexter what they mean to that
library; a change of either is a new context, never the old one reused.
"""

from __future__ import annotations

import os
import ssl
import threading
from collections.abc import Callable
from typing import Any

_lock = threading.Lock()
_contexts: dict[tuple[str, str | None, str | None], ssl.SSLContext] = {}


def _shared(library: str, build: Callable[[], ssl.SSLContext]) -> ssl.SSLContext:
    key = (library, os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    with _lock:
        context = _contexts.get(key)
        if context is None:
            context = _contexts[key] = build()
        return context


def sdk_context() -> ssl.SSLContext:
    """The default verifying context of httpx2, the HTTP library of the OpenAI and
    Anthropic SDKs (the system's trust store, or ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``)."""
    import httpx2

    return _shared("httpx2", httpx2.create_ssl_context)


def httpx_context() -> ssl.SSLContext:
    """The default verifying context of httpx, used by the data sources and web tools
    (certifi's bundle, or ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``)."""
    import httpx

    return _shared("httpx", httpx.create_ssl_context)


def sdk_http_client(client_cls: Any, base_url: str | None, timeout: Any) -> Any:
    """The HTTP client an SDK makes by itself (``client_cls``, its ``DefaultAsyncHttpxClient``,
    with the SDK client's base URL and timeout), verifying with :func:`sdk_context`."""
    options: dict[str, Any] = {"timeout": timeout, "verify": sdk_context()}
    if base_url is not None:
        options["base_url"] = base_url
    return client_cls(**options)


def trust_problem() -> str | None:
    """Why ``SSL_CERT_FILE`` or ``SSL_CERT_DIR``, when set, cannot be the CAs to trust (a
    missing or unreadable path, a file with no certificate), said for the user; else None.
    Checked at start, so that a wrong path is one clear line, not a failure at first use."""
    for var in ("SSL_CERT_FILE", "SSL_CERT_DIR"):
        value = os.environ.get(var)
        if not value:
            continue
        try:
            if var == "SSL_CERT_FILE":
                ssl.create_default_context(cafile=value)
            elif not os.path.isdir(value):
                return (f"{var} names {value}, which is not a folder. Point it at a folder of "
                        "CA certificates, or unset it.")
        except (OSError, ssl.SSLError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            return (f"{var} names {value}, which cannot be read as CA certificates ({reason}). "
                    "Point it at a PEM file of your CA's certificates, or unset it.")
    return None
