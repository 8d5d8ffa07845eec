"""Token estimates for memory (chunk sizes, the recall budget): the one place that picks them.

The context package's estimator is used when it exists, so memory and the context defenses
count the same way; otherwise a plain four-characters-per-token rule.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import cast


def _fallback(text: str) -> int:
    return (len(text) + 3) // 4


def _load() -> Callable[[str], int]:
    try:
        module = importlib.import_module("dexter.context.tokens")
    except ImportError:
        return _fallback
    found = getattr(module, "estimate_text_tokens", None)
    return cast(Callable[[str], int], found) if callable(found) else _fallback


_estimate = _load()


def estimate_tokens(text: str) -> int:
    """Estimated tokens in ``text``."""
    return _estimate(text) if text else 0
