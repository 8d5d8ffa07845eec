"""Start-up time: ``dexter --version`` / ``--help``, and ``dexter ask`` to its first request.

Runs each command several times in a fresh interpreter and prints the median, next to a
bare ``python -c pass`` for scale. ``dexter ask`` runs against the fake LLM server on
loopback (answering at once); the figure is from launching the process to the fake
receiving the first model request, printed next to what ``import openai`` alone costs in
a bare interpreter (the SDK's own import, which dexter cannot shorten) and the list of
heavy modules the run imported. Goals: ``--version``/``--help`` under 0.3 s, ``ask`` to
first request under 0.5 s. Asserts nothing.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dexter.testing.fakellm import FakeLLM, Reply
from dexter.testing.fakellm.checks import RecordedRequest
from dexter.testing.fakellm.steps import ConcreteStep, Dynamic

RUNS = 7
WATCHED = ("openai", "anthropic", "httpx", "bs4", "lxml", "mcp", "trafilatura", "ddgs", "pypdf",
           "tiktoken", "numpy", "rich.live", "prompt_toolkit")


def timed(args: list[str]) -> float:
    samples = []
    for _ in range(RUNS):
        started = time.perf_counter()
        subprocess.run(args, check=True, capture_output=True)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def ask_env(fake: FakeLLM, home: Path) -> dict[str, str]:
    """A clean environment for ``dexter ask``: fake endpoints, state under ``home``."""
    keep = {k: v for k, v in os.environ.items() if k in {"PATH", "LANG", "LC_ALL"}}
    return {**keep, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
            "DEXTER_HOME": str(home / ".dexter"), "DEXTER_MEMORY_ENABLED": "false",
            "NO_COLOR": "1", "TERM": "dumb", "NO_PROXY": "127.0.0.1,localhost",
            "OPENAI_BASE_URL": fake.openai_base_url, "OPENAI_API_KEY": "sk-bench-0000",
            "PYTHONPATH": os.pathsep.join(sys.path)}


def ask_to_first_request() -> tuple[float, float, str]:
    """Median seconds from launching ``dexter ask`` to the fake's first request, median CPU
    seconds of the process until it opens that request, and the watched modules the run
    imported."""
    arrivals: list[float] = []

    def respond(_request: RecordedRequest) -> ConcreteStep:
        arrivals.append(time.perf_counter())
        return Reply(text="4.")

    code = ("import atexit, sys, time\n"
            f"atexit.register(lambda: print(','.join(m for m in {WATCHED!r} if m in sys.modules),"
            " file=sys.stderr))\n"
            "import dexter.providers.openai_chat as chat\n"
            "opened = chat.OpenAIChatModel._open_stream\n"
            "async def stamped(self, request):\n"
            "    print(f'CPU={time.process_time()}', file=sys.stderr)\n"
            "    return await opened(self, request)\n"
            "chat.OpenAIChatModel._open_stream = stamped\n"
            "from dexter.cli.app import main\n"
            "sys.argv = ['dexter', 'ask', 'What is 2+2?']\n"
            "main()\n")
    samples: list[float] = []
    cpu: list[float] = []
    loaded = ""
    with FakeLLM() as fake, tempfile.TemporaryDirectory() as tmp:
        fake.set_default(Dynamic(respond))
        env = ask_env(fake, Path(tmp))
        for _ in range(RUNS):
            before = len(arrivals)
            started = time.perf_counter()
            proc = subprocess.run([sys.executable, "-c", code], cwd=tmp, env=env,
                                  capture_output=True, text=True, check=True)
            samples.append(arrivals[before] - started)
            lines = proc.stderr.strip().splitlines()
            cpu.append(float(next(x for x in lines if x.startswith("CPU="))[4:]))
            loaded = lines[-1]
    return statistics.median(samples), statistics.median(cpu), loaded


def cpu_of(code: str) -> float:
    """Median CPU seconds of ``python -c code`` up to its end (steadier than wall time)."""
    probe = f"{code}\nimport time; print(time.process_time())"
    return statistics.median(
        float(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                             check=True).stdout.split()[-1]) for _ in range(RUNS))


def main() -> None:
    base = timed([sys.executable, "-c", "pass"])
    version = timed([sys.executable, "-m", "dexter", "--version"])
    help_ = timed([sys.executable, "-m", "dexter", "--help"])
    sdk = timed([sys.executable, "-c", "import openai"])
    heavy = subprocess.run(
        [sys.executable, "-c", "import sys, dexter.cli.app; "
         "print(','.join(m for m in ('openai', 'anthropic', 'httpx', 'rich.live') if m in sys.modules))"],
        capture_output=True, text=True, check=True).stdout.strip()
    ask, ask_cpu, loaded = ask_to_first_request()
    sdk_cpu, bare_cpu = cpu_of("import openai"), cpu_of("pass")
    print(f"python -c pass     {base * 1000:6.0f} ms")
    print(f"dexter --version   {version * 1000:6.0f} ms   (x{version / base:.1f} of bare python; goal < 300 ms)")
    print(f"dexter --help      {help_ * 1000:6.0f} ms   (x{help_ / base:.1f} of bare python; goal < 300 ms)")
    print(f"heavy modules imported by the CLI module: {heavy or 'none'}")
    print(f"dexter ask -> first request {ask * 1000:6.0f} ms   (goal < 500 ms)")
    print(f"  python -c 'import openai'  {sdk * 1000:6.0f} ms   (the SDK's own import, in that figure)")
    print(f"  dexter's own part          {(ask - sdk + base) * 1000:6.0f} ms   "
          "(first request minus the SDK import, interpreter start counted once)")
    print(f"  CPU to the first request   {ask_cpu * 1000:6.0f} ms   (import openai: "
          f"{sdk_cpu * 1000:.0f} ms, bare python: {bare_cpu * 1000:.0f} ms; dexter's part "
          f"{(ask_cpu - sdk_cpu) * 1000:.0f} ms)")
    print(f"  watched modules the run imported: {loaded or 'none'}")


if __name__ == "__main__":
    main()
