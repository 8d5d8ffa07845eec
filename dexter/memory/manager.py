"""``MemoryManager``: the one object the agent, the tools and the CLI use for memory.

It opens the index lazily, re-indexes changed files before every search, embeds new chunks
when an embedding source exists, and never lets an index problem break a run: a damaged or
locked ``index.sqlite`` makes memory report itself unavailable with the reason, while the
files (the source of truth) stay readable and writable. ``reindex()`` rebuilds the index
from the files, deleting a damaged database first.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Literal

from dexter.config import Settings
from dexter.memory.embeddings import (
    Embedder,
    EmbeddingError,
    choose_source,
    make_embedder,
    normalize,
)
from dexter.memory.index import IndexCounts, MemoryIndex, query_tokens
from dexter.memory.search import SearchResult, rank
from dexter.memory.sessions import SESSIONS_PATH, read_turns, sessions_file
from dexter.memory.store import (
    DAILY_ALIAS,
    LONG_TERM_ALIAS,
    MemoryStore,
    WriteResult,
    recall_candidates,
)
from dexter.memory.sync import sync_index
from dexter.memory.tokens import estimate_tokens
from dexter.secrets import scrub

SearchMode = Literal["hybrid", "keyword"]
UpdateAction = Literal["append", "edit", "delete"]

MEMORY_OFF = "Memory is off (memory.enabled = false or --no-memory)."
EMBED_RETRY_SECONDS = 60.0
BUSY_TIMEOUT_SECONDS = 5.0
CANDIDATE_FACTOR = 4
_DB_SUFFIXES = ("", "-wal", "-shm", "-journal")


class MemoryOff(RuntimeError):
    """Memory is disabled by configuration."""


@dataclass(frozen=True, slots=True)
class MemoryStatus:
    """What ``/memory`` and ``dexter memory list`` show."""

    available: bool
    reason: str
    mode: SearchMode
    files: int
    chunks: int
    embedding_provider: str
    embedding_model: str
    memory_dir: str
    index_path: str
    embedded_chunks: int = 0
    session_chunks: int = 0
    keyword_engine: Literal["fts5", "like"] = "fts5"
    enabled: bool = True


@dataclass(frozen=True, slots=True)
class Recall:
    """Memory loaded into a new session's system prompt."""

    text: str
    files: tuple[str, ...]
    tokens: int


@dataclass(frozen=True, slots=True)
class SearchOutcome:
    """A search's results plus how it was done and anything the user should know."""

    results: list[SearchResult]
    mode: SearchMode
    available: bool = True
    note: str = ""

    def to_dict(self) -> dict[str, object]:
        """The JSON shape ``memory_search`` returns."""
        data: dict[str, object] = {"results": [r.to_dict() for r in self.results], "mode": self.mode}
        if not self.available:
            data["disabled"] = True
            data["error"] = self.note
        elif self.note:
            data["note"] = self.note
        return data


@dataclass(frozen=True, slots=True)
class MemoryText:
    """A slice of a memory file (or of the past-conversations file)."""

    path: str
    text: str
    from_line: int
    to_line: int
    total_lines: int
    exists: bool = True


@dataclass
class _EmbedState:
    error: str = ""
    retry_at: float = 0.0
    busy: bool = False


