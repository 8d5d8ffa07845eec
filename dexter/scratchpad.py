"""The scratchpad: an append-only JSONL log of one query's run (docs/architecture.md,
"Scratchpad and soft limits").

The context window is RAM, the scratchpad is disk: every tool result is written here in
full before anything is trimmed from the messages sent to the model, so compaction and
``dexter replay`` can always get the real data back.

- One file per query, named ``YYYY-MM-DD-HHMMSS_<md5(query)[:12]>.jsonl``. The time in the
  name and in every ``timestamp`` is **local time** (timestamps carry the UTC offset).
- Each write appends one whole JSON line in a single ``os.write``, so a killed process
  leaves every earlier line intact. The file is never rewritten. A write that fails part
  way (disk full, file-size limit) is cut back to the last whole line. A failed write
  (that, a read-only disk, the folder removed) does not raise: the first failure is kept
  in ``write_error``, and ``take_write_error`` hands it to the loop once, which reports
  it (a ``scratchpad_error`` event, and ``done.record_complete`` false).
- Values of secret environment variables (``*_API_KEY``, ``*_TOKEN``, ``*_SECRET``) are
  replaced by ``***`` before anything is written or kept for the model.
- The in-memory side holds what the context defenses need: the results themselves, the
  cleared set, the compaction summary and its boundary, and the soft tool limits.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from dexter import __version__
from dexter.events import Event
from dexter.secrets import scrub, scrub_value, secret_values
from dexter.text import clean, parse_json_line

# Argument names whose string value is "the query" of a call, in order of preference. Only
# prose is compared by word overlap: paths, URLs and commands are identifiers ("f1.txt" and
# "f2.txt", or two filings on one host, share most of their words), so they only count as
# repeats when the arguments are exactly the same.
QUERY_ARG_NAMES = ("query", "search", "question", "q", "text", "input")

COMPACTION_MARKER = "---\n\nNew data retrieved after compaction:"

_WORD_SPLIT = re.compile(r"[^\w\s]", re.UNICODE)


# ---------------------------------------------------------------------------------------
# Naming and time
# ---------------------------------------------------------------------------------------

def local_now() -> datetime:
    """The current local time, timezone-aware."""
    return datetime.now().astimezone()


def timestamp(moment: datetime | None = None) -> str:
    """ISO 8601 with milliseconds and UTC offset; a naive ``moment`` is taken as local time."""
    return (moment or local_now()).astimezone().isoformat(timespec="milliseconds")


def scratchpad_stem(query: str, moment: datetime) -> str:
    """``YYYY-MM-DD-HHMMSS_<first 12 hex of md5(query)>`` (local time)."""
    digest = hashlib.md5(clean(query).encode("utf-8"), usedforsecurity=False).hexdigest()[:12]
    return f"{moment.astimezone().strftime('%Y-%m-%d-%H%M%S')}_{digest}"


def _create_unique(directory: Path, stem: str) -> Path:
    """Create and return a new empty file ``stem.jsonl``, else ``stem-2.jsonl``, ``-3``...

    Raises ``OSError`` when the folder cannot be made or written."""
    directory.mkdir(parents=True, exist_ok=True)
    suffix = 1
    while True:
        name = f"{stem}.jsonl" if suffix == 1 else f"{stem}-{suffix}.jsonl"
        path = directory / name
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            suffix += 1
            continue
        os.close(fd)
        return path


def os_error_text(exc: OSError) -> str:
    """``No space left on device (ENOSPC)``: the OS's words and the error's name."""
    name = errno.errorcode.get(exc.errno, "") if exc.errno is not None else ""
    words = exc.strerror or str(exc) or type(exc).__name__
    return f"{words} ({name})" if name else words


def append_whole(path: Path, data: bytes) -> OSError | None:
    """Append ``data`` (whole lines) to the existing file ``path``; the error, or None.

    The bytes go out in one ``os.write`` when the system takes them (a short write is
    continued). When a write fails part way (a full disk, a file-size limit) the file is
    cut back to its length before, so it never ends in half a line. The file is not
    created: a vanished folder is an error, not a new file somewhere else.
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    except OSError as exc:
        return exc
    try:
        start = os.fstat(fd).st_size
        view = memoryview(data)
        written = 0
        try:
            while written < len(data):
                count = os.write(fd, view[written:])
                if count <= 0:
                    raise OSError(errno.EIO, "The system wrote nothing")
                written += count
        except OSError as exc:
            # Some file systems fail a write that stored part of it: check the length.
            with contextlib.suppress(OSError):
                if written or os.fstat(fd).st_size != start:
                    os.ftruncate(fd, start)  # else the half line stays; readers skip it
            return exc
        return None
    finally:
        os.close(fd)


