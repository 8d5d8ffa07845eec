"""The keyless SEC sources on real filings: parse time, requests per answer, and the cache.

On the recorded real responses (``tests/fixtures/sec-real`` and ``sec-real-more``, served
on 127.0.0.1): the time to parse a filing's XBRL (Apple's 1.5 MB FY2024 10-K and Tesla's
2.6 MB FY2024 10-K, inline; Apple's 10-Q instance), a Form 4 and a 13F full submission
(median of 5); then the requests and time of one segments answer, a month of Form 4s and
a 13F report, cold and again from the disk cache (a parsed filing is cached forever).
Prints figures only; always exits 0.

Run: ``.venv/bin/python benchmarks/sec_sources.py``
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dexter.data.base import DateFilter
from dexter.data.cache import DiskCache
from dexter.data.holdings import HoldingsSource
from dexter.data.http import RetryPolicy
from dexter.data.http_source import SourceConnection
from dexter.data.insiders import InsiderSource, parse_ownership
from dexter.data.sec import SecSource, split_submission
from dexter.data.segments_source import SegmentsSource
from dexter.data.xbrl_facts import parse_filing
from dexter.testing.fakedata import FakeDataServer, RecordedTree

ROOT = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
REAL, MORE = ROOT / "sec-real", ROOT / "sec-real-more"
ARCHIVE = "www.sec.gov/Archives/edgar/data/"


def median_ms(fn: Callable[[], Any], runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def parsing() -> None:
    cases = [
        ("Apple 10-K FY2024 inline XBRL", REAL / ARCHIVE / "320193/000032019324000123/aapl-20240928.htm",
         lambda b: len(parse_filing(b).facts)),
        ("Tesla 10-K FY2024 inline XBRL", REAL / ARCHIVE / "1318605/000162828025003063/tsla-20241231.htm",
         lambda b: len(parse_filing(b).facts)),
        ("Apple 10-Q XBRL instance", MORE / ARCHIVE / "320193/000032019325000057/aapl-20250329_htm.xml",
         lambda b: len(parse_filing(b).facts)),
        ("Form 4 (3 rows)", MORE / ARCHIVE / "320193/000032019324000084/wk-form4_1723069808.xml",
         lambda b: len(parse_ownership(b)["rows"])),
        ("13F full submission", MORE / ARCHIVE / "1099219/000114036123013281/0001140361-23-013281.txt",
         lambda b: len(split_submission(b.decode())[1])),
    ]
    print("parse (median of 5)")
    for name, path, parse in cases:
        data = path.read_bytes()
        count = parse(data)
        print(f"  {name:32s} {len(data) / 1e6:5.2f} MB  {median_ms(lambda d=data, p=parse: p(d)):7.1f} ms"
              f"  ({count} facts/rows/documents)")


async def answers() -> None:
    print("answers over HTTP on 127.0.0.1 (no limiter), cold then cached")
    with FakeDataServer(fallback=RecordedTree(REAL, MORE)) as server, \
            tempfile.TemporaryDirectory() as home:

        def source(kind: type[SecSource]) -> Any:
            return kind(SourceConnection(server.url, DiskCache(Path(home)), rate_limiter=None,
                                         retry=RetryPolicy(max_retries=0)),
                        data_url=server.url, user_agent="bench bench@example.com")

        jobs: list[tuple[str, type[SecSource], Callable[[Any], Awaitable[Any]]]] = [
            ("segments AAPL (FY2024 10-K)", SegmentsSource,
             lambda s: s.segments("AAPL", accession="0000320193-24-000123", limit=3)),
            ("Form 4s of AAPL, August 2024", InsiderSource,
             lambda s: s.insider_trades("AAPL", limit=10, filters=DateFilter(
                 gte="2024-08-01", lte="2024-08-31"))),
            ("13F of MetLife (6 rows)", HoldingsSource,
             lambda s: s.institutional_holdings(filer_cik="1099219",
                                                accession="0001140361-23-013281")),
        ]
        for name, kind, job in jobs:
            for run in ("cold", "cached"):
                server.clear()
                src = source(kind)
                start = time.perf_counter()
                result = await job(src)
                elapsed = (time.perf_counter() - start) * 1000
                await src.aclose()
                print(f"  {name:32s} {run:6s} {len(server.requests):3d} requests "
                      f"{elapsed:7.1f} ms  ({len(result.data)} records)")


def main() -> int:
    parsing()
    asyncio.run(answers())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
