"""Request characters and the cached-prefix share of a 40-turn session (issue 18).

The real agent (``build_session``, the real OpenAI SDK over loopback HTTP) answers one
question with memory on at a 100,000-token window. The scripted model reads one
30,000-character extract per turn with ``read_file`` (40 extracts, each with one planted
number), writes a short note with each call, then answers. Tool-less calls are answered
like a provider would: the memory flush with one bullet, compaction with a summary that
repeats every planted number of its input.

Every request body the fake receives is serialised in order (system, tools, messages),
and printed are: requests by kind, request characters, the share of request characters
that repeat a recent request's prefix (the longest common prefix with any of the previous
8 requests: what a prompt cache bills at 10-50%), the cost in characters with cached input
billed at 0.1x, how many planted numbers reached a main request or a compaction input,
and the largest request against the window. Prints figures only; always exits 0.

Run: ``.venv/bin/python benchmarks/cache_prefix.py [--turns 40] [--window 100000]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dexter.agent.factory import build_session
from dexter.config import Settings
from dexter.context.tokens import estimate_text_tokens
from dexter.testing.fakellm import (
    ConcreteStep,
    Dynamic,
    FakeLLM,
    HttpError,
    RecordedRequest,
    Reply,
    ToolCallSpec,
    Usage,
)
from dexter.tools.base import Tool
from dexter.tools.files import ReadFileTool

EXTRACT_CHARS = 30_000
PREVIOUS = 8
CACHED_PRICE = 0.1
PLANT_RE = re.compile(r"PLANTED-\d{5}=\d+\.\d{2}")
REFERENCE = {"requests": 49, "chars": 8_494_025, "cached_share": 0.59, "cost": 3_980_000}
"""The reference implementation's figures on the same session (issue 18)."""


def make_extract(n: int, rng: random.Random) -> tuple[str, str]:
    """One extract of about ``EXTRACT_CHARS`` characters and its planted number."""
    planted = f"PLANTED-{n:05d}={rng.uniform(10, 9_999):.2f}"
    lines: list[str] = []
    size = 0
    while size < EXTRACT_CHARS:
        line = (f"Segment {rng.choice('ABCDEFGH')} revenue in period {len(lines)} was "
                f"${rng.uniform(100, 90_000):,.1f} million; margin {rng.uniform(20, 70):.1f}%.\n")
        lines.append(line)
        size += len(line)
    lines.insert(rng.randrange(len(lines)), f"Key figure: {planted}\n")
    return "".join(lines), planted


def serialise(body: dict[str, Any]) -> str:
    """The request in cache order: system, tools, then messages."""
    system = body.get("system", "")
    messages = body.get("messages", [])
    if not system and messages and messages[0].get("role") in ("system", "developer"):
        system, messages = messages[0], messages[1:]
    parts = [json.dumps(system, sort_keys=True), json.dumps(body.get("tools", []), sort_keys=True)]
    parts += [json.dumps(m, sort_keys=True) for m in messages]
    return "\n".join(parts)


def common_prefix(a: str, b: str) -> int:
    """Length of the longest common prefix of ``a`` and ``b``."""
    low, high = 0, min(len(a), len(b))
    while low < high:  # binary search on slices: fast for long strings
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


@dataclass
class Script:
    """The scripted model; thread-safe (the fake serves from threads)."""

    paths: list[str]
    window: int
    kinds: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    main_seen: set[str] = field(default_factory=set)
    compaction_seen: set[str] = field(default_factory=set)
    turn: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def respond(self, request: RecordedRequest) -> ConcreteStep:
        body = request.body if isinstance(request.body, dict) else {}
        text = serialise(body)
        tokens = estimate_text_tokens(text)
        found = set(PLANT_RE.findall(text))
        with self.lock:
            self.texts.append(text)
            if not body.get("tools"):
                if "long-term memory" in text[:400]:
                    self.kinds.append("flush")
                    return Reply(text="- The user researches segment margins.",
                                 usage=Usage(tokens, 10))
                self.kinds.append("compaction")
                self.compaction_seen |= found
                numbers = "\n".join(f"- {p}" for p in sorted(found)) or "- none"
                return Reply(text=f"<analysis>Checked.</analysis>\n<summary>\n## 6. Numerical "
                                  f"Data\n{numbers}\n</summary>", usage=Usage(tokens, 50))
            if tokens > self.window:
                self.kinds.append("overflow")
                return HttpError.openai_context_overflow(self.window, tokens)
            self.kinds.append("main")
            self.main_seen |= found
            if self.turn >= len(self.paths):
                return Reply(text="Margins held steady; the figures are above.",
                             usage=Usage(tokens, 20))
            path = self.paths[self.turn]
            self.turn += 1
            note = (f"Extract {self.turn - 1} read; next I read extract {self.turn} of "
                    f"{len(self.paths)} to compare segment margins across periods.")
            return Reply(text=note, tool_calls=[ToolCallSpec("read_file", {"path": path})],
                         usage=Usage(tokens, 40))


