"""Ranking: hybrid score merge, 30-day half-life decay, MMR diversity, min score."""

from __future__ import annotations

from datetime import datetime

import pytest

from dexter.memory.index import StoredChunk
from dexter.memory.search import (
    chunk_age_days,
    decay_multiplier,
    merge_scores,
    mmr_order,
    rank,
    snippet,
)

NOW = datetime(2025, 3, 31, 12, 0)


def chunk(cid: int, path: str, content: str, source: str = "memory", mtime: float = 0.0) -> StoredChunk:
    return StoredChunk(cid, path, source, 1, 1, content, mtime)


def test_hybrid_score_is_70_percent_vector_30_percent_keyword() -> None:
    merged = merge_scores({1: 0.5, 2: 0.9}, {1: 8.0, 3: 2.0})
    assert {cid: kind for cid, (_, kind) in merged.items()} == {1: "both", 2: "vector", 3: "keyword"}
    assert merged[1][0] == pytest.approx(0.7 * 0.5 + 0.3 * 1.0)
    assert merged[2][0] == pytest.approx(0.7 * 0.9)
    assert merged[3][0] == pytest.approx(0.3 * 0.25)  # 2.0 / best 8.0


def test_one_sided_results_get_the_whole_weight() -> None:
    assert merge_scores({}, {1: 4.0, 2: 1.0}) == {1: (1.0, "keyword"), 2: (0.25, "keyword")}
    only_vector = merge_scores({1: 0.8}, {})
    assert only_vector[1][1] == "vector" and only_vector[1][0] == pytest.approx(0.8)


def test_negative_cosines_count_as_zero() -> None:
    assert merge_scores({1: -0.4}, {})[1][0] == 0.0


def test_decay_halves_every_30_days() -> None:
    assert decay_multiplier(0) == 1.0
    assert decay_multiplier(30) == pytest.approx(0.5)
    assert decay_multiplier(60) == pytest.approx(0.25)
    assert decay_multiplier(15) == pytest.approx(0.7071, abs=1e-4)
    assert decay_multiplier(-5) == 1.0


def test_age_comes_from_the_daily_file_name_or_the_conversation_time() -> None:
    assert chunk_age_days(chunk(1, "2025-03-01.md", "x"), NOW) == 30.0
    assert chunk_age_days(chunk(1, "MEMORY.md", "x"), NOW) is None
    assert chunk_age_days(chunk(1, "goals.md", "x"), NOW) is None
    ten_days_ago = NOW.timestamp() - 10 * 86_400
    age = chunk_age_days(chunk(1, "history/sessions.jsonl", "x", "sessions", ten_days_ago), NOW)
    assert age == pytest.approx(10.0)


def test_a_30_day_old_note_scores_half_and_memory_md_never_decays() -> None:
    chunks = {1: chunk(1, "MEMORY.md", "prefers dividend stocks"),
              2: chunk(2, "2025-03-01.md", "bought dividend etf")}
    results = rank(chunks, {}, {1: 5.0, 2: 5.0}, now=NOW, max_results=6)
    by_path = {r.path: r for r in results}
    assert by_path["MEMORY.md"].score == pytest.approx(1.0)
    assert by_path["2025-03-01.md"].score == pytest.approx(0.5)
    assert [r.path for r in results] == ["MEMORY.md", "2025-03-01.md"]
    assert by_path["2025-03-01.md"].date == "2025-03-01"
    assert by_path["MEMORY.md"].date == ""


def test_mmr_prefers_a_diverse_result_over_a_near_duplicate() -> None:
    texts = ["apple stock buy long term", "apple stock buy long term", "bond ladder treasury income"]
    assert mmr_order([1.0, 0.95, 0.9], texts, k=2) == [0, 2]


def test_mmr_keeps_score_order_when_items_are_all_different() -> None:
    texts = ["alpha beta", "gamma delta", "epsilon zeta"]
    assert mmr_order([0.5, 0.9, 0.7], texts, k=3) == [1, 2, 0]


def test_rank_applies_mmr_and_the_result_limit() -> None:
    chunks = {i: chunk(i, "MEMORY.md", "holds apple shares in ira") for i in range(1, 4)}
    chunks[4] = chunk(4, "goals.md", "retire at 55 with a paid off house")
    keyword = {1: 10.0, 2: 9.9, 3: 9.8, 4: 6.0}
    results = rank(chunks, {}, keyword, now=NOW, max_results=2)
    assert [r.path for r in results] == ["MEMORY.md", "goals.md"]


def test_results_under_the_minimum_score_are_dropped() -> None:
    chunks = {1: chunk(1, "MEMORY.md", "a"), 2: chunk(2, "goals.md", "b")}
    results = rank(chunks, {}, {1: 10.0, 2: 0.5}, now=NOW, max_results=6)
    assert [r.path for r in results] == ["MEMORY.md"]  # 0.05 < 0.1


def test_snippet_is_cut_at_700_characters() -> None:
    assert snippet("x" * 700) == "x" * 700
    assert snippet("x" * 701) == "x" * 700 + "..."
