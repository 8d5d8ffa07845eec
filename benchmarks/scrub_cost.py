"""What scrubbing a tool result costs: known values alone, and with credentials by shape.

Every tool result goes through ``secrets.scrub_output`` before the model sees it. Three
result shapes: the largest result kept in the context (50,000 characters of the real
Apple FY2024 10-K as text), a whole filing's HTML (1.5 MB, before it is saved to
``tool-results/``), and 50,000 characters of ``git log -p``-like code diffs, each scrubbed
of 10 known key values. Prints the median time of ``scrub`` (values only) and
``scrub_output`` (values and shapes) for each.
Goal: scrub_output under 20 ms for a 50,000-character result.

Prints figures and a GOAL MET/NOT MET line; always exits 0.
Run: ``.venv/bin/python benchmarks/scrub_cost.py``
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dexter.data.filing_text import html_to_text
from dexter.secrets import scrub, scrub_output

ROOT = Path(__file__).resolve().parents[1]
GOAL_MS = 20.0
RUNS = 15
FILING = (ROOT / "tests" / "fixtures" / "sec-real" / "www.sec.gov" / "Archives" / "edgar"
          / "data" / "320193" / "000032019324000123" / "aapl-20240928.htm")


KEYS = [f"sk-proj-{i:02d}Zq8R2mK4pL9xW3vN7cT1yB6hJ0dF5sA8" for i in range(10)]


def _median_ms(func: Callable[[str, list[str]], str], text: str) -> float:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        func(text, KEYS)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    html = FILING.read_text(encoding="utf-8", errors="replace")
    code = "".join((ROOT / "dexter").joinpath(p).read_text() for p in
                   ("config.py", "secrets.py", "config_trust.py", "frontend.py"))
    diff = "\n".join(("+" if i % 3 else "-") + line for i, line in enumerate(code.splitlines()))
    cases = {"50,000 chars of 10-K text": html_to_text(html)[:50_000],
             f"{len(html):,} chars of 10-K HTML": html,
             "50,000 chars of code diff": (diff * 3)[:50_000]}
    worst = 0.0
    for name, text in cases.items():
        plain, shaped = _median_ms(scrub, text), _median_ms(scrub_output, text)
        print(f"{name:>32}: scrub {plain:7.2f} ms, scrub_output {shaped:7.2f} ms")
        if len(text) <= 50_000:
            worst = max(worst, shaped)
    verdict = "GOAL MET" if worst < GOAL_MS else "GOAL NOT MET"
    print(f"{verdict}: scrub_output of a 50,000-character result {worst:.2f} ms (goal < {GOAL_MS:.0f} ms)")


if __name__ == "__main__":
    main()
