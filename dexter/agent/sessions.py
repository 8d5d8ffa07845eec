"""Saved sessions: every REPL session and every ``dexter ask`` run, resumable by id.

A session is one JSON file, ``DEXTER_HOME/sessions/<id>.json``: its id, when it started and
was last used, the model of its latest run, its first question, the scratchpads of its
runs and its :class:`~dexter.agent.conversation.Conversation` (``Conversation.to_dict``:
the turns with their summaries, the ``/compact`` summary, the source ledger). Resuming
rebuilds the conversation, so the next request holds what the model saw before.

:class:`SessionStore` writes a session after every turn: the JSON is scrubbed of secrets,
written to a temporary file beside it and renamed over the old one, under a lock on the
folder, so a failed write never loses the old file and a crash never leaves half of one.
Each file carries a ``revision``; when another dexter process saved the same session since
this one read it (two terminals continuing one session), the save goes to a new session
instead of overwriting the other's turns, and says so.

A file that cannot be read is skipped by the listing and reported (:class:`Skipped`);
opening it by id is a :class:`SessionError` with a message, never a traceback.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from dexter.agent.conversation import Conversation, one_line, shorten
from dexter.secrets import scrub

SESSIONS_DIR = "sessions"
FORMAT = "dexter-session"
VERSION = 1
ID_LENGTH = 8
_ID = re.compile(r"^[0-9a-f]{1,32}$")
MAX_SCRATCHPADS = 500
"""The newest scratchpad paths a session lists (one per run)."""


class SessionError(Exception):
    """A session cannot be found, read or written; the message says which and what to do."""


class UnreadableSession(SessionError):
    """A session file that is damaged, not a session, or from a newer dexter."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path} is not a readable session ({reason}). Move it aside or "
                         "delete it.")
        self.path = path
        self.reason = reason


def now_precise() -> str:
    """The local time as ISO-8601 with microseconds and the offset (sessions sort by it)."""
    return datetime.now().astimezone().isoformat(timespec="microseconds")


def format_when(stamp: str) -> str:
    """``2025-01-02 14:03`` in local time for an ISO-8601 stamp (the stamp itself if odd)."""
    try:
        when = datetime.fromisoformat(stamp)
    except ValueError:
        return stamp
    if when.tzinfo is not None:
        when = when.astimezone()
    return when.strftime("%Y-%m-%d %H:%M")


