"""The ``--trace`` hook: each context stage with its estimated tokens before and after."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TextIO

TraceFn = Callable[[str, int, int], None]
"""``(stage, tokens_before, tokens_after)``; stages: budget, micro, flush, compact, truncate."""

STAGES = ("budget", "micro", "flush", "compact", "truncate")


def format_trace(stage: str, before: int, after: int) -> str:
    """One trace line, e.g. ``[context] micro     48,210 -> 21,034 tokens (-27,176)``."""
    delta = after - before
    return f"[context] {stage:<9} {before:,} -> {after:,} tokens ({delta:+,})"


def stderr_trace(stream: TextIO | None = None) -> TraceFn:
    """A trace hook printing ``format_trace`` lines to ``stream`` (stderr by default)."""

    def trace(stage: str, before: int, after: int) -> None:
        print(format_trace(stage, before, after), file=stream or sys.stderr, flush=True)

    return trace
