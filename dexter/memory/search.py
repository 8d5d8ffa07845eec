"""Ranking: hybrid score, temporal decay and MMR diversity (pure functions, no I/O).

1. Scores are normalised to 0..1: a vector score is the cosine clamped at 0; a keyword
   score is the chunk's BM25 relevance divided by the best keyword hit's.
2. ``final = 0.7·vector + 0.3·keyword`` when both searches returned something; when only
   one did, it carries the whole weight. Results below ``MIN_SCORE`` are dropped.
3. Decay: dated daily files and past conversations lose half their score every 30 days
   (``0.5 ** (age_days / 30)``). ``MEMORY.md`` and other named files never decay.
4. MMR over the best ``2 × max_results``: repeatedly pick the item maximising
   ``λ·relevance − (1−λ)·max Jaccard(item, picked)`` with λ = 0.7, relevance being the score
   divided by the best score; ties go to the higher score.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Literal

from dexter.memory.index import StoredChunk
from dexter.memory.store import daily_file_date

VECTOR_WEIGHT = 0.7
KEYWORD_WEIGHT = 0.3
MIN_SCORE = 0.1
HALF_LIFE_DAYS = 30.0
MMR_LAMBDA = 0.7
SNIPPET_CHARS = 700
_WORD_RE = re.compile(r"[a-z0-9_]+")

MatchKind = Literal["both", "vector", "keyword"]


@dataclass(frozen=True, slots=True)
class SearchResult:
    """One hit, as the tools and the CLI show it."""

    path: str
    start_line: int
    end_line: int
    score: float
    snippet: str
    source: str
    match: MatchKind
    date: str

    def to_dict(self) -> dict[str, object]:
        """The JSON shape ``memory_search`` returns."""
        return {"path": self.path, "start_line": self.start_line, "end_line": self.end_line,
                "score": round(self.score, 4), "match": self.match, "source": self.source,
                "date": self.date, "snippet": self.snippet}


@dataclass(frozen=True, slots=True)
class _Scored:
    chunk: StoredChunk
    score: float
    match: MatchKind


def merge_scores(vector: Mapping[int, float], keyword: Mapping[int, float],
                 vector_weight: float = VECTOR_WEIGHT,
                 keyword_weight: float = KEYWORD_WEIGHT) -> dict[int, tuple[float, MatchKind]]:
    """Combine normalised vector and keyword scores into ``id -> (score, match kind)``."""
    if not vector:
        vector_weight, keyword_weight = 0.0, 1.0
    elif not keyword:
        vector_weight, keyword_weight = 1.0, 0.0
    else:
        total = vector_weight + keyword_weight
        vector_weight, keyword_weight = vector_weight / total, keyword_weight / total
    best_kw = max(keyword.values(), default=0.0)
    merged: dict[int, tuple[float, MatchKind]] = {}
    for cid in set(vector) | set(keyword):
        v = max(0.0, min(1.0, vector.get(cid, 0.0)))
        k = keyword.get(cid, 0.0) / best_kw if best_kw > 0 else 0.0
        kind: MatchKind = ("both" if cid in vector and cid in keyword
                           else "vector" if cid in vector else "keyword")
        merged[cid] = (vector_weight * v + keyword_weight * k, kind)
    return merged


def decay_multiplier(age_days: float, half_life_days: float = HALF_LIFE_DAYS) -> float:
    """``0.5 ** (age / half_life)``; ages below zero count as zero."""
    return math.pow(0.5, max(0.0, age_days) / half_life_days)


def chunk_age_days(chunk: StoredChunk, now: datetime) -> float | None:
    """Age used for decay: the daily file's date, or a conversation's time; None = evergreen."""
    if chunk.source == "sessions":
        return (now.timestamp() - chunk.mtime) / 86_400
    day = daily_file_date(chunk.path)
    if day is None:
        return None
    return float((now.date() - day).days)


def chunk_date(chunk: StoredChunk) -> str:
    """The date shown with a result: the daily file's, a conversation's, or '' (evergreen)."""
    if chunk.source == "sessions":
        return datetime.fromtimestamp(chunk.mtime).date().isoformat()
    day: date | None = daily_file_date(chunk.path)
    return day.isoformat() if day else ""


def words(text: str) -> frozenset[str]:
    """Lower-case word set used for Jaccard similarity."""
    return frozenset(_WORD_RE.findall(text.lower()))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a ∩ b| / |a ∪ b| (0 for two empty sets)."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def mmr_order(scores: Sequence[float], texts: Sequence[str], k: int,
              lam: float = MMR_LAMBDA) -> list[int]:
    """Indices of up to ``k`` items picked by maximal marginal relevance."""
    best = max(scores, default=0.0)
    relevance = [s / best if best > 0 else 0.0 for s in scores]
    sets = [words(t) for t in texts]
    overlap = [0.0] * len(scores)  # each item's largest similarity to any picked item so far
    picked: list[int] = []
    left = list(range(len(scores)))
    while left and len(picked) < k:
        def value(i: int) -> tuple[float, float]:
            return lam * relevance[i] - (1 - lam) * overlap[i], scores[i]
        choice = max(left, key=value)
        picked.append(choice)
        left.remove(choice)
        for i in left:
            overlap[i] = max(overlap[i], jaccard(sets[i], sets[choice]))
    return picked


def snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    """``text`` trimmed to ``limit`` characters (with ``...`` when cut)."""
    text = text.strip()
    return text if len(text) <= limit else text[:limit].rstrip() + "..."


def rank(chunks: Mapping[int, StoredChunk], vector: Mapping[int, float],
         keyword: Mapping[int, float], *, now: datetime, max_results: int,
         min_score: float = MIN_SCORE, half_life_days: float = HALF_LIFE_DAYS,
         mmr_lambda: float = MMR_LAMBDA) -> list[SearchResult]:
    """The final, decayed and diversified results for one query."""
    scored: list[_Scored] = []
    for cid, (score, kind) in merge_scores(vector, keyword).items():
        chunk = chunks.get(cid)
        if chunk is None or score < min_score:
            continue
        age = chunk_age_days(chunk, now)
        decayed = score if age is None else score * decay_multiplier(age, half_life_days)
        scored.append(_Scored(chunk, decayed, kind))
    scored.sort(key=lambda s: (-s.score, s.chunk.path, s.chunk.start_line))
    pool = scored[: max_results * 2]
    order = mmr_order([s.score for s in pool], [s.chunk.content for s in pool], max_results,
                      mmr_lambda)
    return [_result(pool[i]) for i in order]


def _result(item: _Scored) -> SearchResult:
    c = item.chunk
    return SearchResult(c.path, c.start_line, c.end_line, item.score, snippet(c.content),
                        c.source, item.match, chunk_date(c))
