"""Index generated notes and time memory search (goals: keyword-only median under 50 ms at
5,000 notes, hybrid median under 30 ms at 50,000).

The notes are finance-flavoured bullets spread over ``MEMORY.md`` and a year of daily files,
one note per paragraph. Reported per size: the time to build the index from scratch, and
search latency (median and p95 over the queries) for keyword-only search, for hybrid search
with a local deterministic embedder (``dexter.memory.stub.HashingEmbedder``: no network)
scanning vectors with numpy, and for the same hybrid search with the pure-Python scan (the
fallback when numpy is missing; same index, same results). Each search includes the
pre-search check for changed files, as in real use.

Run: ``.venv/bin/python benchmarks/memory_search.py [--notes 5000,50000] [--queries 200]``
Exit status 1 when a goal is missed.
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
from dexter.memory import vectors
from dexter.memory.manager import MemoryManager
from dexter.memory.stub import HashingEmbedder

GOAL_MS = {"keyword": (5_000, 50.0), "hybrid": (50_000, 30.0)}  # mode: (notes, median ms)
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
    """Build, time and print one size; True when the goals for this size are met."""
    settings = Settings(home=str(home))
    files = write_notes(settings.home_path / "memory", notes)
    qs = queries(n_queries)
    print(f"{notes:,} notes in {files} files; {n_queries} queries\n")
    print(f"{'mode':<15} {'index':>10} {'chunks':>7} {'median':>9} {'p95':>9} {'hits':>6}")
    met = True
    for mode in ("keyword", "hybrid", "hybrid-python"):
        embedder = HashingEmbedder() if mode != "keyword" else None
        manager = MemoryManager(settings, env={}, embedder=embedder)
        numpy_loader = vectors.load_numpy
        if mode == "hybrid-python":
            vectors.load_numpy = lambda: None  # the fallback scan, on the index built above
        try:
            t0 = time.perf_counter()
            status = (await manager.reindex(force=True) if mode != "hybrid-python"
                      else manager.status())
            index_s = f"{time.perf_counter() - t0:.2f}s" if mode != "hybrid-python" else "-"
            if not status.available or status.mode != mode.split("-")[0]:
                print(f"{mode}: index unavailable ({status.reason})")
                return False
            timings, hits = await time_searches(manager, qs)
        finally:
            vectors.load_numpy = numpy_loader
            manager.close()
        median = statistics.median(timings)
        print(f"{mode:<15} {index_s:>10} {status.chunks:>7,} {median:>7.2f}ms "
              f"{percentile(timings, 95):>7.2f}ms {hits:>6}")
        goal_notes, goal_ms = GOAL_MS.get(mode, (0, 0.0))
        if goal_notes == notes:
            ok = median < goal_ms
            met = met and ok
            print(f"  {mode} median {median:.2f} ms at {notes:,} notes: "
                  f"{'meets' if ok else 'MISSES'} the {goal_ms:.0f} ms goal")
    print()
    return met


def main() -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--notes", default="5000,50000", help="comma-separated sizes")
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    met = True
    for notes in (int(n) for n in args.notes.split(",")):
        with tempfile.TemporaryDirectory(prefix="dexter-memory-bench-") as tmp:
            met = asyncio.run(run(notes, args.queries, Path(tmp))) and met
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
