"""Bring the index in line with the files: new, changed and deleted files, by mtime+size then hash.

A file whose mtime and size match the index is skipped without reading it. Otherwise it is
read and hashed: the same hash only refreshes the stored mtime; a new hash re-chunks the
file. Indexed files that no longer exist are dropped. Memory files are the ``*.md`` files of
the memory folder; the sessions file is indexed under the logical path ``SESSIONS_PATH``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from dexter.memory.chunker import chunk_text, content_hash
from dexter.memory.index import ChunkRecord, FileState, MemoryIndex
from dexter.memory.sessions import SESSIONS_PATH, read_turns
from dexter.memory.store import list_memory_files


@dataclass(frozen=True, slots=True)
class _Source:
    path: str
    source: str
    folder: Path
    name: str  # the file is folder / name, joined only when it must be read
    mtime: float
    size: int

    @property
    def file(self) -> Path:
        return self.folder / self.name


@dataclass
class SyncReport:
    """What a sync changed."""

    indexed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        """Whether anything was (re)indexed or removed."""
        return bool(self.indexed or self.removed)


def sync_index(index: MemoryIndex, memory_dir: Path, sessions: Path | None,
               model: str | None) -> SyncReport:
    """Re-index what changed on disk; ``model`` lets unchanged text reuse cached vectors."""
    report = SyncReport()
    sources = _sources(memory_dir, sessions)
    known = index.file_states()
    for path in sorted(set(known) - {s.path for s in sources}):
        index.remove_file(path)
        report.removed.append(path)
    for src in sources:
        state = known.get(src.path)
        if state is not None and state.mtime == src.mtime and state.size == src.size:
            continue
        try:
            text = src.file.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            if state is not None:
                index.remove_file(src.path)
                report.removed.append(src.path)
            continue
        digest = content_hash(text)
        if state is not None and state.hash == digest:
            index.touch_file(src.path, src.mtime, src.size)
            continue
        records = _records(src, text)
        index.replace_file(src.path, src.source, FileState(src.source, src.mtime, src.size, digest),
                           records, model)
        report.indexed.append(src.path)
    return report


def _sources(memory_dir: Path, sessions: Path | None) -> list[_Source]:
    found = [_Source(f.name, "memory", memory_dir, f.name, f.mtime, f.size)
             for f in list_memory_files(memory_dir)]
    if sessions is not None and sessions.is_file() and not sessions.is_symlink():
        st = sessions.stat()
        found.append(_Source(SESSIONS_PATH, "sessions", sessions.parent, sessions.name,
                             st.st_mtime, st.st_size))
    return found


def _records(src: _Source, text: str) -> list[ChunkRecord]:
    if src.source == "sessions":
        return [ChunkRecord(turn.line, turn.line, chunk.content, chunk.hash, turn.timestamp)
                for turn in read_turns(text, src.mtime) for chunk in chunk_text(turn.text)]
    return [ChunkRecord(c.start_line, c.end_line, c.content, c.hash, src.mtime)
            for c in chunk_text(text)]
