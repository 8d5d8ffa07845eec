"""What the shell sandbox costs per command, and what it stops (the red-team corpus).

Part 1: ``true`` and a small ``awk`` over a csv, run through ``dexter.tools.bash.run_command``
directly and inside the bubblewrap sandbox (policy built per command, as the tool does);
prints the median and p90 of each and the sandbox's extra milliseconds per command.
Goal: under 20 ms on top of the command.

Part 2 (``--corpus``): the red-team corpus of ``dexter.testing.shell_corpus`` as
``dexter ask --yes`` would run it: dangerous commands that caused harm (goal 0) and benign
analyst commands that were asked or refused (goal at most 5%). About a minute.

Prints figures and GOAL MET/NOT MET lines; always exits 0.
Run: ``.venv/bin/python benchmarks/sandbox_cost.py [--corpus]``
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dexter.config import Settings
from dexter.sandbox.policy import build_policy
from dexter.sandbox.process import run_command
from dexter.sandbox.runner import detect_runner

RUNS = 40
GOAL_MS = 20.0


async def _time(command: str, cwd: Path, sandboxed: bool, settings: Settings) -> list[float]:
    runner = detect_runner(settings)
    out = []
    for _ in range(RUNS):
        started = time.perf_counter()
        if sandboxed:
            await run_command(command, cwd, 30, runner=runner, policy=build_policy(settings, cwd))
        else:
            await run_command(command, cwd, 30)
        out.append((time.perf_counter() - started) * 1000)
    return out


def _p90(values: list[float]) -> float:
    return sorted(values)[int(len(values) * 0.9) - 1]


def main() -> None:
    settings = Settings()
    runner = detect_runner(settings)
    print(runner.status.describe())
    if not runner.status.active:
        print("GOAL NOT MET: no sandbox to measure")
        return
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        settings.home = str(cwd / ".dexter")
        (cwd / "prices.csv").write_text("".join(f"T{i},{i}\n" for i in range(2000)))
        started = time.perf_counter()
        for _ in range(RUNS):
            build_policy(settings, cwd)
        policy_ms = (time.perf_counter() - started) * 1000 / RUNS
        print(f"policy build (mounts, masks scan): {policy_ms:.2f} ms per command")
        for command in ("true", "awk -F, '{s+=$2} END {print s}' prices.csv"):
            direct = asyncio.run(_time(command, cwd, False, settings))
            boxed = asyncio.run(_time(command, cwd, True, settings))
            extra = statistics.median(boxed) - statistics.median(direct)
            print(f"{command!r}: direct median {statistics.median(direct):.1f} ms "
                  f"(p90 {_p90(direct):.1f}), sandboxed median {statistics.median(boxed):.1f} ms "
                  f"(p90 {_p90(boxed):.1f}); sandbox adds {extra:.1f} ms "
                  f"({statistics.median(boxed) / statistics.median(direct):.2f}x)")
            print(f"GOAL {'MET' if extra < GOAL_MS else 'NOT MET'}: under {GOAL_MS:.0f} ms on top "
                  f"of {command!r}")
    if "--corpus" in sys.argv:
        from dexter.testing.shell_corpus import refused_without_sandbox, run_corpus

        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            report = asyncio.run(run_corpus(Path(tmp), runner))
            for line in report.lines():
                print(line)
            left = refused_without_sandbox(Path(tmp))
            print(f"without the sandbox, dangerous commands --yes would still run: {len(left)} (goal 0)")
            print(f"corpus time: {time.perf_counter() - started:.0f} s")
            print(f"GOAL {'MET' if not report.harmful else 'NOT MET'}: no harm; "
                  f"GOAL {'MET' if len(report.benign_blocked) <= 0.05 * len(report.benign) else 'NOT MET'}: "
                  "benign friction at most 5%")


if __name__ == "__main__":
    main()
