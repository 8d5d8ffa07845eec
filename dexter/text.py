"""Text hygiene at the boundaries: what comes from outside is valid Unicode before it is kept.

A provider can send half of a surrogate pair (a split emoji), a file can hold invalid
bytes, a terminal can be handed control characters. :func:`clean` turns any string into
one every UTF-8 writer accepts (lone surrogates become U+FFFD); :func:`clean_value` does it
inside nested data.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")


def clean(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD (a pair written as two halves
    becomes the character it encodes)."""
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def clean_value(value: Any) -> Any:
    """``value`` with :func:`clean` applied to every string in dicts, lists, tuples and
    dataclass instances (events; a changed one comes back as a copy)."""
    if isinstance(value, str):
        return clean(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {}
        for f in dataclasses.fields(value):
            if f.init:
                old = getattr(value, f.name)
                new = clean_value(old)
                if new is not old and new != old:
                    changes[f.name] = new
        return dataclasses.replace(value, **changes) if changes else value
    if isinstance(value, dict):
        return {clean(k) if isinstance(k, str) else k: clean_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean_value(v) for v in value]
    if isinstance(value, tuple):
        return tuple(clean_value(v) for v in value)
    return value
