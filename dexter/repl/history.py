"""The session's conversation: what earlier turns the model sees, and the sessions log.

Every run gets the earlier turns as ``history`` messages (a user message of kind
``history`` and the assistant's answer). The history is bounded: the last ``max_turns``
turns, of which the newest ``full_turns`` keep their whole answer and older ones keep the
first ``summary_chars`` characters (a cheap summary that never delays an answer). A turn
that was interrupted keeps its repaired transcript while it is the latest turn, so the
next question can continue from what was done; afterwards it collapses to one line.
``/compact`` replaces the turns with one summary; ``/clear`` empties everything.

Finished turns are also appended to ``DEXTER_HOME/history/sessions.jsonl`` as
``{"timestamp", "query", "answer"}`` lines, which the memory system indexes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from dexter.events import RunStatus
from dexter.messages import AssistantMessage, Message, UserMessage

SESSIONS_LOG = Path("history") / "sessions.jsonl"
INTERRUPTED_ANSWER = "[The user interrupted this question before it was answered.]"
SHORTENED_MARK = " […]"


@dataclass(frozen=True, slots=True)
class Turn:
    """One question of the session and how it ended."""

    query: str
    answer: str
    status: RunStatus
    timestamp: str = ""
    transcript: tuple[Message, ...] = field(default=(), repr=False)
    """For an interrupted turn: the repaired messages of the run (query first)."""


def shorten(text: str, limit: int) -> str:
    """``text`` cut at a word boundary to about ``limit`` characters, marked when cut."""
    text = text.strip()
    if len(text) <= limit:
        return text
    head = text[:limit]
    space = head.rfind(" ")
    if space > limit // 2:
        head = head[:space]
    return head.rstrip() + SHORTENED_MARK


class SessionHistory:
    """The turns of one REPL session and the history messages they become."""

    def __init__(self, *, max_turns: int = 10, full_turns: int = 3,
                 summary_chars: int = 300) -> None:
        self.max_turns = max_turns
        self.full_turns = full_turns
        self.summary_chars = summary_chars
        self.turns: list[Turn] = []
        self.summary: str | None = None

    def __len__(self) -> int:
        return len(self.turns)

    def add(self, turn: Turn) -> None:
        """Record a finished (or interrupted, or failed) turn."""
        self.turns.append(turn)

    def clear(self) -> None:
        """Forget everything: the next question starts a fresh conversation."""
        self.turns.clear()
        self.summary = None

    def replace_with_summary(self, summary: str) -> None:
        """After ``/compact``: one summary stands for every earlier turn."""
        self.turns.clear()
        self.summary = summary

    def messages(self) -> list[Message]:
        """The history messages for the next run, oldest first."""
        out: list[Message] = []
        if self.summary:
            out.append(UserMessage(
                "Summary of the earlier conversation in this session:\n\n" + self.summary,
                kind="summary"))
        usable = [t for t in self.turns if t.status != "error"]
        window = usable[-self.max_turns:] if self.max_turns > 0 else []
        for position, turn in enumerate(window):
            age = len(window) - 1 - position  # 0 for the newest turn
            out.extend(self._turn_messages(turn, age, latest=age == 0))
        return out

    def _turn_messages(self, turn: Turn, age: int, *, latest: bool) -> Sequence[Message]:
        if turn.status == "interrupted":
            if latest and turn.transcript:
                return _as_history(turn.transcript)
            return [UserMessage(turn.query, kind="history"), AssistantMessage(INTERRUPTED_ANSWER)]
        answer = turn.answer if age < self.full_turns else shorten(turn.answer, self.summary_chars)
        return [UserMessage(turn.query, kind="history"), AssistantMessage(answer)]


def _as_history(transcript: Sequence[Message]) -> list[Message]:
    """An interrupted run's messages with its query marked as history."""
    out: list[Message] = []
    for message in transcript:
        if isinstance(message, UserMessage) and message.kind == "query":
            out.append(UserMessage(message.content, kind="history"))
        else:
            out.append(message)
    return out


def now_iso() -> str:
    """The local time as ISO-8601 with the offset (what the sessions log stores)."""
    return datetime.now().astimezone().isoformat(timespec="seconds")


def append_session_log(home: Path, turn: Turn) -> str | None:
    """Append one answered turn to ``home/history/sessions.jsonl``.

    Returns an error message instead of raising: losing the log must not end the session.
    """
    path = home / SESSIONS_LOG
    line = json.dumps({"timestamp": turn.timestamp or now_iso(), "query": turn.query,
                       "answer": turn.answer}, ensure_ascii=False)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")
    except OSError as exc:
        return f"Could not save this turn to {path}: {exc.strerror}."
    return None
