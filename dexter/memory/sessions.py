"""Past REPL conversations as searchable text.

The REPL appends one JSON object per finished turn to ``DEXTER_HOME/history/sessions.jsonl``:
``{"timestamp": ISO-8601 string or epoch seconds, "query": str, "answer": str}``. Each line
becomes ``User: …`` / ``Assistant: …`` text whose chunks carry that line number (so
``memory_get("history/sessions.jsonl", from=N, lines=1)`` shows the turn) and its timestamp
(so old conversations decay in search). Lines that are not such objects are skipped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from dexter.text import parse_json_line

SESSIONS_PATH = "history/sessions.jsonl"


@dataclass(frozen=True, slots=True)
class SessionTurn:
    """One question and answer from the REPL."""

    line: int
    timestamp: float
    text: str


def parse_timestamp(value: Any, fallback: float) -> float:
    """Epoch seconds from an ISO string or a number; ``fallback`` when unreadable."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            seconds = float(value)
        except OverflowError:  # a 400-digit integer
            return fallback
        return seconds if math.isfinite(seconds) else fallback
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.strip().replace("Z", "+00:00")).timestamp()
        except (ValueError, OverflowError, OSError):
            return fallback
    return fallback


def parse_turn(line_no: int, raw: str, fallback_time: float) -> SessionTurn | None:
    """The turn on one line, or None when the line is not a complete turn."""
    data = parse_json_line(raw)  # never raises: depth, huge numbers, surrogates
    if not isinstance(data, dict):
        return None
    query, answer = data.get("query"), data.get("answer")
    if not isinstance(query, str) or not isinstance(answer, str):
        return None
    if not query.strip() and not answer.strip():
        return None
    text = f"User: {' '.join(query.split())}\nAssistant: {' '.join(answer.split())}"
    return SessionTurn(line_no, parse_timestamp(data.get("timestamp"), fallback_time), text)


def read_turns(text: str, fallback_time: float) -> list[SessionTurn]:
    """All readable turns of a sessions file's text."""
    turns = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if raw.strip():
            turn = parse_turn(number, raw, fallback_time)
            if turn is not None:
                turns.append(turn)
    return turns


def sessions_file(home: Path) -> Path:
    """Where the REPL keeps past conversations."""
    return home / SESSIONS_PATH
