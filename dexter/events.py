"""Agent events: the contract between the loop and every renderer.

The loop yields these; the live terminal view, the plain-line printer, ``--json`` output,
the scratchpad and ``dexter replay`` all consume them. Field names are snake_case and every
event serialises to a flat JSON object with a ``type`` key (``to_dict``); ``event_from_dict``
turns such an object back into the event, which is how replay works.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

StreamMode = Literal["requesting", "responding", "thinking", "tool_input", "tool_use"]
ApprovalChoice = Literal["allow-once", "allow-session", "allow-always", "deny"]
RunStatus = Literal["ok", "error", "max_iterations", "interrupted", "budget"]
INTERRUPTED_TEXT = "Interrupted by the user."
"""The answer of an interrupted run that had not started writing one."""


@dataclass(frozen=True, slots=True)
class Event:
    """Base class: every event has a ``type`` tag."""

    type: ClassVar[str] = "event"
    recorded: ClassVar[bool] = False  # written to the scratchpad for replay

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        for name, value in data.items():
            if dataclasses.is_dataclass(value) and not isinstance(value, type):
                data[name] = dataclasses.asdict(value)
        return {"type": self.type, **data}


@dataclass(frozen=True, slots=True)
class RunStart(Event):
    """A run began. Carries what a renderer needs for its header."""

    type: ClassVar[str] = "run_start"
    query: str
    model: str
    provider: str
    scratchpad: str = ""


@dataclass(frozen=True, slots=True)
class Thinking(Event):
    """Text the model wrote alongside tool calls (its plan or interim reasoning)."""

    type: ClassVar[str] = "thinking"
    recorded: ClassVar[bool] = True
    message: str


@dataclass(frozen=True, slots=True)
class StreamProgress(Event):
    """Characters streamed since the last progress event, and what kind of output it is."""

    type: ClassVar[str] = "stream_progress"
    char_delta: int
    mode: StreamMode


@dataclass(frozen=True, slots=True)
class AnswerDelta(Event):
    """A piece of streamed reply text (it may turn out to be thinking if tool calls follow)."""

    type: ClassVar[str] = "answer_delta"
    text: str


@dataclass(frozen=True, slots=True)
class ProviderRetry(Event):
    """A provider call failed with a retryable error and will be tried again."""

    type: ClassVar[str] = "provider_retry"
    recorded: ClassVar[bool] = True
    attempt: int
    delay_s: float
    reason: str


@dataclass(frozen=True, slots=True)
class ToolStart(Event):
    type: ClassVar[str] = "tool_start"
    tool: str
    args: dict[str, Any]
    tool_call_id: str


@dataclass(frozen=True, slots=True)
class SubagentStatus:
    """What one worker agent is doing (carried by ``ToolProgress.subagent``)."""

    activity: str
    tool_use_count: int = 0
    tokens: int = 0
    done: bool = False
    failed: bool = False


@dataclass(frozen=True, slots=True)
class ToolProgress(Event):
    """A running tool's progress line; a ``spawn_subagent`` call also says how its worker is
    doing in ``subagent``."""

    type: ClassVar[str] = "tool_progress"
    tool: str
    message: str
    tool_call_id: str
    subagent: SubagentStatus | None = None


@dataclass(frozen=True, slots=True)
class ToolEnd(Event):
    """A tool call succeeded: its text for the model and the URLs its data came from."""

    type: ClassVar[str] = "tool_end"
    tool: str
    args: dict[str, Any]
    result: str
    duration_ms: int
    tool_call_id: str
    source_urls: tuple[str, ...] = ()
    source_id: str = ""
    """The result's id in the source ledger (``S3``): what the answer cites."""
    title: str = ""
    """What the source is (``income_statements[AAPL, annual] · SEC EDGAR``)."""


@dataclass(frozen=True, slots=True)
class ToolError(Event):
    type: ClassVar[str] = "tool_error"
    tool: str
    error: str
    tool_call_id: str
    args: dict[str, Any] = field(default_factory=dict)
    duration_ms: int = 0


@dataclass(frozen=True, slots=True)
class ToolLimit(Event):
    """A soft tool limit warning. Never blocks the call."""

    type: ClassVar[str] = "tool_limit"
    recorded: ClassVar[bool] = True
    tool: str
    warning: str
    tool_call_id: str = ""
    blocked: bool = False


