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

import dataclasses
import json
import types
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

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


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _int(value: Any) -> int:
    try:
        return max(0, int(value))
    except (TypeError, ValueError):
        return 0


def _tool_events(entry: dict[str, Any], index: int) -> list[Event]:
    tool = str(entry.get("tool") or entry.get("toolName") or "unknown")
    raw_args = entry.get("args")
    args: dict[str, Any] = raw_args if isinstance(raw_args, dict) else {}
    call_id = str(entry.get("tool_call_id") or f"replay-{index}")
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
        try:
            stamps.append(datetime.fromisoformat(str(entry.get("timestamp", ""))))
        except ValueError:
            continue
    if len(stamps) < 2:
        return 0
    try:
        return max(0, round((max(stamps) - min(stamps)).total_seconds() * 1000))
    except TypeError:  # naive and aware timestamps mixed
        return 0


def _unfinished(entries: list[dict[str, Any]]) -> Done:
    calls = [
        {"tool": str(e.get("tool") or "unknown"), "args": e.get("args") or {}}
        for e in entries if e.get("type") == "tool_result"
    ]
    return Done(
        answer=UNFINISHED_MESSAGE, tool_calls=calls, total_time_ms=_elapsed_ms(entries),
        status="interrupted", error_kind="unfinished",
    )


def _value_fits(value: Any, hint: Any) -> bool:
    """Whether ``value`` has the JSON shape the field's annotation asks for."""
    origin = get_origin(hint)
    if origin is Literal:
        return value in get_args(hint)
    if origin in (Union, types.UnionType):
        return any(_value_fits(value, arg) for arg in get_args(hint))
    if hint is type(None):
        return value is None
    base = origin or hint
    if base is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if base is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if base in (str, bool, list, dict):
        return isinstance(value, base)
    return True


def _well_typed(event: Event) -> bool:
    """Whether every field of a rebuilt event has the type the views expect."""
    hints = get_type_hints(type(event))
    return all(_value_fits(getattr(event, f.name), hints[f.name])
               for f in dataclasses.fields(event))


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
    types = {e.get("type") for e in items}
    has_results, has_init = "tool_result" in types, "init" in types
    finished = False
    for index, entry in enumerate(items):
        kind = str(entry.get("type", ""))
        if kind == "init":
            yield _run_start(entry, scratchpad)
        elif kind == "tool_result":
            yield from _tool_events(entry, index)
        elif _shown_elsewhere(kind, has_results=has_results, has_init=has_init):
            continue
        elif kind in EVENT_TYPES:
            event = event_from_dict(entry)
            if event is None or not _well_typed(event):
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
