"""A session's conversation: the earlier turns the model sees, the grants, the sessions log.

A :class:`Conversation` is the only state that outlives one run. ``Agent.run(query,
conversation)`` reads the history from it and, when the run ends (answered, failed or
interrupted), adds the turn to it; the REPL keeps one per session and ``dexter ask`` makes
a fresh one per question. Nothing else writes to it but the REPL's ``/clear`` and
``/compact``.

Every run gets the earlier turns as ``history`` messages (a user message of kind
``history`` and the assistant's answer). The history is bounded, oldest summarized first:

- the newest ``full_turns`` turns keep their whole answer;
- the rest of the last ``max_turns`` turns keep a summary of their answer, or (while the
  summary is not ready, or when it failed) the answer cut to ``summary_chars`` characters;
- turns older than that are folded into one "Earlier in this session:" message, one line
  per turn, within ``fold_budget`` tokens (the oldest lines go first).

Summaries are written by the session's fast model in a background task started once a
turn's answer is on screen (:meth:`Conversation.summarize_later`). Nothing ever waits for
one: a question sent meanwhile uses whatever summaries are ready. A failing or slow fast
model only leaves the cut text in place. Answers no longer than ``summary_chars`` are not
summarized (the cut text is the whole answer).

A turn that was interrupted keeps its repaired transcript while it is the latest turn, so
the next question can continue from what was done; afterwards it collapses to one line.
``/compact`` replaces the turns with one summary; ``/clear`` empties everything. Both
cancel the pending summaries.

:meth:`Conversation.to_dict` and :meth:`Conversation.from_dict` save and restore it: a
saved session (:mod:`dexter.agent.sessions`) holds one.

Finished turns are also appended to ``DEXTER_HOME/history/sessions.jsonl`` as
``{"timestamp", "query", "answer"}`` lines, which the memory system indexes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, cast, get_args

from dexter.context.calls import call_model
from dexter.context.tokens import estimate_text_tokens
from dexter.events import RunStatus
from dexter.evidence.ledger import SourceLedger, source_from_dict, source_to_dict
from dexter.filelock import append_locked
from dexter.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    UserMessage,
    message_from_dict,
    message_to_dict,
)
from dexter.permissions.base import SessionGrants
from dexter.providers.base import ChatModel, ModelRequest
from dexter.providers.pricing import usage_cost
from dexter.providers.registry import ModelInfo
from dexter.secrets import scrub
from dexter.text import clean

SESSIONS_LOG = Path("history") / "sessions.jsonl"
INTERRUPTED_ANSWER = "[The user interrupted this question before it was answered.]"
SHORTENED_MARK = " […]"
SUMMARY_MARK = "[Answer summarized] "
FOLD_HEADER = "Earlier in this session:"
FOLD_BUDGET_TOKENS = 1_500
FOLD_QUERY_CHARS = 200
FOLD_INTERRUPTED = "(interrupted before it was answered)"
SUMMARY_MAX_TOKENS = 300
SUMMARY_TIMEOUT_S = 60.0
SUMMARY_UNAVAILABLE = "(summary unavailable)"
SUMMARY_SYSTEM = (
    "You condense one finished turn of a financial research conversation so the assistant "
    "can recall it later without the full text. Reply with one or two plain sentences that "
    "say what the answer found, in the light of the question. Keep every figure the answer "
    "states, exactly as written: amounts, units, currencies, percentages, ratios, dates, "
    "fiscal periods and tickers. Add nothing that is not in the answer. No preamble, no "
    "markdown, no lists."
)

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class Turn:
    """One question of the session and how it ended.

    ``summary`` is filled in later by a background task (see
    :meth:`Conversation.summarize_later`); ``summary_failed`` says the fast model could
    not write it, so the cut answer stands in for good.
    """

    query: str
    answer: str
    status: RunStatus
    timestamp: str = ""
    transcript: tuple[Message, ...] = field(default=(), repr=False)
    """For an interrupted turn: the repaired messages of the run (query first)."""
    summary: str | None = None
    summary_failed: bool = False


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


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (newlines included) made one space."""
    return " ".join(text.split())


