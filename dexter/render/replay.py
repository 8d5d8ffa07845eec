"""Turn scratchpad entries back into events, so any renderer can show a past run again.

Entry shapes (each also has ``type`` and ``timestamp``):

- ``init {query, model, provider, version}`` becomes ``RunStart``;
- ``tool_result {tool, args, result, duration_ms, is_error, tool_call_id}`` becomes
  ``ToolStart`` then ``ToolEnd`` (or ``ToolError`` when ``is_error``);
- any other entry whose ``type`` is an event type is that event's ``to_dict()``.

Live-only events (``stream_progress``, ``answer_delta``) are ignored. ``tool_start``/
``tool_end``/``tool_error``/``tool_progress`` entries are used only when the file has no
``tool_result`` entries, and ``run_start`` only when it has no ``init``, so nothing shows
twice. A run without a ``done`` entry ends with a synthetic ``Done`` saying it did not finish.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from dexter.events import (
    EVENT_TYPES,
    AnswerDelta,
    Done,
    Event,
    RunStart,
    StreamProgress,
    ToolEnd,
    ToolError,
    ToolProgress,
    ToolStart,
    event_from_dict,
)

UNFINISHED_MESSAGE = (
    "The run did not finish: the scratchpad has no final answer "
    "(the run crashed or was interrupted)."
)
_LIVE_ONLY = frozenset({StreamProgress.type, AnswerDelta.type})
_TOOL_EVENTS = frozenset({ToolStart.type, ToolEnd.type, ToolError.type, ToolProgress.type})


@dataclass
class ReplayStats:
    """What ``replay_events`` could not use: entry types it does not know, or bad entries."""

    skipped: Counter[str] = field(default_factory=Counter)

    @property
    def skipped_count(self) -> int:
        """How many entries were skipped in total."""
        return sum(self.skipped.values())


MAX_DURATION_MS = 10**12
"""A recorded duration beyond this (about 31 years) is damage: it shows as 0."""


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (ValueError, RecursionError):  # NaN is fine; a self-referencing list is not
        return str(type(value).__name__)


def _int(value: Any) -> int:
    """A non-negative count or duration from a recorded field; 0 when it is none."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return 0
    try:
        number = int(value)
    except (ValueError, OverflowError):  # "abc", nan, inf, a 5,000-digit string
        return 0
    return number if 0 <= number <= MAX_DURATION_MS else 0


def _name(value: Any, default: str) -> str:
    return value if isinstance(value, str) and value else default


def _tool_events(entry: dict[str, Any], index: int) -> list[Event]:
    tool = _name(entry.get("tool"), _name(entry.get("toolName"), "unknown"))
    raw_args = entry.get("args")
    args: dict[str, Any] = raw_args if isinstance(raw_args, dict) else {}
    call_id = _name(entry.get("tool_call_id"), f"replay-{index}")
    result = _text(entry.get("result"))
    duration = _int(entry.get("duration_ms"))
    end: Event
    if entry.get("is_error"):
        end = ToolError(tool=tool, error=result, tool_call_id=call_id, args=args,
                        duration_ms=duration)
    else:
        urls = entry.get("source_urls")
        sources = tuple(str(u) for u in urls if isinstance(u, str)) if isinstance(urls, list) else ()
        end = ToolEnd(tool=tool, args=args, result=result, duration_ms=duration,
                      tool_call_id=call_id, source_urls=sources,
                      source_id=_text(entry.get("source_id")), title=_text(entry.get("title")))
    return [ToolStart(tool=tool, args=args, tool_call_id=call_id), end]


def _run_start(entry: dict[str, Any], scratchpad: str) -> RunStart:
    return RunStart(
        query=_text(entry.get("query") or entry.get("content")),
        model=_text(entry.get("model")),
        provider=_text(entry.get("provider")),
        scratchpad=scratchpad,
    )


def _elapsed_ms(entries: list[dict[str, Any]]) -> int:
    stamps: list[datetime] = []
    for entry in entries:
        stamp = entry.get("timestamp")
        try:
            stamps.append(datetime.fromisoformat(stamp if isinstance(stamp, str) else ""))
        except ValueError:
            continue
    if len(stamps) < 2:
        return 0
    try:
        return _int(round((max(stamps) - min(stamps)).total_seconds() * 1000))
    except (TypeError, OverflowError):  # naive and aware timestamps mixed
        return 0


def _unfinished(entries: list[dict[str, Any]]) -> Done:
    calls = [
        {"tool": _name(e.get("tool"), "unknown"),
         "args": e["args"] if isinstance(e.get("args"), dict) else {}}
        for e in entries if e.get("type") == "tool_result"
    ]
    return Done(
        answer=UNFINISHED_MESSAGE, tool_calls=calls, total_time_ms=_elapsed_ms(entries),
        status="interrupted", error_kind="unfinished",
    )


def _shown_elsewhere(kind: str, *, has_results: bool, has_init: bool) -> bool:
    """Entries that are live-only, or duplicate what ``tool_result``/``init`` entries give."""
    if kind in _LIVE_ONLY:
        return True
    if kind in _TOOL_EVENTS:
        return has_results
    return kind == RunStart.type and has_init


def replay_events(
    entries: Iterable[dict[str, Any]],
    *,
    scratchpad: str = "",
    stats: ReplayStats | None = None,
) -> Iterator[Event]:
    """The events of a recorded run, in order; skipped entries are counted in ``stats``."""
    items = [e for e in entries if isinstance(e, dict)]
    stats = stats if stats is not None else ReplayStats()
    kinds = [e["type"] if isinstance(e.get("type"), str) else "" for e in items]
    has_results, has_init = "tool_result" in kinds, "init" in kinds
    finished = False
    for index, (entry, kind) in enumerate(zip(items, kinds, strict=True)):
        if kind == "init":
            yield _run_start(entry, scratchpad)
        elif kind == "tool_result":
            yield from _tool_events(entry, index)
        elif _shown_elsewhere(kind, has_results=has_results, has_init=has_init):
            continue
        elif kind in EVENT_TYPES:
            event = event_from_dict(entry)
            if event is None:
                stats.skipped[kind] += 1
                continue
            if isinstance(event, RunStart) and scratchpad and not event.scratchpad:
                event = RunStart(event.query, event.model, event.provider, scratchpad)
            finished = finished or isinstance(event, Done)
            yield event
        else:
            stats.skipped[kind or "(no type)"] += 1
    if not finished:
        yield _unfinished(items)
