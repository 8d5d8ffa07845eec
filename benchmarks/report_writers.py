"""What writing a report costs: time and size of the markdown, HTML and PDF writers (issue 15).

The report holds a quarterly income statement (revenue, net income, net margin, diluted EPS
over ``--periods`` quarters: its three curated charts), a balance sheet of 25 line items over
the same quarters (12 the lexicon knows and 13 it does not: two curated charts, the newest
periods that fit on the page) and ``--days`` days of prices (a line chart and a capped
record table). Printed per format (markdown, HTML, PDF, workbook): the first render in this
process (matplotlib's, fpdf2's and openpyxl's imports and font loading included), the
median of ``--repeat`` later renders, and the file size. Prints figures only; always exits
0.

Run: ``.venv/bin/python benchmarks/report_writers.py [--periods 8] [--days 250]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dexter.evidence.tables import Column, DataTable
from dexter.reports import render_bytes
from dexter.reports.model import Report, ReportSource
from dexter.reports.series import charts_of


def quarters(count: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    dates = tuple(f"{2020 + n // 4}-{3 * (n % 4 + 1):02d}-28" for n in range(count))
    return tuple(f"Q{n % 4 + 1} {2020 + n // 4} ({d})" for n, d in enumerate(dates)), dates


def build(periods: int, days: int) -> Report:
    index, dates = quarters(periods)
    income = DataTable("income_statements[XYZ, quarterly]", "SEC EDGAR", "period", index,
                       dates, (
                           Column("revenue", "USD", tuple(90e9 + 3e9 * n for n in range(periods))),
                           Column("net_income", "USD", tuple(20e9 + 1e9 * n for n in range(periods))),
                           Column("net_margin", "ratio", tuple(0.22 + 0.004 * n for n in range(periods))),
                           Column("earnings_per_share_diluted", "USD/share",
                                  tuple(1.2 + 0.05 * n for n in range(periods)))),
                       source_id="S1")
    known = ("cash_and_equivalents", "short_term_investments", "current_assets",
             "total_assets", "current_liabilities", "short_term_borrowings", "current_debt",
             "long_term_debt", "total_debt", "total_liabilities", "shareholders_equity",
             "liabilities_and_equity")
    names = (*known, *(f"line_item_{k}" for k in range(25 - len(known))))
    balance = DataTable("balance_sheets[XYZ, quarterly]", "SEC EDGAR", "period", index, dates,
                        tuple(Column(name, "USD",
                                     tuple(1e9 * (k + 1) + 1e7 * n for n in range(periods)))
                              for k, name in enumerate(names)), source_id="S2")
    day_labels = tuple(f"{2024 + n // 336}-{n // 28 % 12 + 1:02d}-{n % 28 + 1:02d}"
                       for n in range(days))
    prices = DataTable("prices[XYZ]", "Yahoo", "date", day_labels, day_labels, (
        Column("close", "USD", tuple(150 + (n % 37) * 0.7 for n in range(days))),
        Column("volume", "shares", tuple(5e7 + (n % 11) * 1e6 for n in range(days)))),
                       source_id="S3")
    sources = tuple(ReportSource(f"S{n}", title, "https://example.com/" + title, "t", True)
                    for n, title in enumerate(("income", "balance", "prices"), 1))
    return Report("How has XYZ done?", "2026-12-01 10:00 UTC", "gpt-5",
                  "Revenue rose [S1]; the balance sheet grew [S2]; the stock held [S3].",
                  sources, "✓ 3 figures checked against the sources.", (),
                  (income, balance, prices))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--periods", type=int, default=8)
    parser.add_argument("--days", type=int, default=250)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    report = build(args.periods, args.days)
    print(f"report: {len(report.tables)} tables, {len(charts_of(report.tables))} charts, "
          f"{args.periods} quarters, {args.days} days")
    print(f"{'format':<9}{'first ms':>10}{'median ms':>11}{'size KB':>10}")
    for fmt in ("markdown", "html", "pdf", "xlsx"):
        start = time.perf_counter()
        data = render_bytes(report, fmt)
        first = (time.perf_counter() - start) * 1000
        runs = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            render_bytes(report, fmt)
            runs.append((time.perf_counter() - start) * 1000)
        print(f"{fmt:<9}{first:>10.0f}{statistics.median(runs):>11.0f}{len(data) / 1024:>10.1f}")


if __name__ == "__main__":
    main()
