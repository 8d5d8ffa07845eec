"""The SQLite index of memory chunks (``index.sqlite``, WAL mode): keyword and vector lookup.

Tables:

- ``chunks(id, path, source, start_line, end_line, content, hash, mtime, embedding,
  embedding_model)``: ``source`` is ``memory`` or ``sessions``; ``mtime`` is the file's
  modification time (memory) or the conversation's timestamp (sessions); ``embedding`` is a
  float32 BLOB of a unit vector.
- ``chunks_fts``: an FTS5 table (porter stemming) whose rowid is the chunk id; ranked by
  ``bm25()``. Without FTS5 in the SQLite build, keyword search scans with ``LIKE``.
- ``files(path, source, mtime, size, hash)``: what was indexed, to spot changed, new and
  deleted files.
- ``embedding_cache(hash, model, embedding)``: vectors by content hash and model, so an
  unchanged paragraph is never embedded twice.
- ``meta(key, value)``: the schema version and the embedding fingerprint
  (``provider:model``); a new fingerprint clears the chunks' vectors.

The files are the source of truth; this database can always be deleted and rebuilt.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from dexter.memory.vectors import VectorScan, vector_scan

SCHEMA_VERSION = "1"
MAX_QUERY_TOKENS = 32
_TOKEN_RE = re.compile(r"\w+", re.UNICODE)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, source TEXT NOT NULL, mtime REAL NOT NULL, size INTEGER NOT NULL,
    hash TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY, path TEXT NOT NULL, source TEXT NOT NULL DEFAULT 'memory',
    start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, content TEXT NOT NULL,
    hash TEXT NOT NULL, mtime REAL NOT NULL, embedding BLOB, embedding_model TEXT);
CREATE INDEX IF NOT EXISTS idx_chunks_path ON chunks(path);
CREATE INDEX IF NOT EXISTS idx_chunks_hash ON chunks(hash);
CREATE TABLE IF NOT EXISTS embedding_cache (
    hash TEXT NOT NULL, model TEXT NOT NULL, embedding BLOB NOT NULL,
    PRIMARY KEY (hash, model));
"""


@dataclass(frozen=True, slots=True)
class ChunkRecord:
    """A chunk to store: line range, text, hash and its time (for decay)."""

    start_line: int
    end_line: int
    content: str
    hash: str
    mtime: float


@dataclass(frozen=True, slots=True)
class StoredChunk:
    """A chunk read back from the index."""

    id: int
    path: str
    source: str
    start_line: int
    end_line: int
    content: str
    mtime: float


@dataclass(frozen=True, slots=True)
class FileState:
    """What the index knows about one indexed file."""

    source: str
    mtime: float
    size: int
    hash: str


@dataclass(frozen=True, slots=True)
class IndexCounts:
    """Sizes for status displays."""

    files: int
    chunks: int
    embedded: int
    session_chunks: int


def query_tokens(text: str) -> list[str]:
    """The distinct lower-cased word tokens of a query, at most ``MAX_QUERY_TOKENS``."""
    return list(dict.fromkeys(t.lower() for t in _TOKEN_RE.findall(text)))[:MAX_QUERY_TOKENS]


