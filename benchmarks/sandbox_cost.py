"""What the shell sandbox costs per command, and what it stops (the red-team corpus).

Part 1: ``true`` and a small ``awk`` over a csv, run through ``dexter.tools.bash.run_command``
directly and inside the bubblewrap sandbox (policy built per command, as the tool does:
the workspace scan, the checks before and after, seccomp and the cgroup), the two
interleaved so that a busy machine slows both alike; prints the median and p90 of each and
the sandbox's extra milliseconds per command. Goal: under 20 ms on top of the command.
Then where the time goes (medians of ``RUNS`` more commands): dexter's policy build, the
checks before and after, the start through the cgroup helper, and the process chain
(``bwrap`` and the shell), with ``bwrap`` alone on the same command line beside a plain
``sh`` for scale.

Part 2: the scan of a large workspace (``LARGE_DIRS`` folders, ``LARGE_FILES`` files,
``node_modules`` and deep folders included, a few secret files planted): the first scan,
the next ones while nothing changed (watched folders, and for comparison without watches:
an ``lstat`` per folder), one after a change deep in the tree; then a contained ``true``
there (nothing changes: the check before reuses the check after's findings) and a command
that makes a new folder each time (both checks walk the watched tree).

``--corpus``: the red-team corpus of ``dexter.testing.shell_corpus`` as
``dexter ask --yes`` would run it: dangerous commands that caused harm (goal 0) and benign
analyst commands that were asked or refused (goal at most 5%). About a minute.

Part 3 (``--corpus``) as before. Prints figures and GOAL MET/NOT MET lines; always exits 0.
Run: ``.venv/bin/python benchmarks/sandbox_cost.py [--corpus]``
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dexter.config import Settings
from dexter.sandbox.policy import build_policy
from dexter.sandbox.process import run_command
from dexter.sandbox.runner import detect_runner

RUNS = 40
GOAL_MS = 20.0


LARGE_DIRS = 10_000
LARGE_FILES = 100_000


async def _time(command: str, cwd: Path, settings: Settings,
                runs: int = RUNS) -> tuple[list[float], list[float]]:
    """(direct, sandboxed) milliseconds, one of each in turn (a busy machine slows both)."""
    runner = detect_runner(settings)
    direct, boxed = [], []
    for _ in range(runs):
        started = time.perf_counter()
        await run_command(command, cwd, 30)
        direct.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        result = await run_command(command, cwd, 30, runner=runner,
                                   policy=build_policy(settings, cwd))
        boxed.append((time.perf_counter() - started) * 1000)
        assert result.exit_code == 0, result.text()
    return direct, boxed


@contextlib.contextmanager
def _timed(phases: dict[str, list[float]]) -> Iterator[None]:
    """Time the steps of each contained command (the functions ``run_command`` calls)."""
    from dexter.sandbox import process
    from dexter.sandbox.spawner import SpawnedProcess, Spawner

    def sync(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                phases[name].append((time.perf_counter() - started) * 1000)
        return timed

    def coro(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        async def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return await fn(*args, **kwargs)
            finally:
                phases[name].append((time.perf_counter() - started) * 1000)
        return timed

    saved = (process.prepare, process.after, Spawner.spawn, SpawnedProcess._wait)
    process.prepare = sync("check before (open what is bound)", process.prepare)  # type: ignore[assignment]
    process.after = sync("check after (links, identities, scan)", process.after)  # type: ignore[assignment]
    Spawner.spawn = coro("start through the cgroup helper", Spawner.spawn)  # type: ignore[method-assign]
    SpawnedProcess._wait = coro("bwrap and sh, start to exit", SpawnedProcess._wait)  # type: ignore[method-assign]
    try:
        yield
    finally:
        process.prepare, process.after, Spawner.spawn, SpawnedProcess._wait = saved  # type: ignore[method-assign]


def _cpu_ms() -> float:
    """CPU milliseconds used so far by this process and everything it started: its reaped
    children, and the live ones with what they reaped (the cgroup helper and the commands
    it started). It grows far less with the machine's load than wall-clock time."""
    import resource

    total = sum(getattr(resource.getrusage(who), f) for who in
                (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
                for f in ("ru_utime", "ru_stime")) * 1000
    tick = os.sysconf("SC_CLK_TCK")
    with contextlib.suppress(OSError):
        me = os.getpid()
        for child in Path(f"/proc/{me}/task/{me}/children").read_text().split():
            with contextlib.suppress(OSError, ValueError):
                fields = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()
                total += sum(int(v) for v in fields[11:15]) * 1000 / tick
    return total


def _cpu_per_command(settings: Settings, cwd: Path, runs: int = 100) -> tuple[float, float]:
    """(direct, contained) CPU milliseconds per ``true``, dexter's own part included."""
    runner = detect_runner(settings)

    async def go(boxed: bool) -> float:
        started = _cpu_ms()
        for _ in range(runs):
            if boxed:
                await run_command("true", cwd, 30, runner=runner, policy=build_policy(settings, cwd))
            else:
                await run_command("true", cwd, 30)
        return (_cpu_ms() - started) / runs

    return asyncio.run(go(False)), asyncio.run(go(True))


def _spawn_ms(argv: list[str]) -> float:
    started = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, {"PATH": "/usr/bin:/bin"})
    os.waitpid(pid, 0)
    return (time.perf_counter() - started) * 1000


