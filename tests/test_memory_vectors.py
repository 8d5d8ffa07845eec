"""The vector scan of hybrid memory search: numpy and pure Python give the same answer.

Same chunks, same scores, same order (equal scores: larger id first), including many
exact ties, near ties, vectors of another dimension and limits at and past the count;
the pure-Python scan is used when numpy is missing (a search in a process without numpy
finds the same); the index's vector cache follows writes from another connection and a
search with every chunk embedded writes nothing.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import subprocess
import sys
from array import array
from pathlib import Path

import pytest

from dexter.memory import vectors
from dexter.memory.embeddings import normalize
from dexter.memory.index import ChunkRecord, FileState, MemoryIndex, pack_vector
from dexter.memory.vectors import NumpyScan, PythonScan, vector_scan

numpy = pytest.importorskip("numpy")


def unit(rng: random.Random, dim: int) -> list[float]:
    return normalize([rng.gauss(0, 1) for _ in range(dim)])


def rows_with_ties(seed: int = 3) -> list[tuple[int, bytes]]:
    """400 unit vectors of 32 dimensions: a third are exact copies of one vector (ties),
    some differ from it in the last float32 bit (near ties), and a few are 8-dimensional."""
    rng = random.Random(seed)
    base = pack_vector(unit(rng, 32))
    rows: list[tuple[int, bytes]] = []
    for cid in range(1, 401):
        if cid % 3 == 0:
            blob = base
        elif cid % 7 == 0:
            near = array("f", base)
            near[cid % 32] = numpy.nextafter(numpy.float32(near[cid % 32]), numpy.float32(2)).item()
            blob = near.tobytes()
        elif cid % 50 == 0:
            blob = pack_vector(unit(rng, 8))
        else:
            blob = pack_vector(unit(rng, 32))
        rows.append((cid, blob))
    rng.shuffle(rows)
    return rows


@pytest.mark.parametrize("limit", [1, 5, 40, 133, 134, 300, 392, 400, 1000])
def test_numpy_and_python_scans_pick_the_same_chunks_in_the_same_order(limit: int) -> None:
    rows = rows_with_ties()
    rng = random.Random(limit)
    fast, slow = NumpyScan(numpy, rows), PythonScan(rows)
    tie_vector = list(array("f", dict(rows)[3]))
    for query in [tie_vector, unit(rng, 32), unit(rng, 32), [-x for x in tie_vector], unit(rng, 8)]:
        expected = slow.top(query, limit)
        got = fast.top(query, limit)
        assert list(got.items()) == list(expected.items())
        assert len(got) == min(limit, sum(len(b) == 4 * len(query) for _, b in rows))


def test_exact_ties_come_larger_id_first_in_both_scans() -> None:
    blob = pack_vector(normalize([1.0, 2.0, 3.0]))
    rows = [(cid, blob) for cid in (5, 9, 2, 7)]
    for scan in (NumpyScan(numpy, rows), PythonScan(rows)):
        assert list(scan.top([1.0, 2.0, 3.0], 3)) == [9, 7, 5]


def test_a_query_of_another_dimension_or_no_limit_finds_nothing() -> None:
    rows = rows_with_ties()
    for scan in (NumpyScan(numpy, rows), PythonScan(rows)):
        assert scan.top([1.0] * 5, 10) == {}
        assert scan.top([1.0] * 32, 0) == {}


def test_without_numpy_the_pure_python_scan_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = rows_with_ties()
    assert isinstance(vector_scan(rows), NumpyScan)
    monkeypatch.setattr(vectors, "load_numpy", lambda: None)
    assert isinstance(vector_scan(rows), PythonScan)


def fill(index: MemoryIndex, count: int, model: str = "m") -> None:
    rng = random.Random(count)
    chunks = [ChunkRecord(i + 1, i + 1, f"note {i}", f"h{i}", 0.0) for i in range(count)]
    index.replace_file("MEMORY.md", "memory", FileState("memory", 0.0, 1, "x"), chunks, model)
    assert set(index.chunks_without_vectors(model)) == {c.hash for c in chunks}
    index.store_vectors(model, {c.hash: unit(rng, 24) for c in chunks[: count - count // 4]}
                        | {c.hash: [1.0] + [0.0] * 23 for c in chunks[count - count // 4:]})


def test_the_index_answers_the_same_with_and_without_numpy(tmp_path: Path) -> None:
    fast = MemoryIndex(tmp_path / "index.sqlite")
    fill(fast, 300)
    slow = MemoryIndex(tmp_path / "index.sqlite", use_numpy=False)
    rng = random.Random(1)
    for query in [unit(rng, 24), [1.0] + [0.0] * 23, unit(rng, 24)]:
        for limit in (1, 10, 80, 300):
            assert list(fast.vector_search(query, "m", limit).items()) == \
                list(slow.vector_search(query, "m", limit).items())
    fast.close()
    slow.close()


def test_vectors_another_connection_stores_are_searched(tmp_path: Path) -> None:
    reader = MemoryIndex(tmp_path / "index.sqlite")
    writer = MemoryIndex(tmp_path / "index.sqlite")
    chunks = [ChunkRecord(1, 1, "AAPL note", "h1", 0.0)]
    writer.replace_file("MEMORY.md", "memory", FileState("memory", 0.0, 1, "x"), chunks, "m")
    assert reader.vector_search([1.0, 0.0], "m", 5) == {}  # no vectors yet (and now cached)
    assert reader.chunks_without_vectors("m") == {"h1": "AAPL note"}
    writer.store_vectors("m", {"h1": [1.0, 0.0]})
    assert list(reader.vector_search([1.0, 0.0], "m", 5).values()) == [1.0]
    assert reader.chunks_without_vectors("m") == {}
    reader.close()
    writer.close()


def test_a_search_with_every_chunk_embedded_writes_nothing(tmp_path: Path) -> None:
    index = MemoryIndex(tmp_path / "index.sqlite")
    fill(index, 20)
    assert index.chunks_without_vectors("m") == {}
    watcher = sqlite3.connect(tmp_path / "index.sqlite")
    before = watcher.execute("PRAGMA data_version").fetchone()[0]
    for _ in range(3):
        assert index.chunks_without_vectors("m") == {}
        assert len(index.vector_search([1.0] + [0.0] * 23, "m", 5)) == 5
    assert watcher.execute("PRAGMA data_version").fetchone()[0] == before
    watcher.close()
    index.close()


SEARCH_IN_A_FRESH_PROCESS = """
import asyncio, json, sys
if sys.argv[2] == "without":
    sys.modules["numpy"] = None  # import numpy now raises ImportError, as when not installed
