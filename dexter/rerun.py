"""Rerun a recorded question on the data its run fetched (``dexter rerun``, and the
recorded data of ``dexter eval --from-runs``).

A scratchpad (``dexter.scratchpad``) holds the question and every tool result in full.
:func:`load_recording` reads it into a :class:`Recording`; :func:`recorded_tools` wraps a
session's tools so that each call is answered from it:

- A call is matched by tool name and arguments (their canonical JSON, secrets scrubbed the
  way the scratchpad wrote them). When the same call was recorded several times, the
  answers are given in order, then the last one again.
- The answer is the recorded text exactly as the tool returned it (the executor adds the
  new run's source id, as it did the first time); a recorded error is an error again.
- A call that was not recorded gets an error result that says so (``not recorded in
  <file>: ...``), or, with ``live=True``, runs the real tool.
- Tools the recording used that the session does not have (memory tools with memory off,
  a tool of an older version) are offered too, answering only from the recording.

Each wrapper keeps its tool's name, description, schema, flags and ``source_kind``, so the
model, the permission engine, the context stages and the source ledger see the same tool.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from dexter.scratchpad import Scratchpad, recorded_text
from dexter.secrets import scrub_value
from dexter.text import clean_value
from dexter.tools.base import Tool, ToolContext, ToolFailure, ToolOutput

UNKNOWN_TOOL_PREFIX = "Error: Unknown tool '"
"""How the executor's error for a call of a tool the session lacks begins."""
_SHOWN_ALTERNATIVES = 5
SourceKind = Literal["data", "calculation", "user"]


class RecordingError(Exception):
    """A scratchpad that cannot be used as a recording: missing, unreadable or corrupt."""

    def __init__(self, path: Path, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"Cannot rerun {path}: {problem}")


@dataclass(frozen=True, slots=True)
class RecordedResult:
    """One ``tool_result`` entry: a call and what the tool gave back."""

    tool: str
    args: dict[str, Any]
    text: str
    """Exactly what the tool returned (the model saw it after its source id, if any)."""
    is_error: bool = False
    source_urls: tuple[str, ...] = ()
    title: str = ""
    source_id: str = ""
    tool_call_id: str = ""


@dataclass(frozen=True)
class Recording:
    """A recorded run: its question, its model and every tool result, in order."""

    path: Path
    """The scratchpad file (absolute)."""
    question: str
    model: str
    """The model's id as recorded (``model`` in the init line)."""
    provider: str = ""
    results: tuple[RecordedResult, ...] = ()
    rerun_of: str = ""
    """The run the recorded one was itself a rerun of ('' for an ordinary run)."""
    skipped: int = 0
    """Lines or ``tool_result`` entries that were unreadable and left out."""

    @property
    def model_name(self) -> str:
        """The name that resolves the recorded model again: ``provider:model`` when the
        provider is known, else the model id."""
        if self.provider and self.model and ":" not in self.model:
            return f"{self.provider}:{self.model}"
        return self.model

    @property
    def tool_names(self) -> tuple[str, ...]:
        """The tools the run called, in the order of their first call."""
        return tuple(dict.fromkeys(result.tool for result in self.results))

    def results_for(self, tool: str, args: Mapping[str, Any]) -> list[RecordedResult]:
        """The recorded results of one call (tool and arguments), in the order they came."""
        key = call_key(tool, args)
        return [r for r in self.results if call_key(r.tool, r.args) == key]


def call_key(tool: str, args: Mapping[str, Any]) -> str:
    """The identity of a call: its tool and the canonical JSON of its arguments, with
    secrets scrubbed and text cleaned as the scratchpad writes them."""
    written = clean_value(scrub_value(dict(args)))
    return json.dumps([tool, written], sort_keys=True, ensure_ascii=False, default=str)