def fold_earlier(lines: Sequence[str], budget: int = FOLD_BUDGET_TOKENS) -> str | None:
    """The "Earlier in this session:" message made of ``lines`` (oldest first), or None.

    Keeps the newest lines whose message fits in ``budget`` estimated tokens, header
    included: the oldest lines are dropped first. None when not even one line fits.
    """
    def render(start: int) -> str:
        return FOLD_HEADER + "\n" + "\n".join(lines[start:])

    # more lines never make fewer tokens, so search for the first line that still fits
    low, high = 0, len(lines)
    while low < high:
        middle = (low + high) // 2
        if estimate_text_tokens(render(middle)) <= budget:
            high = middle
        else:
            low = middle + 1
    return render(low) if low < len(lines) else None


class Conversation:
    """The turns of one session, the history messages they become, and the session's
    grants ("allow for this session" approvals) and memory-recall notice."""

    def __init__(self, *, max_turns: int = 10, full_turns: int = 3,
                 summary_chars: int = 300, fold_budget: int = FOLD_BUDGET_TOKENS,
                 summary_timeout: float = SUMMARY_TIMEOUT_S) -> None:
        self.max_turns = max_turns
        self.full_turns = full_turns
        self.summary_chars = summary_chars
        self.fold_budget = fold_budget
        self.summary_timeout = summary_timeout
        self.turns: list[Turn] = []
        self.summary: str | None = None
        self.grants = SessionGrants()
        self.ledger = SourceLedger()
        """Every source fetched in this session (ids stay valid across its runs)."""
        self.recall_reported = False
        self.spent_tokens = 0
        self.spent_usd = 0.0
        """What this session's runs spent so far (the REPL's /budget counts it)."""
        """Whether the memory recall was reported (once per session, across rebuilds)."""
        self._pending: set[asyncio.Task[None]] = set()

    def __len__(self) -> int:
        return len(self.turns)

    def add(self, turn: Turn) -> None:
        """Record a finished (or interrupted, or failed) turn."""
        self.turns.append(turn)

    def record_spend(self, usage: Mapping[str, int], price: ModelInfo | None) -> None:
        """Add one run's token usage (and its cost at ``price``, when known)."""
        self.spent_tokens += int(usage.get("input_tokens", 0)) + int(usage.get("output_tokens", 0))
        cost = usage_cost(usage, price)
        if cost is not None:
            self.spent_usd += cost

    @property
    def latest(self) -> Turn | None:
        """The last turn added (the run that just ended), or None."""
        return self.turns[-1] if self.turns else None

    def clear(self) -> None:
        """Forget everything: the next question starts a fresh conversation."""
        self.cancel_summaries()
        self.turns.clear()
        self.summary = None
        self.ledger = SourceLedger()

    def replace_with_summary(self, summary: str) -> None:
        """After ``/compact``: one summary stands for every earlier turn."""
        self.cancel_summaries()
        self.turns.clear()
        self.summary = summary

    # -- saving and resuming -----------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """What a saved session keeps (JSON-ready): the turns with their summaries and the
        transcript of an interrupted one, the ``/compact`` summary, and the source ledger.

        The ledger keeps what each source is and its numbers (not its text), so citations
        (``S3``) stay valid and the number check still works after a resume. Not kept: the
        "allow for this session" grants (a resumed session asks again) and whether the
        memory recall was reported (a new process recalls memory afresh and says so once).
        """
        return {
            "turns": [_turn_to_dict(turn) for turn in self.turns],
            "summary": self.summary,
            "sources": [source_to_dict(source) for source in self.ledger],
        }

    @classmethod
    def from_dict(cls, data: Any, **options: Any) -> Conversation:
        """The conversation :meth:`to_dict` wrote, built with ``options`` (``max_turns``...).

        Raises ``ValueError`` saying what is wrong when ``data`` is not such a dict.
        """
        if not isinstance(data, dict):
            raise ValueError("the conversation must be a JSON object")
        conversation = cls(**options)
        turns = data.get("turns", [])
        sources = data.get("sources", [])
        summary = data.get("summary")
        if not isinstance(turns, list) or not isinstance(sources, list):
            raise ValueError("the conversation's turns and sources must be lists")
        if summary is not None and not isinstance(summary, str):
            raise ValueError("the conversation's summary must be text or null")
        conversation.turns = [_turn_from_dict(item) for item in turns]
        conversation.summary = summary
        conversation.ledger = SourceLedger.restore(source_from_dict(s) for s in sources)
        return conversation

    # -- background summaries -------------------------------------------------------------

    @property
    def pending_summaries(self) -> int:
        """How many summaries are still being written."""
        return sum(1 for task in self._pending if not task.done())

    def wants_summary(self, turn: Turn) -> bool:
        """Whether ``turn`` is worth a summary: answered, and longer than the cut."""
        return turn.status == "ok" and len(turn.answer.strip()) > self.summary_chars

    def summarize_later(self, turn: Turn, model: ChatModel | None) -> asyncio.Task[None] | None:
        """Start writing ``turn.summary`` with ``model`` in the background; never waits.

        Returns the task, or None when there is nothing to summarize (or no model). The
        task never raises: a failure only sets ``turn.summary_failed``.
        """
        if model is None or not self.wants_summary(turn):
            return None
        task = asyncio.create_task(self._summarize(turn, model), name="dexter-turn-summary")
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)
        return task

    async def _summarize(self, turn: Turn, model: ChatModel) -> None:
        try:
            async with asyncio.timeout(self.summary_timeout):
                summary = await summarize_turn(model, turn)
        except Exception as exc:  # the fast model must never disturb the session
            logger.debug("turn summary failed: %s: %s", type(exc).__name__, exc)
            summary = ""
        if summary:
            turn.summary = summary
        else:
            turn.summary_failed = True

    def cancel_summaries(self) -> int:
        """Cancel the summaries still being written. Returns how many were cancelled."""
        pending = [task for task in self._pending if not task.done()]
        for task in pending:
            task.cancel()
        self._pending.clear()
        return len(pending)

    async def aclose(self) -> None:
        """Cancel the pending summaries and wait until they have stopped (at exit)."""
        pending = [task for task in self._pending if not task.done()]
        self.cancel_summaries()
        for task in pending:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    # -- messages ---------------------------------------------------------------------------

    def messages(self) -> list[Message]:
        """The history messages for the next run, oldest first."""
        out: list[Message] = []
        if self.summary:
            out.append(UserMessage(
                "Summary of the earlier conversation in this session:\n\n" + self.summary,
                kind="summary"))
        usable = [t for t in self.turns if t.status != "error"]
        split = max(len(usable) - self.max_turns, 0) if self.max_turns > 0 else len(usable)
        older, window = usable[:split], usable[split:]
        folded = fold_earlier([self._fold_line(t) for t in older], self.fold_budget)
        if folded:
            out.append(UserMessage(folded, kind="history"))
        for position, turn in enumerate(window):
            age = len(window) - 1 - position  # 0 for the newest turn
            out.extend(self._turn_messages(turn, age, latest=age == 0))
        return out

    def _turn_messages(self, turn: Turn, age: int, *, latest: bool) -> Sequence[Message]:
        if turn.status == "interrupted":
            if latest and turn.transcript:
                return _as_history(turn.transcript)
            return [UserMessage(turn.query, kind="history"), AssistantMessage(INTERRUPTED_ANSWER)]
        if age < self.full_turns:
            answer = turn.answer
        elif turn.summary:
            answer = SUMMARY_MARK + turn.summary
        else:
            answer = shorten(turn.answer, self.summary_chars)
        return [UserMessage(turn.query, kind="history"), AssistantMessage(answer)]

    def _fold_line(self, turn: Turn) -> str:
        if turn.status == "interrupted":
            found = FOLD_INTERRUPTED
        else:
            found = turn.summary or shorten(one_line(turn.answer), self.summary_chars)
        return f"- {shorten(one_line(turn.query), FOLD_QUERY_CHARS)} → {found}"


async def summarize_turn(model: ChatModel, turn: Turn) -> str:
    """One or two sentences on what ``turn``'s answer found, every figure kept (one line).

    Raises what the model call raises (``ProviderError``); empty when the model said nothing.
    """
    request = ModelRequest(
        system=SUMMARY_SYSTEM,
        messages=(UserMessage(f"Question:\n{turn.query}\n\nAnswer:\n{turn.answer}"),),
        tools=(), max_tokens=SUMMARY_MAX_TOKENS)
    response = await call_model(model, request)
    return one_line(response.message.text)


def _as_history(transcript: Sequence[Message]) -> list[Message]:
    """An interrupted run's messages with its query marked as history."""
    out: list[Message] = []
    for message in transcript:
        if isinstance(message, UserMessage) and message.kind == "query":
            out.append(UserMessage(message.content, kind="history"))
        else:
            out.append(message)
    return out


