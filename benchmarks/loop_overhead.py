"""Agent-loop overhead per iteration: a zero-latency in-process model, then a 150-turn run
through the real OpenAI SDK.

1. Builds a transcript of about 200 messages, then times iterations of the real loop
   (repair, microcompact, strip thinking, the model call through ``generate``, the
   executor, result governance, the threshold check, the scratchpad write) with a model
   that answers instantly and a tool that returns at once. Goal: under 5 ms per iteration
   at 200 messages.
2. A 150-turn run (``build_session``, the real ``openai`` SDK over loopback to the fake
   server, which answers at once): each turn the model calls a tool that returns about
   700 characters of figures at once, and the loop adds its tool-usage note, so the
   transcript grows by three messages a turn to about 450. The per-iteration overhead is the gap between two
   consecutive requests arriving at the fake (dexter's loop, the SDK's request path and
   the fake's own reply; the fake runs in its own process), and the CPU time of dexter's
   process per iteration; printed are the medians over the first and the last 15
   iterations and their ratio. Goal (issue 18): the end at most 1.3x the start.

Prints the figures; asserts nothing. Run: ``.venv/bin/python benchmarks/loop_overhead.py
[--turns 150] [--repeat 5] [--skip-zero]``
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, Field

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dexter.agent.conversation import Conversation
from dexter.agent.loop import Agent, AgentSetup
from dexter.config import Settings
from dexter.messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from dexter.testing.scripted import ScriptedModel
from dexter.tools.base import Tool, ToolContext
from dexter.tools.calculator import CalculatorTool

HISTORY_ROUNDS = 66  # 66 x (assistant + tool result + note) ~ 200 messages
ITERATIONS = 40


def history() -> list[UserMessage | AssistantMessage | ToolResultMessage]:
    messages: list[UserMessage | AssistantMessage | ToolResultMessage] = []
    for i in range(HISTORY_ROUNDS):
        call = ToolCall(f"h{i}", "calculator", {"expression": f"{i}*3"})
        messages.append(AssistantMessage(text=f"step {i}", tool_calls=(call,)))
        messages.append(ToolResultMessage(call.id, "calculator", f'{{"data": {{"result": {i * 3}}}}}'))
        messages.append(UserMessage(f"note {i}", kind="note"))
    return messages


async def zero_latency() -> None:
    """Section 1: the loop alone at about 200 messages."""
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(home=f"{tmp}/home", scratchpad_dir=f"{tmp}/pads")
        settings.max_iterations = ITERATIONS + 1
        settings.memory.enabled = False
        replies: list[object] = [
            AssistantMessage(tool_calls=(ToolCall(f"c{i}", "calculator", {"expression": "1+1"}),))
            for i in range(ITERATIONS)
        ]
        model = ScriptedModel([*replies, "done"])  # type: ignore[list-item]
        agent = Agent(AgentSetup(
            settings=settings, model=model, fast_model=model, context_window=10_000_000,
            fast_context_window=10_000_000, tools=[CalculatorTool()],
            system_prompt="benchmark",
        ))
        conversation = Conversation()  # earlier-session messages come from the conversation
        earlier = history()
        conversation.messages = lambda: list(earlier)  # type: ignore[method-assign]
        stamps: list[float] = []
        async for event in agent.run("benchmark", conversation):
            if event.type == "tool_end":
                stamps.append(time.perf_counter())
        gaps = [(b - a) * 1000 for a, b in itertools.pairwise(stamps)]
        size = len(agent.messages)
    print(f"loop overhead per iteration at ~{size} messages (zero-latency model)")
    print(f"  median {statistics.median(gaps):.2f} ms   p95 {sorted(gaps)[int(len(gaps) * 0.95)]:.2f} ms"
          f"   max {max(gaps):.2f} ms   over {len(gaps)} iterations")
    print(f"  goal: < 5 ms   ratio to goal: {statistics.median(gaps) / 5:.2f}")


class QuarterParams(BaseModel):
    """Arguments of the benchmark's instant tool."""

    ticker: str = Field(description="Ticker.")
    quarter: int = Field(description="Quarter number.")


class QuarterTool(Tool[QuarterParams]):
    """Returns about 700 characters of figures at once (a stand-in for a data tool)."""

    name: ClassVar[str] = "get_quarter"
    description: ClassVar[str] = "One quarter's figures for a ticker."
    params: ClassVar[type[BaseModel]] = QuarterParams
    concurrency_safe: ClassVar[bool] = True
    compactable: ClassVar[bool] = True

    async def run(self, args: QuarterParams, ctx: ToolContext) -> str:
        """Figures for the quarter, at once."""
        rows = [f"{args.ticker} Q{args.quarter} line {i}: revenue {args.quarter * 1000 + i * 7.25:,.2f}M, "
                f"margin {40 + i % 9}.{i % 10}%" for i in range(10)]
        return "\n".join(rows)


