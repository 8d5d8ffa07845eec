"""Request characters, cached share and cache-aware cost of a 40-turn session (issues 18, 29).

The real agent (``build_session``, the real SDKs over loopback HTTP) answers one question
with memory on at a 100,000-token window. The scripted model reads one 30,000-character
extract per turn with ``read_file`` (40 extracts, each with one planted number), writes a
short note with each call, then answers. Side requests are answered like a provider
would: the memory flush with one bullet, compaction with a summary that repeats every
planted number it was sent, both at once when they come as one request.

Every request body the fake receives is serialised in order (system, tools, messages).
A request's cached part is its longest common prefix with any of the previous 8 requests
(what a prompt cache bills at a tenth); cost = uncached characters + 0.1 x cached. For the
Anthropic run a second cost adds cache writes at 1.25x: the characters between the cached
prefix and the request's last ``cache_control`` breakpoint. Printed per request kind
(main, flush, compaction, flush+compaction): requests, characters, cached share, cost;
then the totals against the reference's, how many planted numbers reached a main request
or a compaction input, and the largest request against the window. Three runs: OpenAI,
Anthropic, and an OpenAI-compatible server without prompt caching (where dexter keeps the
separate side requests: its characters are what such a provider pays). Prints figures
only; always exits 0.

Run: ``.venv/bin/python benchmarks/cache_prefix.py [--turns 40] [--window 100000]
[--runs openai,anthropic,uncached] [--side-requests auto|continuation|separate]
[--all-tools]``
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
from dexter.config import ProviderSettings, Settings
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

try:
    from dexter.context.compaction import CONTINUATION_OPENING
except ImportError:  # a checkout from before the side requests continued the conversation
    CONTINUATION_OPENING = "IMPORTANT: this step is not research."

EXTRACT_CHARS = 30_000
PREVIOUS = 8
CACHED_PRICE = 0.1
WRITE_PRICE = 1.25
PLANT_RE = re.compile(r"PLANTED-\d{5}=\d+\.\d{2}")
REFERENCE = {"requests": 49, "chars": 8_494_025, "cached_share": 0.59, "cost": 3_980_543}
"""The reference implementation's figures on the same session (issue 29)."""
GOALS = {"cost": 0.6, "chars": 0.75}
KINDS = ("main", "flush", "compaction", "flush+compaction", "overflow")
RUNS = {
    "openai": ("OpenAI", "gpt-5.6-sol"),
    "anthropic": ("Anthropic", "claude-sonnet-4-6"),
    "uncached": ("OpenAI-compatible server without prompt caching", "plain:gpt-5.6-sol"),
}


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


def parts_of(body: dict[str, Any]) -> list[Any]:
    """The request in cache order, one JSON value per part: system, tools, each message."""
    system = body.get("system", "")
    messages = body.get("messages", [])
    if not system and messages and messages[0].get("role") in ("system", "developer"):
        system, messages = messages[0], messages[1:]
    return [system, body.get("tools", []), *messages]


