"""Keeping API keys out of everything dexter writes or shows.

One place decides what a secret is: the value of an environment variable whose name ends
in ``_API_KEY``, ``_KEY``, ``_TOKEN`` or ``_SECRET`` (at least 8 characters), plus any
extra values a caller knows about. ``scrub`` replaces each, raw and JSON-escaped, by
``***``. Error messages may also ask for key-shaped tokens (``sk-...``, ``Bearer ...``) to
be masked; tool results do not, since text such as "sk-learn" is legitimate data there.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "***"
SECRET_ENV_SUFFIXES = ("_API_KEY", "_KEY", "_TOKEN", "_SECRET")
MIN_SECRET_LENGTH = 8

_KEY_SHAPED = (
    re.compile(r"\bsk-[A-Za-z0-9_\-*]{6,}"),
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._\-]{8,}"),
    re.compile(r"\b(?:xai|gsk|AIza)[-_A-Za-z0-9]{16,}"),
)


def secret_values(env: Mapping[str, str] | None = None, extra: Iterable[str] = ()) -> list[str]:
    """Secret values from ``env`` (default: the process environment) and ``extra``.

    Longest first, so a secret that contains another is never half-hidden.
    """
    env = os.environ if env is None else env
    values = {
        value for name, value in env.items()
        if name.upper().endswith(SECRET_ENV_SUFFIXES) and len(value) >= MIN_SECRET_LENGTH
    }
    values.update(value for value in extra if value and len(value) >= 4)
    return sorted(values, key=len, reverse=True)


def scrub(text: str, secrets: Iterable[str] | None = None, *, key_shaped: bool = False) -> str:
    """``text`` with every secret (raw or JSON-escaped) replaced by ``***``.

    ``secrets`` defaults to ``secret_values()``; ``key_shaped`` also masks tokens that
    look like keys even when no variable holds them (for error messages).
    """
    if not text:
        return text
    found = secret_values() if secrets is None else sorted(set(secrets), key=len, reverse=True)
    for secret in found:
        if not secret:
            continue
        text = text.replace(secret, REDACTED)
        escaped = json.dumps(secret, ensure_ascii=False)[1:-1]
        if escaped != secret:
            text = text.replace(escaped, REDACTED)
    if key_shaped:
        for pattern in _KEY_SHAPED:
            text = pattern.sub(REDACTED, text)
    return text


def scrub_value(value: Any, secrets: Iterable[str] | None = None) -> Any:
    """``value`` with secrets removed from every string inside it (dicts and lists walked)."""
    found = secret_values() if secrets is None else list(secrets)
    if isinstance(value, str):
        return scrub(value, found)
    if isinstance(value, dict):
        return {key: scrub_value(item, found) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [scrub_value(item, found) for item in value]
    return value