def folder_problem(directory: Path) -> str | None:
    """Why no scratchpad could be created in ``directory``, or None when it can.

    Writes nothing (a full disk is a problem of the run, reported then, not of the
    configuration): the folder, or its nearest existing parent when it does not exist yet,
    must be a folder that this process may write on a writable file system.
    """
    probe = Path(directory)
    while not probe.exists() and not probe.is_symlink() and probe.parent != probe:
        probe = probe.parent
    if not probe.is_dir():
        return f"{probe} is not a folder"
    if not os.access(probe, os.W_OK | os.X_OK):
        try:
            read_only = bool(os.statvfs(probe).f_flag & os.ST_RDONLY)
        except OSError:
            read_only = False
        return (f"{probe} is on a read-only file system" if read_only
                else f"{probe} is not writable by this user")
    return None


# ---------------------------------------------------------------------------------------
# Soft tool limits
# ---------------------------------------------------------------------------------------

def query_words(text: str) -> frozenset[str]:
    """Lower-cased words of ``text`` without punctuation, dropping words of 2 characters or fewer."""
    cleaned = _WORD_SPLIT.sub(" ", text.lower())
    return frozenset(word for word in cleaned.split() if len(word) > 2)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard similarity of two word sets; 0.0 when both are empty."""
    union = a | b
    return len(a & b) / len(union) if union else 0.0


def call_query(args: dict[str, Any]) -> str | None:
    """The first string argument among ``QUERY_ARG_NAMES``, or None."""
    for name in QUERY_ARG_NAMES:
        value = args.get(name)
        if isinstance(value, str) and value.strip():
            return value
    return None


def _canonical_args(args: dict[str, Any]) -> str:
    return json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)


@dataclass
class _ToolUsage:
    calls: int = 0
    queries: list[str] = field(default_factory=list)
    arg_sets: set[str] = field(default_factory=set)


# ---------------------------------------------------------------------------------------
# Records and the reader
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ToolResultRecord:
    """One tool result as kept in memory (``result`` is the full text, secrets scrubbed)."""

    index: int
    tool: str
    args: dict[str, Any]
    result: str
    duration_ms: int
    is_error: bool
    tool_call_id: str
    source_id: str = ""

    def header(self) -> str:
        """``### [S3] tool(k="v", n=3)``: the source id when it has one, `` [error]`` for a
        failed call."""
        params = ", ".join(
            f"{key}={json.dumps(value, ensure_ascii=False, default=str)}"
            for key, value in self.args.items()
        )
        sid = f"[{self.source_id}] " if self.source_id else ""
        return f"### {sid}{self.tool}({params})" + (" [error]" if self.is_error else "")

    def block(self, *, cleared: bool = False) -> str:
        """The header and the result text (or the cleared placeholder, numbered from 1)."""
        body = f"[Tool result #{self.index + 1} cleared from context]" if cleared else self.result
        return f"{self.header()}\n{body}"


@dataclass(frozen=True, slots=True)
class ScratchpadLog:
    """What ``Scratchpad.read`` found: the valid entries in order and how many lines were skipped."""

    entries: list[dict[str, Any]]
    skipped: int
    path: Path

    @property
    def init(self) -> dict[str, Any] | None:
        """The ``init`` entry (None when the init line is missing or corrupt)."""
        for entry in self.entries:
            if entry["type"] == "init":
                return entry
        return None

    @property
    def query(self) -> str:
        """The query of the ``init`` entry ('' when the init line is missing or corrupt)."""
        init = self.init
        return str(init.get("query", "")) if init is not None else ""

    @property
    def rerun_of(self) -> str:
        """The scratchpad this run was a rerun of ('' for an ordinary run)."""
        init = self.init
        value = init.get("rerun_of") if init is not None else None
        return value if isinstance(value, str) else ""

    def of_type(self, entry_type: str) -> list[dict[str, Any]]:
        """The entries of one type, in file order."""
        return [entry for entry in self.entries if entry["type"] == entry_type]


def _parse_line(line: str) -> dict[str, Any] | None:
    value = parse_json_line(line)  # never raises: depth, huge numbers, surrogates
    if (
        isinstance(value, dict)
        and isinstance(value.get("type"), str)
        and isinstance(value.get("timestamp"), str)
    ):
        return value
    return None


def _split_lines(text: str) -> Iterator[str]:
    # Split on "\n" only: str.splitlines would also split inside JSON strings that hold
    # U+2028 or other separators, which ensure_ascii=False leaves unescaped.
    for raw in text.split("\n"):
        yield raw.rstrip("\r")


# ---------------------------------------------------------------------------------------
# The scratchpad
# ---------------------------------------------------------------------------------------

class Scratchpad:
    """The run log of one query plus the in-memory state the context defenses need."""

    def __init__(
        self,
        directory: Path,
        query: str,
        *,
        model: str = "",
        provider: str = "",
        now: datetime | None = None,
        max_calls_per_tool: int = 3,
        similarity_threshold: float = 0.7,
        rerun_of: Path | None = None,
    ) -> None:
        """Create the file and write its ``init`` line.

        ``rerun_of``: the scratchpad of the run this one repeats on recorded tool results
        (``dexter rerun``); it is written to the ``init`` line as ``rerun_of``.
        """
        if max_calls_per_tool < 1:
            raise ValueError(f"max_calls_per_tool must be at least 1, got {max_calls_per_tool}")
        if not 0.0 < similarity_threshold <= 1.0:
            raise ValueError(
                f"similarity_threshold must be in (0, 1], got {similarity_threshold}"
            )
        created = (now or local_now()).astimezone()
        self.query = query
        self.max_calls_per_tool = max_calls_per_tool
        self.similarity_threshold = similarity_threshold
        self._lock = threading.Lock()
        self._results: list[ToolResultRecord] = []
        self._index_by_call_id: dict[str, int] = {}
        self._cleared: set[int] = set()
        self._summary: str | None = None
        self._boundary = 0
        self._usage: dict[str, _ToolUsage] = {}
        self._pending_warnings: dict[str, str] = {}
        self.write_error: str | None = None
        self._error_taken = False
        stem = scratchpad_stem(query, created)
        try:
            self.path = _create_unique(Path(directory), stem)
        except OSError as exc:
            # The run goes on in memory; the loop reports the missing record.
            self.path = Path(directory) / f"{stem}.jsonl"
            self.write_error = f"Could not create the scratchpad {self.path}: {os_error_text(exc)}"
        self._write({
            "type": "init", "timestamp": timestamp(created), "query": query,
            "model": model, "provider": provider, "version": __version__,
            **({"rerun_of": str(rerun_of)} if rerun_of is not None else {}),
        })

    # -- writing --------------------------------------------------------------------------

    def _write(self, entry: dict[str, Any]) -> None:
        line = clean(scrub(json.dumps(entry, ensure_ascii=False, default=str)))
        data = (line + "\n").encode("utf-8", "replace")
        with self._lock:
            error = append_whole(self.path, data)
            # A full or vanished disk must not end the run: the in-memory state still
            # serves the context defenses, and the loop reports ``write_error``.
            if error is not None and self.write_error is None:
                self.write_error = (f"Could not write the scratchpad {self.path}: "
                                    f"{os_error_text(error)}")

    def take_write_error(self) -> str | None:
        """The first write failure, once (None before any and after it was taken)."""
        with self._lock:
            if self.write_error is None or self._error_taken:
                return None
            self._error_taken = True
            return self.write_error

    @property
    def complete(self) -> bool:
        """Whether every entry so far reached the file."""
        return self.write_error is None

    def append(self, entry_type: str, **fields: Any) -> None:
        """Append one entry ``{type, timestamp, **fields}`` as a single flushed line."""
        self._write({"type": entry_type, "timestamp": timestamp(), **fields})

    def record_event(self, event: Event) -> None:
        """Write an event that replay needs (see ``RECORDED_EVENT_TYPES``); ignore the rest."""
        if not event.recorded:
            return
        data = event.to_dict()
        self._write({"type": data.pop("type"), "timestamp": timestamp(), **data})

    def add_tool_result(
        self,
        tool: str,
        args: dict[str, Any],
        result: str,
        *,
        duration_ms: int,
        is_error: bool,
        tool_call_id: str,
        source_urls: tuple[str, ...] = (),
        source_id: str = "",
        title: str = "",
    ) -> int:
        """Write a tool result in full, keep it in memory, and return its 0-based index.

        In the file, ``result`` is the parsed JSON when the text is a JSON object or array,
        else the text itself; ``source_urls`` (where the data came from), ``source_id``
        (its id in the source ledger) and ``title`` are written when there are any.
        """
        secrets = secret_values()
        text = scrub(result, secrets)
        record = ToolResultRecord(
            index=len(self._results), tool=tool, args=scrub_value(dict(args), secrets),
            result=text,
            duration_ms=duration_ms, is_error=is_error, tool_call_id=tool_call_id,
            source_id=source_id,
        )
        self._write({
            "type": "tool_result", "timestamp": timestamp(), "tool": tool, "args": record.args,
            "result": _maybe_json(text), "duration_ms": duration_ms, "is_error": is_error,
            "tool_call_id": tool_call_id,
            **({"source_urls": list(source_urls)} if source_urls else {}),
            **({"source_id": source_id} if source_id else {}),
            **({"title": scrub(title, secrets)} if title else {}),
        })
        self._results.append(record)
        if tool_call_id:
            self._index_by_call_id[tool_call_id] = record.index
        return record.index

    # -- soft tool limits -----------------------------------------------------------------

    def check_tool_limit(self, tool: str, args: dict[str, Any]) -> str | None:
        """A warning for a call about to run, or None. Never blocks; call before ``note_tool_call``.

        Warns when the tool already ran ``max_calls_per_tool`` times, when the call repeats
        an earlier one (same arguments, or a query with Jaccard similarity at or above the
        threshold), and when this call is the last one before the limit.
        """
        usage = self._usage.get(tool, _ToolUsage())
        limit = self.max_calls_per_tool
        warnings: list[str] = []
        if usage.calls >= limit:
            warnings.append(
                f"'{tool}' has already been called {_times(usage.calls)} (suggested limit: "
                f"{limit}). If earlier calls did not return what you need, try a different "
                "tool or different terms, or answer with the data you have."
            )
        duplicate = self._duplicate_warning(tool, args, usage)
        if duplicate:
            warnings.append(duplicate)
        if usage.calls == limit - 1:
            warnings.append(
                f"This is the last '{tool}' call before its suggested limit ({limit}); "
                "make it count."
            )
        if not warnings:
            return None
        message = " ".join(warnings)
        self._pending_warnings[tool] = message
        return message

    def _duplicate_warning(self, tool: str, args: dict[str, Any], usage: _ToolUsage) -> str | None:
        if _canonical_args(args) in usage.arg_sets:
            return f"This '{tool}' call has exactly the same arguments as an earlier one."
        query = call_query(args)
        if query is None:
            return None
        words = query_words(query)
        for earlier in usage.queries:
            if jaccard(words, query_words(earlier)) >= self.similarity_threshold:
                return (
                    f"This '{tool}' query is very similar to an earlier one ({earlier!r}); "
                    "its result is already in your context or the scratchpad."
                )
        return None

    def note_tool_call(self, tool: str, args: dict[str, Any]) -> None:
        """Count a call that is about to run (after ``check_tool_limit``)."""
        usage = self._usage.setdefault(tool, _ToolUsage())
        usage.calls += 1
        usage.arg_sets.add(_canonical_args(args))
        query = call_query(args)
        if query is not None:
            usage.queries.append(query)

    def tool_call_count(self, tool: str) -> int:
        """How many calls of ``tool`` have been noted."""
        usage = self._usage.get(tool)
        return usage.calls if usage else 0

    def usage_note(self) -> str | None:
        """A short note for the model after a turn, or None when no warning was raised since the last note."""
        if not self._pending_warnings:
            return None
        limit = self.max_calls_per_tool
        lines = ["## Tool usage this query", ""]
        for tool, usage in self._usage.items():
            over = " (over the suggested limit)" if usage.calls > limit else ""
            lines.append(f"- {tool}: {usage.calls}/{limit} calls{over}")
        lines += ["", "Warnings:"]
        lines += [f"- {message}" for message in self._pending_warnings.values()]
        self._pending_warnings.clear()
        return "\n".join(lines)

    # -- compaction state -----------------------------------------------------------------

    @property
    def tool_results(self) -> tuple[ToolResultRecord, ...]:
        """Every tool result of the run, in order."""
        return tuple(self._results)

    @property
    def compaction_summary(self) -> str | None:
        """The last compaction summary, or None before the first compaction."""
        return self._summary

    def mark_cleared(self, tool_call_ids: Iterable[str]) -> None:
        """Note results cleared from the view (unknown call ids are ignored)."""
        for call_id in tool_call_ids:
            index = self._index_by_call_id.get(call_id)
            if index is not None:
                self._cleared.add(index)

    def set_compaction_summary(self, summary: str) -> None:
        """Enter compaction mode: results so far are covered by ``summary``; the cleared set resets."""
        self._summary = summary
        self._boundary = len(self._results)
        self._cleared.clear()

    def active_tool_result_count(self) -> int:
        """Results fetched after the last compaction (all of them before the first)."""
        return len(self._results) - self._boundary

    def active_results(self) -> tuple[ToolResultRecord, ...]:
        """The results fetched after the last compaction (all of them before the first)."""
        return tuple(self._results[self._boundary:])

    def compaction_input(self) -> list[str]:
        """The compaction input as pieces, one per record (the summary, the marker, each
        result with its full text); joined by blank lines they are ``tool_results_text()``."""
        return self._pieces(True)

    def _pieces(self, include_cleared: bool) -> list[str]:
        """The parts of the compaction input, in order; joined by blank lines they are the text."""
        blocks = [
            record.block(cleared=not include_cleared and record.index in self._cleared)
            for record in self._results[self._boundary:]
        ]
        if self._summary is None:
            return blocks
        return [self._summary, COMPACTION_MARKER, *blocks] if blocks else [self._summary]

    def tool_results_text(self, include_cleared: bool = True) -> str:
        """The compaction (and memory-flush) input.

        Before a compaction: every result as ``### tool(args)`` plus its text, joined by
        blank lines. After one: the summary, then ``New data retrieved after compaction``
        and the results fetched since. By default cleared results keep their **full text**
        (read from memory, which mirrors the file), so numbers cleared from the view still
        reach the summary; ``include_cleared=False`` gives the
        ``[Tool result #N cleared from context]`` placeholder form (N counts from 1).
        """
        return "\n\n".join(self._pieces(include_cleared))

    def tool_results_chunks(self, max_chars: int, *, include_cleared: bool = True) -> list[str]:
        """``tool_results_text`` split at result boundaries into chunks of at most ``max_chars``.

        Results are packed greedily in order, so when no single result is too big the chunks
        joined by blank lines give back the text exactly. A result larger than ``max_chars``
        is split by characters; each part repeats the result's header (marked ``part i/n``)
        when the header is short enough to leave room for data.
        """
        if max_chars < 1:
            raise ValueError(f"max_chars must be at least 1, got {max_chars}")
        return _pack(self._pieces(include_cleared), max_chars)

    def tool_call_records(self) -> list[dict[str, Any]]:
        """``{tool, args, duration_ms, is_error}`` per result (and ``source_id`` when it
        became a source), for the ``done`` event."""
        return [
            {"tool": r.tool, "args": r.args, "duration_ms": r.duration_ms, "is_error": r.is_error,
             **({"source_id": r.source_id} if r.source_id else {})}
            for r in self._results
        ]

    # -- reading --------------------------------------------------------------------------

    @staticmethod
    def read(path: Path) -> ScratchpadLog:
        """Parse a scratchpad file, skipping (and counting) lines that are not valid entries.

        A valid entry is a JSON object with string ``type`` and ``timestamp``. Bytes that are
        not UTF-8 are replaced, blank lines are ignored, and a truncated last line counts as
        skipped. A missing file raises ``FileNotFoundError``.
        """
        text = Path(path).read_bytes().decode("utf-8", errors="replace").lstrip("\ufeff")
        entries: list[dict[str, Any]] = []
        skipped = 0
        for line in _split_lines(text):
            if not line.strip():
                continue
            entry = _parse_line(line)
            if entry is None:
                skipped += 1
            else:
                entries.append(entry)
        return ScratchpadLog(entries=entries, skipped=skipped, path=Path(path))


def _maybe_json(text: str) -> Any:
    """The parsed value when ``text`` is a JSON object or array that ``recorded_text`` turns
    back into exactly ``text``, else ``text`` itself.

    Tools return compact JSON (``json.dumps`` with its default separators), which is kept
    as JSON so the file stays readable; JSON with other spacing, escapes or number forms
    (a pretty-printed file, ``1e3``) stays text, so the round trip is always exact.
    """
    if not text.startswith(("{", "[")):
        return text
    try:
        value = json.loads(text)
        if not isinstance(value, dict | list) or recorded_text(value) != text:
            return text
    except (ValueError, RecursionError):  # RecursionError: nested thousands deep
        return text
    return value


def recorded_text(value: Any) -> str:
    """The text a tool returned, from the ``result`` field of a ``tool_result`` entry.

    The inverse of how ``add_tool_result`` stores it: text stays text, a JSON object or
    array is serialised the way tools write JSON. For files written by this version the
    result is exactly what the model was given (before its source id); a file from an
    earlier version may hold JSON that was stored in another spacing, which comes back
    in this compact form. ``None`` (a missing field) is ''.
    """
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _split_block(block: str, max_chars: int) -> list[str]:
    header, newline, body = block.partition("\n")
    if newline and len(header) + 32 <= max_chars // 2:
        room = max_chars - len(header) - 32
        parts = [body[i:i + room] for i in range(0, len(body), room)] or [""]
        total = len(parts)
        return [f"{header} (part {n}/{total})\n{part}" for n, part in enumerate(parts, 1)]
    return [block[i:i + max_chars] for i in range(0, len(block), max_chars)]


def _pack(blocks: list[str], max_chars: int) -> list[str]:
    chunks: list[str] = []
    current = ""
    for block in blocks:
        if len(block) > max_chars:
            if current:
                chunks.append(current)
                current = ""
            chunks.extend(_split_block(block, max_chars))
            continue
        candidate = f"{current}\n\n{block}" if current else block
        if len(candidate) <= max_chars:
            current = candidate
        else:
            chunks.append(current)
            current = block
    if current:
        chunks.append(current)
    return chunks


def _times(count: int) -> str:
    return "once" if count == 1 else f"{count} times"