def without_breakpoints(value: Any) -> Any:
    """``value`` without Anthropic's ``cache_control`` markers: they say where to cache,
    and are no part of what is cached (a block the last request marked is the same
    prefix in the next request, which marks a later block)."""
    if isinstance(value, dict):
        return {k: without_breakpoints(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [without_breakpoints(v) for v in value]
    return value


def serialise(body: dict[str, Any]) -> str:
    """The request in cache order: system, tools, then messages (breakpoints left out)."""
    return "\n".join(json.dumps(without_breakpoints(p), sort_keys=True) for p in parts_of(body))


def last_breakpoint(body: dict[str, Any]) -> int:
    """Where the request's last ``cache_control`` breakpoint ends in ``serialise(body)``
    (0 when it has none): the end of the part that carries it."""
    end = position = 0
    for part in parts_of(body):
        position += len(json.dumps(without_breakpoints(part), sort_keys=True)) + 1
        if '"cache_control"' in json.dumps(part):
            end = position - 1
    return end


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


def last_user_text(body: dict[str, Any]) -> str:
    """The text of the request's last user message (its last text block on Anthropic)."""
    messages = body.get("messages") or []
    if not messages or messages[-1].get("role") != "user":
        return ""
    content = messages[-1].get("content")
    if isinstance(content, list):
        texts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        return texts[-1] if texts else ""
    return content if isinstance(content, str) else ""


def kind_of(body: dict[str, Any], text: str) -> str:
    """main, flush, compaction or flush+compaction, in either form of the side requests."""
    instruction = last_user_text(body)
    if instruction.startswith(CONTINUATION_OPENING):
        if "<memory>" in instruction:
            return "flush+compaction"
        return "compaction" if "<summary>" in instruction else "flush"
    if not body.get("tools"):  # the separate forms bind no tools
        return "flush" if "long-term memory" in text[:400] else "compaction"
    return "main"


@dataclass
class Script:
    """The scripted model; thread-safe (the fake serves from threads)."""

    paths: list[str]
    window: int
    kinds: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    breakpoints: list[int] = field(default_factory=list)
    main_seen: set[str] = field(default_factory=set)
    compaction_seen: set[str] = field(default_factory=set)
    turn: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def respond(self, request: RecordedRequest) -> ConcreteStep:
        body = request.body if isinstance(request.body, dict) else {}
        text = serialise(body)
        tokens = estimate_text_tokens(text)
        found = set(PLANT_RE.findall(text))
        kind = kind_of(body, text)
        with self.lock:
            self.texts.append(text)
            self.breakpoints.append(last_breakpoint(body))
            if tokens > self.window:
                self.kinds.append("overflow")
                return HttpError.openai_context_overflow(self.window, tokens)
            self.kinds.append(kind)
            memory = "- The user researches segment margins."
            numbers = "\n".join(f"- {p}" for p in sorted(found)) or "- none"
            summary = (f"<analysis>Checked.</analysis>\n<summary>\n## 6. Numerical Data\n"
                       f"{numbers}\n</summary>")
            if kind == "flush":
                return Reply(text=memory, usage=Usage(tokens, 10))
            if kind in ("compaction", "flush+compaction"):
                self.compaction_seen |= found
                if kind == "flush+compaction":
                    summary = f"<memory>\n{memory}\n</memory>\n{summary}"
                return Reply(text=summary, usage=Usage(tokens, 50))
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


async def _drive(settings: Settings, env: dict[str, str], tools: list[Tool[Any]] | None) -> str:
    session = build_session(settings, env=env, tools=tools, memory_enabled=True)
    status = "?"
    try:
        async for event in session.agent.run("How did segment margins evolve? Read every extract."):
            if getattr(event, "type", "") == "done":
                status = str(getattr(event, "status", "?"))
    finally:
        await session.aclose()
    return status


def run(turns: int, window: int, seed: int, which: str = "openai",
        side_requests: str = "", all_tools: bool = False) -> tuple[Script, str, int]:
    """One session; returns the script (the recorded requests), the run status, planted.
    ``all_tools``: bind dexter's whole tool set (as ``dexter ask`` does) instead of
    ``read_file`` alone."""
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
        settings = Settings(model=RUNS[which][1], home=str(home), scratchpad_dir=f"{tmp}/pads")
        settings.max_iterations = turns + 10
        settings.memory.enabled = True
        settings.memory.embedding_provider = "none"
        settings.context.context_window = window
        if side_requests:
            settings.context.side_requests = side_requests
        settings.providers["plain"] = ProviderSettings(base_url=fake.openai_base_url,
                                                       api_key_env="PLAIN_API_KEY")
        env = {"OPENAI_API_KEY": "sk-bench-openai-0000", "OPENAI_BASE_URL": fake.openai_base_url,
               "ANTHROPIC_API_KEY": "sk-ant-bench-0000", "ANTHROPIC_BASE_URL": fake.anthropic_base_url,
               "PLAIN_API_KEY": "sk-bench-plain-0000"}
        status = asyncio.run(_drive(settings, env, None if all_tools else [ReadFileTool()]))
    return script, status, turns


@dataclass
class Tally:
    """Figures of one kind of request (or of all)."""

    requests: int = 0
    chars: int = 0
    cached: int = 0
    written: int = 0

    @property
    def cost(self) -> float:
        return (self.chars - self.cached) + CACHED_PRICE * self.cached

    @property
    def cost_with_writes(self) -> float:
        """Anthropic's pricing: cached at 0.1x, written to the cache at 1.25x, the rest 1x."""
        return (self.chars - self.cached - self.written + WRITE_PRICE * self.written
                + CACHED_PRICE * self.cached)

    def add(self, chars: int, cached: int, written: int) -> None:
        self.requests += 1
        self.chars += chars
        self.cached += cached
        self.written += written


def tallies(script: Script) -> dict[str, Tally]:
    """Figures per request kind, and ``all``."""
    out = {kind: Tally() for kind in (*KINDS, "all")}
    for i, text in enumerate(script.texts):
        recent = script.texts[max(0, i - PREVIOUS):i]
        cached = max((common_prefix(text, old) for old in recent), default=0)
        written = max(script.breakpoints[i] - cached, 0)
        out[script.kinds[i]].add(len(text), cached, written)
        out["all"].add(len(text), cached, written)
    return out


def report(which: str, script: Script, status: str, planted: int, window: int) -> None:
    name, model = RUNS[which]
    figures = tallies(script)
    writes = which == "anthropic"
    print(f"\n{name} ({model}): run {status}")
    header = f"  {'kind':<17}{'requests':>9}{'characters':>13}{'cached':>8}{'cost 0.1x':>13}"
    print(header + (f"{'+writes 1.25x':>15}" if writes else ""))
    for kind in (*KINDS, "all"):
        t = figures[kind]
        if not t.requests:
            continue
        line = (f"  {kind:<17}{t.requests:>9}{t.chars:>13,}{t.cached / max(t.chars, 1):>8.0%}"
                f"{t.cost:>13,.0f}")
        print(line + (f"{t.cost_with_writes:>15,.0f}" if writes else ""))
    total, ref = figures["all"], REFERENCE
    print(f"  against the reference ({ref['requests']} requests, {ref['chars']:,} characters, "
          f"{ref['cached_share']:.0%} cached, cost {ref['cost']:,}): requests {total.requests}, "
          f"characters {total.chars / ref['chars']:.2f}x (goal <= {GOALS['chars']}x), "
          f"cost {total.cost / ref['cost']:.2f}x (goal <= {GOALS['cost']}x)")
    reached = len(script.main_seen | script.compaction_seen)
    largest = max(estimate_text_tokens(text) for text in script.texts)
    print(f"  planted numbers in a main request or a compaction input: {reached}/{planted}; "
          f"largest request {largest:,} tokens (window {window:,})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Cached share and cost of a 40-turn session.")
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--window", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--runs", default="openai,anthropic,uncached",
                        help="comma-separated: " + ", ".join(RUNS))
    parser.add_argument("--side-requests", default="",
                        help="[context] side_requests for the runs (default: the config's)")
    parser.add_argument("--all-tools", action="store_true",
                        help="bind dexter's whole tool set, not read_file alone")
    args = parser.parse_args(argv)
    print(f"cache prefix benchmark: {args.turns} turns, one {EXTRACT_CHARS:,}-character "
          f"extract per turn, window {args.window:,}, memory on, "
          f"{'all tools' if args.all_tools else 'read_file only'}")
    for which in [w.strip() for w in args.runs.split(",") if w.strip()]:
        script, status, planted = run(args.turns, args.window, args.seed, which,
                                      args.side_requests, args.all_tools)
        report(which, script, status, planted, args.window)
    return 0


if __name__ == "__main__":
    sys.exit(main())