class MemoryManager:
    """Persistent memory for one ``DEXTER_HOME``.

    ``embedder="auto"`` chooses the source from the settings and the environment; pass an
    ``Embedder`` to use your own, or ``None`` for keyword search only. ``clock`` gives the
    local time (tests pin it).
    """

    def __init__(self, settings: Settings, env: Mapping[str, str] | None = None, *,
                 embedder: Embedder | Literal["auto"] | None = "auto",
                 clock: Callable[[], datetime] = datetime.now, use_fts: bool = True) -> None:
        self.settings = settings
        self.memory_dir = settings.home_path / "memory"
        self.index_path = self.memory_dir / "index.sqlite"
        self.sessions_path: Path | None = (
            sessions_file(settings.home_path) if settings.memory.index_sessions else None)
        self.store = MemoryStore(self.memory_dir, settings.home_path)
        self._clock = clock
        self._use_fts = use_fts
        self._index: MemoryIndex | None = None
        self._open_lock = threading.Lock()
        # One sync at a time: concurrent searches run their syncs in worker threads, and a
        # search must not rank while another thread is halfway through re-indexing a file.
        self._sync_lock = threading.Lock()
        self._embed = _EmbedState()
        if embedder == "auto":
            choice = choose_source(settings.memory.embedding_provider,
                                   settings.memory.embedding_model,
                                   os.environ if env is None else env)
            self._embedder: Embedder | None = make_embedder(choice.source) if choice.source else None
            self._source_reason = choice.reason
        else:
            self._embedder = embedder
            self._source_reason = ("no embedding source; keyword search only" if embedder is None
                                   else f"{embedder.provider} embeddings ({embedder.model})")

    @property
    def enabled(self) -> bool:
        """Whether memory is on (``memory.enabled``)."""
        return self.settings.memory.enabled

    # ---- index lifecycle ---------------------------------------------------------------

    def _open_index(self) -> MemoryIndex:
        with self._open_lock:
            if self._index is None:
                self.memory_dir.mkdir(parents=True, exist_ok=True)
                index = MemoryIndex(self.index_path, use_fts=self._use_fts,
                                    busy_timeout=BUSY_TIMEOUT_SECONDS)
                try:
                    if self._embedder is not None:
                        index.set_embedding_fingerprint(
                            f"{self._embedder.provider}:{self._embedder.model}")
                except BaseException:
                    index.close()
                    raise
                self._index = index
            return self._index

    def _fail(self, exc: Exception) -> str:
        """Why the index cannot be used right now; drops a damaged connection."""
        text = str(exc)
        if isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text):
            return ("The memory index is locked by another dexter process; "
                    "try again in a moment (the memory files are unaffected).")
        self.close()
        if isinstance(exc, sqlite3.OperationalError):
            return (f"The memory index {self.index_path} cannot be used ({text}). Check that "
                    "the folder is writable, then run `dexter memory reindex`.")
        if isinstance(exc, sqlite3.DatabaseError):
            return (f"The memory index {self.index_path} is damaged ({text}). Run "
                    "`dexter memory reindex` to rebuild it from the memory files.")
        detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else text
        return f"Cannot open the memory index {self.index_path}: {detail}."

    def close(self) -> None:
        """Close the index connection (it reopens on next use)."""
        with self._open_lock:
            index, self._index = self._index, None
        if index is not None:
            index.close()

    def _model(self) -> str | None:
        return self._embedder.model if self._embedder is not None else None

    def _sync_now(self) -> MemoryIndex:
        index = self._open_index()
        with self._sync_lock:
            sync_index(index, self.memory_dir, self.sessions_path, self._model())
        return index

    # ---- status ------------------------------------------------------------------------

    def _mode(self) -> SearchMode:
        usable = self._embedder is not None and time.monotonic() >= self._embed.retry_at
        return "hybrid" if usable else "keyword"

    def _status(self, available: bool, reason: str, files: int,
                counts: IndexCounts | None = None, fts: bool = True) -> MemoryStatus:
        counts = counts or IndexCounts(0, 0, 0, 0)
        # hybrid only when vectors exist (or may still be made): a source that failed and
        # left no vector is keyword search, whatever the retry timer says
        mode: SearchMode = "keyword" if (self._embed.error and counts.embedded == 0) \
            else self._mode()
        return MemoryStatus(
            available=available, reason=reason, mode=mode, files=files,
            chunks=counts.chunks, embedding_provider=self._embedder.provider if self._embedder else "",
            embedding_model=self._model() or "", memory_dir=str(self.memory_dir),
            index_path=str(self.index_path), embedded_chunks=counts.embedded,
            session_chunks=counts.session_chunks, keyword_engine="fts5" if fts else "like",
            enabled=self.enabled)

    def status(self) -> MemoryStatus:
        """Availability, search mode, sizes and the embedding source (syncs the index first)."""
        if not self.enabled:
            return self._status(False, MEMORY_OFF, 0)
        files = len(self.store.list_files())
        try:
            index = self._sync_now()
            counts = index.counts()
        except (sqlite3.Error, OSError) as exc:
            return self._status(False, self._fail(exc), files)
        # With vectors the "Search:" line already names the source; without, say why not.
        reasons = [self._source_reason] if self._embedder is None else []
        if self._embedder is not None and self._embed.error:
            reasons.append(f"last embedding attempt failed: {self._embed.error}"
                           + ("; keyword search until it recovers" if self._mode() == "keyword" else ""))
        if not index.fts_enabled:
            reasons.append("FTS5 is not available in this SQLite build; keyword search scans "
                           "with LIKE (slower, no BM25)")
        return self._status(True, "; ".join(reasons), files, counts, index.fts_enabled)

    # ---- search ------------------------------------------------------------------------

    async def search(self, query: str, max_results: int | None = None) -> SearchOutcome:
        """Hybrid (or keyword-only) search over memory and past conversations. Never raises
        for index or embedding problems: they come back as an unavailable outcome or a note."""
        if not self.enabled:
            return SearchOutcome([], "keyword", available=False, note=MEMORY_OFF)
        limit = max(1, max_results or self.settings.memory.max_results)
        if not query_tokens(query):
            return SearchOutcome([], self._mode(), note="The query has no words to search for.")
        try:
            index = await asyncio.to_thread(self._sync_now)
        except (sqlite3.Error, OSError) as exc:
            return SearchOutcome([], self._mode(), available=False, note=self._fail(exc))
        query_vector = None
        try:
            if self._embedder is not None and self._mode() == "hybrid":
                await self._embed_missing(index)
                query_vector = await self._embed_query(query)
            results = await asyncio.to_thread(self._ranked, index, query, query_vector, limit)
        except (sqlite3.Error, OSError) as exc:
            return SearchOutcome([], self._mode(), available=False, note=self._fail(exc))
        mode: SearchMode = "hybrid" if query_vector is not None else "keyword"
        note = ""
        if self._embedder is not None and query_vector is None:
            note = f"Embeddings unavailable ({self._embed.error}); keyword search only."
        return SearchOutcome(results, mode, note=note)

    def _ranked(self, index: MemoryIndex, query: str, query_vector: list[float] | None,
                limit: int) -> list[SearchResult]:
        candidates = limit * CANDIDATE_FACTOR
        keyword = index.keyword_search(query, candidates)
        vector = ({} if query_vector is None or self._embedder is None
                  else index.vector_search(query_vector, self._embedder.model, candidates))
        chunks = index.load_chunks(set(keyword) | set(vector))
        return rank(chunks, vector, keyword, now=self._clock(), max_results=limit)

    async def _embed_missing(self, index: MemoryIndex) -> None:
        """Embed chunks that have no vector yet; a failure switches to keyword-only for a while."""
        embedder = self._embedder
        if embedder is None or self._embed.busy:
            return  # another search of this manager is embedding the same chunks
        self._embed.busy = True
        try:
            missing = await asyncio.to_thread(index.chunks_without_vectors, embedder.model)
            if not missing:
                return
            hashes = list(missing)
            vectors = await embedder.embed([missing[h] for h in hashes])
            if len(vectors) != len(hashes):
                raise EmbeddingError(f"got {len(vectors)} vectors for {len(hashes)} texts")
            await asyncio.to_thread(index.store_vectors, embedder.model,
                                    {h: normalize(v) for h, v in zip(hashes, vectors, strict=True)})
        except EmbeddingError as exc:
            self._embedding_failed(str(exc))
        except (sqlite3.Error, OSError):
            raise
        except Exception as exc:  # a broken embedding source must not break a search
            self._embedding_failed(_unexpected(exc))
        else:
            self._embed.error = ""
        finally:
            self._embed.busy = False

    async def _embed_query(self, query: str) -> list[float] | None:
        embedder = self._embedder
        if embedder is None or self._mode() != "hybrid":
            return None
        try:
            vectors = await embedder.embed([query])
        except EmbeddingError as exc:
            self._embedding_failed(str(exc))
            return None
        except Exception as exc:  # see _embed_missing
            self._embedding_failed(_unexpected(exc))
            return None
        return normalize(vectors[0]) if vectors else None

    def _embedding_failed(self, message: str) -> None:
        self._embed.error = message
        self._embed.retry_at = time.monotonic() + EMBED_RETRY_SECONDS

    # ---- files -------------------------------------------------------------------------

    def get(self, path: str, from_line: int = 1, lines: int | None = None) -> MemoryText:
        """Lines ``from_line``.. (1-based) of a memory file; a missing file gives empty text.

        ``history/sessions.jsonl`` reads past conversations (line = one turn).
        Raises ``MemoryOff``, ``MemoryPathError`` or ``ValueError`` for bad arguments.
        """
        self._require_enabled()
        if from_line < 1:
            raise ValueError(f"from must be 1 or more, got {from_line}.")
        if lines is not None and lines < 1:
            raise ValueError(f"lines must be 1 or more, got {lines}.")
        if path.strip() == SESSIONS_PATH:
            return self._get_sessions(from_line, lines)
        name = self.store.path(path, self._today()).name
        text = self.store.read(name)
        if text is None:
            return MemoryText(name, "", from_line, from_line - 1, 0, exists=False)
        all_lines = text.splitlines()
        end = len(all_lines) if lines is None else min(len(all_lines), from_line - 1 + lines)
        picked = all_lines[from_line - 1:end]
        return MemoryText(name, "\n".join(picked), from_line, from_line - 1 + len(picked),
                          len(all_lines))

    def _get_sessions(self, from_line: int, lines: int | None) -> MemoryText:
        file = sessions_file(self.settings.home_path)
        try:
            raw = file.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return MemoryText(SESSIONS_PATH, "", from_line, from_line - 1, 0, exists=False)
        total = len(raw.splitlines())
        end = total if lines is None else min(total, from_line - 1 + lines)
        turns = [t for t in read_turns(raw, 0.0) if from_line <= t.line <= end]
        text = "\n\n".join(f"[line {t.line}, {_when(t.timestamp)}]\n{t.text}" for t in turns)
        return MemoryText(SESSIONS_PATH, text, from_line, max(end, from_line - 1), total)

    def update(self, action: UpdateAction = "append", file: str = LONG_TERM_ALIAS,
               content: str | None = None, old_text: str | None = None,
               new_text: str | None = None) -> WriteResult:
        """Append to, edit in or delete from a memory file (``long_term``, ``daily`` or NAME).

        Raises ``MemoryOff``, ``MemoryPathError``, ``MemoryTextNotFound`` or ``ValueError``
        (missing arguments), each with a message that says what to do.
        """
        self._require_enabled()
        today = self._today()
        if action == "append":
            if not content or not content.strip():
                raise ValueError("append needs 'content': the text to add.")
            existing = self.store.read(file, today) or ""
            if _fact_key(content) in {_fact_key(line) for line in existing.splitlines()} or (
                    "\n" in content.strip() and _fact_key(content) in _fact_key(existing)):
                name = self.store.path(file, today).name
                return WriteResult(name, f"Already remembered in {name}; nothing added.")
            return self.store.append(file, content, today)
        if action == "edit":
            if not old_text:
                raise ValueError("edit needs 'old_text' (the exact text to replace) and 'new_text'.")
            replacement = new_text if new_text is not None else content
            if replacement is None:
                raise ValueError("edit needs 'new_text': the text that replaces 'old_text'.")
            return self.store.edit(file, old_text, replacement, today)
        if action == "delete":
            target = old_text or content
            if not target:
                raise ValueError("delete needs 'old_text': the exact text to remove.")
            return self.store.delete(file, target, today)
        raise ValueError(f"Unknown action '{action}'. Use append, edit or delete.")

    def recall(self, budget_tokens: int = 2_000, today: date | None = None) -> Recall:
        """``MEMORY.md``, today's and yesterday's notes, whole, within ``budget_tokens``.

        A file that would push the total over the budget is skipped, never cut; empty or
        missing files are skipped. Reads only the files, so it works with a broken index.
        """
        if not self.enabled:
            return Recall("", (), 0)
        day = today or self._today()
        sections: list[str] = []
        files: list[str] = []
        for name in recall_candidates(day):
            content = (self.store.read(name) or "").strip()
            if not content:
                continue
            trial = "\n\n".join([*sections, f"### {name}\n{content}"])
            if estimate_tokens(trial) > budget_tokens:
                continue
            sections.append(f"### {name}\n{content}")
            files.append(name)
        text = "\n\n".join(sections)
        return Recall(text, tuple(files), estimate_tokens(text))

    async def reindex(self, force: bool = True) -> MemoryStatus:
        """Bring the index up to date. ``force`` rebuilds it from the files: a healthy index
        is emptied (keeping cached vectors), a damaged one is deleted and recreated."""
        if not self.enabled:
            return self.status()
        try:
            if force:
                await asyncio.to_thread(self._reset_index)
            index = await asyncio.to_thread(self._sync_now)
            if self._embedder is not None:
                self._embed.retry_at = 0.0
                await self._embed_missing(index)
        except (sqlite3.Error, OSError) as exc:
            return self._status(False, self._fail(exc), len(self.store.list_files()))
        return self.status()

    def _reset_index(self) -> None:
        try:
            self._open_index().clear()
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise
            self._delete_index()
        except sqlite3.DatabaseError:
            self._delete_index()

    def _delete_index(self) -> None:
        self.close()
        for suffix in _DB_SUFFIXES:
            Path(str(self.index_path) + suffix).unlink(missing_ok=True)

    def daily_file(self, today: date | None = None) -> str:
        """Today's daily file name (local date)."""
        return self.store.path(DAILY_ALIAS, today or self._today()).name

    def _today(self) -> date:
        return self._clock().date()

    def _require_enabled(self) -> None:
        if not self.enabled:
            raise MemoryOff(MEMORY_OFF)


def _when(timestamp: float) -> str:
    if timestamp <= 0:
        return "unknown time"
    return datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M")


__all__ = ["MemoryManager", "MemoryOff", "MemoryStatus", "MemoryText", "Recall", "SearchOutcome"]


def _fact_key(text: str) -> str:
    """A fact as compared for duplicates: case, spacing and a leading bullet ignored."""
    return " ".join(text.strip().lstrip("-*• ").split()).casefold().rstrip(".")


def _unexpected(exc: Exception) -> str:
    """An embedding failure nobody classified, with what it said (scrubbed, one line)."""
    detail = " ".join(scrub(str(exc)).split())[:200]
    return f"unexpected {type(exc).__name__}" + (f": {detail}" if detail else "")