@dataclass
class SessionRecord:
    """One saved session: who it is, when, with which model, and its conversation."""

    id: str
    created: str
    updated: str
    model: str
    conversation: Conversation
    scratchpads: list[str] = field(default_factory=list)
    first_query: str = ""
    revision: int = 0
    """The revision of the file this record was read from or last saved as (0: never)."""

    @property
    def turns(self) -> int:
        """How many turns the conversation holds."""
        return len(self.conversation.turns)

    def note_run(self, *, model: str, scratchpad: str | None) -> None:
        """Remember a run: the model it used and its scratchpad."""
        if model:
            self.model = model
        if scratchpad and scratchpad not in self.scratchpads:
            self.scratchpads.append(scratchpad)
            del self.scratchpads[:-MAX_SCRATCHPADS]

    def worth_saving(self) -> bool:
        """Whether there is anything to save (a session that never asked is not kept)."""
        return bool(self.revision or self.conversation.turns or self.conversation.summary)

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready file content."""
        if not self.first_query and self.conversation.turns:
            self.first_query = self.conversation.turns[0].query
        return {
            "format": FORMAT, "version": VERSION, "id": self.id, "revision": self.revision,
            "created": self.created, "updated": self.updated, "model": self.model,
            "first_query": self.first_query, "turns": self.turns,
            "scratchpads": list(self.scratchpads),
            "conversation": self.conversation.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Any) -> SessionRecord:
        """The record :meth:`to_dict` wrote; ``ValueError`` saying what is wrong otherwise."""
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError("it is not a dexter session")
        version = data.get("version")
        if not isinstance(version, int) or version > VERSION:
            raise ValueError(f"it was written by a newer dexter (format version {version})")
        texts = {key: data.get(key, "") for key in ("id", "created", "updated", "model",
                                                    "first_query")}
        if not all(isinstance(value, str) for value in texts.values()):
            raise ValueError("its id, times, model and first question must be text")
        if not _ID.match(texts["id"]):
            raise ValueError(f"its id {texts['id']!r} is not a session id")
        revision = data.get("revision", 0)
        scratchpads = data.get("scratchpads", [])
        if not isinstance(revision, int) or not isinstance(scratchpads, list):
            raise ValueError("its revision must be a number and its scratchpads a list")
        return cls(
            id=texts["id"], created=texts["created"], updated=texts["updated"],
            model=texts["model"], first_query=texts["first_query"], revision=revision,
            scratchpads=[str(path) for path in scratchpads],
            conversation=Conversation.from_dict(data.get("conversation")),
        )


@dataclass(frozen=True, slots=True)
class Skipped:
    """A session file that could not be read, and why."""

    path: Path
    reason: str

    def message(self) -> str:
        """``Skipped PATH: not a readable session (REASON).`` for a warning line."""
        return f"Skipped {self.path}: not a readable session ({self.reason})."


@dataclass
class Listing:
    """Sessions newest first, the files skipped on the way, and how many files there are."""

    records: list[SessionRecord]
    skipped: list[Skipped]
    total: int


def resume_line(record: SessionRecord, model: str) -> str:
    """``Resumed session 3f9a01bc · 2 earlier turns · gpt-4.1``."""
    turns = record.turns
    earlier = f"{turns} earlier turn{'s' if turns != 1 else ''}"
    if record.conversation.summary:
        earlier += " (and a compacted summary)"
    return f"Resumed session {record.id} · {earlier} · {model}"


def first_question(record: SessionRecord, limit: int = 60) -> str:
    """The session's first question on one line, cut to about ``limit`` characters."""
    query = record.first_query or (record.conversation.turns[0].query
                                   if record.conversation.turns else "")
    return shorten(one_line(query), limit) if query else "(no question)"


