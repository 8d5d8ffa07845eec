"""What checking an answer's figures costs: a 5,000-word answer against 200 sources.

The sources are statement-sized JSON results (about 60 numbers each) plus a few 10-K-sized
texts (the real Apple FY2024 10-K from tests/fixtures, about 200 KB of text each), so the
ledger holds tens of thousands of numbers. The answer is analyst prose and tables with
about 600 figures, some supported, some not. Prints the time to add the sources to the
ledger (paid once, as results arrive) and the median time of ``verify_answer``.
Goal: verification under 50 ms.

Prints figures and a GOAL MET/NOT MET line; always exits 0.
Run: ``.venv/bin/python benchmarks/verify_cost.py``
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dexter.data.filing_text import html_to_text
from dexter.evidence.ledger import SourceLedger
from dexter.evidence.verify import verify_answer

ROOT = Path(__file__).resolve().parents[1]
GOAL_MS = 50.0
RUNS = 15
FILING = (ROOT / "tests" / "fixtures" / "sec-real" / "www.sec.gov" / "Archives" / "edgar"
          / "data" / "320193" / "000032019324000123" / "aapl-20240928.htm")


def statement(rng: random.Random) -> str:
    rows = {f"line_{i}": [rng.randint(1_000, 900_000) * 1_000_000 for _ in range(4)]
            for i in range(15)}
    return json.dumps({"data": rows})


def answer(rng: random.Random, values: list[int]) -> str:
    parts = []
    words = 0
    while words < 5_000:
        v = rng.choice(values) if rng.random() < 0.8 else rng.randint(1_000, 900_000) * 1e6
        sid = rng.randint(1, 200)
        sentence = (f"In the quarter, line revenue reached ${v / 1e9:.2f} billion [S{sid}], "
                    f"a margin of {rng.uniform(5, 60):.1f}% and {rng.uniform(1, 40):.1f}x "
                    "earnings, according to the filings we reviewed for this comparison.")
        parts.append(sentence)
        words += len(sentence.split())
        if len(parts) % 20 == 0:
            parts.append("| Company | Rev ($M) | Source |\n|---|---|---|\n"
                         f"| A | {rng.choice(values) / 1e6:,.0f} | [S1] |")
    return "\n".join(parts)


def main() -> None:
    rng = random.Random(7)
    texts = [statement(rng) for _ in range(196)]
    tenk = html_to_text(FILING.read_text(encoding="utf-8"))
    texts += [tenk] * 4
    values = [v for t in texts[:196] for row in json.loads(t)["data"].values() for v in row]
    started = time.perf_counter()
    ledger = SourceLedger()
    for i, text in enumerate(texts):
        ledger.add("get_financials", {"query": f"q{i}"}, text)
    add_ms = (time.perf_counter() - started) * 1000
    numbers = sum(len(s.numbers) for s in ledger.sources)
    prose = answer(rng, values)
    times = []
    check = None
    for _ in range(RUNS):
        started = time.perf_counter()
        check = verify_answer(prose, ledger, "compare the companies")
        times.append((time.perf_counter() - started) * 1000)
    assert check is not None
    median = statistics.median(times)
    print(f"answer: {len(prose.split()):,} words, {check.checked} figures "
          f"({check.supported} supported); ledger: {len(ledger)} sources, {numbers:,} numbers")
    print(f"adding the sources: {add_ms:.0f} ms in all ({add_ms / len(texts):.2f} ms each)")
    print(f"verify_answer: median {median:.1f} ms, min {min(times):.1f} ms over {RUNS} runs "
          f"({median / max(check.checked, 1) * 1000:.0f} µs per figure)")
    print(f"GOAL {'MET' if median < GOAL_MS else 'NOT MET'}: verification under {GOAL_MS:g} ms")


if __name__ == "__main__":
    main()