@dataclass(frozen=True, slots=True)
class SandboxAlert(Event):
    """A sandboxed command did something to a path dexter protects (created a ``.git``,
    made a link on the way to dexter's settings...); each finding says what and what
    dexter did about it (moved it into the quarantine folder)."""

    type: ClassVar[str] = "sandbox_alert"
    recorded: ClassVar[bool] = True
    tool: str
    findings: tuple[str, ...]
    tool_call_id: str = ""


@dataclass(frozen=True, slots=True)
class ToolApproval(Event):
    """The user (or a pre-approval) decided on a call that needed approval."""

    type: ClassVar[str] = "tool_approval"
    recorded: ClassVar[bool] = True
    tool: str
    args: dict[str, Any]
    decision: ApprovalChoice
    tool_call_id: str


@dataclass(frozen=True, slots=True)
class ToolDenied(Event):
    type: ClassVar[str] = "tool_denied"
    recorded: ClassVar[bool] = True
    tool: str
    args: dict[str, Any]
    reason: str
    tool_call_id: str


@dataclass(frozen=True, slots=True)
class Microcompact(Event):
    type: ClassVar[str] = "microcompact"
    recorded: ClassVar[bool] = True
    cleared: int
    tokens_saved: int
    trigger: Literal["count", "tokens"]


@dataclass(frozen=True, slots=True)
class Compaction(Event):
    type: ClassVar[str] = "compaction"
    recorded: ClassVar[bool] = True
    phase: Literal["start", "end"]
    success: bool | None = None
    pre_tokens: int = 0
    post_tokens: int = 0
    model: str = ""
    error: str = ""


@dataclass(frozen=True, slots=True)
class MemoryFlush(Event):
    type: ClassVar[str] = "memory_flush"
    recorded: ClassVar[bool] = True
    phase: Literal["start", "end"]
    files_written: list[str] = field(default_factory=list)
    error: str = ""


@dataclass(frozen=True, slots=True)
class MemoryRecalled(Event):
    """Memory loaded into the system prompt at the start of a session."""

    type: ClassVar[str] = "memory_recalled"
    recorded: ClassVar[bool] = True
    files: list[str]
    tokens: int


@dataclass(frozen=True, slots=True)
class ContextCleared(Event):
    type: ClassVar[str] = "context_cleared"
    recorded: ClassVar[bool] = True
    cleared_count: int
    kept_count: int
    reason: Literal["threshold", "overflow"] = "threshold"


@dataclass(frozen=True, slots=True)
class QueueDrain(Event):
    type: ClassVar[str] = "queue_drain"
    recorded: ClassVar[bool] = True
    message_count: int
    merged_text: str


@dataclass(frozen=True, slots=True)
class Done(Event):
    """The run ended. ``status`` says how; ``answer`` holds the answer or the error text."""

    type: ClassVar[str] = "done"
    recorded: ClassVar[bool] = True
    answer: str
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    iterations: int = 0
    total_time_ms: int = 0
    token_usage: dict[str, int] = field(default_factory=dict)
    tokens_per_second: float = 0.0
    status: RunStatus = "ok"
    context_tokens: int = 0
    context_threshold: int = 0
    model: str = ""
    error_kind: str = ""
    citations: list[dict[str, str]] = field(default_factory=list)
    """The sources the answer cites, in order: ``{id, tool, title, url}``."""
    verification: dict[str, Any] | None = None
    """The final :class:`Verification`'s fields (None when verification is off)."""
    record_complete: bool = True
    """False when part of the run could not be written to its scratchpad."""
    record_error: str = ""
    """The first scratchpad write failure (the file and the OS error), when there was one."""


@dataclass(frozen=True, slots=True)
class ScratchpadError(Event):
    """The scratchpad could not be written (full disk, file-size limit, read-only folder):
    the run goes on, but its record is incomplete. Sent once, at the first failure."""

    type: ClassVar[str] = "scratchpad_error"
    path: str
    message: str


