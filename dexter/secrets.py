"""Keeping credentials out of everything dexter writes or shows: one scrubber, every exit.

A secret is known **by its value**, whatever the variable is called: every value in the
process environment or in the working directory's ``.env`` that looks like a credential
(:func:`looks_like_credential`: a known key prefix such as ``sk-``, ``sk-ant-``, ``ghp_``,
``github_pat_``, ``xox?-``, ``AKIA``; a name that says key/token/secret/password; or a long
single token with high entropy), plus the password of any URL with credentials, plus
values a caller adds. :func:`scrub` replaces each, raw and JSON-escaped, by ``***``.

Every writer calls it: the scratchpad, the JSON event stream, live and plain output, spilled
tool results, memory files (which refuse secrets instead: :func:`find_secret`), the REPL
history and sessions log, traces, and ``--output`` files. The tool executor scrubs every
tool result before the model or any writer sees it.

Error messages may also ask for key-shaped tokens (``sk-...``, ``Bearer ...``) to be masked;
tool results do not, since text such as "sk-learn" is legitimate data there.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

REDACTED = "***"
MIN_SECRET_LENGTH = 8
# A value with no known prefix and an innocent name counts when it is one token this long
# with at least this much entropy per character (see _looks_random).
MIN_OPAQUE_LENGTH = 20
MIN_OPAQUE_ENTROPY = 3.5

KEY_PREFIXES = re.compile(
    r"^(?:sk-|sk_live_|sk_test_|rk_live_|pk_live_|sk-ant-|ghp_|gho_|ghu_|ghs_|ghr_|github_pat_|"
    r"glpat-|xox[abprs]-|AKIA|ASIA|AIza|xai-|gsk_|pplx-|tvly-|hf_|npm_|pypi-|dop_v1_|"
    r"shpat_|SG\.|ya29\.|-----BEGIN)")
_SECRET_NAME = re.compile(r"(?i)(key|token|secret|passw|pwd|credential|auth|cookie|session|"
                          r"_pat$|^pat_|_dsn$|signature|private)")
# Names whose values are never secrets however random they look.
_INNOCENT_NAMES = frozenset({
    "PATH", "PWD", "OLDPWD", "HOME", "SHELL", "TERM", "LANG", "LANGUAGE", "USER", "LOGNAME",
    "HOSTNAME", "DISPLAY", "LS_COLORS", "MANPATH", "INFOPATH", "PYTHONPATH", "VIRTUAL_ENV",
    "TMPDIR", "XDG_RUNTIME_DIR", "XDG_DATA_DIRS", "XDG_CONFIG_DIRS", "SSH_AUTH_SOCK",
    "DBUS_SESSION_BUS_ADDRESS", "PYTEST_CURRENT_TEST", "_", "SHLVL", "COLUMNS", "LINES",
    "EDITOR", "PAGER", "TZ", "MAIL", "PS1", "PS2", "PROMPT_COMMAND", "HISTFILE",
})
_URL_PASSWORD = re.compile(r"://[^/\s:@]+:([^/\s@]+)@")

_KEY_SHAPED = (
    re.compile(r"\bsk-[A-Za-z0-9_\-*]{6,}"),
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._\-]{8,}"),
    re.compile(r"\b(?:xai|gsk|AIza)[-_A-Za-z0-9]{16,}"),
)


def _entropy(value: str) -> float:
    counts = Counter(value)
    total = len(value)
    return -sum(n / total * math.log2(n / total) for n in counts.values())


def looks_like_credential(name: str, value: str) -> bool:
    """True when an environment variable's value looks like a key, token or password."""
    value = value.strip()
    if len(value) < MIN_SECRET_LENGTH or name.upper() in _INNOCENT_NAMES:
        return False
    if KEY_PREFIXES.match(value):
        return True
    if _SECRET_NAME.search(name) and not value.startswith(("/", "~", "./")):
        return True
    if len(value) < MIN_OPAQUE_LENGTH or any(ch.isspace() for ch in value):
        return False
    if value.startswith(("/", "~", "./", "http://", "https://")) and not _URL_PASSWORD.search(value):
        return False
    return _looks_random(value)


def _looks_random(value: str) -> bool:
    """A single token of mostly letters and digits, mixed case and digits (or long hex),
    with high entropy: the shape of a generated key, not of a version or a path."""
    alnum = sum(ch.isalnum() for ch in value)
    if alnum < 0.9 * len(value) or _entropy(value) < MIN_OPAQUE_ENTROPY:
        return False
    mixed = (any(ch.isupper() for ch in value) and any(ch.islower() for ch in value)
             and any(ch.isdigit() for ch in value))
    long_hex = len(value) >= 32 and all(ch in "0123456789abcdefABCDEF" for ch in value)
    return mixed or long_hex


