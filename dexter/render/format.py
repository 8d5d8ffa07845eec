"""Small pure text helpers shared by every view: titles, summaries, durations, token counts.

Nothing here knows about rich or streams; each function turns event data into a short string.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from dexter.context.results import is_persisted_preview, persisted_path
from dexter.events import Done, SubagentStatus

ELLIPSIS = "…"
SUBAGENT_TOOL = "spawn_subagent"
PERSISTED_PREFIX = "[Result persisted to"

_TITLE_OVERRIDES = {"ask_user_question": "Ask"}
_APPROVAL_LABELS = {
    "allow-once": "once",
    "allow-session": "for this session",
    "allow-always": "always",
}
_KB_RE = re.compile(r"([\d][\d,]*(?:\.\d+)?)\s*KB", re.IGNORECASE)
_WS_RE = re.compile(r"\s+")


def truncate(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, ending with an ellipsis when cut."""
    if len(text) <= limit:
        return text
    return text[: max(0, limit - 1)].rstrip() + ELLIPSIS


def truncate_words(text: str, limit: int) -> str:
    """``text`` cut at a word boundary to at most ``limit`` characters (ellipsis included).

    A single word longer than the limit is cut mid-word rather than dropped.
    """
    if len(text) <= limit:
        return text
    head = text[: max(0, limit - 1)]
    space = head.rfind(" ")
    if space > 0:
        head = head[:space]
    return head.rstrip() + ELLIPSIS


def one_line(text: str) -> str:
    """All whitespace runs (newlines included) collapsed to single spaces, ends trimmed."""
    return _WS_RE.sub(" ", text).strip()


def plural(count: int, word: str, many: str | None = None) -> str:
    """``"1 item"`` / ``"3 items"``."""
    return f"{count} {word if count == 1 else (many or word + 's')}"


def tool_title(name: str) -> str:
    """A tool's display title: ``get_financials`` -> ``Financials``, ``read_file`` -> ``Read File``."""
    if name in _TITLE_OVERRIDES:
        return _TITLE_OVERRIDES[name]
    base = name.removeprefix("get_") or name
    return " ".join(word.capitalize() for word in base.split("_") if word) or name


def _arg_value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = text.replace("\r", "\\r").replace("\n", "\\n")
    return truncate(text, 60)


def args_summary(args: dict[str, Any]) -> str:
    """A short, readable form of a call's arguments.

    With a ``query`` argument: the query, quoted and cut at a word boundary to 60 characters.
    Otherwise ``k=v, ...`` with each value cut to 60 characters and newlines escaped.
    """
    query = args.get("query")
    if isinstance(query, str) and query.strip():
        return f'"{truncate_words(one_line(query), 60)}"'
    return ", ".join(f"{key}={_arg_value(value)}" for key, value in args.items())


def call_label(tool: str, args: dict[str, Any]) -> str:
    """``Financials("NVDA revenue")``: the title with its argument summary."""
    return f"{tool_title(tool)}({args_summary(args)})"


def _format_number(value: int | float) -> str:
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if not math.isfinite(value):
        return str(value)
    if value != 0 and (abs(value) >= 1e15 or abs(value) < 1e-6):
        return f"{value:.6g}"
    text = f"{value:,.6f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _json_summary(tool: str, payload: Any, suffix: str = "") -> str | None:
    if isinstance(payload, list):
        return f"Received {plural(len(payload), 'item')}"
    if not isinstance(payload, dict):
        return None
    if "data" not in payload:
        keys = [k for k in payload if not str(k).startswith("_")]
        return f"Received {plural(len(keys), 'field')}"
    data = payload["data"]
    if tool == "calculator" and isinstance(data, dict) and "result" in data:
        result, formatted = data["result"], data.get("formatted")
        if isinstance(formatted, str) and formatted:
            shown = formatted
        else:
            shown = _format_number(result) if isinstance(result, int | float) else str(result)
        return "= " + truncate(one_line(shown), 60)
    if isinstance(data, dict) and tool.startswith("memory_"):
        memory = _memory_summary(tool, data)
        if memory is not None:
            return memory
    if isinstance(data, list):
        return f"Received {plural(len(data), 'item')}{suffix}"
    if isinstance(data, dict):
        keys = [k for k in data if not str(k).startswith("_")]
        return f"Received {plural(len(keys), 'field')}{suffix}"
    if isinstance(data, str) and data.strip():
        return truncate_words(one_line(data.strip().splitlines()[0]), 60) + suffix
    return f"Received data{suffix}"


