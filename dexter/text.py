"""Text hygiene at the boundaries: what comes from outside is valid Unicode before it is kept.

A provider can send half of a surrogate pair (a split emoji), a file can hold invalid
bytes, a terminal can be handed control characters. :func:`clean` turns any string into
one every UTF-8 writer accepts (lone surrogates become U+FFFD); :func:`clean_value` does it
inside nested data. :func:`parse_json_line` reads one line of a JSONL file (a scratchpad,
the sessions log) into values every consumer can use, whatever the line holds.
:func:`escape_controls` makes text from outside safe to print on a terminal: an ESC or a
BEL in a provider's error body shows as ``\\x1b``, ``\\x07`` instead of acting.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")


def clean(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD (a pair written as two halves
    becomes the character it encodes)."""
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def map_strings(value: Any, change: Callable[[str], str]) -> Any:
    """``value`` with ``change`` applied to every string (keys too) in dicts, lists, tuples
    and dataclass instances (events; a changed one comes back as a copy, an unchanged
    value is returned as it is)."""
    if isinstance(value, str):
        return change(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {}
        for f in dataclasses.fields(value):
            if f.init:
                old = getattr(value, f.name)
                new = map_strings(old, change)
                if new is not old and new != old:
                    changes[f.name] = new
        return dataclasses.replace(value, **changes) if changes else value
    if isinstance(value, dict):
        return {change(k) if isinstance(k, str) else k: map_strings(v, change)
                for k, v in value.items()}
    if isinstance(value, list):
        return [map_strings(v, change) for v in value]
    if isinstance(value, tuple):
        return tuple(map_strings(v, change) for v in value)
    return value


def clean_value(value: Any) -> Any:
    """``value`` with :func:`clean` applied to every string in dicts, lists, tuples and
    dataclass instances (events; a changed one comes back as a copy)."""
    return map_strings(value, clean)


CONTROL_CHARACTERS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""C0 controls except tab and newline, DEL, and the C1 controls (U+0080 to U+009F)."""


def _escaped(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}"


def escape_controls(text: str) -> str:
    """``text`` safe to print on a terminal: every control character but newline and tab
    is written as visible text (ESC as ``\\x1b``, BEL as ``\\x07``, NUL as ``\\x00``), so
    text from outside (a provider's error body, a tool's output, a file name) can neither
    move the cursor, clear the screen, retitle the window nor ring the bell. A ``\\r\\n``
    line end becomes ``\\n``. Text without control characters comes back as it is."""
    if not CONTROL_CHARACTERS.search(text):
        return text
    return CONTROL_CHARACTERS.sub(_escaped, text.replace("\r\n", "\n"))


def escape_controls_value(value: Any) -> Any:
    """``value`` with :func:`escape_controls` applied to every string (see :func:`map_strings`)."""
    return map_strings(value, escape_controls)


MAX_JSON_DEPTH = 200
"""Containers nested deeper than this in a JSONL line are cut (what was there becomes None)."""

_TOO_DEEP: Any = None


def _json_int(text: str) -> int | None:
    # Python refuses to parse (or print) an integer of more than 4,300 digits.
    try:
        return int(text)
    except ValueError:
        return None


def _bounded(value: Any, depth: int) -> Any:
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, dict):
        if depth >= MAX_JSON_DEPTH:
            return _TOO_DEEP
        return {clean(k): _bounded(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        if depth >= MAX_JSON_DEPTH:
            return _TOO_DEEP
        return [_bounded(v, depth + 1) for v in value]
    return value


def parse_json_line(line: str | bytes) -> Any:
    """The JSON value of one line of a file, safe to walk and to write again; None when the
    line is not JSON.

    It never raises. Invalid JSON, nesting deeper than the parser takes, or a line that is
    not text give None (the caller skips the line). Inside a value: lone surrogates become
    U+FFFD, an integer too long for Python (over 4,300 digits) becomes None, and containers
    nested deeper than :data:`MAX_JSON_DEPTH` become None. Numbers are otherwise kept as
    they are (``NaN``, ``1e999`` as inf, 400-digit integers: they may be data); whoever
    uses a number as a count or a duration checks its range (``dexter.events.fits``).
    Duplicate keys: the last one wins.
    """
    if isinstance(line, bytes):
        line = line.decode("utf-8", errors="replace")
    try:
        value = json.loads(line, parse_int=_json_int)
    except (ValueError, RecursionError):
        return None
    try:
        return _bounded(value, 0)
    except RecursionError:  # only when the caller itself is already deep in the stack
        return None
