"""The live terminal view (rich).

Finished items (the query, thinking lines, completed tool rows, context notices) are printed
above the live region, so the terminal's scrollback keeps them. The live region holds only
what is still in progress: the running tool rows and the working line with its spinner,
verb, elapsed time and streamed tokens. It redraws at a steady rate (``refresh_per_second``)
from the current state, never once per chunk, and is transient: when the run ends it
disappears and the answer and the closing stats line are printed in its place.

Threading: rich redraws from its own thread while events arrive on the caller's. State is
guarded by one lock, and the lock is never held while printing or starting/stopping the
``Live`` (rich takes its own lock there and then asks this view to render).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.live import Live
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text

from dexter.events import (
    INTERRUPTED_TEXT,
    AnswerDelta,
    Compaction,
    Done,
    Event,
    MemoryFlush,
    ProviderRetry,
    RunStart,
    SandboxAlert,
    StreamProgress,
    Thinking,
    ToolApproval,
    ToolDenied,
    ToolEnd,
    ToolError,
    ToolLimit,
    ToolProgress,
    ToolStart,
    Verification,
)
from dexter.evidence.report import limit_line, verification_line
from dexter.render.format import (
    SUBAGENT_TOOL,
    SubagentProgress,
    approval_text,
    args_summary,
    error_summary,
    format_duration,
    format_elapsed,
    format_tokens,
    one_line,
    progress_text,
    result_summary,
    source_tag,
    stats_line,
    status_label,
    subagent_counts,
    subagent_header,
    subagent_label,
    thinking_text,
    tool_title,
    truncate,
    truncate_words,
)
from dexter.render.notices import Notice, notice_for, record_notice
from dexter.render.tables import answer_markdown
from dexter.reports.sourcing import answer_with_sources

VERBS: tuple[str, ...] = (
    "Analyzing", "Auditing", "Benchmarking", "Calculating", "Charting", "Collating",
    "Comparing", "Corroborating", "Crunching", "Cross-checking", "Digging", "Distilling",
    "Evaluating", "Examining", "Forecasting", "Gathering", "Investigating", "Modeling",
    "Parsing", "Pondering", "Probing", "Reconciling", "Researching", "Reviewing",
    "Scrutinizing", "Sifting", "Surveying", "Synthesizing", "Tallying", "Triangulating",
    "Valuing", "Verifying", "Weighing",
)

PRIMARY = "#258bff"
SUCCESS = "#00cc00"
ERROR = "#ff3333"
WARNING = "#ffcc00"
MUTED = "#a6a6a6"
_TONES = {"info": PRIMARY, "muted": MUTED, "warning": WARNING, "error": ERROR}
_DETAIL = "  ⎿  "
_BLINK_S = 0.6
COMPACTING = "Compacting context"
SAVING_MEMORY = "Saving key facts to memory"

# Events that mean the agent is working: outside a run they bring up the working line.
_WORK_EVENTS = (StreamProgress, AnswerDelta, Thinking, ToolStart, ToolProgress, ProviderRetry)

RowState = Literal["active", "done", "error", "interrupted"]


@dataclass
class _Row:
    """One tool call on screen."""

    call_id: str
    tool: str
    args: dict[str, Any]
    grouped: bool
    state: RowState = "active"
    detail: str = ""
    progress: str = ""
    agent: SubagentProgress | None = None


def _hanging(prefix: Text, body: Text) -> Table:
    """``prefix`` then ``body``, wrapped lines of the body indented under its first line."""
    grid = Table.grid(padding=0)
    grid.add_column(no_wrap=True, width=prefix.cell_len)
    grid.add_column(ratio=1, overflow="fold")
    grid.add_row(prefix, body)
    return grid


def _detail_line(body: Text) -> Table:
    return _hanging(Text(_DETAIL, style=MUTED), body)


def _bullet_line(bullet_style: str, body: Text) -> Table:
    return _hanging(Text("⏺ ", style=bullet_style), body)


def _call_text(tool: str, args: dict[str, Any]) -> Text:
    text = Text(tool_title(tool), style="bold")
    summary = args_summary(args)
    if summary:
        text.append(f" ({summary})", style=MUTED)
    return text


def _row_renderables(row: _Row, blink_on: bool) -> list[RenderableType]:
    """The lines of one tool row in its current state."""
    body = {
        "done": Text(row.detail),
        "error": Text(row.detail, style=ERROR),
        "interrupted": Text("Interrupted", style=WARNING),
        "active": Text(row.progress, style=MUTED),
    }[row.state]
    if row.grouped:
        summary = args_summary(row.args)
        line = Text(f"({summary}) " if summary else "", style=MUTED)
        line.append_text(body if row.state != "active" else Text(row.progress or "…", style=MUTED))
        return [_detail_line(line)]
    bullet = {
        "done": PRIMARY, "error": ERROR, "interrupted": WARNING,
        "active": SUCCESS if blink_on else MUTED,
    }[row.state]
    lines: list[RenderableType] = [_bullet_line(bullet, _call_text(row.tool, row.args))]
    if row.state != "active" or row.progress:
        lines.append(_detail_line(body))
    return lines


def _blocks(rows: list[_Row]) -> Iterator[list[_Row]]:
    """Rows as they are drawn: consecutive subagent calls form one group, others stand alone."""
    block: list[_Row] = []
    for row in rows:
        if block and (row.tool != SUBAGENT_TOOL or block[0].tool != SUBAGENT_TOOL):
            yield block
            block = []
        block.append(row)
    if block:
        yield block


def _agent_kind(row: _Row) -> str:
    return str(row.args.get("subagent_type") or "general-purpose")


def _agent_lines(row: _Row, last: bool, mixed: bool) -> list[RenderableType]:
    """One agent of a group: its label and counts, then what it is doing or how it ended."""
    label = Text(subagent_label(row.args))
    if mixed and _agent_kind(row) != "general-purpose":
        label.append(f" ({_agent_kind(row)})", style=MUTED)
    counts = subagent_counts(row.agent)
    if counts:
        label.append(f" · {counts}", style=MUTED)
    activity = {
        "done": Text(row.detail),
        "error": Text(row.detail, style=ERROR),
        "interrupted": Text("Interrupted", style=WARNING),
        "active": Text(row.agent.activity if row.agent else "Starting…", style=MUTED),
    }[row.state]
    branch, stem = ("   └─ ", "      ") if last else ("   ├─ ", "   │  ")
    return [_hanging(Text(branch, style=MUTED), label),
            _hanging(Text(stem + "⎿  ", style=MUTED), activity)]


def _group_renderables(rows: list[_Row], blink_on: bool) -> list[RenderableType]:
    """A group of parallel subagents: a header, then two lines per agent."""
    running = any(r.state == "active" for r in rows)
    failed = sum(r.state == "error" for r in rows)
    kinds = {_agent_kind(r) for r in rows}
    kind = next(iter(kinds)) if len(kinds) == 1 and "general-purpose" not in kinds else ""
    if running:
        bullet = SUCCESS if blink_on else MUTED
    elif any(r.state == "interrupted" for r in rows):
        bullet = WARNING
    else:
        bullet = ERROR if failed else PRIMARY
    header = Text(subagent_header(len(rows), running=running, failed=failed, kind=kind),
                  style="bold")
    lines: list[RenderableType] = [_bullet_line(bullet, header)]
    for index, row in enumerate(rows):
        lines.extend(_agent_lines(row, index == len(rows) - 1, mixed=len(kinds) > 1))
    return lines


def _block_renderables(block: list[_Row], blink_on: bool) -> list[RenderableType]:
    if block[0].tool == SUBAGENT_TOOL:
        return _group_renderables(block, blink_on)
    return _row_renderables(block[0], blink_on)


def _agent_failure(error: str) -> str:
    text = one_line(error)
    text = text[len("Error:"):].lstrip() if text.lower().startswith("error:") else text
    return "Failed: " + truncate_words(text or "unknown error", 60)


class _LiveView:
    """The live region's renderable: asks the renderer for a fresh picture at every redraw."""

    def __init__(self, render: Callable[[], list[RenderableType]]) -> None:
        self._render = render

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Group(*self._render())