def _memory_summary(tool: str, data: dict[str, Any]) -> str | None:
    """What a memory tool did: matches found, lines read, what was written."""
    if tool == "memory_search" and isinstance(data.get("results"), list):
        if data.get("disabled"):
            return truncate(one_line(f"Memory unavailable: {data.get('error') or 'unknown'}"), 80)
        count = len(data["results"])
        found = f"Found {plural(count, 'memory', 'memories')}" if count else "No matching memories"
        return found + (" (keyword search)" if data.get("mode") == "keyword" else "")
    if tool == "memory_get" and isinstance(data.get("path"), str):
        if data.get("note"):
            return truncate(one_line(str(data["note"])), 80).rstrip(".")
        start, end = data.get("from"), data.get("to")
        lines = f"lines {start}-{end}" if isinstance(start, int) and isinstance(end, int) \
            and end >= start else "no lines"
        return truncate(f"Read {lines} of {data['path']}", 80)
    if tool == "memory_update" and isinstance(data.get("message"), str):
        return truncate(one_line(data["message"]), 80).rstrip(".")
    return None


def is_persisted(result: str) -> bool:
    """Whether ``result`` is the preview left in place of a result too large for the context."""
    return result.startswith(PERSISTED_PREFIX) or is_persisted_preview(result)


def persisted_summary(result: str) -> str:
    """``Saved 120 KB to file`` for a persisted result; says so when the save failed."""
    first = result.splitlines()[0] if result else ""
    match = _KB_RE.search(first)
    if is_persisted_preview(result) and persisted_path(result) is None:
        size = f" ({match.group(1)} KB)" if match else ""
        return f"Too large{size}: preview only, not saved"
    return f"Saved {match.group(1)} KB to file" if match else "Saved to file"


def error_summary(error: str) -> str:
    """``Error: <message>`` on one line, cut to 80 characters."""
    text = one_line(error) or "unknown error"
    if not text.lower().startswith("error"):
        text = f"Error: {text}"
    return truncate(text, 80)


def source_tag(source_id: str) -> str:
    """``[S3] `` before a tool row's summary ('' for a result that is not a source)."""
    return f"[{source_id}] " if source_id else ""


def result_summary(tool: str, result: str, source_urls: tuple[str, ...] = ()) -> str:
    """A one-line summary of a successful tool result, as shown under the tool's row
    (``source_urls``: the URLs its data came from, counted as sources)."""
    stripped = result.strip()
    if is_persisted(stripped):
        return persisted_summary(stripped)
    suffix = f" · {plural(len(source_urls), 'source')}" if source_urls else ""
    if stripped[:1] in ("{", "["):
        try:
            payload = json.loads(stripped)
        except (ValueError, RecursionError):  # RecursionError: nested thousands deep
            payload = None
        summary = _json_summary(tool, payload, suffix) if payload is not None else None
        if summary is not None:
            return summary
    if not stripped:
        return "No output"
    first = next(line for line in stripped.splitlines() if line.strip())
    # The row appends " in 1.2s", so a sentence's closing period would dangle before it.
    return truncate_words(one_line(first), 60).rstrip(".")


SubagentProgress = SubagentStatus  # the status a worker reports, as renderers name it


def subagent_label(args: dict[str, Any]) -> str:
    """A subagent call's label: its ``description``, one line, at most 60 characters."""
    return truncate(one_line(str(args.get("description") or "")), 60) or "Subagent"


def subagent_counts(progress: SubagentProgress | None) -> str:
    """``3 tool uses · 3.2k tokens`` (parts that are still zero left out)."""
    if progress is None:
        return ""
    parts = []
    if progress.tool_use_count:
        parts.append(plural(progress.tool_use_count, "tool use"))
    if progress.tokens:
        parts.append(f"{format_tokens(progress.tokens)} tokens")
    return " · ".join(parts)


def subagent_header(count: int, *, running: bool, failed: int = 0, kind: str = "") -> str:
    """A subagent group's header: ``Running 2 research agents…`` / ``2 agents finished``."""
    noun = f"{kind} agent" if kind else "agent"
    if running:
        return f"Running {plural(count, noun)}{ELLIPSIS}"
    text = f"{plural(count, noun)} finished"
    return f"{text} · {failed} failed" if failed else text


def progress_text(message: str, status: SubagentStatus | None = None) -> str:
    """The readable text of a ``tool_progress`` event (a worker's status when it has one)."""
    if status is None:
        return truncate(one_line(message), 100)
    counts = subagent_counts(status)
    return truncate(" · ".join(p for p in (one_line(status.activity), counts) if p), 100)