def _breakdown(settings: Settings, cwd: Path) -> None:
    """Where a contained ``true`` spends its time, step by step (medians)."""
    from dexter.sandbox.guard import prepare
    from dexter.sandbox.runner import Bubblewrap

    runner = detect_runner(settings)
    phases: dict[str, list[float]] = defaultdict(list)
    with _timed(phases):
        for _ in range(RUNS):
            started = time.perf_counter()
            policy = build_policy(settings, cwd)
            phases["policy build (scan included)"].append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            asyncio.run(run_command("true", cwd, 30, runner=runner, policy=policy))
            phases["run_command in all"].append((time.perf_counter() - started) * 1000)
    for name, values in phases.items():
        print(f"  {name}: {statistics.median(values):.2f} ms")
    if isinstance(runner, Bubblewrap):
        policy = build_policy(settings, cwd)
        prepared = prepare(policy)
        try:
            bwrap = runner.argv(["/bin/sh", "-c", "true"], policy, prepared, prlimit=False)
            plain, alone = [], []
            for _ in range(RUNS):
                plain.append(_spawn_ms(["/bin/sh", "-c", "true"]))
                alone.append(_spawn_ms(bwrap))
        finally:
            prepared.close()
        print(f"  for scale, outside dexter: sh -c true {statistics.median(plain):.2f} ms, "
              f"bwrap with the same {len(bwrap)}-word command line (no seccomp, no cgroup) "
              f"{statistics.median(alone):.2f} ms")


def _large_workspace(root: Path) -> int:
    """A workspace of LARGE_DIRS folders and LARGE_FILES files; returns the secrets planted."""
    per_dir = LARGE_FILES // LARGE_DIRS
    planted = 0
    for i in range(LARGE_DIRS):
        top = "node_modules" if i % 2 else "src"
        folder = root / top / f"p{i % 97}" / f"m{i % 13}" / f"d{i}"
        folder.mkdir(parents=True, exist_ok=True)
        for j in range(per_dir):
            (folder / f"f{j}.js").write_bytes(b"")
        if i % 2500 == 7:
            (folder / "credentials.json").write_text("{}")
            planted += 1
    return planted