FAKE = """
import json, signal, sys, threading, time
from pathlib import Path
from dexter.testing.fakellm import Dynamic, FakeLLM, Reply, ToolCallSpec

turns, port_file, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
arrivals, sizes, lock = [], [], threading.Lock()

def respond(request):
    stamp = time.perf_counter()
    body = request.body if isinstance(request.body, dict) else {}
    with lock:
        turn = len(arrivals)
        arrivals.append(stamp)
        sizes.append(len(body.get("messages", [])))
    if turn >= turns:
        return Reply(text="Margins held steady across the quarters above.")
    call = ToolCallSpec("get_quarter", {"ticker": "NVDA", "quarter": turn})
    return Reply(text=f"Quarter {turn} read; next quarter {turn + 1}.", tool_calls=[call])

done = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: done.set())
with FakeLLM() as fake:
    fake.set_default(Dynamic(respond))
    Path(port_file).write_text(fake.openai_base_url)
    done.wait()
    Path(out).write_text(json.dumps({"arrivals": arrivals, "sizes": sizes,
                                     "violations": fake.violations}))
"""
"""The fake server for the long run, in its own process so that its work (parsing and
checking each request) does not share the agent's interpreter."""


async def _drive(settings: Settings, env: dict[str, str]) -> list[float]:
    """Run the agent; the process CPU time at each tool result."""
    from dexter.agent.factory import build_session

    session = build_session(settings, env=env, tools=[QuarterTool()], memory_enabled=False)
    agent = session.agent
    cpu: list[float] = []
    try:
        async for event in agent.run("How did margins evolve? Read every quarter."):
            if event.type == "tool_end":
                cpu.append(time.process_time())
    finally:
        for model in {id(agent.setup.model): agent.setup.model,
                      id(agent.setup.fast_model): agent.setup.fast_model}.values():
            await model.aclose()
    return cpu


def one_long_run(turns: int) -> tuple[list[float], list[float], list[int], int]:
    """One run: arrival times at the fake, dexter's CPU at each tool result, request sizes
    (messages) and the fake's violation count."""
    with tempfile.TemporaryDirectory() as tmp:
        port_file, out = Path(tmp, "url"), Path(tmp, "out.json")
        fake = subprocess.Popen([sys.executable, "-c", FAKE, str(turns), str(port_file), str(out)],
                                env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
        try:
            deadline = time.monotonic() + 60
            while not port_file.exists() or not port_file.read_text():
                if fake.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("the fake server did not start")
                time.sleep(0.05)
            settings = Settings(model="gpt-5.6-sol", home=f"{tmp}/home",
                                scratchpad_dir=f"{tmp}/pads")
            settings.max_iterations = turns + 5
            settings.memory.enabled = False
            env = {"OPENAI_API_KEY": "sk-bench-openai-0000", "OPENAI_BASE_URL": port_file.read_text(),
                   "NO_PROXY": "127.0.0.1,localhost"}
            cpu = asyncio.run(_drive(settings, env))
        finally:
            fake.terminate()
            fake.wait(30)
        result = json.loads(out.read_text())
    return result["arrivals"], cpu, result["sizes"], len(result["violations"])


def long_run(turns: int, repeat: int, edge: int = 15) -> None:
    """Section 2: per-iteration overhead at the start and the end of a long run (medians
    over ``repeat`` runs: a busy machine moves single runs a lot)."""
    figures: dict[str, list[tuple[float, float]]] = {"wall, between requests": [],
                                                     "CPU of dexter's process": []}
    sizes: list[int] = []
    violations = 0
    for _ in range(repeat):
        arrivals, cpu, sizes, bad = one_long_run(turns)
        violations += bad
        for label, stamps in zip(figures, (arrivals, cpu), strict=True):
            gaps = [(b - a) * 1000 for a, b in itertools.pairwise(stamps)]
            figures[label].append((statistics.median(gaps[1:edge + 1]),
                                   statistics.median(gaps[-edge:])))
    print(f"\n{turns}-turn run x{repeat}, real OpenAI SDK over loopback, fake server in its own "
          f"process answering at once ({sizes[0]} -> {sizes[-1]} messages"
          f"{f', VIOLATIONS: {violations}' if violations else ''})")
    for label, pairs in figures.items():
        start = statistics.median(p[0] for p in pairs)
        end = statistics.median(p[1] for p in pairs)
        ratios = ", ".join(f"{e / s:.2f}" for s, e in pairs)
        print(f"  per-iteration overhead ({label}): start {start:.1f} ms, end {end:.1f} ms "
              f"(medians of the first and last {edge}); growth {end / start:.2f}x "
              f"(runs: {ratios}; goal: <= 1.3x)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Agent-loop overhead per iteration.")
    parser.add_argument("--turns", type=int, default=150)
    parser.add_argument("--repeat", type=int, default=5, help="long runs to take the median of")
    parser.add_argument("--skip-zero", action="store_true", help="only the long run")
    args = parser.parse_args(argv)
    if not args.skip_zero:
        asyncio.run(zero_latency())
    long_run(args.turns, args.repeat)


if __name__ == "__main__":
    main()