class LiveRenderer:
    """The rich live view for terminals. Call ``close()`` when done (also on errors)."""

    def __init__(
        self,
        console: Console,
        *,
        refresh_per_second: float = 12.0,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
        live: bool = True,
        stats: Callable[[Done], str] = stats_line,
    ) -> None:
        """``live=False``: never start a rich ``Live``; the host draws ``live_region()`` itself
        (the REPL shows it inside prompt-toolkit's layout). ``stats`` makes the closing line."""
        self._console = console
        self._refresh = refresh_per_second
        self._use_live = live
        self._stats = stats
        self._clock = clock
        self._rng = rng or random.Random()
        self._lock = threading.RLock()
        self._live: Live | None = None
        self._spinner = Spinner("dots")
        self._reset_run()

    def _reset_run(self) -> None:
        self._rows: list[_Row] = []
        self._last_tool: str | None = None
        self._denied_ids: set[str] = set()
        self._started_at = self._clock()
        self._streamed_chars = 0
        self._requesting = True
        self._verb = self._rng.choice(VERBS)
        self._activity = ""
        self._running = False
        self._answer = ""
        """The answer text streamed so far in this model call (shown under the rows)."""
        self._answer_view: tuple[int, RenderableType] | None = None

    @property
    def is_live(self) -> bool:
        """Whether the live region is currently on screen."""
        return self._live is not None

    # -- the live region --------------------------------------------------------------

    def _working_line(self, now: float) -> Text:
        frames = self._spinner.frames
        interval_s = self._spinner.interval / 1000
        frame = frames[int((now - self._started_at) / interval_s) % len(frames)]
        line = Text(f"{frame} ", style=PRIMARY)
        line.append(f"{self._activity or self._verb}...", style=PRIMARY)
        suffix = format_elapsed(now - self._started_at)
        tokens = self._streamed_chars // 4
        if tokens > 0:
            arrow = "↑" if self._requesting else "↓"
            suffix += f" · {arrow} {format_tokens(tokens)} tokens"
        line.append(f" ({suffix})", style=MUTED)
        return line

    def _live_renderables(self) -> list[RenderableType]:
        now = self._clock()
        blink_on = int((now - self._started_at) / _BLINK_S) % 2 == 0
        with self._lock:
            lines: list[RenderableType] = []
            for block in _blocks(self._rows):
                lines.extend(_block_renderables(block, blink_on))
            if self._answer.strip():
                lines.append(self._streamed_answer())
            if self._running:
                lines.append(self._working_line(now))
            return lines

    def _streamed_answer(self) -> RenderableType:
        """The answer so far as markdown: its last lines that fit above the working line.
        Parsed once per change of the text, not at every redraw."""
        if self._answer_view is None or self._answer_view[0] != len(self._answer):
            room = max(self._console.size.height - 6, 4)
            tail = "\n".join(self._answer.strip().splitlines()[-room:])
            self._answer_view = (len(self._answer), answer_markdown(tail))
        return self._answer_view[1]

    def live_region(self) -> Group:
        """The live region as it would be drawn now (running tool rows and working line)."""
        return Group(*self._live_renderables())

    @property
    def running(self) -> bool:
        """Whether a run is in progress (its working line is part of the live region)."""
        return self._running

    def _start_live(self) -> None:
        if self._live is not None or not self._use_live:
            return
        live = Live(
            _LiveView(self._live_renderables),
            console=self._console,
            refresh_per_second=self._refresh,
            auto_refresh=True,
            transient=True,
        )
        self._live = live
        live.start()

    def _stop_live(self) -> None:
        live, self._live = self._live, None
        if live is not None:
            live.stop()

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Take the live region off screen for a prompt; it comes back afterwards."""
        was_live = self._live is not None
        self._stop_live()
        try:
            yield
        finally:
            if was_live and self._running:
                with self._lock:
                    self._verb = self._rng.choice(VERBS)
                self._start_live()

    # -- printing above the live region ---------------------------------------------------

    def _print(self, *renderables: RenderableType) -> None:
        for renderable in renderables:
            self._console.print(renderable)

    def end_group(self) -> None:
        """Something else was printed (e.g. by the host): the next tool call gets its own
        header instead of a detail line under a header no longer right above it."""
        with self._lock:
            self._last_tool = None

    def _print_apart(self, *renderables: RenderableType) -> None:
        """Print something that is not a tool row; it ends any tool grouping."""
        self.end_group()
        self._print(*renderables)

    def _print_notice(self, notice: Notice) -> None:
        style = _TONES[notice.tone]
        self._print_apart(_hanging(Text(f"{notice.symbol} ", style=style),
                                   Text(notice.text, style=style if notice.tone != "info" else "")))

    def _flush_rows(self, *, everything: bool = False) -> None:
        """Print finished rows from the top, in call order; with ``everything``, all rows.

        A subagent group is printed only once every agent in it has finished.
        """
        with self._lock:
            ready: list[list[_Row]] = []
            for block in list(_blocks(self._rows)):
                if not everything and any(row.state == "active" for row in block):
                    break
                del self._rows[:len(block)]
                for row in block:
                    if row.state == "active":
                        row.state = "interrupted"
                ready.append(block)
        for block in ready:
            self._print(*_block_renderables(block, blink_on=True))

    # -- events ---------------------------------------------------------------------------

    def handle(self, event: Event) -> None:
        """Update the view for one event."""
        if isinstance(event, RunStart):
            self._run_start(event)
            return
        if isinstance(event, Done):
            self._done(event)
            return
        if not self._running and isinstance(event, _WORK_EVENTS):
            with self._lock:
                self._reset_run()
                self._running = True
            self._start_live()
        notice = notice_for(event)
        if notice is not None:
            self._print_notice(notice)
        self._track_activity(event)
        self._handle_tool_or_text(event)

    def _run_start(self, event: RunStart) -> None:
        self._flush_rows(everything=True)
        with self._lock:
            self._reset_run()
            self._running = True
        query = Text("❯ ", style="bold")
        query.append(one_line(event.query), style="bold")
        self._print(Text(), query)
        self._start_live()

    def _track_activity(self, event: Event) -> None:
        with self._lock:
            match event:
                case StreamProgress(char_delta=delta, mode=mode):
                    self._streamed_chars += max(0, delta)
                    self._requesting = mode == "requesting"
                # the flush and compaction may overlap (one side request does both):
                # an end clears only its own label
                case Compaction(phase=phase):
                    self._activity = _activity_after(self._activity, COMPACTING, phase)
                case MemoryFlush(phase=phase):
                    self._activity = _activity_after(self._activity, SAVING_MEMORY, phase)

    def _handle_tool_or_text(self, event: Event) -> None:
        match event:
            case AnswerDelta(text=text):
                with self._lock:
                    self._answer += text
                return
            case ToolStart() | Thinking() | Verification():
                # text streamed before tool calls was the model's plan (shown as thinking),
                # and a checked answer is sent back: neither is the answer
                with self._lock:
                    self._answer = ""
        match event:
            case Thinking(message=message):
                if message.strip():
                    self._print_apart(Text(thinking_text(message), style=MUTED))
            case ToolStart(tool=tool, args=args, tool_call_id=call_id):
                with self._lock:
                    grouped = self._last_tool == tool
                    self._last_tool = tool
                    self._rows.append(_Row(call_id, tool, dict(args), grouped))
            case ToolProgress(message=message, tool_call_id=call_id, tool=tool, subagent=status):
                with self._lock:
                    row = self._find_row(call_id, tool)
                    if row is not None:
                        row.progress = progress_text(message, status)
                        row.agent = status or row.agent
            case ToolEnd(tool=tool, args=args, result=result, duration_ms=ms, tool_call_id=cid,
                         source_urls=urls, source_id=sid):
                shown = "Done" if tool == SUBAGENT_TOOL else \
                    source_tag(sid) + result_summary(tool, result, urls)
                self._finish_row(cid, tool, args, "done", f"{shown} in {format_duration(ms)}")
            case ToolError(tool=tool, args=args, error=error, tool_call_id=call_id):
                detail = _agent_failure(error) if tool == SUBAGENT_TOOL else error_summary(error)
                self._finish_row(call_id, tool, args, "error", detail)
            case ToolLimit(warning=warning):
                self._print_apart(_hanging(Text("  ! ", style=WARNING),
                                           Text(truncate(one_line(warning), 100), style=WARNING)))
            case SandboxAlert(findings=findings):
                self._print_apart(*(_hanging(Text("  ! ", style=ERROR),
                                             Text("Sandbox: " + one_line(f), style=ERROR))
                                    for f in findings))
            case ToolApproval():
                self._approval(event)
            case ToolDenied():
                self._denied(event)

    def _find_row(self, call_id: str, tool: str) -> _Row | None:
        for row in self._rows:
            if row.call_id == call_id and row.state == "active":
                return row
        return next((r for r in self._rows if r.tool == tool and r.state == "active"), None)

    def _finish_row(
        self, call_id: str, tool: str, args: dict[str, Any], state: RowState, detail: str
    ) -> None:
        with self._lock:
            row = self._find_row(call_id, tool)
            if row is None:
                row = _Row(call_id, tool, dict(args), grouped=False)
                self._rows.append(row)
                self._last_tool = tool
            row.state, row.detail = state, detail
            if not any(r.state == "active" for r in self._rows):
                self._requesting = True
        self._flush_rows()

    def _approval(self, event: ToolApproval) -> None:
        if event.decision == "deny":
            with self._lock:
                self._denied_ids.add(event.tool_call_id)
            mark, line = Text("✗ ", style=ERROR), Text("Denied ", style=ERROR)
        else:
            mark = Text("✓ ", style=SUCCESS)
            line = Text(f"Approved {approval_text(event.decision)}: ", style=SUCCESS)
        line.append_text(_call_text(event.tool, event.args))
        self._print_apart(_hanging(mark, line))

    def _denied(self, event: ToolDenied) -> None:
        reason = Text(truncate(one_line(event.reason), 200) or "Denied", style=WARNING)
        with self._lock:
            shown = event.tool_call_id in self._denied_ids
        if shown:
            self._print_apart(_detail_line(reason))
        else:
            self._print_apart(_bullet_line(ERROR, _call_text(event.tool, event.args)),
                              _detail_line(Text("Denied: ", style=WARNING) + reason))

    def _done(self, done: Done) -> None:
        self._flush_rows(everything=True)
        with self._lock:
            self._running = False
            self._last_tool = None
        self._stop_live()
        self._print(Text())
        if done.status in ("ok", "max_iterations"):
            answer = answer_with_sources(done)
            self._print(answer_markdown(answer) if answer else Text("(no answer)", style=MUTED))
            for line in (verification_line(done.verification), limit_line(done)):
                if line:
                    self._print(Text(), Text(line, style=WARNING if "⚠" in line else MUTED))
        elif _partial_answer(done):
            # a replayed run cut short while answering: the text it had written so far
            self._print(answer_markdown(done.answer.strip()), Text(),
                        Text(f"{status_label(done)}: {INTERRUPTED_TEXT}", style=WARNING))
        else:
            style = WARNING if done.status == "interrupted" else ERROR
            message = done.answer.strip() or "the run did not finish"
            self._print(Text(f"{status_label(done)}: {message}", style=style))
        self._print(Text(), Text(self._stats(done), style=MUTED))
        record = record_notice(done)
        if record is not None:
            self._print_notice(record)

    def close(self) -> None:
        """Stop the live region, printing any rows still running as interrupted and the
        answer streamed so far (an interrupted answer stays on screen)."""
        try:
            self._flush_rows(everything=True)
        finally:
            with self._lock:
                self._running = False
                partial, self._answer = self._answer.strip(), ""
            self._stop_live()
            if partial:
                self._print(Text(), answer_markdown(partial))


def _activity_after(current: str, label: str, phase: str) -> str:
    """The working line's activity after a context step's ``phase`` event."""
    if phase == "start":
        return label
    return "" if current == label else current


def _partial_answer(done: Done) -> bool:
    """An interrupted run that had written part of its answer (not replay's note that a
    scratchpad has no end)."""
    return done.status == "interrupted" and done.error_kind != "unfinished" and \
        done.answer.strip() not in ("", INTERRUPTED_TEXT)
