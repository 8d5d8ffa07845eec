"""MemoryManager: search over real files, re-indexing, sessions, recall, failures and recovery."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

import pytest

from dexter.config import Settings
from dexter.memory import manager as manager_module
from dexter.memory.embeddings import EmbeddingError
from dexter.memory.manager import MemoryManager, MemoryOff
from dexter.memory.stub import HashingEmbedder

NOW = datetime(2025, 3, 14, 9, 30)


def make(tmp_path: Path, embedder: object = None, **memory: object) -> MemoryManager:
    settings = Settings(home=str(tmp_path / "home"))
    for key, value in memory.items():
        setattr(settings.memory, key, value)
    return MemoryManager(settings, env={}, embedder=embedder, clock=lambda: NOW)  # type: ignore[arg-type]


def write(mgr: MemoryManager, name: str, text: str) -> Path:
    mgr.memory_dir.mkdir(parents=True, exist_ok=True)
    path = mgr.memory_dir / name
    path.write_text(text, encoding="utf-8")
    return path


async def paths(mgr: MemoryManager, query: str) -> list[str]:
    return [r.path for r in (await mgr.search(query)).results]


# ---- keyword search ------------------------------------------------------------------------


async def test_keyword_search_ranks_the_most_relevant_paragraph_first(tmp_path: Path) -> None:
    mgr = make(tmp_path)
    write(mgr, "MEMORY.md", "# Profile\n\n- Lives in Austin, works as a nurse\n\n"
                            "- Risk tolerance: moderate; hates large drawdowns and risk\n")
    write(mgr, "goals.md", "- Wants to retire at 60\n- Low risk bonds for the house fund\n")
    write(mgr, "2025-03-13.md", "- Looked at the AAPL 10-K\n")
    outcome = await mgr.search("what is my risk tolerance?")
    assert outcome.available and outcome.mode == "keyword"
    top = outcome.results[0]
    assert (top.path, top.start_line, top.end_line) == ("MEMORY.md", 1, 5)
    assert "Risk tolerance: moderate" in top.snippet
    assert top.match == "keyword"
    assert "2025-03-13.md" not in [r.path for r in outcome.results]


async def test_keyword_search_stems_words_and_ignores_query_syntax(tmp_path: Path) -> None:
    mgr = make(tmp_path)
    write(mgr, "MEMORY.md", "- Holdings: AAPL, MSFT in the Roth IRA\n")
    assert await paths(mgr, "holding") == ["MEMORY.md"]
    assert await paths(mgr, 'AND OR NOT "roth* (ira') == ["MEMORY.md"]


async def test_a_query_without_words_returns_nothing_with_a_note(tmp_path: Path) -> None:
    outcome = await make(tmp_path).search("?!  ...")
    assert outcome.results == [] and "no words" in outcome.note


async def test_search_returns_at_most_max_results(tmp_path: Path) -> None:
    mgr = make(tmp_path, max_results=3)
    for i in range(8):
        write(mgr, f"note{i}.md", f"- dividend idea number {i} about topic{i}\n")
    assert len((await mgr.search("dividend")).results) == 3
    assert len((await mgr.search("dividend", max_results=5)).results) == 5


async def test_fts5_missing_falls_back_to_like_and_says_so(tmp_path: Path) -> None:
    settings = Settings(home=str(tmp_path / "home"))
    mgr = MemoryManager(settings, env={}, embedder=None, clock=lambda: NOW, use_fts=False)
    write(mgr, "MEMORY.md", "- Risk tolerance: moderate\n\n- Favourite sector: energy\n")
    assert await paths(mgr, "energy sector") == ["MEMORY.md"]
    status = mgr.status()
    assert status.keyword_engine == "like"
    assert "FTS5 is not available" in status.reason


# ---- the index follows the files -----------------------------------------------------------


async def test_hand_edits_new_files_and_deletions_are_seen_by_the_next_search(tmp_path: Path) -> None:
    mgr = make(tmp_path)
    path = write(mgr, "MEMORY.md", "- Holds AAPL\n")
    assert await paths(mgr, "Berkshire") == []
    path.write_text("- Holds AAPL\n\n- Bought Berkshire Hathaway B shares\n")
    outcome = await mgr.search("Berkshire")
    assert [(r.path, r.start_line) for r in outcome.results] == [("MEMORY.md", 1)]
    write(mgr, "2025-03-14.md", "- Considering more Berkshire\n")
    assert sorted(await paths(mgr, "Berkshire")) == ["2025-03-14.md", "MEMORY.md"]
    path.write_text("- Holds AAPL\n")
    assert await paths(mgr, "Berkshire") == ["2025-03-14.md"]
    (mgr.memory_dir / "2025-03-14.md").unlink()
    assert await paths(mgr, "Berkshire") == []
    assert mgr.status().chunks == 1


async def test_touching_a_file_without_changing_it_does_not_reindex(tmp_path: Path) -> None:
    mgr = make(tmp_path)
    path = write(mgr, "MEMORY.md", "- Holds AAPL\n")
    await mgr.search("AAPL")
    os.utime(path, (1_000_000_000, 1_000_000_000))
    assert await paths(mgr, "AAPL") == ["MEMORY.md"]
    with sqlite3.connect(mgr.index_path) as conn:
        assert conn.execute("SELECT mtime FROM files").fetchone()[0] == 1_000_000_000


async def test_memory_update_is_searchable_at_once(tmp_path: Path) -> None:
    mgr = make(tmp_path)
    mgr.update("append", "long_term", "- Emergency fund: 6 months of expenses")
    assert await paths(mgr, "emergency fund") == ["MEMORY.md"]


# ---- past conversations --------------------------------------------------------------------


def write_sessions(mgr: MemoryManager, *entries: dict[str, object]) -> Path:
    path = mgr.settings.home_path / "history" / "sessions.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(e) + "\n" for e in entries) + "not json\n")
    return path


async def test_past_conversations_are_indexed_and_readable(tmp_path: Path) -> None:
    mgr = make(tmp_path)
    write_sessions(mgr,
                   {"timestamp": "2025-03-10T10:00:00", "query": "Compare KO and PEP margins",
                    "answer": "PEP has higher revenue; KO has the higher operating margin."},
                   {"timestamp": "2025-03-12T10:00:00", "query": "What about NVDA?",
                    "answer": "NVDA grew data center revenue."})
    outcome = await mgr.search("operating margin KO")
    top = outcome.results[0]
    assert (top.path, top.source, top.start_line, top.date) == (
        "history/sessions.jsonl", "sessions", 1, "2025-03-10")
    assert top.score == pytest.approx(0.5 ** (3.98 / 30), rel=0.01)  # 3.98 days old
    got = mgr.get("history/sessions.jsonl", from_line=1, lines=1)
    assert "User: Compare KO and PEP margins" in got.text
    assert "NVDA" not in got.text
    assert mgr.status().session_chunks == 2


async def test_sessions_are_skipped_when_index_sessions_is_off(tmp_path: Path) -> None:
    mgr = make(tmp_path, index_sessions=False)
    write_sessions(mgr, {"timestamp": 1_741_600_000, "query": "KO margins", "answer": "KO"})
    assert await paths(mgr, "KO margins") == []


# ---- get / update --------------------------------------------------------------------------


def test_get_returns_the_requested_lines(tmp_path: Path) -> None:
    mgr = make(tmp_path)
    write(mgr, "MEMORY.md", "one\ntwo\nthree\nfour\n")
    got = mgr.get("MEMORY.md", from_line=2, lines=2)
    assert (got.text, got.from_line, got.to_line, got.total_lines) == ("two\nthree", 2, 3, 4)
    assert mgr.get("long_term").text == "one\ntwo\nthree\nfour"
    missing = mgr.get("daily")
    assert (missing.path, missing.text, missing.exists) == ("2025-03-14.md", "", False)
    with pytest.raises(ValueError, match="from must be 1 or more"):
        mgr.get("MEMORY.md", from_line=0)


def test_update_validates_arguments_per_action(tmp_path: Path) -> None:
    mgr = make(tmp_path)
    with pytest.raises(ValueError, match="append needs 'content'"):
        mgr.update("append", "long_term")
    with pytest.raises(ValueError, match="edit needs 'old_text'"):
        mgr.update("edit", "long_term", new_text="x")
    with pytest.raises(ValueError, match="delete needs 'old_text'"):
        mgr.update("delete", "long_term")


# ---- recall --------------------------------------------------------------------------------


@pytest.fixture
def chars_as_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(manager_module, "estimate_tokens", len)


@pytest.mark.usefixtures("chars_as_tokens")
def test_recall_loads_memory_today_and_yesterday_in_that_order(tmp_path: Path) -> None:
    mgr = make(tmp_path)
    write(mgr, "2025-03-13.md", "- yesterday note")
    write(mgr, "2025-03-14.md", "- today note")
    write(mgr, "2025-03-12.md", "- older note")
    write(mgr, "MEMORY.md", "- long-term fact")
    recall = mgr.recall(budget_tokens=2_000)
    assert recall.files == ("MEMORY.md", "2025-03-14.md", "2025-03-13.md")
    assert recall.text == ("### MEMORY.md\n- long-term fact\n\n### 2025-03-14.md\n- today note\n\n"
                           "### 2025-03-13.md\n- yesterday note")
    assert recall.tokens == len(recall.text)


@pytest.mark.usefixtures("chars_as_tokens")
def test_recall_skips_a_file_that_does_not_fit_instead_of_cutting_it(tmp_path: Path) -> None:
    mgr = make(tmp_path)
    write(mgr, "MEMORY.md", "- long-term fact")                   # 30 chars as a section
    write(mgr, "2025-03-14.md", "- " + "x" * 200)                   # too big
    write(mgr, "2025-03-13.md", "- yesterday")                      # 29 chars as a section
    exact = len("### MEMORY.md\n- long-term fact\n\n### 2025-03-13.md\n- yesterday")
    fits = mgr.recall(budget_tokens=exact)
    assert fits.files == ("MEMORY.md", "2025-03-13.md")
    assert "x" * 10 not in fits.text
    one_short = mgr.recall(budget_tokens=exact - 1)
    assert one_short.files == ("MEMORY.md",)
    assert mgr.recall(budget_tokens=10).files == ()


def test_recall_uses_the_local_date_given(tmp_path: Path) -> None:
    mgr = make(tmp_path)
    write(mgr, "2025-01-01.md", "- new year")
    assert mgr.recall(today=datetime(2025, 1, 2).date()).files == ("2025-01-01.md",)


# ---- disabled ------------------------------------------------------------------------------


async def test_disabled_memory_says_so_everywhere(tmp_path: Path) -> None:
    mgr = make(tmp_path, enabled=False)
    status = mgr.status()
    assert (status.available, status.enabled) == (False, False)
    assert "memory.enabled = false" in status.reason
    outcome = await mgr.search("anything")
    assert not outcome.available and "Memory is off" in outcome.note
    assert mgr.recall().files == ()
    with pytest.raises(MemoryOff):
        mgr.update("append", "long_term", "x")
    assert not mgr.memory_dir.exists()


# ---- damaged or locked index ---------------------------------------------------------------


async def test_a_corrupt_index_reports_unavailable_and_reindex_rebuilds_it(tmp_path: Path) -> None:
    mgr = make(tmp_path)
    write(mgr, "MEMORY.md", "- Holds AAPL in the brokerage account\n")
    mgr.index_path.write_bytes(b"this is not a sqlite database" * 100)
    status = mgr.status()
    assert not status.available
    assert "damaged" in status.reason and "dexter memory reindex" in status.reason
    outcome = await mgr.search("AAPL")
    assert not outcome.available and outcome.results == [] and "damaged" in outcome.note
    assert mgr.recall().files == ("MEMORY.md",)  # files still work
    mgr.update("append", "long_term", "- Also holds MSFT")
    rebuilt = await mgr.reindex()
    assert rebuilt.available, rebuilt.reason
    assert await paths(mgr, "MSFT") == ["MEMORY.md"]


async def test_a_malformed_database_page_is_also_recovered(tmp_path: Path) -> None:
    mgr = make(tmp_path)
    write(mgr, "MEMORY.md", "- Holds AAPL\n")
    assert mgr.status().available
    mgr.close()
    data = bytearray(mgr.index_path.read_bytes())
    assert len(data) > 100
    # Keep the 100-byte header, wreck every page after it.
    data[100:] = b"\xff" * (len(data) - 100)
    mgr.index_path.write_bytes(bytes(data))
    for suffix in ("-wal", "-shm"):
        Path(str(mgr.index_path) + suffix).unlink(missing_ok=True)
    outcome = await mgr.search("AAPL")
    assert not outcome.available
    assert (await mgr.reindex()).available
    assert await paths(mgr, "AAPL") == ["MEMORY.md"]


async def test_a_locked_index_is_reported_then_works_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(manager_module, "BUSY_TIMEOUT_SECONDS", 0.05)
    mgr = make(tmp_path)
    write(mgr, "MEMORY.md", "- Holds AAPL\n")
    assert mgr.status().available
    other = sqlite3.connect(mgr.index_path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    write(mgr, "goals.md", "- Retire at 60\n")  # the next search must write to the index
    outcome = await mgr.search("retire")
    assert not outcome.available and "locked" in outcome.note
    other.execute("ROLLBACK")
    other.close()
    assert await paths(mgr, "retire") == ["goals.md"]


def test_reindex_keeps_the_embedding_cache_of_a_healthy_index(tmp_path: Path) -> None:
    import asyncio

    embedder = HashingEmbedder()
    mgr = make(tmp_path, embedder=embedder)
    write(mgr, "MEMORY.md", "- Holds AAPL\n")
    asyncio.run(mgr.reindex())
    assert embedder.calls == [["- Holds AAPL"]]
    asyncio.run(mgr.reindex())
    assert embedder.calls == [["- Holds AAPL"]], "cached vectors are reused"


# ---- vectors -------------------------------------------------------------------------------


class ConceptEmbedder:
    """Vectors by concept, so a note can match a query without sharing a word."""

    provider = "test"

    def __init__(self, model: str = "concepts-v1") -> None:
        self.model = model
        self.calls: list[list[str]] = []

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return [self._vec(t.lower()) for t in texts]

    @staticmethod
    def _vec(text: str) -> list[float]:
        if any(w in text for w in ("retire", "pension", "401k")):
            return [1.0, 0.0, 0.0]
        if "tesla" in text or "tsla" in text:
            return [0.0, 1.0, 0.0]
        return [0.0, 0.0, 1.0]


async def test_hybrid_search_finds_meaning_without_shared_words(tmp_path: Path) -> None:
    embedder = ConceptEmbedder()
    mgr = make(tmp_path, embedder=embedder)
    write(mgr, "MEMORY.md", "- Maxes out the 401k every year\n")
    write(mgr, "goals.md", "- Retirement plans: stop work at 60\n")
    write(mgr, "trades.md", "- Sold all TSLA in 2024\n")
    outcome = await mgr.search("retirement plans")
    assert outcome.mode == "hybrid"
    kinds = {r.snippet: (r.match, round(r.score, 3)) for r in outcome.results}
    assert kinds["- Retirement plans: stop work at 60"] == ("both", 1.0)
    assert kinds["- Maxes out the 401k every year"] == ("vector", 0.7)
    assert "- Sold all TSLA in 2024" not in kinds
    status = mgr.status()
    assert (status.mode, status.embedding_provider, status.embedding_model) == ("hybrid", "test", "concepts-v1")
    assert status.embedded_chunks == status.chunks


async def test_embedding_model_change_re_embeds_and_old_vectors_are_not_mixed(tmp_path: Path) -> None:
    write(make(tmp_path), "MEMORY.md", "- Maxes out the 401k every year\n")
    first = ConceptEmbedder("concepts-v1")
    await make(tmp_path, embedder=first).search("retire")
    assert first.calls[0] == ["- Maxes out the 401k every year"]
    second = ConceptEmbedder("concepts-v2")
    mgr = make(tmp_path, embedder=second)
    await mgr.search("retire")
    assert second.calls[0] == ["- Maxes out the 401k every year"], "re-embedded for the new model"
    with sqlite3.connect(mgr.index_path) as conn:
        assert conn.execute("SELECT DISTINCT embedding_model FROM chunks").fetchall() == [("concepts-v2",)]
    back = ConceptEmbedder("concepts-v1")
    await make(tmp_path, embedder=back).search("retire")
    assert back.calls == [["retire"]], "only the query: chunk vectors came from the cache"


class BrokenEmbedder(ConceptEmbedder):
    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        raise EmbeddingError("test embeddings failed with HTTP 503 (overloaded)")


async def test_embedding_failures_degrade_to_keyword_search_and_are_reported(tmp_path: Path) -> None:
    embedder = BrokenEmbedder()
    mgr = make(tmp_path, embedder=embedder)
    write(mgr, "MEMORY.md", "- Retirement plans: stop work at 60\n")
    outcome = await mgr.search("retirement")
    assert outcome.available and outcome.mode == "keyword"
    assert [r.path for r in outcome.results] == ["MEMORY.md"]
    assert "HTTP 503" in outcome.note
    status = mgr.status()
    assert status.mode == "keyword" and "HTTP 503" in status.reason
    calls = len(embedder.calls)
    await mgr.search("retirement")
    assert len(embedder.calls) == calls, "no retry storm: failures back off"


def test_keyword_only_status_explains_how_to_get_hybrid(tmp_path: Path) -> None:
    settings = Settings(home=str(tmp_path / "home"))
    status = MemoryManager(settings, env={}).status()
    assert status.available and status.mode == "keyword"
    assert status.embedding_provider == ""
    assert "OPENAI_API_KEY" in status.reason and "keyword" not in status.embedding_model


async def test_concurrent_searches_share_one_index_and_embed_once(tmp_path: Path) -> None:
    import asyncio

    embedder = HashingEmbedder()
    mgr = make(tmp_path, embedder=embedder)
    for i in range(5):
        write(mgr, f"note{i}.md", f"- dividend idea {i}\n")
    outcomes = await asyncio.gather(*(mgr.search("dividend") for _ in range(4)))
    assert all(len(o.results) == 5 for o in outcomes)
    chunk_batches = [c for c in embedder.calls if c != ["dividend"]]
    assert sum(len(c) for c in chunk_batches) == 5, "each chunk embedded once"


async def test_an_index_that_cannot_be_opened_says_why(tmp_path: Path) -> None:
    mgr = make(tmp_path)
    write(mgr, "MEMORY.md", "- Holds AAPL\n")
    mgr.index_path.mkdir()  # a directory where the database file should be
    outcome = await mgr.search("AAPL")
    assert not outcome.available and "cannot be used" in outcome.note
    assert "unable to open database file" in outcome.note
    assert mgr.recall().files == ("MEMORY.md",)