def credential_values(name: str, value: str) -> list[str]:
    """The secret parts of one variable: the value, or a URL's password."""
    found = [m.group(1) for m in _URL_PASSWORD.finditer(value) if len(m.group(1)) >= 4]
    if looks_like_credential(name, value):
        found.append(value.strip())
    return found


_cache: tuple[int, list[str]] | None = None
_extra: set[str] = set()


def register_secret(value: str) -> None:
    """Add a value the scrubber must always remove (a key read from a file, say)."""
    global _cache
    if value and len(value) >= 4:
        _extra.add(value)
        _cache = None


_TOKEN = re.compile(r"[A-Za-z0-9_\-.+/=:]{16,}")


def register_pasted_keys(text: str) -> int:
    """Register key-shaped tokens the user typed (``sk-...``, ``ghp_...``) as secrets.

    Only tokens with a known key prefix count: a question's numbers and names never do.
    Returns how many were found.
    """
    found = 0
    for match in _TOKEN.finditer(text or ""):
        token = match.group(0).strip(".:,")
        if KEY_PREFIXES.match(token):
            register_secret(token)
            found += 1
    return found


def _dotenv_stamp() -> tuple[str, float]:
    try:
        cwd = os.getcwd()
        return cwd, os.stat(os.path.join(cwd, ".env")).st_mtime
    except OSError:
        return "", 0.0


def _dotenv_values(cwd: Path | None = None) -> dict[str, str]:
    path = (cwd or Path.cwd()) / ".env"
    if not path.is_file():
        return {}
    try:
        from dotenv import dotenv_values

        return {k: v for k, v in dotenv_values(path).items() if v}
    except Exception:  # an unreadable .env must not stop a writer
        return {}


def secret_values(env: Mapping[str, str] | None = None, extra: Iterable[str] = ()) -> list[str]:
    """Secret values from ``env`` (default: the process environment and ``./.env``) and ``extra``.

    Longest first, so a secret that contains another is never half-hidden.
    """
    global _cache
    extra_values = {value for value in extra if value and len(value) >= 4}
    if env is None:
        key = hash((tuple(os.environ.items()), _dotenv_stamp(), tuple(sorted(_extra))))
        if _cache is None or _cache[0] != key:
            found = set(_extra)
            for source in (os.environ, _dotenv_values()):
                for name, value in source.items():
                    found.update(credential_values(name, value))
            _cache = (key, sorted(found, key=len, reverse=True))
        base = _cache[1]
    else:
        base = sorted({v for name, value in env.items() for v in credential_values(name, value)},
                      key=len, reverse=True)
    if not extra_values:
        return base
    return sorted(set(base) | extra_values, key=len, reverse=True)


def find_secret(text: str, secrets: Iterable[str] | None = None) -> str | None:
    """A masked hint of the first secret value in ``text`` (``'sk-a…'``), or None."""
    for secret in secret_values() if secrets is None else secrets:
        if secret and secret in text:
            return f"{secret[:4]}…, {len(secret)} characters"
    return None


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
        escaped = json.dumps(secret, ensure_ascii=False)[1:-1]
        if secret in text:
            text = text.replace(secret, REDACTED)
        if escaped != secret and escaped in text:
            text = text.replace(escaped, REDACTED)
    if key_shaped:
        for pattern in _KEY_SHAPED:
            text = pattern.sub(REDACTED, text)
    return text


def scrub_value(value: Any, secrets: Iterable[str] | None = None) -> Any:
    """``value`` with secrets removed from every string inside it (dicts, lists, tuples and
    dataclass instances such as events are walked; a dataclass comes back as a copy)."""
    found = secret_values() if secrets is None else list(secrets)
    if not found:
        return value
    if isinstance(value, str):
        return scrub(value, found)
    if isinstance(value, dict):
        return {key: scrub_value(item, found) for key, item in value.items()}
    if isinstance(value, list):
        return [scrub_value(item, found) for item in value]
    if isinstance(value, tuple):
        return tuple(scrub_value(item, found) for item in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {}
        for f in dataclasses.fields(value):
            if not f.init:
                continue
            old = getattr(value, f.name)
            new = scrub_value(old, found)
            if new is not old and new != old:
                changes[f.name] = new
        return dataclasses.replace(value, **changes) if changes else value
    return value
