"""Start-up time of ``dexter --version`` and ``dexter --help`` (SDKs must load lazily).

Runs each command several times in a fresh interpreter and prints the median, next to a
bare ``python -c pass`` for scale. Goal: under 0.3 s on a laptop. Asserts nothing.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

RUNS = 7


def timed(args: list[str]) -> float:
    samples = []
    for _ in range(RUNS):
        started = time.perf_counter()
        subprocess.run(args, check=True, capture_output=True)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def main() -> None:
    base = timed([sys.executable, "-c", "pass"])
    version = timed([sys.executable, "-m", "dexter", "--version"])
    help_ = timed([sys.executable, "-m", "dexter", "--help"])
    heavy = subprocess.run(
        [sys.executable, "-c", "import sys, dexter.cli.app; "
         "print(','.join(m for m in ('openai', 'anthropic', 'httpx', 'rich.live') if m in sys.modules))"],
        capture_output=True, text=True, check=True).stdout.strip()
    print(f"python -c pass     {base * 1000:6.0f} ms")
    print(f"dexter --version   {version * 1000:6.0f} ms   (x{version / base:.1f} of bare python; goal < 300 ms)")
    print(f"dexter --help      {help_ * 1000:6.0f} ms   (x{help_ / base:.1f} of bare python; goal < 300 ms)")
    print(f"heavy modules imported by the CLI module: {heavy or 'none'}")


if __name__ == "__main__":
    main()
