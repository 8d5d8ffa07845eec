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

Tool output also holds credentials nobody told dexter about: a token in ``.git/config``'s
remote URL, a password committed to the repository years ago. :func:`scrub_output` (the
executor's scrub of every tool result) also masks credentials **by their shape**: the
userinfo of any URL (``https://user:***@host``, ``https://***@host`` for a bare token), the
literal value of a ``password=``/``token=``/``secret:``/``api_key``-style assignment (not
code such as ``password = input()`` or ``token = self.token``), an ``Authorization:``
header's credentials, a private key block, and tokens in a documented format (``ghp_`` and
36 characters, ``AKIA`` and 16, a JWT...). Its false-positive rate on ordinary output is
measured in ``tests/test_secrets_shapes.py``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
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
    return _map_strings(value, lambda text: scrub(text, found))


def scrub_output_value(value: Any) -> Any:
    """``value`` (a tool call's arguments) as every event and record may show it: each
    string inside it through :func:`scrub_output`, so a command line the model wrote with
    ``--password VALUE`` in it is shown and kept as ``--password ***``."""
    found = secret_values()
    return _map_strings(value, lambda text: scrub_output(text, found))


def _map_strings(value: Any, change: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        return {key: _map_strings(item, change) for key, item in value.items()}
    if isinstance(value, list):
        return [_map_strings(item, change) for item in value]
    if isinstance(value, tuple):
        return tuple(_map_strings(item, change) for item in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {}
        for f in dataclasses.fields(value):
            if not f.init:
                continue
            old = getattr(value, f.name)
            new = _map_strings(old, change)
            if new is not old and new != old:
                changes[f.name] = new
        return dataclasses.replace(value, **changes) if changes else value
    return value


# -- credentials recognised by their shape (tool output) -------------------------------

_USERINFO = re.compile(r"\b([A-Za-z][A-Za-z0-9+.\-]{1,20}://)([^\s/?#'\"<>`\\]+)@(?=[^\s@/]*[A-Za-z0-9\]])")
_SECRET_WORD = (r"(?:pass(?:word|wd|phrase)?|pwd|secret|token|credentials?|"
                r"(?:api|secret|private|access|signing|encryption|master|client|app)[_-]?key|"
                r"apikey|client[_-]?secret|(?:auth|access|refresh|id|bearer|session)[_-]?token)")
_ASSIGNED = re.compile(
    r"(?<![A-Za-z0-9_.])(?P<name>(?:[A-Za-z0-9]+[_.\-])*"
    r"(?:[a-z0-9]+(?=[A-Z])|[A-Z][A-Z0-9]{1,10}(?=PASSWORD|PASSWD|PWD|TOKEN|SECRET))?"
    r"(?i:" + _SECRET_WORD + r"))"
    r"(?P<sep>(?:[\"']\]?|\])?\s*(?:=>|:=|=(?!=)|:(?=\s*[\"']|\s))\s*)"
    r"(?:(?P<quote>[\"'])(?P<quoted>[^\"'\n]{1,300})(?P=quote)|(?P<bare>[^\s\"'`,;&|)<>\]}]{1,300}))")
# A command line's option and its value as the next word: `--password VALUE`,
# `--db-password 'VALUE'`, `-storepass VALUE` (keytool), `--api-key VALUE`, `--token VALUE`.
_OPTION = re.compile(
    r"(?<![^\s'\"=(])(?P<name>--?(?:[A-Za-z0-9]+-)*(?i:pass(?:word|wd|phrase)?|pwd|secret|token|"
    r"api-?key|apikey|access-?key|secret-?key|private-?key|client-?secret|access-?token|"
    r"auth-?token|bearer-?token|refresh-?token|(?:src|dest)?storepass|keypass))"
    r"(?P<sep>[ \t]+)(?:(?P<quote>[\"'])(?P<quoted>[^\"'\n]{1,300})(?P=quote)|"
    r"(?P<bare>[^\s\"'`,;&|)<>\]}]{1,300}))")
# Programs that take a password glued to `-p` (`mysql -pVALUE`; spaced, `-p DB` names the
# database), or also spaced (`sshpass -p VALUE`), and curl's `-u USER:PASSWORD`.
_ARGUMENT = r"(?P<value>'[^'\n]{1,300}'|\"[^\"\n]{1,300}\"|[^\s\"'`;&|]{1,300})"
_GLUED_P = re.compile(r"(?P<head>\b(?:mysql[a-z]*|mariadb(?:-[a-z]+)?)\b[^\n;&|]*?\s-p)"
                      + _ARGUMENT)
_SSHPASS = re.compile(r"(?P<head>\bsshpass\b[^\n;&|]*?\s-p\s*)" + _ARGUMENT)
_CURL_USER = re.compile(r"(?P<head>\bcurl\b[^\n;&|]*?\s(?:-u\s*|--user[ \t=]+)[^\s:\"']+:)"
                        + _ARGUMENT)
_AUTH_HEADER = re.compile(r"(?i)\b((?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?"
                          r"(?:bearer|basic|token|digest)\s+)([A-Za-z0-9._~+/=\-]{8,})")
_PRIVATE_KEY = re.compile(r"(-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----)[\s\S]*?"
                          r"(-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----)")
_TOKEN_FORMATS = re.compile(
    r"(?<![A-Za-z0-9_\-])(?:"
    r"gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{22,}|glpat-[A-Za-z0-9_\-]{20,}|"
    r"xox[abprs]-[A-Za-z0-9\-]{10,}|(?:AKIA|ASIA)[A-Z0-9]{16}|AIza[0-9A-Za-z_\-]{35}|"
    r"sk-ant-[A-Za-z0-9_\-]{20,}|sk-(?:proj-|svcacct-)?[A-Za-z0-9_\-]{20,}|"
    r"(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}|hf_[A-Za-z0-9]{30,}|npm_[A-Za-z0-9]{36}|"
    r"pypi-[A-Za-z0-9_\-]{50,}|(?:xai|gsk|pplx|tvly)-[A-Za-z0-9_\-]{20,}|gsk_[A-Za-z0-9]{20,}|"
    r"eyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,})(?![A-Za-z0-9_\-])")
_CODE_CHARS = frozenset("()[]{}<>$%")
_PLACEHOLDERS = frozenset({
    "none", "null", "nil", "true", "false", "undefined", "required", "optional", "string",
    "str", "bytes", "int", "bool", "secret", "password", "passwd", "token", "redacted",
    "hidden", "masked", "empty", "unset", "example", "value", "default", "string?", "any"})
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
_NUMBER = re.compile(r"[+-]?\d+(?:[.,_]\d+)*%?")
_CONSTANT = re.compile(r"[A-Z][A-Z_]*")
_SNAKE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")
_TYPE_NAME = re.compile(r"(?=.*[a-z])[A-Z][a-z]*(?:[A-Z][a-z]*|\d+)*")  # Ed25519PrivateKey
_WORDS = re.compile(r"[a-z]+(?:[-.][a-z]+)*")
_PLACEHOLDER_PASSWORDS = frozenset({"pass", "password", "passwd", "secret", "token", "pwd",
                                    "xxx", "xxxx", "***", "changeme"})


def _token_like(text: str) -> bool:
    """A bare URL user or a format match: a known key prefix, or random-looking."""
    return bool(KEY_PREFIXES.match(text)) or (len(text) >= MIN_OPAQUE_LENGTH and _looks_random(text))


def _mask_userinfo(match: re.Match[str]) -> str:
    scheme, info = match.group(1), match.group(2)
    user, colon, password = info.partition(":")
    if colon and password and password.lower() not in _PLACEHOLDER_PASSWORDS:
        shown_user = REDACTED if _token_like(user) else user
        return f"{scheme}{shown_user}:{REDACTED}@"
    if _token_like(info):
        return f"{scheme}{REDACTED}@"
    return match.group(0)


def _literal(value: str, spaced: bool, quoted: bool, colon: bool = False) -> bool:
    """Whether an assigned value is a literal credential, not code, a placeholder or a
    type: ``hunter2``, not ``input()``, ``self.token``, ``None``, ``${TOKEN}`` or ``str``."""
    text = value.strip()
    low = text.lower()
    if len(text) < 4 or any(ch in _CODE_CHARS for ch in text) or _NUMBER.fullmatch(text):
        return False
    if low in _PLACEHOLDERS or low.startswith(("your", "my-", "my_", "<", "*", "/", "~", "./",
                                               "#", "@", "!", "&", "...")):
        return False
    if len(set(low)) <= 2 or _ASSIGNED.fullmatch(text + "=x") is not None:
        return False  # xxxx, ****; or another variable of the same kind (password=db_password)
    if _CONSTANT.fullmatch(text):
        return False  # "YOUR_API_KEY", NO_MEMORY_TO_FLUSH: a placeholder or a constant's name
    if quoted:
        return True
    if _DOTTED.fullmatch(text) and not any(_looks_random(p) for p in text.split(".")):
        return False  # os.environ, self.password, ed25519.Ed25519PrivateKey
    if _SNAKE.fullmatch(text):
        return False  # auth_token=environment_key: a variable passed on
    if spaced and _IDENTIFIER.fullmatch(text) and (
            not any(ch.isdigit() for ch in text) or _TYPE_NAME.fullmatch(text)):
        return False  # password = getpass, private_key: Ed25519PrivateKey: code, a type
    # "a token: page-bottom": prose or a plain YAML word, not a key
    return not (colon and spaced and _WORDS.fullmatch(text))


def _mask_assignment(match: re.Match[str]) -> str:
    quoted = match.group("quoted")
    value = quoted if quoted is not None else match.group("bare")
    tail = ""
    if quoted is None:  # "token: abc." ends a sentence: the stop is not part of the value
        stripped = value.rstrip(".:")
        value, tail = stripped, value[len(stripped):]
    sep = match.group("sep")
    spaced = any(ch.isspace() for ch in sep)
    colon = ":" in sep and "=" not in sep
    if not _literal(value, spaced, quoted is not None, colon):
        return match.group(0)
    quote = match.group("quote") or ""
    return f"{match.group('name')}{sep}{quote}{REDACTED}{quote}{tail}"


def _mask_option(match: re.Match[str]) -> str:
    quoted = match.group("quoted")
    value = quoted if quoted is not None else match.group("bare")
    if value.startswith("-") or not _literal(value, True, quoted is not None):
        return match.group(0)  # another option, a word (`--token option`), a path, code
    quote = match.group("quote") or ""
    return f"{match.group('name')}{match.group('sep')}{quote}{REDACTED}{quote}"


def _mask_glued(match: re.Match[str]) -> str:
    value = match.group("value")
    quote = value[0] if value[0] in "'\"" else ""
    if not _literal(value.strip("'\""), False, bool(quote)):
        return match.group(0)
    return f"{match.group('head')}{quote}{REDACTED}{quote}"


def _mask_command_lines(text: str, low: bytes) -> str:
    """Credentials as a command line passes them (see :data:`_OPTION`, :data:`_GLUED_P`)."""
    starts = []
    for word in _ASSIGNMENT_HINTS:
        for at in _positions(low, word):
            begin, stop = at, max(0, at - _NAME_REACH)
            while begin > stop and (text[begin - 1].isalnum() or text[begin - 1] == "-"):
                begin -= 1
            if begin < at and text[begin] == "-":
                starts.append(begin)
    text = _sub_at(_OPTION, starts, _mask_option, text)
    for pattern, program in _PROGRAMS:
        if program in low:
            text = _sub_at(pattern, _positions(_ascii_lower(text), program), _mask_glued, text)
    return text


def _mask_format(match: re.Match[str]) -> str:
    token = match.group(0)
    body = token.split("_", 1)[-1] if "_" in token[:12] else token
    return REDACTED if _entropy(body) >= 3.0 else token


# Where each shape can start is found first, with plain substring searches (fast); the
# full patterns are then tried only there, not at every position of a long result.
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_ASSIGNMENT_HINTS = (b"pass", b"pwd", b"secret", b"token", b"credential", b"key")
_NAME_REACH = 120  # how far before its hint a name may start
_FORMAT_PREFIXES = (b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_", b"github_pat_", b"glpat-",
                    b"xox", b"AKIA", b"ASIA", b"AIza", b"sk-", b"sk_", b"rk_", b"pk_", b"hf_",
                    b"npm_", b"pypi-", b"xai-", b"gsk", b"pplx-", b"tvly-", b"eyJ")
"""The literal starts of :data:`_TOKEN_FORMATS` (kept in step by a test)."""
_PROGRAMS = ((_GLUED_P, b"mysql"), (_GLUED_P, b"mariadb"), (_SSHPASS, b"sshpass"),
             (_CURL_USER, b"curl"))  # the command-line shapes and the word each needs
CREDENTIAL_TRIGGERS = ((*_ASSIGNMENT_HINTS, b"authorization", b"://",
                        *(program for _, program in _PROGRAMS)), _FORMAT_PREFIXES)
"""The words where :func:`scrub_credentials` tries a shape: (in the ASCII-lowercased text,
in the text as it is). A text holding none of them comes back unchanged."""


def _ascii_lower(text: str) -> bytes:
    """``text`` lowercased for finding ASCII words, one byte per character (so positions
    are the string's)."""
    return text.encode("ascii", "replace").lower()


def _positions(low: bytes, word: bytes) -> list[int]:
    found, at = [], low.find(word)
    while at >= 0:
        found.append(at)
        at = low.find(word, at + 1)
    return found


def _sub_at(pattern: re.Pattern[str], starts: list[int], repl: Any, text: str,
            spread: int = 0) -> str:
    """Apply ``pattern`` where a match may begin: at each of ``starts`` or up to ``spread``
    characters before it (the first that matches); ``repl`` makes each replacement."""
    out, done = [], 0
    for start in sorted(set(starts)):
        for begin in range(max(done, start - spread), start + 1):
            match = pattern.match(text, begin)
            if match is not None:
                out += [text[done:begin], repl(match)]
                done = match.end()
                break
    return "".join(out) + text[done:] if out else text


def _name_starts(text: str, low: bytes) -> list[int]:
    """Where a ``password``/``token``-style name may begin: before each hint word, back
    over the name's characters (``DB_PASSWORD``, ``x-api-key``, ``--password``)."""
    starts = []
    for word in _ASSIGNMENT_HINTS:
        for at in _positions(low, word):
            begin, stop = at, max(0, at - _NAME_REACH)
            while begin > stop and text[begin - 1] in _NAME_CHARS:
                begin -= 1
            while begin < at and text[begin] in "_.-":
                begin += 1
            starts.append(begin)
    return starts


def scrub_credentials(text: str) -> str:
    """``text`` with credentials recognised by their shape masked (see the module
    docstring); values nobody registered are covered too. Known values: :func:`scrub`."""
    if not text:
        return text
    if "PRIVATE KEY" in text:
        text = _PRIVATE_KEY.sub(lambda m: f"{m.group(1)}\n{REDACTED}\n{m.group(2)}", text)
    if "://" in text:  # the scheme: at most 21 characters before it
        text = _sub_at(_USERINFO, _positions(_ascii_lower(text), b"://"), _mask_userinfo,
                       text, spread=21)
    low = _ascii_lower(text)
    if b"authorization" in low:  # "proxy-" may come before it
        text = _sub_at(_AUTH_HEADER, _positions(low, b"authorization"),
                       lambda m: f"{m.group(1)}{REDACTED}", text, spread=6)
    raw = text.encode("ascii", "replace")
    text = _sub_at(_TOKEN_FORMATS, [at for prefix in _FORMAT_PREFIXES
                                    for at in _positions(raw, prefix)], _mask_format, text)
    text = _sub_at(_ASSIGNED, _name_starts(text, _ascii_lower(text)), _mask_assignment, text)
    low = _ascii_lower(text)
    if b"-" in low:
        text = _mask_command_lines(text, low)
    return text


def scrub_output(text: str, secrets: Iterable[str] | None = None) -> str:
    """A tool's output as the model and every writer may see it: known secret values
    (:func:`scrub`) and credentials by shape (:func:`scrub_credentials`) masked."""
    return scrub_credentials(scrub(text, secrets))