def fts_query(tokens: Iterable[str]) -> str:
    """An FTS5 MATCH expression: every token quoted (so no token is read as syntax), ORed."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in tokens)


def pack_vector(vector: Sequence[float]) -> bytes:
    """float32 bytes of ``vector``."""
    return array("f", vector).tobytes()


class MemoryIndex:
    """One open ``index.sqlite``. Thread-safe; every method may raise ``sqlite3.Error``."""

    def __init__(self, db_path: Path, *, use_fts: bool = True, busy_timeout: float = 5.0,
                 use_numpy: bool = True) -> None:
        self.db_path = db_path
        self._lock = threading.RLock()
        self._use_numpy = use_numpy
        # Read caches, dropped on this connection's writes (``_changed``) and when another
        # connection commits (``PRAGMA data_version`` moves): the loaded vectors, and the
        # model every chunk is known to have a vector of.
        self._vectors: tuple[str, VectorScan] | None = None
        self._complete: str | None = None
        self._data_version: int | None = None
        self._conn = sqlite3.connect(db_path, timeout=busy_timeout, check_same_thread=False,
                                     isolation_level=None)
        try:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.executescript(_SCHEMA)
            self.fts_enabled = use_fts and self._create_fts()
            self._check_version()
        except BaseException:
            self._conn.close()
            raise

    def _changed(self) -> None:
        self._vectors = None
        self._complete = None

    def _check_fresh(self) -> None:
        """Drop the read caches when another connection changed the database."""
        version = self._conn.execute("PRAGMA data_version").fetchone()[0]
        if version != self._data_version:
            self._data_version = version
            self._changed()

    def _create_fts(self) -> bool:
        try:
            self._conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING "
                               "fts5(content, tokenize='porter unicode61')")
        except sqlite3.OperationalError as exc:
            if "fts5" in str(exc).lower():
                return False
            raise
        return True

    def _check_version(self) -> None:
        row = self._conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        if row is None:
            self._conn.execute("INSERT INTO meta(key, value) VALUES ('schema_version', ?)",
                               (SCHEMA_VERSION,))
        elif row[0] != SCHEMA_VERSION:
            raise sqlite3.DatabaseError(f"index schema version {row[0]} is not {SCHEMA_VERSION}")

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            self._conn.close()

    def clear(self) -> None:
        """Forget every file and chunk; the embedding cache stays (it is keyed by content)."""
        with self._lock, self._transaction():
            if self.fts_enabled:
                self._conn.execute("DELETE FROM chunks_fts")
            self._conn.execute("DELETE FROM chunks")
            self._conn.execute("DELETE FROM files")
            self._changed()

    # ---- files -------------------------------------------------------------------------

    def file_states(self) -> dict[str, FileState]:
        """Every indexed file by logical path."""
        with self._lock:
            rows = self._conn.execute("SELECT path, source, mtime, size, hash FROM files").fetchall()
        return {r[0]: FileState(r[1], r[2], r[3], r[4]) for r in rows}

    def touch_file(self, path: str, mtime: float, size: int) -> None:
        """Record a new mtime/size for a file whose content hash did not change."""
        with self._lock:
            self._conn.execute("UPDATE files SET mtime=?, size=? WHERE path=?", (mtime, size, path))

    def replace_file(self, path: str, source: str, state: FileState, chunks: Sequence[ChunkRecord],
                     model: str | None) -> None:
        """Swap all chunks of ``path`` for ``chunks``; cached vectors of ``model`` are reused."""
        with self._lock, self._transaction():
            self._delete_chunks(path)
            for chunk in chunks:
                blob = self._cached_vector(chunk.hash, model) if model else None
                cur = self._conn.execute(
                    "INSERT INTO chunks(path, source, start_line, end_line, content, hash, mtime,"
                    " embedding, embedding_model) VALUES (?,?,?,?,?,?,?,?,?)",
                    (path, source, chunk.start_line, chunk.end_line, chunk.content, chunk.hash,
                     chunk.mtime, blob, model if blob is not None else None))
                if self.fts_enabled:
                    self._conn.execute("INSERT INTO chunks_fts(rowid, content) VALUES (?, ?)",
                                       (cur.lastrowid, chunk.content))
            self._conn.execute(
                "INSERT OR REPLACE INTO files(path, source, mtime, size, hash) VALUES (?,?,?,?,?)",
                (path, source, state.mtime, state.size, state.hash))
            self._changed()

    def remove_file(self, path: str) -> None:
        """Forget a file and its chunks."""
        with self._lock, self._transaction():
            self._delete_chunks(path)
            self._conn.execute("DELETE FROM files WHERE path=?", (path,))
            self._changed()

    def _delete_chunks(self, path: str) -> None:
        if self.fts_enabled:
            self._conn.execute(
                "DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE path=?)", (path,))
        self._conn.execute("DELETE FROM chunks WHERE path=?", (path,))

    def _cached_vector(self, content_hash: str, model: str) -> bytes | None:
        row = self._conn.execute("SELECT embedding FROM embedding_cache WHERE hash=? AND model=?",
                                 (content_hash, model)).fetchone()
        return None if row is None else bytes(row[0])

    # ---- embeddings --------------------------------------------------------------------

    def set_embedding_fingerprint(self, fingerprint: str) -> bool:
        """Record ``provider:model``; when it changed, drop every chunk's vector. True if so."""
        with self._lock, self._transaction():
            row = self._conn.execute(
                "SELECT value FROM meta WHERE key='embedding_fingerprint'").fetchone()
            if row is not None and row[0] == fingerprint:
                return False
            self._conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES "
                               "('embedding_fingerprint', ?)", (fingerprint,))
            if row is None:
                return False
            self._conn.execute("UPDATE chunks SET embedding=NULL, embedding_model=NULL")
            self._changed()
            return True

    def chunks_without_vectors(self, model: str) -> dict[str, str]:
        """``hash -> content`` for chunks with no vector of ``model`` (cache hits filled first)."""
        with self._lock:
            self._check_fresh()
            if self._complete == model:
                return {}  # nothing changed since every chunk had one: no scan, no write
            with self._transaction():
                filled = self._conn.execute(
                    "UPDATE chunks SET embedding=(SELECT c.embedding FROM embedding_cache c WHERE "
                    "c.hash=chunks.hash AND c.model=?), embedding_model=? WHERE "
                    "(embedding IS NULL OR embedding_model IS NOT ?) AND EXISTS (SELECT 1 FROM "
                    "embedding_cache c WHERE c.hash=chunks.hash AND c.model=?)",
                    (model, model, model, model)).rowcount
                rows = self._conn.execute(
                    "SELECT hash, content FROM chunks WHERE embedding IS NULL OR "
                    "embedding_model IS NOT ?", (model,)).fetchall()
            if filled:
                self._changed()
            if not rows:
                self._complete = model
        return {r[0]: r[1] for r in rows}

    def store_vectors(self, model: str, vectors: dict[str, Sequence[float]]) -> None:
        """Cache vectors by content hash and attach them to every chunk with that hash."""
        with self._lock, self._transaction():
            for content_hash, vector in vectors.items():
                blob = pack_vector(vector)
                self._conn.execute("INSERT OR REPLACE INTO embedding_cache(hash, model, embedding)"
                                   " VALUES (?,?,?)", (content_hash, model, blob))
                self._conn.execute("UPDATE chunks SET embedding=?, embedding_model=? WHERE hash=?",
                                   (blob, model, content_hash))
            self._changed()

    def vector_search(self, query: Sequence[float], model: str, limit: int) -> dict[int, float]:
        """The ``limit`` chunks closest to the unit vector ``query``: ``id -> cosine``."""
        with self._lock:
            self._check_fresh()
            if self._vectors is None or self._vectors[0] != model:
                rows = self._conn.execute(
                    "SELECT id, embedding FROM chunks WHERE embedding IS NOT NULL AND "
                    "embedding_model=?", (model,)).fetchall()
                self._vectors = (model, vector_scan(rows, use_numpy=self._use_numpy))
            scan = self._vectors[1]
        return scan.top(query, limit)

    # ---- keyword -----------------------------------------------------------------------

    def keyword_search(self, query: str, limit: int) -> dict[int, float]:
        """Chunks matching any query word: ``id -> relevance`` (higher is better, > 0)."""
        tokens = query_tokens(query)
        if not tokens:
            return {}
        with self._lock:
            if self.fts_enabled:
                rows = self._conn.execute(
                    "SELECT rowid, bm25(chunks_fts) AS rank FROM chunks_fts WHERE chunks_fts "
                    "MATCH ? ORDER BY rank LIMIT ?", (fts_query(tokens), limit)).fetchall()
                return {r[0]: max(-float(r[1]), 1e-9) for r in rows}
            clause = " OR ".join("content LIKE ? ESCAPE '\\'" for _ in tokens)
            like_rows = self._conn.execute(
                f"SELECT id, content FROM chunks WHERE {clause}",
                [f"%{_escape_like(t)}%" for t in tokens]).fetchall()
        scored = sorted(((_like_score(content, tokens), cid) for cid, content in like_rows),
                        reverse=True)
        return {cid: score for score, cid in scored[:limit] if score > 0}

    # ---- reading -----------------------------------------------------------------------

    def load_chunks(self, ids: Iterable[int]) -> dict[int, StoredChunk]:
        """The chunks with these ids."""
        wanted = list(ids)
        if not wanted:
            return {}
        marks = ",".join("?" for _ in wanted)
        with self._lock:
            rows = self._conn.execute(
                "SELECT id, path, source, start_line, end_line, content, mtime FROM chunks "
                f"WHERE id IN ({marks})", wanted).fetchall()
        return {r[0]: StoredChunk(*r) for r in rows}

    def counts(self) -> IndexCounts:
        """Numbers of files, chunks, chunks with vectors, and session chunks."""
        with self._lock:
            files = self._conn.execute("SELECT COUNT(*) FROM files").fetchone()[0]
            chunks, embedded, sessions = self._conn.execute(
                "SELECT COUNT(*), COUNT(embedding), COALESCE(SUM(source='sessions'), 0) "
                "FROM chunks").fetchone()
        return IndexCounts(files, chunks, embedded, sessions)

    def _transaction(self) -> _Transaction:
        return _Transaction(self._conn)


class _Transaction:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` (``ROLLBACK`` on error) on an autocommit connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def __enter__(self) -> None:
        self._conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self._conn.execute("COMMIT")
        else:
            self._conn.execute("ROLLBACK")


def _escape_like(token: str) -> str:
    return token.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _like_score(content: str, tokens: Sequence[str]) -> float:
    """Fallback relevance: distinct query words present, plus a little for repeats."""
    lowered = content.lower()
    present = [lowered.count(t) for t in tokens]
    return sum(1.0 + min(n - 1, 4) * 0.1 for n in present if n > 0)