def load_recording(path: Path) -> Recording:
    """Read a scratchpad as a recording.

    Lines that are not valid entries and ``tool_result`` entries of the wrong shape are
    skipped and counted in ``skipped``. Raises :class:`RecordingError` (naming the file
    and what is wrong) when the file is missing or unreadable, or holds no question.
    """
    path = Path(path)
    if path.is_dir():
        raise RecordingError(path, "it is a directory, not a scratchpad file")
    try:
        log = Scratchpad.read(path)
    except FileNotFoundError:
        raise RecordingError(path, "there is no such file") from None
    except OSError as exc:
        raise RecordingError(path, f"it cannot be read ({exc.strerror or exc})") from None
    if not log.entries:
        raise RecordingError(path, "it holds no scratchpad entries"
                             + (f" ({_lines(log.skipped)} corrupt)" if log.skipped else ""))
    init = log.init
    question = init.get("query") if init is not None else None
    if not isinstance(question, str) or not question.strip():
        problem = "its init line is missing or damaged" if init is None \
            else "its init line has no question"
        raise RecordingError(path, f"{problem}, so there is no question to ask again")
    results: list[RecordedResult] = []
    skipped = log.skipped
    for entry in log.of_type("tool_result"):
        result = _result(entry)
        if result is None:
            skipped += 1
        else:
            results.append(result)
    return Recording(
        path=path.absolute(), question=question, model=_str(init, "model"),
        provider=_str(init, "provider"), results=tuple(results),
        rerun_of=log.rerun_of, skipped=skipped,
    )


def _str(entry: Mapping[str, Any] | None, key: str) -> str:
    value = entry.get(key) if entry is not None else None
    return value if isinstance(value, str) else ""


def _result(entry: Mapping[str, Any]) -> RecordedResult | None:
    tool, args = entry.get("tool"), entry.get("args", {})
    if not isinstance(tool, str) or not tool or not isinstance(args, dict):
        return None
    urls = entry.get("source_urls")
    return RecordedResult(
        tool=tool, args=args, text=recorded_text(entry.get("result")),
        is_error=entry.get("is_error") is True,
        source_urls=tuple(u for u in urls if isinstance(u, str)) if isinstance(urls, list) else (),
        title=_str(entry, "title"), source_id=_str(entry, "source_id"),
        tool_call_id=_str(entry, "tool_call_id"),
    )


def _lines(count: int) -> str:
    return f"{count} line" if count == 1 else f"{count} lines"


# ---------------------------------------------------------------------------------------
# Answering calls
# ---------------------------------------------------------------------------------------

class _Answers:
    """The recorded results by call, and how many of each were given out (shared by the
    wrappers of one :func:`recorded_tools` call, so each session counts its own)."""

    def __init__(self, recording: Recording) -> None:
        self.recording = recording
        self._by_key: dict[str, list[RecordedResult]] = {}
        self._by_tool: dict[str, list[dict[str, Any]]] = {}
        for result in recording.results:
            self._by_key.setdefault(call_key(result.tool, result.args), []).append(result)
            seen = self._by_tool.setdefault(result.tool, [])
            if result.args not in seen:
                seen.append(result.args)
        self._served: dict[str, int] = {}

    def next(self, tool: str, args: Mapping[str, Any]) -> RecordedResult | None:
        """The answer to this call: the recorded results in order, then the last again."""
        key = call_key(tool, args)
        found = self._by_key.get(key)
        if not found:
            return None
        served = self._served.get(key, 0)
        self._served[key] = served + 1
        return found[min(served, len(found) - 1)]

    def not_recorded(self, tool: str, args: Mapping[str, Any], *, missing_tool: bool) -> str:
        """The error text for a call the recording does not have."""
        call = f"{tool}({json.dumps(dict(args), ensure_ascii=False, default=str)})"
        message = (f"not recorded in {self.recording.path}: this rerun answers tools from "
                   f"the results recorded there, and {call} was not called in that run.")
        if missing_tool:
            message += f" This session has no '{tool}' tool to run it."
        recorded = self._by_tool.get(tool, [])
        if recorded:
            shown = "; ".join(json.dumps(a, ensure_ascii=False, default=str)
                              for a in recorded[:_SHOWN_ALTERNATIVES])
            more = f" and {len(recorded) - _SHOWN_ALTERNATIVES} more" \
                if len(recorded) > _SHOWN_ALTERNATIVES else ""
            message += f" Recorded '{tool}' calls had these arguments: {shown}{more}."
        return message + " Use the data you have, or a recorded call."


