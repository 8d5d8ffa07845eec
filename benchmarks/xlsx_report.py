"""What writing an .xlsx report costs: the largest tables a run keeps.

A report with 40 tables of 5,000 daily price rows (7 columns each, the most a source keeps:
evidence/tables.py MAX_ROWS and MAX_TABLES) plus a statement table; prints the median time
of ``render_bytes(report, "xlsx")``, the cells written and the file size.
Goal: a typical report (one 5,000-row price table and a statement) under 2 s.

Prints figures and a GOAL MET/NOT MET line; always exits 0.
Run: ``.venv/bin/python benchmarks/xlsx_report.py``
"""

from __future__ import annotations

import datetime as dt
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dexter.evidence.tables import Column, DataTable
from dexter.reports import Report, ReportSource, render_bytes

GOAL_S = 2.0
RUNS = 3
ROWS = 5_000


def prices(n: int, rng: random.Random) -> DataTable:
    start = dt.date(2005, 1, 3)
    dates = tuple((start + dt.timedelta(days=i)).isoformat() for i in range(ROWS))
    close = [100.0]
    for _ in range(ROWS - 1):
        close.append(round(close[-1] * (1 + rng.gauss(0, 0.01)), 2))
    columns = tuple(Column(name, "USD", tuple(round(c * f, 2) for c in close))
                    for name, f in (("open", 0.99), ("high", 1.01), ("low", 0.98),
                                    ("close", 1.0), ("adj_close", 1.0)))
    columns += (Column("volume", "shares", tuple(float(rng.randint(10**6, 10**8))
                                                 for _ in range(ROWS))),
                Column("note", "", tuple("=x" if i % 97 == 0 else None for i in range(ROWS))))
    return DataTable(f"prices[T{n}]", "bench", "date", dates, dates, columns, f"S{n}")


def statement() -> DataTable:
    labels = tuple(f"Q{q} 2024" for q in range(1, 5))
    columns = tuple(Column(f"line_{i}", "USD", tuple(float(10**9 * (i + q)) for q in range(4)))
                    for i in range(30))
    return DataTable("income_statements[T, quarterly]", "bench", "period", labels,
                     ("2024-03-30", "2024-06-29", "2024-09-28", "2024-12-28"), columns, "S0")


def report(tables: tuple[DataTable, ...]) -> Report:
    sources = tuple(ReportSource(t.source_id, t.title, f"https://example.com/{t.source_id}",
                                 "get_market_data", True) for t in tables)
    return Report("q", "2026-01-01 10:00 UTC", "m", "answer\n" * 50, sources, "", (), tables)


def timed(rep: Report) -> tuple[float, int]:
    times, size = [], 0
    for _ in range(RUNS):
        start = time.perf_counter()
        size = len(render_bytes(rep, "xlsx"))
        times.append(time.perf_counter() - start)
    return statistics.median(times), size


def main() -> None:
    rng = random.Random(7)
    typical = report((statement(), prices(1, rng)))
    seconds, size = timed(typical)
    cells = 30 * 4 + ROWS * 7
    print(f"typical (1 statement + 1 x {ROWS:,}-row price table, ~{cells:,} cells): "
          f"{seconds:.2f} s median of {RUNS}, {size / 1e6:.1f} MB")
    largest = report((statement(), *(prices(n, rng) for n in range(1, 40))))
    seconds_max, size_max = timed(largest)
    print(f"largest (40 tables, ~{39 * ROWS * 7:,} cells): {seconds_max:.1f} s median of "
          f"{RUNS}, {size_max / 1e6:.1f} MB")
    print(f"GOAL {'MET' if seconds < GOAL_S else 'NOT MET'}: typical report under {GOAL_S} s")


if __name__ == "__main__":
    main()
