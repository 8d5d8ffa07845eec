"""Index 5,000 generated notes and time memory search (goal: keyword-only median under 50 ms).

The notes are finance-flavoured bullets spread over ``MEMORY.md`` and a year of daily files,
one note per paragraph. Reported: the time to build the index from scratch, and search
latency (median and p95 over the queries) for keyword-only search and for hybrid search
with a local deterministic embedder (``dexter.memory.stub.HashingEmbedder``: no network).
Each search includes the pre-search check for changed files, as in real use.

Run: ``.venv/bin/python benchmarks/memory_search.py [--notes 5000] [--queries 200]``
Exit status 1 when the keyword-only median misses the goal.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

from dexter.config import Settings
from dexter.memory.manager import MemoryManager
from dexter.memory.stub import HashingEmbedder

GOAL_MS = 50.0
TICKERS = ("AAPL", "MSFT", "NVDA", "KO", "PEP", "JNJ", "BRK.B", "TSLA", "AMZN", "GOOGL", "XOM",
           "JPM", "V", "COST", "VTI", "BND", "SCHD", "O", "T", "PG")
TOPICS = ("risk tolerance", "retirement goal", "emergency fund", "dividend income", "tax-loss "
          "harvesting", "Roth IRA", "401k match", "rebalancing", "position sizing", "margin of "
          "safety", "free cash flow", "valuation", "earnings call", "guidance", "buyback",
          "debt maturity", "insider selling", "sector exposure", "bond ladder", "cash buffer")
VERBS = ("bought", "sold", "trimmed", "added to", "is watching", "researched", "rejected",
         "set a stop on", "wrote notes on", "compared")
REASONS = ("because the valuation looked stretched", "after strong free cash flow growth",
           "to cut sector concentration", "for more dividend income", "before earnings",
           "after the guidance cut", "to harvest a tax loss", "as the thesis still holds",
           "because of rising debt costs", "to fund the house down payment")


def make_note(rng: random.Random, n: int) -> str:
    """One bullet note of about 25-45 words."""
    ticker, topic = rng.choice(TICKERS), rng.choice(TOPICS)
    return (f"- Note {n}: the user {rng.choice(VERBS)} {ticker} {rng.choice(REASONS)}. "
            f"Linked to their {topic}; revisit in {rng.randint(1, 12)} months. "
            f"Position now {rng.randint(1, 15)}% of the portfolio, cost basis "
            f"${rng.randint(20, 900)}.{rng.randint(0, 99):02d}, {rng.choice(REASONS)}.")


def write_notes(memory_dir: Path, count: int, seed: int = 7) -> int:
    """Write ``count`` notes: a tenth in MEMORY.md, the rest over 365 daily files."""
    rng = random.Random(seed)
    memory_dir.mkdir(parents=True, exist_ok=True)
    files: dict[str, list[str]] = {"MEMORY.md": []}
    start = date(2025, 1, 1)
    for n in range(count):
        name = ("MEMORY.md" if n % 10 == 0
                else f"{(start + timedelta(days=n % 365)).isoformat()}.md")
        files.setdefault(name, []).append(make_note(rng, n))
    for name, notes in files.items():
        (memory_dir / name).write_text("\n\n".join(notes) + "\n", encoding="utf-8")
    return len(files)


def queries(count: int, seed: int = 11) -> list[str]:
    """Natural-language questions mixing tickers and topics."""
    rng = random.Random(seed)
    return [f"what did I decide about {rng.choice(TICKERS)} and my {rng.choice(TOPICS)}?"
            for _ in range(count)]


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(pct / 100 * len(ordered)) - 1))]


async def time_searches(manager: MemoryManager, qs: list[str]) -> tuple[list[float], int]:
    """Per-query latency in ms, and how many queries returned results."""
    await manager.search(qs[0])  # warm-up: first sync and caches
    timings: list[float] = []
    hits = 0
    for q in qs:
        t0 = time.perf_counter()
        outcome = await manager.search(q)
        timings.append((time.perf_counter() - t0) * 1000)
        hits += bool(outcome.results)
    return timings, hits


async def run(notes: int, n_queries: int, home: Path) -> bool:
    """Build, time and print; True when the keyword-only goal is met."""
    settings = Settings(home=str(home))
    files = write_notes(settings.home_path / "memory", notes)
    qs = queries(n_queries)
    print(f"{notes:,} notes in {files} files; {n_queries} queries\n")
    print(f"{'mode':<10} {'index':>10} {'chunks':>7} {'median':>9} {'p95':>9} {'hits':>6}")
    keyword_median = 0.0
    for mode in ("keyword", "hybrid"):
        embedder = HashingEmbedder() if mode == "hybrid" else None
        manager = MemoryManager(settings, env={}, embedder=embedder)
        t0 = time.perf_counter()
        status = await manager.reindex(force=True)
        index_s = time.perf_counter() - t0
        if not status.available or status.mode != mode:
            print(f"{mode}: index unavailable ({status.reason})")
            return False
        timings, hits = await time_searches(manager, qs)
        median = statistics.median(timings)
        keyword_median = median if mode == "keyword" else keyword_median
        print(f"{mode:<10} {index_s:>9.2f}s {status.chunks:>7,} {median:>7.2f}ms "
              f"{percentile(timings, 95):>7.2f}ms {hits:>6}")
        manager.close()
    met = keyword_median < GOAL_MS
    print(f"\nkeyword-only median {keyword_median:.2f} ms: "
          f"{'meets' if met else 'MISSES'} the {GOAL_MS:.0f} ms goal")
    return met


def main() -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--notes", type=int, default=5_000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dexter-memory-bench-") as tmp:
        met = asyncio.run(run(args.notes, args.queries, Path(tmp)))
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
