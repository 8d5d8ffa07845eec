"""The memory files: where they live, which names are allowed, and how they are changed.

File format (shared by ``memory_update``, the context issue's memory flush and the user's
own editor):

- The folder is ``DEXTER_HOME/memory/``. ``MEMORY.md`` holds long-term facts (it never
  decays in search). ``YYYY-MM-DD.md`` holds one day's notes, named by the **local** date.
  Any other ``NAME.md`` in the folder is a named note file (indexed, never decays).
- Files are plain UTF-8 markdown. Sections start with ``## <heading>`` (for example
  ``## Pre-compaction memory flush`` or ``## 14:05 Portfolio review``); entries are ``- ``
  bullets, one fact per bullet. Paragraphs are separated by blank lines; search chunks follow
  paragraph boundaries, so keep related bullets together and unrelated facts apart.
- Writers only append (``append`` / ``append_section``) or replace/remove the first
  occurrence of an exact text (``edit`` / ``delete``); nothing rewrites a file wholesale, so
  hand edits survive.
- Every writer holds the folder's lock (:func:`memory_lock`: ``flock`` on ``.lock`` in the
  folder) from its read to its write, so two dexter processes on one ``DEXTER_HOME`` never
  lose each other's lines (an edit renames a new copy into place, which would drop an
  append made between its read and its rename).

Only names directly inside the folder are accepted: no sub-folders, no ``..``, no absolute
paths, no symlinks and no files with more than one hard link (``resolve_memory_path``).
The folder itself must stay inside ``DEXTER_HOME`` after links are followed, and text that
holds a secret value is never written (:func:`dexter.secrets.find_secret`).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

from dexter.filelock import locked, write_atomic

LONG_TERM_FILE = "MEMORY.md"
LOCK_FILE = ".lock"
LONG_TERM_ALIAS = "long_term"
DAILY_ALIAS = "daily"

_DAILY_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})\.md$")
_BLANK_RUN_RE = re.compile(r"\n{3,}")


class MemoryPathError(ValueError):
    """A memory file name that points outside the memory folder or is not allowed."""


class MemoryTextNotFound(ValueError):
    """``edit`` / ``delete`` could not find the exact text in the file."""


@dataclass(frozen=True, slots=True)
class MemoryFile:
    """One memory file on disk."""

    name: str
    size: int
    mtime: float

    @property
    def day(self) -> date | None:
        """The date of a daily file, else None."""
        return daily_file_date(self.name)


@dataclass(frozen=True, slots=True)
class WriteResult:
    """What a write did, in words the model and the user can read."""

    file: str
    message: str


def daily_file_name(day: date) -> str:
    """``YYYY-MM-DD.md`` for ``day``."""
    return f"{day.isoformat()}.md"


def daily_file_date(name: str) -> date | None:
    """The date encoded in a daily file name (``2025-03-14.md``), else None."""
    match = _DAILY_RE.match(name)
    if match is None:
        return None
    try:
        return date(int(match[1]), int(match[2]), int(match[3]))
    except ValueError:
        return None


def resolve_memory_name(name: str, today: date | None = None) -> str:
    """Turn an alias or a name into a file name inside the memory folder.

    ``long_term`` → ``MEMORY.md``; ``daily`` → today's ``YYYY-MM-DD.md`` (local date);
    ``NAME`` → ``NAME.md``; ``NAME.md`` stays. Raises ``MemoryPathError`` for anything
    that could leave the folder.
    """
    raw = name.strip()
    if raw == LONG_TERM_ALIAS:
        return LONG_TERM_FILE
    if raw == DAILY_ALIAS:
        return daily_file_name(today or date.today())
    if not raw:
        raise MemoryPathError("The memory file name is empty. Use long_term, daily or a NAME.")
    if raw.startswith(("/", "\\", "~")) or re.match(r"^[A-Za-z]:", raw):
        raise MemoryPathError(
            f"'{name}' is an absolute path. Memory files are names inside the memory folder, "
            "for example long_term, daily or MEMORY.md."
        )
    if "/" in raw or "\\" in raw or raw in {".", ".."} or raw.startswith(".."):
        raise MemoryPathError(
            f"'{name}' is not a plain file name. Memory files live directly in the memory "
            "folder: use long_term, daily, a YYYY-MM-DD.md date or a NAME without folders."
        )
    if raw.startswith("."):
        raise MemoryPathError(f"'{name}' is a hidden file name. Use a NAME without a leading dot.")
    if "\x00" in raw:
        raise MemoryPathError("The memory file name contains a NUL character.")
    return raw if raw.endswith(".md") else raw + ".md"


def resolve_memory_path(memory_dir: Path, name: str, today: date | None = None) -> Path:
    """The absolute path of memory file ``name``, guaranteed to be inside ``memory_dir``.

    Rejects ``..``, absolute paths, sub-folders and symlinks with ``MemoryPathError``.
    """
    file_name = resolve_memory_name(name, today)
    root = memory_dir.resolve()
    candidate = root / file_name
    if candidate.is_symlink():
        raise MemoryPathError(
            f"'{file_name}' is a symbolic link; memory files must be regular files in {root}."
        )
    if candidate.resolve().parent != root:
        raise MemoryPathError(f"'{name}' resolves outside the memory folder {root}.")
    try:
        links = candidate.stat(follow_symlinks=False).st_nlink
    except OSError:
        links = 1
    if links > 1:
        raise MemoryPathError(
            f"'{file_name}' has {links} hard links, so it may be another file (outside the "
            f"memory folder) under a second name; memory files must have one link. Copy its "
            "text into a new file if it is yours.")
    return candidate


def confined_memory_dir(memory_dir: Path, home: Path | None) -> Path:
    """``memory_dir`` when it stays inside ``home`` after links are followed.

    Raises ``MemoryPathError`` when the folder (or a parent) is a link that leads out of
    ``DEXTER_HOME``: memory writes would land wherever the link points.
    """
    if home is None:
        return memory_dir
    real_home = Path(os.path.realpath(home))
    real = Path(os.path.realpath(memory_dir))
    if not real.is_relative_to(real_home):
        raise MemoryPathError(
            f"The memory folder {memory_dir} leads to {real}, outside DEXTER_HOME "
            f"({real_home}). Replace the link with a real folder, or set DEXTER_HOME to "
            "where the memory should live.")
    return memory_dir


def list_memory_files(memory_dir: Path) -> list[MemoryFile]:
    """The ``*.md`` files directly in ``memory_dir`` (no symlinks), sorted by name."""
    if not memory_dir.is_dir():
        return []
    found: list[MemoryFile] = []
    with os.scandir(memory_dir) as entries:
        for entry in entries:
            if not entry.name.endswith(".md") or entry.name.startswith("."):
                continue
            if entry.is_symlink() or not entry.is_file(follow_symlinks=False):
                continue
            st = entry.stat(follow_symlinks=False)
            found.append(MemoryFile(entry.name, st.st_size, st.st_mtime))
    found.sort(key=lambda f: f.name)
    return found


def recall_candidates(today: date) -> list[str]:
    """The files loaded into a new session, in order: long-term, today, yesterday."""
    return [LONG_TERM_FILE, daily_file_name(today), daily_file_name(today - timedelta(days=1))]


@contextlib.contextmanager
def memory_lock(memory_dir: Path) -> Iterator[None]:
    """Hold the memory folder's lock for a change to its files (the folder is created when
    missing). Every writer of memory files takes it, in this process or another."""
    memory_dir.mkdir(parents=True, exist_ok=True)
    with locked(memory_dir / LOCK_FILE):
        yield


class MemoryStore:
    """Reads and writes the memory files of one folder (writes under :func:`memory_lock`)."""

    def __init__(self, memory_dir: Path, home: Path | None = None) -> None:
        self.memory_dir = memory_dir
        self.home = home

    def path(self, name: str, today: date | None = None) -> Path:
        """The confined path of ``name`` (alias or file name)."""
        confined_memory_dir(self.memory_dir, self.home)
        return resolve_memory_path(self.memory_dir, name, today)

    def read(self, name: str, today: date | None = None) -> str | None:
        """The text of a memory file, or None when it does not exist."""
        path = self.path(name, today)
        try:
            return path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None

    def list_files(self) -> list[MemoryFile]:
        """All memory files, sorted by name."""
        return list_memory_files(self.memory_dir)

    def append(self, name: str, content: str, today: date | None = None) -> WriteResult:
        """Append ``content`` on a new line of the file (created when missing)."""
        if not content.strip():
            raise ValueError("Nothing to append: content is empty.")
        refuse_secrets(content)
        path = self.path(name, today)
        text = content if content.endswith("\n") else content + "\n"
        with memory_lock(self.memory_dir):
            if _needs_newline(path):
                text = "\n" + text
            with path.open("a", encoding="utf-8") as handle:
                handle.write(text)
        return WriteResult(path.name, f"Appended {len(content)} characters to {path.name}")

    def append_section(
        self, heading: str, body: str, name: str = DAILY_ALIAS, today: date | None = None
    ) -> WriteResult:
        """Append ``## heading`` and ``body`` as a new section, separated by a blank line."""
        refuse_secrets(heading + "\n" + body)
        path = self.path(name, today)
        with memory_lock(self.memory_dir):
            existing = path.read_text(encoding="utf-8") if path.exists() else ""
            lead = "" if not existing.strip() else ("\n" if existing.endswith("\n") else "\n\n")
            section = f"{lead}## {heading.strip()}\n{body.strip()}\n"
            with path.open("a", encoding="utf-8") as handle:
                handle.write(section)
        return WriteResult(path.name, f"Added section '{heading.strip()}' to {path.name}")

    def edit(self, name: str, old_text: str, new_text: str, today: date | None = None) -> WriteResult:
        """Replace the first occurrence of ``old_text`` with ``new_text``."""
        refuse_secrets(new_text)
        with memory_lock(self.memory_dir):
            path, text = self._find(name, old_text, today)
            _write_atomic(path, text.replace(old_text, new_text, 1))
        return WriteResult(path.name, f"Updated entry in {path.name}")

    def delete(self, name: str, old_text: str, today: date | None = None) -> WriteResult:
        """Remove the first occurrence of ``old_text``; runs of 3+ newlines collapse to 2."""
        with memory_lock(self.memory_dir):
            path, text = self._find(name, old_text, today)
            updated = _BLANK_RUN_RE.sub("\n\n", text.replace(old_text, "", 1))
            _write_atomic(path, updated)
        return WriteResult(path.name, f"Removed entry from {path.name}")

    def _find(self, name: str, old_text: str, today: date | None) -> tuple[Path, str]:
        if not old_text:
            raise ValueError("old_text is empty; give the exact text to change.")
        path = self.path(name, today)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise MemoryTextNotFound(
                f"{path.name} does not exist yet. Use memory_get or /memory to see which files exist."
            ) from None
        if old_text not in text:
            raise MemoryTextNotFound(
                f"Could not find the specified text in {path.name}. "
                "Use memory_get to read the file and copy the exact text."
            )
        return path, text


class MemorySecretError(ValueError):
    """Text for a memory file contains a secret value (an API key, a token)."""


def refuse_secrets(text: str) -> None:
    """Raise ``MemorySecretError`` when ``text`` contains a known secret value."""
    from dexter.secrets import find_secret

    found = find_secret(text)
    if found:
        raise MemorySecretError(
            f"Not written: the text contains a secret value ({found}). Memory files are "
            "plain text that later sessions and searches show; write the fact without the key.")


def _needs_newline(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            if handle.tell() == 0:
                return False
            handle.seek(-1, os.SEEK_END)
            return handle.read(1) != b"\n"
    except FileNotFoundError:
        return False


def _write_atomic(path: Path, text: str) -> None:
    """Write via a temporary file and rename, so a crash never leaves half a file (call it
    under :func:`memory_lock`)."""
    write_atomic(path, text.encode("utf-8"), prefix=".tmp-")