async def _drive(settings: Settings, env: dict[str, str], tools: list[Tool[Any]]) -> str:
    session = build_session(settings, env=env, tools=tools, memory_enabled=True)
    agent = session.agent
    status = "?"
    try:
        async for event in agent.run("How did segment margins evolve? Read every extract."):
            if getattr(event, "type", "") == "done":
                status = str(getattr(event, "status", "?"))
    finally:
        for model in {id(agent.setup.model): agent.setup.model,
                      id(agent.setup.fast_model): agent.setup.fast_model}.values():
            await model.aclose()
    return status


def run(turns: int, window: int, seed: int) -> tuple[Script, str, int]:
    """One session; returns the script (the recorded requests), the run status, planted."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp, FakeLLM() as fake:
        home = Path(tmp) / "home"
        folder = home / "extracts"
        folder.mkdir(parents=True)
        paths = []
        for n in range(turns):
            text, _ = make_extract(n, rng)
            path = folder / f"extract-{n:02d}.txt"
            path.write_text(text, encoding="utf-8")
            paths.append(str(path))
        script = Script(paths, window)
        fake.set_default(Dynamic(script.respond))
        settings = Settings(model="gpt-5.6-sol", home=str(home), scratchpad_dir=f"{tmp}/pads")
        settings.max_iterations = turns + 10
        settings.memory.enabled = True
        settings.memory.embedding_provider = "none"
        settings.context.context_window = window
        env = {"OPENAI_API_KEY": "sk-bench-openai-0000", "OPENAI_BASE_URL": fake.openai_base_url}
        status = asyncio.run(_drive(settings, env, [ReadFileTool()]))
    return script, status, turns


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Cached-prefix share of a 40-turn session.")
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--window", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=18)
    args = parser.parse_args(argv)
    script, status, planted = run(args.turns, args.window, args.seed)
    total = cached = 0
    largest = 0
    for i, text in enumerate(script.texts):
        total += len(text)
        largest = max(largest, estimate_text_tokens(text))
        recent = script.texts[max(0, i - PREVIOUS):i]
        cached += max((common_prefix(text, old) for old in recent), default=0)
    cost = (total - cached) + CACHED_PRICE * cached
    by_kind = {k: script.kinds.count(k) for k in ("main", "flush", "compaction", "overflow")}
    reached = len(script.main_seen | script.compaction_seen)
    ref = REFERENCE
    print(f"cache prefix benchmark: {args.turns} turns, one {EXTRACT_CHARS:,}-character "
          f"extract per turn, window {args.window:,}, memory on; run {status}")
    print(f"  requests: {len(script.texts)} (" + ", ".join(f"{k} {v}" for k, v in
                                                          by_kind.items()) +
          f"); reference {ref['requests']}")
    print(f"  request characters: {total:,} ({total / ref['chars']:.2f}x the reference)")
    print(f"  share repeating a recent request's prefix: {cached / max(total, 1):.0%} "
          f"(reference {ref['cached_share']:.0%})")
    print(f"  cost with cached input at {CACHED_PRICE}x: {cost / 1e6:.2f} M chars "
          f"({cost / ref['cost']:.2f}x the reference)")
    print(f"  planted numbers in a main request or a compaction input: {reached}/{planted}")
    print(f"  largest request: {largest:,} tokens (window {args.window:,})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