def run_part(messages: Sequence[Message], history: Sequence[Message],
             query: str) -> tuple[Message, ...]:
    """The messages a run added after its system prompt and history (query first).

    When a compaction inside the run replaced the history, everything after the system
    prompt is the run's: the query and the summary (or, in a view compacted before the
    query stayed its own message, the summary alone). Empty when the transcript is not
    this run's (it was cancelled before it began).
    """
    body = list(messages[1:]) if messages and isinstance(messages[0], SystemMessage) else []
    if body[:len(history)] == list(history):
        own = body[len(history):]
        if own and isinstance(own[0], UserMessage) and own[0].content == query:
            return tuple(own)
    first, second = [*body, None, None][:2]
    compacted = isinstance(first, UserMessage) and (
        first.kind == "summary" or (first.kind == "query" and first.content == query
                                    and isinstance(second, UserMessage)
                                    and second.kind == "summary"))
    return tuple(body) if compacted else ()


def _turn_to_dict(turn: Turn) -> dict[str, Any]:
    return {"query": turn.query, "answer": turn.answer, "status": turn.status,
            "timestamp": turn.timestamp, "summary": turn.summary,
            "summary_failed": turn.summary_failed,
            "transcript": [message_to_dict(m) for m in turn.transcript]}


def _turn_from_dict(data: Any) -> Turn:
    if not isinstance(data, dict):
        raise ValueError("a turn must be a JSON object")
    status = data.get("status")
    if status not in get_args(RunStatus):
        raise ValueError(f"a turn has an unknown status {status!r}")
    texts = {key: data.get(key, "") for key in ("query", "answer", "timestamp")}
    if not all(isinstance(value, str) for value in texts.values()):
        raise ValueError("a turn's query, answer and timestamp must be text")
    summary = data.get("summary")
    if summary is not None and not isinstance(summary, str):
        raise ValueError("a turn's summary must be text or null")
    transcript = data.get("transcript", [])
    if not isinstance(transcript, list):
        raise ValueError("a turn's transcript must be a list")
    return Turn(query=texts["query"], answer=texts["answer"], status=cast(RunStatus, status),
                timestamp=texts["timestamp"], summary=summary,
                summary_failed=bool(data.get("summary_failed", False)),
                transcript=tuple(message_from_dict(m) for m in transcript))


def now_iso() -> str:
    """The local time as ISO-8601 with the offset (what the sessions log stores)."""
    return datetime.now().astimezone().isoformat(timespec="seconds")


def append_session_log(home: Path, turn: Turn) -> str | None:
    """Append one answered turn to ``home/history/sessions.jsonl``.

    Returns an error message instead of raising: losing the log must not end the session.
    """
    path = home / SESSIONS_LOG
    line = scrub(json.dumps({"timestamp": turn.timestamp or now_iso(), "query": turn.query,
                             "answer": turn.answer}, ensure_ascii=False))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # One write under the file's lock: lines of two dexter processes never interleave.
        append_locked(path, (clean(line) + "\n").encode("utf-8"))
    except OSError as exc:
        return f"Could not save this turn to {path}: {exc.strerror}."
    return None
