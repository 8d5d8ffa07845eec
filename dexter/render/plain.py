"""Plain-line output for when stdout is not a terminal (pipes, logs, CI).

One readable line per meaningful event, no colours, no cursor movement, no spinner.
``stream_progress``, ``answer_delta`` and ``tool_progress`` are not shown: they only matter
to a live display. Tool rows are printed when each call ends, with the call they belong to.
A subagent's line names the agent (parallel agents end in any order) and its tool uses and
tokens, taken from its last progress message.
"""

from __future__ import annotations

from typing import IO

from dexter.events import (
    INTERRUPTED_TEXT,
    Done,
    Event,
    RunStart,
    SandboxAlert,
    Thinking,
    ToolApproval,
    ToolDenied,
    ToolEnd,
    ToolError,
    ToolLimit,
    ToolProgress,
    ToolStart,
)
from dexter.evidence.report import limit_line, verification_line
from dexter.render.format import (
    SUBAGENT_TOOL,
    SubagentProgress,
    approval_text,
    call_label,
    error_summary,
    format_duration,
    one_line,
    result_summary,
    source_tag,
    stats_line,
    status_label,
    subagent_counts,
    subagent_label,
    thinking_text,
    truncate,
)
from dexter.render.notices import notice_for, record_notice
from dexter.reports.sourcing import answer_with_sources
from dexter.secrets import scrub
from dexter.text import clean


class PlainRenderer:
    """Writes plain text lines to ``stream``."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._denied_ids: set[str] = set()
        self._agents: dict[str, SubagentProgress] = {}
        self._agent_labels: dict[str, str] = {}

    def _line(self, text: str = "") -> None:
        self._stream.write(clean(scrub(text)) + "\n")

    def handle(self, event: Event) -> None:
        """Print the line(s) for one event, if it has any."""
        notice = notice_for(event)
        if notice is not None:
            self._line(str(notice))
        else:
            self._handle_other(event)
        self._stream.flush()

    def _handle_other(self, event: Event) -> None:
        match event:
            case RunStart(query=query):
                self._denied_ids.clear()
                self._line(f"> Query: {one_line(query)}")
            case ToolStart() | ToolProgress() | ToolEnd() | ToolError() \
                    if event.tool == SUBAGENT_TOOL:
                self._subagent(event)
            case Thinking(message=message):
                if message.strip():
                    self._line(f"· {thinking_text(message)}")
            case ToolStart(tool=tool, args=args):
                self._line(f"→ {call_label(tool, args)}")
            case ToolEnd(tool=tool, result=result, duration_ms=ms, source_urls=urls,
                         source_id=sid):
                summary = result_summary(tool, result, urls)
                self._line(f"  ✓ {source_tag(sid)}{summary} ({format_duration(ms)})")
            case ToolError(error=error, duration_ms=ms):
                took = f" ({format_duration(ms)})" if ms > 0 else ""
                self._line(f"  ✗ {error_summary(error)}{took}")
            case ToolLimit(warning=warning):
                self._line(f"  ! {truncate(one_line(warning), 160)}")
            case SandboxAlert(findings=findings):
                for finding in findings:
                    self._line(f"  ! Sandbox: {one_line(finding)}")
            case ToolApproval(tool=tool, args=args, decision=decision, tool_call_id=call_id):
                if decision == "deny":
                    self._denied_ids.add(call_id)
                    self._line(f"  ✗ Denied {call_label(tool, args)}")
                else:
                    self._line(f"  ✓ Approved {approval_text(decision)}: {call_label(tool, args)}")
            case ToolDenied(tool=tool, args=args, reason=reason, tool_call_id=call_id):
                why = truncate(one_line(reason), 160)
                if call_id in self._denied_ids:
                    self._line(f"    {why}")
                else:
                    self._line(f"  ✗ Denied {call_label(tool, args)}: {why}")
            case Done():
                self._done(event)

    def _subagent(self, event: ToolStart | ToolProgress | ToolEnd | ToolError) -> None:
        """``→ Agent: <description>``, then one line naming it when it ends."""
        match event:
            case ToolStart(args=args, tool_call_id=call_id):
                kind = str(args.get("subagent_type") or "general-purpose")
                shown = "" if kind == "general-purpose" else f" ({kind})"
                self._agent_labels[call_id] = subagent_label(args)
                self._line(f"→ Agent: {self._agent_labels[call_id]}{shown}")
            case ToolProgress(subagent=status, tool_call_id=call_id):
                if status is not None:
                    self._agents[call_id] = status
            case ToolEnd(args=args, duration_ms=ms, tool_call_id=call_id):
                counts = subagent_counts(self._agents.pop(call_id, None))
                label = self._agent_labels.pop(call_id, "") or subagent_label(args)
                done = " · ".join(p for p in (label, counts) if p)
                self._line(f"  ✓ {done} ({format_duration(ms)})")
            case ToolError(args=args, error=error, duration_ms=ms, tool_call_id=call_id):
                self._agents.pop(call_id, None)
                label = self._agent_labels.pop(call_id, "") or subagent_label(args)
                took = f" ({format_duration(ms)})" if ms > 0 else ""
                self._line(f"  ✗ {label}: {error_summary(error)}{took}")

    def _done(self, done: Done) -> None:
        self._line()
        if done.status in ("ok", "max_iterations"):
            self._line(answer_with_sources(done) or "(no answer)")
            for line in (verification_line(done.verification), limit_line(done)):
                if line:
                    self._line()
                    self._line(line)
        elif _partial_answer(done):
            self._line(done.answer.strip())  # what the answer had said when it was cut short
            self._line()
            self._line(f"{status_label(done)}: {INTERRUPTED_TEXT}")
        else:
            self._line(f"{status_label(done)}: {done.answer.strip() or 'the run did not finish'}")
        self._line()
        self._line(stats_line(done))
        record = record_notice(done)
        if record is not None:
            self._line(str(record))

    def close(self) -> None:
        """Flush the stream (it is not closed: it usually is stdout)."""
        self._stream.flush()


def _partial_answer(done: Done) -> bool:
    """An interrupted run that had written part of its answer (not replay's note that a
    scratchpad has no end)."""
    return done.status == "interrupted" and done.error_kind != "unfinished" and \
        done.answer.strip() not in ("", INTERRUPTED_TEXT)