@dataclass(frozen=True, slots=True)
class Verification(Event):
    """The figures of an answer checked against the sources (docs/verification.md).

    ``final`` is false for the check that sent the model back to fix its answer (the
    repair turn); the last check of a run is final and is also in ``done.verification``.
    ``unsupported`` lists every figure that failed as ``{text, value, start, end, status,
    reason}`` (offsets into the answer); ``figures`` every figure with its status, reason,
    source and table cell; ``counts`` the figures per status.
    """

    type: ClassVar[str] = "verification"
    recorded: ClassVar[bool] = True
    checked: int
    supported: int
    status: Literal["verified", "unverified", "no_evidence"]
    unsupported: list[dict[str, Any]] = field(default_factory=list)
    unknown_citations: list[str] = field(default_factory=list)
    final: bool = True
    counts: dict[str, int] = field(default_factory=dict)
    figures: list[dict[str, Any]] = field(default_factory=list)


AgentEvent = (
    RunStart | Thinking | StreamProgress | AnswerDelta | ProviderRetry | ToolStart | ToolProgress
    | ToolEnd | ToolError | ToolLimit | SandboxAlert | ToolApproval | ToolDenied | Microcompact | Compaction
    | MemoryFlush | MemoryRecalled | ContextCleared | QueueDrain | Verification
    | ScratchpadError | Done
)

EVENT_CLASSES: tuple[type[Event], ...] = typing.get_args(AgentEvent)
"""Every event class, in the order of the union above (the one place events are listed)."""

EVENT_TYPES: dict[str, type[Event]] = {cls.type: cls for cls in EVENT_CLASSES}

RECORDED_EVENT_TYPES: frozenset[str] = frozenset(cls.type for cls in EVENT_CLASSES if cls.recorded)
"""Events the scratchpad writes because ``dexter replay`` needs them (tool calls are
written by ``Scratchpad.add_tool_result`` instead)."""


MAX_FIELD_NUMBER = 2**53
"""The largest number an event's numeric field may hold (counts, durations, tokens): a
recorded 1e999 or a 400-digit integer is damage, not a duration."""


def fits(value: Any, hint: Any) -> bool:
    """Whether ``value`` (parsed JSON, or an event field) has the shape the annotation
    ``hint`` asks for: the container and its items (``list[str]``, ``dict[str, int]``,
    ``tuple[str, ...]``), literals, optionals. ``bool`` is no number, and a number is
    finite and at most :data:`MAX_FIELD_NUMBER` in size."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if hint is Any:
        return True
    if origin is Literal:
        return any(value == arg and type(value) is type(arg) for arg in args)
    if origin in (typing.Union, types.UnionType):
        return any(fits(value, arg) for arg in args)
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool) \
            and abs(value) <= MAX_FIELD_NUMBER  # not nan or inf either
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool) \
            and abs(value) <= MAX_FIELD_NUMBER
    if hint in (str, bool):
        return isinstance(value, hint)
    if origin is list or hint is list:
        return isinstance(value, list) and (not args or all(fits(v, args[0]) for v in value))
    if origin is tuple or hint is tuple:
        item = args[0] if args else Any
        return isinstance(value, tuple) and all(fits(v, item) for v in value)
    if origin is dict or hint is dict:
        key, item = args if args else (Any, Any)
        return isinstance(value, dict) and all(
            fits(k, key) and fits(v, item) for k, v in value.items())
    if isinstance(hint, type):
        return isinstance(value, hint)
    return True


def _from_fields(cls: type[Any], data: dict[str, Any]) -> Any:
    """An instance of the dataclass ``cls`` from the fields of ``data`` that fit their
    annotation; a field that does not fit falls back to its default. None when a field
    without a default is missing or does not fit."""
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name not in data:
            continue
        value, hint = data[f.name], hints[f.name]
        if isinstance(value, list) and typing.get_origin(hint) is tuple:
            value = tuple(value)  # JSON has no tuples
        if isinstance(value, dict) and f.name == "subagent":
            value = _from_fields(SubagentStatus, value)
        if fits(value, hint):
            values[f.name] = value
    try:
        return cls(**values)
    except TypeError:  # a required field is missing or was dropped
        return None


def event_from_dict(data: dict[str, Any]) -> Event | None:
    """Rebuild an event from ``to_dict`` output (a replayed scratchpad line).

    Never raises: an unknown type, a field without a default that is missing or of the
    wrong type gives None; an optional field of the wrong type gets its default."""
    if not isinstance(data, dict):
        return None
    kind = data.get("type")
    cls = EVENT_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        return None
    event: Event | None = _from_fields(cls, data)
    return event