from datetime import datetime
from pathlib import Path
from dexter.config import Settings
from dexter.memory.manager import MemoryManager
from dexter.memory.stub import HashingEmbedder

home = Path(sys.argv[1])
manager = MemoryManager(Settings(home=str(home)), env={}, embedder=HashingEmbedder(),
                        clock=lambda: datetime(2025, 6, 1, 12, 0))
found = []
for query in ("NVDA margins and buybacks", "bond ladder for retirement", "dividend income"):
    outcome = asyncio.run(manager.search(query))
    found.append([outcome.mode, [(r.path, r.start_line, round(r.score, 12)) for r in outcome.results]])
manager.close()
print(json.dumps({"numpy": "numpy" in sys.modules and sys.modules["numpy"] is not None,
                  "found": found}))
"""


def test_hybrid_search_without_numpy_installed_finds_the_same(tmp_path: Path) -> None:
    memory = tmp_path / "memory"
    memory.mkdir()
    rng = random.Random(5)
    words = ("NVDA", "margins", "buybacks", "bond", "ladder", "retirement", "dividend", "income",
             "AAPL", "risk", "cash", "valuation")
    for day in range(1, 29):
        notes = ["- " + " ".join(rng.choice(words) for _ in range(12)) for _ in range(6)]
        (memory / f"2025-05-{day:02d}.md").write_text("\n\n".join(notes) + "\n", encoding="utf-8")
    runs = {}
    for mode in ("with", "without"):
        proc = subprocess.run([sys.executable, "-c", SEARCH_IN_A_FRESH_PROCESS, str(tmp_path), mode],
                              capture_output=True, text=True, timeout=120,
                              env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
        assert proc.returncode == 0, proc.stderr
        runs[mode] = json.loads(proc.stdout)
    assert runs["with"]["numpy"] and not runs["without"]["numpy"]
    assert all(mode == "hybrid" and results for mode, results in runs["with"]["found"])
    assert runs["without"]["found"] == runs["with"]["found"]