def thinking_text(message: str, limit: int = 200) -> str:
    """A thinking message trimmed to one line of at most ``limit`` characters."""
    return truncate_words(one_line(message), limit)


def approval_text(decision: str) -> str:
    """``once`` / ``for this session`` / ``always`` for an allow decision, else ``denied``."""
    return _APPROVAL_LABELS.get(decision, "denied")


def format_duration(ms: int | float) -> str:
    """A tool duration: ``850ms``, ``4.2s``, ``1m 05s``."""
    ms = max(0.0, float(ms))
    if ms < 1000:
        return f"{round(ms)}ms" if round(ms) < 1000 else "1.0s"
    seconds = ms / 1000
    if round(seconds, 1) < 60:
        return f"{seconds:.1f}s"
    total = round(seconds)
    return f"{total // 60}m {total % 60:02d}s"


def format_elapsed(seconds: float) -> str:
    """A run's elapsed time: ``22s``, ``4m 6s``, ``1h 2m``."""
    total = max(0, int(seconds))
    if total < 60:
        return f"{total}s"
    if total < 3600:
        return f"{total // 60}m {total % 60}s"
    return f"{total // 3600}h {total % 3600 // 60}m"


def _scaled(n: int, unit: int, suffix: str) -> str:
    """``n / unit`` rounded half up: one decimal below 10 (``.0`` dropped), whole above."""
    tenths = (n * 10 + unit // 2) // unit
    if tenths < 100:
        whole, tenth = divmod(tenths, 10)
        return f"{whole}{suffix}" if tenth == 0 else f"{whole}.{tenth}{suffix}"
    return f"{(n + unit // 2) // unit}{suffix}"


def format_tokens(count: int | float) -> str:
    """A compact, lower-case token count: ``880``, ``3.2k``, ``14k``, ``1.5m``."""
    n = max(0, round(count))
    if n < 1000:
        return str(n)
    if n < 999_500:
        return _scaled(n, 1000, "k")
    return _scaled(n, 1_000_000, "m")


def tokens_per_second(output_tokens: int, duration_ms: int) -> float:
    """Output tokens per second over ``duration_ms``; 0 when there is no time to divide by."""
    if duration_ms <= 0 or output_tokens <= 0:
        return 0.0
    return output_tokens / (duration_ms / 1000)


def format_rate(tps: float) -> str:
    """``45 tok/s`` (one decimal below 10)."""
    return f"{tps:.1f} tok/s" if tps < 10 else f"{round(tps)} tok/s"


def run_time(ms: int) -> str:
    """A whole run's duration: ``850ms`` under a second, else ``12s`` / ``4m 6s``."""
    return format_duration(ms) if ms < 1000 else format_elapsed(ms / 1000)


def stats_line(done: Done) -> str:
    """The closing line of a run.

    ``✻ 12s · 3 tool calls · 2 iterations · 12k in / 1.1k out · 45 tok/s · context 20k/95k``;
    parts with nothing to say are left out.
    """
    parts = [run_time(done.total_time_ms)]
    if done.tool_calls:
        parts.append(plural(len(done.tool_calls), "tool call"))
    if done.iterations:
        parts.append(plural(done.iterations, "iteration"))
    usage = done.token_usage
    tokens_in, tokens_out = usage.get("input_tokens", 0), usage.get("output_tokens", 0)
    if tokens_in or tokens_out:
        parts.append(f"{format_tokens(tokens_in)} in / {format_tokens(tokens_out)} out")
    tps = done.tokens_per_second or tokens_per_second(tokens_out, done.total_time_ms)
    if tps > 0:
        parts.append(format_rate(tps))
    if done.context_threshold > 0:
        parts.append(
            f"context {format_tokens(done.context_tokens)}/{format_tokens(done.context_threshold)}"
        )
    return "✻ " + " · ".join(parts)


def status_label(done: Done) -> str:
    """The prefix for a run that ended without an answer: ``Error``, ``Interrupted``, or
    ``Stopped`` (a spending limit)."""
    return {"interrupted": "Interrupted", "budget": "Stopped"}.get(done.status, "Error")


def reduction_percent(before: int, after: int) -> int:
    """How much smaller ``after`` is than ``before``, in whole percent (0 when unknown)."""
    if before <= 0:
        return 0
    return max(0, min(100, round((before - after) * 100 / before)))