class SessionStore:
    """The sessions under ``home/sessions``: create, save, load, list, find by prefix."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.directory = home / SESSIONS_DIR

    def path_for(self, session_id: str) -> Path:
        """The file of session ``session_id``."""
        return self.directory / f"{session_id}.json"

    def new(self, model: str, conversation: Conversation | None = None) -> SessionRecord:
        """A new session (not written until it has a turn) with a fresh id."""
        stamp = now_precise()
        return SessionRecord(id=self._fresh_id(), created=stamp, updated=stamp, model=model,
                             conversation=conversation if conversation is not None
                             else Conversation())

    def _fresh_id(self) -> str:
        while True:
            session_id = uuid.uuid4().hex[:ID_LENGTH]
            if not self.path_for(session_id).exists():
                return session_id

    # -- saving ---------------------------------------------------------------------------

    def save(self, record: SessionRecord) -> str | None:
        """Write ``record`` atomically, under a lock. Returns a notice when it had to go to
        a new session (another process saved this one meanwhile), else None.

        Raises :class:`SessionError` when the file cannot be written; the old file is kept.
        """
        notice = None
        try:
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            with self._locked():
                path = self.path_for(record.id)
                if path.exists() and self._revision_on_disk(path) != record.revision:
                    old = record.id
                    record.id, record.revision = self._fresh_id(), 0
                    record.created = now_precise()
                    path = self.path_for(record.id)
                    notice = (f"Session {old} was changed by another dexter meanwhile; this "
                              f"conversation is saved as session {record.id}.")
                record.updated = now_precise()
                data = record.to_dict()
                data["revision"] = record.revision + 1
                self._write(path, scrub(json.dumps(data, ensure_ascii=False, indent=1)))
                record.revision += 1
        except OSError as exc:
            raise SessionError(f"Could not save session {record.id} to {self.directory}: "
                               f"{exc.strerror or exc}.") from None
        return notice

    def _revision_on_disk(self, path: Path) -> int | None:
        try:
            value = json.loads(path.read_text(encoding="utf-8")).get("revision")
        except (OSError, ValueError, AttributeError):
            return None
        return value if isinstance(value, int) else None

    def _write(self, path: Path, text: str) -> None:
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=f".{path.stem}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
                handle.write("\n")
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """An exclusive lock on the sessions folder (no lock file is left behind)."""
        fd = os.open(self.directory, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    # -- reading --------------------------------------------------------------------------

    def load(self, session_id: str) -> SessionRecord:
        """Session ``session_id`` (a whole id). Raises :class:`SessionError`."""
        path = self.path_for(session_id)
        if not _ID.match(session_id) or not path.is_file():
            raise SessionError(f"No session {session_id!r} in {self.directory}. "
                               "'dexter sessions' lists them.")
        return self._read(path)

    def _read(self, path: Path) -> SessionRecord:
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise UnreadableSession(path, f"cannot read it: {exc.strerror or exc}") from None
        try:
            record = SessionRecord.from_dict(json.loads(raw.decode("utf-8")))
        except UnicodeDecodeError:
            raise UnreadableSession(path, "not UTF-8 text") from None
        except json.JSONDecodeError as exc:
            raise UnreadableSession(path, f"not valid JSON: {exc}") from None
        except (ValueError, TypeError, KeyError) as exc:
            raise UnreadableSession(path, str(exc)) from None
        except RecursionError:
            raise UnreadableSession(path, "its JSON is nested too deeply") from None
        if record.id != path.stem:
            raise UnreadableSession(path, f"it holds session {record.id}")
        return record

    def _files(self) -> list[Path]:
        """Session files, most recently written first."""
        try:
            found = [(p.stat().st_mtime_ns, p.name, p) for p in self.directory.glob("*.json")
                     if p.is_file()]
        except OSError:
            return []
        return [path for _mtime, _name, path in sorted(found, reverse=True)]

    def listing(self, limit: int | None = None) -> Listing:
        """Up to ``limit`` readable sessions (all when None), newest first, and the files
        skipped on the way."""
        files = self._files()
        records: list[SessionRecord] = []
        skipped: list[Skipped] = []
        for path in files:
            if limit is not None and len(records) >= limit:
                break
            try:
                records.append(self._read(path))
            except UnreadableSession as exc:
                skipped.append(Skipped(path, exc.reason))
        records.sort(key=_newest_first)
        return Listing(records, skipped, total=len(files) - len(skipped))

    def latest(self) -> tuple[SessionRecord | None, list[Skipped]]:
        """The most recently used readable session (None when there is none), and the
        unreadable files passed over."""
        listing = self.listing(limit=1)
        return (listing.records[0] if listing.records else None), listing.skipped

    def resolve(self, prefix: str) -> str:
        """The id of the one session whose id starts with ``prefix``.

        Raises :class:`SessionError` when none does, or more than one.
        """
        wanted = prefix.strip().lower()
        if not _ID.match(wanted):
            raise SessionError(f"{prefix!r} is not a session id (ids are letters a-f and "
                               "digits). 'dexter sessions' lists them.")
        if self.path_for(wanted).is_file():
            return wanted
        matches = sorted(p.stem for p in self._files() if p.stem.startswith(wanted))
        if not matches:
            raise SessionError(f"No session matches {prefix!r} in {self.directory}. "
                               "'dexter sessions' lists them.")
        if len(matches) > 1:
            shown = ", ".join(matches[:5]) + (", ..." if len(matches) > 5 else "")
            raise SessionError(f"{prefix!r} matches {len(matches)} sessions ({shown}); "
                               "give more of the id.")
        return matches[0]

    def open(self, prefix: str) -> SessionRecord:
        """The session whose id starts with ``prefix``. Raises :class:`SessionError`."""
        return self.load(self.resolve(prefix))


def _newest_first(record: SessionRecord) -> tuple[float, str]:
    try:
        when = datetime.fromisoformat(record.updated)
        stamp = when.timestamp() if when.tzinfo is not None else when.astimezone().timestamp()
    except ValueError:
        stamp = 0.0
    return -stamp, record.id