def _scan_part(settings: Settings) -> None:
    from dexter.sandbox.scan import TreeScanner

    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp)
        planted = _large_workspace(ws)
        scanner, unwatched = TreeScanner(), TreeScanner(watch=False)
        started = time.perf_counter()
        first = scanner.scan([ws])
        first_ms = (time.perf_counter() - started) * 1000
        time.sleep(2.1)  # folders older than the cache's two seconds are remembered
        scanner.scan([ws])
        unwatched.scan([ws])
        cached, plain, changed = [], [], []
        for i in range(10):
            started = time.perf_counter()
            again = scanner.scan([ws])
            cached.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            unwatched.scan([ws])
            plain.append((time.perf_counter() - started) * 1000)
            (ws / "node_modules" / "p1" / "m1" / f"new{i}").mkdir(parents=True)
            started = time.perf_counter()
            after_change = scanner.scan([ws])
            changed.append((time.perf_counter() - started) * 1000)
        assert len(again.secret_files) == planted == len(first.secret_files)
        assert after_change.folders == first.folders + 10
        print(f"scan of a workspace of {first.folders:,} folders and {LARGE_FILES:,} files "
              f"({planted} secret files at depth 4, half in node_modules): first "
              f"{first_ms:.0f} ms; then while unchanged {statistics.median(cached):.1f} ms "
              f"with watched folders ({again.looked} looked at) and "
              f"{statistics.median(plain):.1f} ms without ({first.folders:,} looked at, "
              f"{statistics.median(plain) * 1000 / first.folders:.2f} µs per folder); after "
              f"a new folder at depth 4: {statistics.median(changed):.1f} ms "
              f"({after_change.looked} looked at)")
        settings.home = str(ws / ".dexter")
        settings.scratchpad_dir = str(ws / "scratchpads")
        # the first command makes the scratchpads folder: let the workspace settle after it
        asyncio.run(_time("true", ws, settings, runs=1))
        time.sleep(2.1)
        direct, boxed = asyncio.run(_time("true", ws, settings, runs=10))
        extra = statistics.median(boxed) - statistics.median(direct)
        print(f"'true' in that workspace: direct {statistics.median(direct):.1f} ms, contained "
              f"{statistics.median(boxed):.1f} ms (scan before and after included): "
              f"+{extra:.1f} ms")
        direct, boxed = asyncio.run(_time("mkdir -p out && mktemp -d out/XXXXXX", ws, settings,
                                          runs=10))
        print(f"a command that makes a new folder each time (both checks walk the watched "
              f"tree): direct {statistics.median(direct):.1f} ms, contained "
              f"{statistics.median(boxed):.1f} ms: "
              f"+{statistics.median(boxed) - statistics.median(direct):.1f} ms")


def _p90(values: list[float]) -> float:
    return sorted(values)[int(len(values) * 0.9) - 1]


def main() -> None:
    settings = Settings()
    runner = detect_runner(settings)
    print(runner.status.describe())
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (wall-clock "
          "figures grow with it)")
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
        time.sleep(2.1)  # the workspace's folders are now old enough for the scan's cache
        asyncio.run(_time("true", cwd, settings, runs=2))  # start the cgroup helper
        for command in ("true", "awk -F, '{s+=$2} END {print s}' prices.csv"):
            direct, boxed = asyncio.run(_time(command, cwd, settings))
            extra = statistics.median(boxed) - statistics.median(direct)
            print(f"{command!r}: direct median {statistics.median(direct):.1f} ms "
                  f"(p90 {_p90(direct):.1f}), sandboxed median {statistics.median(boxed):.1f} ms "
                  f"(p90 {_p90(boxed):.1f}); sandbox adds {extra:.1f} ms "
                  f"({statistics.median(boxed) / statistics.median(direct):.2f}x)")
            print(f"GOAL {'MET' if extra < GOAL_MS else 'NOT MET'}: under {GOAL_MS:.0f} ms on top "
                  f"of {command!r}")
        print(f"where a contained 'true' spends its time (medians of {RUNS}; load "
              f"{os.getloadavg()[0]:.1f}):")
        _breakdown(settings, cwd)
        direct_cpu, boxed_cpu = _cpu_per_command(settings, cwd)
        print(f"CPU per 'true' (dexter, the cgroup helper, bwrap and sh; mean of 100; it "
              f"grows far less with the load than wall-clock time): direct {direct_cpu:.1f} ms, "
              f"contained {boxed_cpu:.1f} ms (+{boxed_cpu - direct_cpu:.1f} ms)")
    _scan_part(Settings())
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