class RecordedCall(BaseModel):
    """What a wrapped tool's ``parse_args`` hands to its ``run``: the arguments as the
    model sent them (to match the recording) and as the real tool parsed them."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)

    raw: dict[str, Any]
    parsed: Any = None


class _AnyArgs(BaseModel):
    """The parameters of a tool known only from the recording: any JSON object."""

    model_config = ConfigDict(extra="allow")


class _RecordedTool(Tool[Any]):
    """A tool whose calls are answered from a recording (see the module docstring).

    Made per tool by :func:`_wrap`, which copies the tool's class attributes."""

    name: ClassVar[str] = "recorded"
    description: ClassVar[str] = ""
    params: ClassVar[type[BaseModel]] = _AnyArgs

    def __init__(self, inner: Tool[Any] | None, answers: _Answers, *, live: bool) -> None:
        self.inner = inner
        self._answers = answers
        self._live = live

    def json_schema(self) -> dict[str, Any]:
        """The real tool's schema (an open object for a tool known only from the recording)."""
        if self.inner is not None:
            return self.inner.json_schema()
        return {"type": "object", "properties": {}, "additionalProperties": True}

    def parse_args(self, arguments: dict[str, Any]) -> RecordedCall:
        """Validate as the real tool does (the same errors), keeping the raw arguments."""
        parsed = self.inner.parse_args(arguments) if self.inner is not None else None
        return RecordedCall(raw=dict(arguments), parsed=parsed)

    def evidence(self, content: str) -> str:
        """The real tool's evidence part of a result."""
        return self.inner.evidence(content) if self.inner is not None else content

    def bound(self) -> bool:
        """Whether the real tool's definition goes with the next request (True when there
        is no real tool)."""
        return self.inner.bound() if self.inner is not None else True

    def preview(self, args: Any, ctx: ToolContext) -> str | None:
        """The real tool's preview of its change, for an approval (the executor passes the
        real tool's parsed parameters)."""
        return self.inner.preview(args, ctx) if self.inner is not None else None

    async def run(self, args: RecordedCall, ctx: ToolContext) -> str | ToolOutput:
        """The recorded answer to this call; else the real tool when live, else an error."""
        found = self._answers.next(self.name, args.raw)
        if found is not None:
            return ToolOutput(found.text, source_urls=found.source_urls,
                              is_error=found.is_error, title=found.title)
        if self._live and self.inner is not None:
            return await self.inner.run(args.parsed, ctx)
        raise ToolFailure(self._answers.not_recorded(self.name, args.raw,
                                                     missing_tool=self.inner is None))


def _wrap(name: str, inner: Tool[Any] | None, answers: _Answers, *, live: bool,
          source_kind: SourceKind | None = "data") -> Tool[Any]:
    attributes: dict[str, Any]
    if inner is not None:
        attributes = {
            "name": inner.name, "description": inner.description, "params": inner.params,
            "concurrency_safe": inner.concurrency_safe, "compactable": inner.compactable,
            "needs_approval": inner.needs_approval, "source_kind": inner.source_kind,
        }
    else:
        attributes = {
            "name": name, "params": _AnyArgs, "concurrency_safe": True,
            "compactable": False, "needs_approval": False, "source_kind": source_kind,
            "description": (f"The '{name}' tool of the recorded run {answers.recording.path.name} "
                            "(not available in this session). Calls are answered from that "
                            "run's recorded results only."),
        }
    cls = type(f"Recorded_{name}", (_RecordedTool,), attributes)
    tool: Tool[Any] = cls(inner, answers, live=live)
    return tool


def recorded_tools(recording: Recording, tools: Sequence[Tool[Any]], *,
                   live: bool = False) -> list[Tool[Any]]:
    """The session's ``tools`` wrapped to answer from ``recording``, in their order, then
    a tool for each one the recording used that the session lacks.

    ``live``: a call the recording does not have runs the real tool (when the session has
    it) instead of getting the "not recorded" error. The wrappers of one call share one
    count of answers given, so build them once per run.
    """
    answers = _Answers(recording)
    wrapped = [_wrap(tool.name, tool, answers, live=live) for tool in tools]
    have = {tool.name for tool in tools}
    for name in recording.tool_names:
        if name in have:
            continue
        mine = [r for r in recording.results if r.tool == name]
        if all(r.is_error and r.text.startswith(UNKNOWN_TOOL_PREFIX) for r in mine):
            continue  # the original session lacked it too: its calls were errors already
        kind: SourceKind | None = "data" if any(r.source_id for r in mine) else None
        wrapped.append(_wrap(name, None, answers, live=live, source_kind=kind))
    return wrapped
