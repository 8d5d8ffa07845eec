"""A scripted 60-tool-call research run against the fake LLM server, defenses on and off.

The real agent (``dexter.agent.factory.build_session``, the real OpenAI or Anthropic SDK over
loopback HTTP) runs a research session whose model is scripted by ``Researcher``: 20 turns
of 3 calls to a compactable ``research_data`` tool with mixed result sizes (small JSON,
20 KB pages, 60 KB statements, 150 KB filings: about 2.8 MB of raw tool output), then an
answer. Every result holds one unique planted number (``PLANTED-00042=1234.56``) at a
pseudo-random line, so most planted numbers of large results sit far past the
2,000-character preview. Like a diligent model, the script reads such a number back from
the saved file with ``read_file`` (the path the preview names) in its next turn;
``--no-read-back`` turns that off to show what the preview alone delivers.

The scripted model behaves like a provider with a window: a request larger than the
window is refused with the provider's context-overflow error. Calls without tools bound
(compaction) are answered with a summary that repeats every planted number in their input,
so a number in the compaction input survives.

Three runs: defenses on at the design's 128,000-token window; defenses on at a small window
(48,000) that forces LLM compaction; defenses off. Printed per run: peak request tokens vs
the threshold and the window, total input tokens sent, LLM calls, compactions, time spent
in the context stages per turn (earlier-session history brings the view to about 500
messages) and where each planted number reached: a request to the model, the compaction
input, only a saved file, or only the scratchpad. Request tokens are dexter's estimator
over the text of each recorded request body (also what the fake reports as usage).
Prints figures and GOAL MET/NOT MET lines; always exits 0. Runtime: a few seconds.

Run: ``.venv/bin/python benchmarks/context_session.py [--provider anthropic]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pydantic import BaseModel

import dexter.agent.loop as loop_module
from dexter.agent.conversation import Conversation
from dexter.agent.factory import build_session
from dexter.config import Settings
from dexter.context import (
    compaction,
    microcompact,
    overflow,
    repair,
    results,
    thinking,
    threshold,
)
from dexter.context.limits import context_threshold
from dexter.context.tokens import MessageTokenCache, estimate_text_tokens
from dexter.events import Compaction, ContextCleared, Done, Event, Microcompact
from dexter.messages import AssistantMessage, Message, UserMessage
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
from dexter.tools.base import Tool, ToolContext
from dexter.tools.files import ReadFileTool

TOTAL_CALLS = 60
CALLS_PER_TURN = 3
DEFAULT_WINDOW = 128_000
SMALL_WINDOW = 48_000
HISTORY_MESSAGES = 440
STAGE_GOAL_MS = 5.0
STAGE_GOAL_MESSAGES = 500
PLANT_RE = re.compile(r"PLANTED-\d{5}=\d+\.\d{2}")
SAVED_RE = re.compile(r"Full text saved to (.+?)\]")
MODELS = {"openai": "gpt-5.6-sol", "anthropic": "claude-sonnet-4-6"}
SIZE_PATTERN = ("small", "20k", "60k", "small", "20k", "150k",
                "small", "20k", "60k", "20k", "60k", "150k")
SIZES = {"small": 0, "20k": 20_000, "60k": 60_000, "150k": 150_000}
TICKERS = ("NVDA", "AMD", "AVGO", "TSM", "INTC", "QCOM", "MU", "ARM")


# ---------------------------------------------------------------------------------------
# The scripted payloads and the tool that returns them
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Payload:
    item: int
    kind: str
    query: str
    text: str
    planted: str


def _filler_line(rng: random.Random, kind: str, n: int) -> str:
    ticker = rng.choice(TICKERS)
    value = rng.uniform(100, 90_000)
    if kind == "20k":
        return (f"| {ticker} | FY{2015 + n % 10} Q{1 + n % 4} | revenue {value:,.1f}M | "
                f"gross margin {rng.uniform(30, 78):.1f}% | analysts cite data center demand |\n")
    if kind == "60k":
        return json.dumps({"ticker": ticker, "period": f"{2010 + n % 15}-Q{1 + n % 4}",
                           "revenue": round(value, 2), "net_income": round(value * 0.31, 2),
                           "eps": round(rng.uniform(0.1, 9), 2)}) + "\n"
    return (f"Item 7. Management's discussion: {ticker} segment revenue was ${value:,.0f} "
            f"million in period {n}, reflecting supply agreements and pricing actions.\n")


def make_payload(item: int, rng: random.Random) -> Payload:
    """One tool result: its size class, a unique planted number at a random line."""
    kind = SIZE_PATTERN[item % len(SIZE_PATTERN)]
    ticker = TICKERS[item % len(TICKERS)]
    planted = f"PLANTED-{item:05d}={rng.uniform(10, 9_999):.2f}"
    query = f"{ticker} {kind} dataset number {item} for margin research"
    if kind == "small":
        body = {"ticker": ticker, "metric": "free_cash_flow", "period": "FY2025",
                "value": round(rng.uniform(1, 90_000), 2), "note": planted}
        return Payload(item, kind, query, json.dumps({"data": body}), planted)
    lines: list[str] = []
    size = 0
    while size < SIZES[kind]:
        line = _filler_line(rng, kind, len(lines))
        lines.append(line)
        size += len(line)
    lines.insert(rng.randrange(len(lines)), f"Key figure: {planted}\n")
    return Payload(item, kind, query, "".join(lines), planted)


class ResearchParams(BaseModel):
    """Arguments of ``research_data``."""

    query: str
    item: int


class ResearchDataTool(Tool[ResearchParams]):
    """Returns the scripted payload for ``item`` (re-fetchable, so compactable)."""

    name: ClassVar[str] = "research_data"
    description: ClassVar[str] = "Fetch one research dataset (filings, statements, pages)."
    params: ClassVar[type[BaseModel]] = ResearchParams
    concurrency_safe: ClassVar[bool] = True
    compactable: ClassVar[bool] = True

    def __init__(self, payloads: dict[int, Payload]) -> None:
        self.payloads = payloads

    async def run(self, args: ResearchParams, ctx: ToolContext) -> str:
        """The payload text."""
        return self.payloads[args.item].text


# ---------------------------------------------------------------------------------------
# The scripted model behind the fake server
# ---------------------------------------------------------------------------------------

def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def request_text(body: dict[str, Any]) -> str:
    """The text a request carries: system prompt, messages (with tool calls) and tool schemas."""
    parts = list(_strings(body.get("system", "")))
    parts += _strings(body.get("messages", []))
    if body.get("tools"):
        parts.append(json.dumps(body["tools"]))
    return "\n".join(parts)


@dataclass
class CallRecord:
    kind: str  # "main", "summary" or "overflow"
    tokens: int


@dataclass
class Researcher:
    """Answers every request the agent makes; thread-safe (the fake serves from threads).

    A diligent researcher: when a result came back as a saved-file preview whose key
    figure is not in the preview, the next turn also reads that part of the saved file
    with ``read_file`` (path from the preview, offset/limit around the figure's line).
    """

    payloads: list[Payload]
    window: int
    read_back: bool = True
    calls: list[CallRecord] = field(default_factory=list)
    sent_to_model: set[str] = field(default_factory=set)
    compaction_input: set[str] = field(default_factory=set)
    read_back_numbers: set[str] = field(default_factory=set)
    read_back_paths: set[str] = field(default_factory=set)
    read_back_calls: int = 0
    planned: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def respond(self, request: RecordedRequest) -> ConcreteStep:
        """A summary for tool-less calls, else the next research step (or an overflow)."""
        body = request.body if isinstance(request.body, dict) else {}
        text = request_text(body)
        tokens = estimate_text_tokens(text)
        found = set(PLANT_RE.findall(text))
        with self.lock:
            if not body.get("tools"):
                self.calls.append(CallRecord("summary", tokens))
                self.compaction_input |= found
                return self._summary(found, tokens)
            if tokens > self.window:
                self.calls.append(CallRecord("overflow", tokens))
                if request.route == "anthropic":
                    return HttpError.anthropic_prompt_too_long(tokens, self.window)
                return HttpError.openai_context_overflow(self.window, tokens)
            self.calls.append(CallRecord("main", tokens))
            self.sent_to_model |= found
            return self._next_step(tokens, text)

    def _summary(self, found: set[str], tokens: int) -> Reply:
        numbers = "\n".join(f"- {p}" for p in sorted(found)) or "- none"
        text = ("<analysis>Walked through every dataset and checked each figure.</analysis>\n"
                "<summary>\n## 1. Original Query and Intent\nSemiconductor margin research.\n"
                f"## 6. Numerical Data\n{numbers}\n"
                "## 9. Recommended Next Steps\nFetch the remaining datasets.\n</summary>")
        return Reply(text=text, usage=Usage(tokens, estimate_text_tokens(text)))

    def _read_backs(self, text: str) -> list[ToolCallSpec]:
        """``read_file`` calls for fresh previews whose planted number the model has not seen."""
        calls = []
        for path in SAVED_RE.findall(text):
            if path in self.read_back_paths:
                continue
            self.read_back_paths.add(path)
            lines = Path(path).read_text(encoding="utf-8").splitlines()
            hits = [n for n, line in enumerate(lines, 1) if PLANT_RE.search(line)]
            if not hits or PLANT_RE.findall(lines[hits[0] - 1])[0] in self.sent_to_model:
                continue
            self.read_back_numbers.add(PLANT_RE.findall(lines[hits[0] - 1])[0])
            offset = max(1, hits[0] - 10)
            calls.append(ToolCallSpec("read_file", {"path": path, "offset": offset, "limit": 30}))
        self.read_back_calls += len(calls)
        return calls

    def _next_step(self, tokens: int, text: str) -> Reply:
        reads = self._read_backs(text) if self.read_back else []
        batch = self.payloads[self.planned:self.planned + CALLS_PER_TURN]
        self.planned += len(batch)
        if not batch and not reads:
            return Reply(text="Margins expanded across the group; figures are in the summary.",
                         usage=Usage(tokens, 20))
        calls = reads + [ToolCallSpec("research_data", {"query": p.query, "item": p.item})
                         for p in batch]
        return Reply(text=f"Fetching {len(batch)} datasets, reading {len(reads)} saved results.",
                     tool_calls=calls, usage=Usage(tokens, 40))


# ---------------------------------------------------------------------------------------
# Timing the context stages inside the real loop
# ---------------------------------------------------------------------------------------

@dataclass
class StageClock:
    """Per-turn time in the context stages (model calls made by a stage excluded)."""

    turns: list[float] = field(default_factory=list)
    view_sizes: list[int] = field(default_factory=list)
    by_stage: dict[str, float] = field(default_factory=dict)
    llm_seconds: float = 0.0
    depth: int = 0
    """Timed calls in progress: a stage calling another timed function is counted once."""

    def new_turn(self, messages: list[Message]) -> None:
        self.turns.append(0.0)
        self.view_sizes.append(len(messages))

    def add(self, stage: str, seconds: float) -> None:
        self.by_stage[stage] = self.by_stage.get(stage, 0.0) + seconds
        if self.turns:
            self.turns[-1] += seconds


def _timed(clock: StageClock, stage: str, fn: Callable[..., Any], *,
           starts_turn: bool = False) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if starts_turn:
            clock.new_turn(args[0])
        if clock.depth:
            return fn(*args, **kwargs)
        clock.depth += 1
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            clock.depth -= 1
            clock.add(stage, time.perf_counter() - start)

    return wrapper


def _timed_llm(clock: StageClock, fn: Callable[..., Any]) -> Any:
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        depth, clock.depth = clock.depth, 0  # a stage's model call is not stage time
        try:
            return await fn(*args, **kwargs)
        finally:
            clock.depth = depth
            clock.llm_seconds += time.perf_counter() - start

    return wrapper


def _timed_threshold(clock: StageClock, fn: Callable[..., AsyncIterator[Any]]) -> Any:
    async def wrapper(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        stream = fn(*args, **kwargs)
        while True:
            llm_before = clock.llm_seconds
            start = time.perf_counter()
            clock.depth += 1
            try:
                item = await stream.__anext__()
            except StopAsyncIteration:
                return
            finally:
                clock.depth -= 1
                spent = time.perf_counter() - start - (clock.llm_seconds - llm_before)
                clock.add("threshold", spent)
            yield item

    return wrapper


@contextmanager
def stage_clock() -> Iterator[StageClock]:
    """Wrap every context stage the loop calls (and its token estimates) with a timer."""
    clock = StageClock()
    patches: list[tuple[Any, str, Any]] = [
        (repair, "repair_transcript",
         _timed(clock, "repair", repair.repair_transcript, starts_turn=True)),
        (microcompact, "microcompact", _timed(clock, "microcompact", microcompact.microcompact)),
        (thinking, "strip_old_thinking",
         _timed(clock, "strip thinking", thinking.strip_old_thinking)),
        (results, "cap_tool_result", _timed(clock, "result cap", results.cap_tool_result)),
        (results, "apply_turn_budget", _timed(clock, "turn budget", results.apply_turn_budget)),
        (overflow, "handle_overflow", _timed(clock, "overflow", overflow.handle_overflow)),
        (MessageTokenCache, "estimate", _timed(clock, "estimates", MessageTokenCache.estimate)),
        (loop_module, "estimate_text_tokens",
         _timed(clock, "estimates", estimate_text_tokens)),
        (threshold, "manage_context_threshold",
         _timed_threshold(clock, threshold.manage_context_threshold)),
        (compaction, "compact", _timed_llm(clock, compaction.compact)),
    ]
    # a function the loop no longer imports by name is not patched (nothing to time there)
    patches = [(module, name, fn) for module, name, fn in patches if hasattr(module, name)]
    originals = [(module, name, getattr(module, name)) for module, name, _ in patches]
    for module, name, replacement in patches:
        setattr(module, name, replacement)
    try:
        yield clock
    finally:
        for module, name, original in originals:
            setattr(module, name, original)


# ---------------------------------------------------------------------------------------
# One run
# ---------------------------------------------------------------------------------------

@dataclass
class RunReport:
    label: str
    defenses: bool
    researcher: Researcher
    clock: StageClock
    events: list[Event]
    seconds: float
    threshold: int
    window: int
    saved_files: int
    on_disk: set[str]
    """Planted numbers found in the files saved under DEXTER_HOME/tool-results."""

    @property
    def done(self) -> Done | None:
        found = [e for e in self.events if isinstance(e, Done)]
        return found[-1] if found else None

    def count(self, kind: type[Event], **match: Any) -> int:
        return sum(1 for e in self.events if isinstance(e, kind)
                   and all(getattr(e, k) == v for k, v in match.items()))


def history_messages(count: int) -> list[Message]:
    """Earlier-session exchanges (short text) that bring the view to about 500 messages."""
    out: list[Message] = []
    for n in range(count // 2):
        out.append(UserMessage(f"Earlier question {n}: what was {TICKERS[n % 8]}'s "
                               f"capex in FY{2015 + n % 10}?", kind="history"))
        out.append(AssistantMessage(text=f"Capex was ${1_000 + n * 7:,} million that year."))
    return out


async def _drive(settings: Settings, env: dict[str, str], tools: list[Tool[Any]],
                 history: list[Message], events: list[Event]) -> None:
    session = build_session(settings, env=env, tools=tools, memory_enabled=False)
    agent = session.agent
    conversation = Conversation()
    conversation.messages = lambda: list(history)  # type: ignore[method-assign]
    try:
        async for event in agent.run("How did semiconductor gross margins evolve? "
                                     "Use every dataset.", conversation):
            events.append(event)
    finally:
        for model in {id(agent.setup.model): agent.setup.model,
                      id(agent.setup.fast_model): agent.setup.fast_model}.values():
            await model.aclose()


def run_session(label: str, *, defenses: bool, provider: str, window: int, history: int,
                seed: int, read_back: bool) -> RunReport:
    """Run the scripted session once."""
    rng = random.Random(seed)
    payloads = [make_payload(i, rng) for i in range(TOTAL_CALLS)]
    researcher = Researcher(payloads, window, read_back=read_back)
    tools: list[Tool[Any]] = [ResearchDataTool({p.item: p for p in payloads}), ReadFileTool()]
    events: list[Event] = []
    with tempfile.TemporaryDirectory() as tmp, FakeLLM() as fake:
        fake.set_default(Dynamic(researcher.respond))
        settings = Settings(model=MODELS[provider], home=f"{tmp}/home",
                            scratchpad_dir=f"{tmp}/scratchpads")
        settings.max_iterations = 2 * TOTAL_CALLS
        settings.memory.enabled = False
        settings.context.enabled = defenses
        settings.context.context_window = window
        env = {"OPENAI_API_KEY": "sk-bench-openai-0000", "ANTHROPIC_API_KEY": "sk-ant-bench-0000",
               "OPENAI_BASE_URL": fake.openai_base_url,
               "ANTHROPIC_BASE_URL": fake.anthropic_base_url}
        start = time.perf_counter()
        with stage_clock() as clock:
            asyncio.run(_drive(settings, env, tools, history_messages(history), events))
        seconds = time.perf_counter() - start
        saved = sorted((Path(tmp) / "home" / "tool-results").glob("*.txt"))
        on_disk = {p for path in saved for p in PLANT_RE.findall(path.read_text(encoding="utf-8"))}
        fake.assert_no_violations()
    return RunReport(label, defenses, researcher, clock, events, seconds,
                     context_threshold(window, settings.context), window, len(saved), on_disk)


# ---------------------------------------------------------------------------------------
# Printing
# ---------------------------------------------------------------------------------------

def _ms(seconds: float) -> str:
    return f"{seconds * 1000:5.2f} ms"


def print_report(report: RunReport) -> dict[str, bool]:
    """Print one run's figures; returns the goals it checks (runs with the defenses on)."""
    r = report.researcher
    main = [c for c in r.calls if c.kind == "main"]
    summary = [c for c in r.calls if c.kind == "summary"]
    refused = [c for c in r.calls if c.kind == "overflow"]
    peak = max((c.tokens for c in main + refused), default=0)
    peak_summary = max((c.tokens for c in summary), default=0)
    done = report.done
    planted = {p.planted for p in r.payloads}
    fetched = {p.planted for p in r.payloads[:r.planned]}
    reached = fetched & r.sent_to_model
    via_read_back = reached & r.read_back_numbers
    summary_only = (fetched & r.compaction_input) - reached
    disk_only = (fetched & report.on_disk) - reached - r.compaction_input
    nowhere = fetched - reached - r.compaction_input - report.on_disk
    print(f"\n== {report.label}: window {report.window:,}, threshold {report.threshold:,} ==")
    status = (done.status + (f" ({done.error_kind})" if done.error_kind else "")) if done else "?"
    print(f"  run: {status} after {done.iterations if done else 0} iterations; "
          f"{r.planned}/{TOTAL_CALLS} research calls + {r.read_back_calls} read_file read-backs; "
          f"{report.seconds:.1f} s wall")
    verdict = "over the window" if peak > report.window else (
        "over the threshold" if peak > report.threshold else "within the threshold")
    print(f"  peak request tokens to the main model: {peak:,} ({verdict})")
    if summary:
        print(f"  peak compaction request: {peak_summary:,} tokens (fast model window "
              f"{report.window:,}; compaction is bounded by that window, not the threshold)")
    if refused:
        print(f"  context overflow: {len(refused)} request(s) refused by the provider, the first "
              f"at {refused[0].tokens:,} tokens")
    print(f"  total input tokens sent: {sum(c.tokens for c in r.calls):,} "
          f"(main model {sum(c.tokens for c in main):,}, "
          f"compaction {sum(c.tokens for c in summary):,})")
    print(f"  LLM calls: {len(r.calls)} (main {len(main)}, compaction {len(summary)}, "
          f"refused {len(refused)})")
    print(f"  compactions: {report.count(Compaction, phase='end', success=True)} ok, "
          f"{report.count(Compaction, phase='end', success=False)} failed; microcompact "
          f"passes: {report.count(Microcompact)}; truncations: {report.count(ContextCleared)}; "
          f"results saved to disk: {report.saved_files}")
    turns, sizes = report.clock.turns, report.clock.view_sizes
    if turns:
        print(f"  context stages per turn ({len(turns)} turns, view {min(sizes)}-{max(sizes)} "
              f"messages): mean {_ms(statistics.mean(turns))}, median "
              f"{_ms(statistics.median(turns))}, max {_ms(max(turns))}")
        parts = sorted(report.clock.by_stage.items(), key=lambda kv: -kv[1])
        print("    per turn by stage: " + ", ".join(
            f"{name} {seconds / len(turns) * 1000:.2f}" for name, seconds in parts) + " (ms)")
    print(f"  planted numbers: {len(fetched)}/{len(planted)} fetched; reached the model "
          f"{len(reached)} ({len(via_read_back)} of them through a read_file of a saved "
          f"result); only in the compaction input {len(summary_only)}; only in a saved file "
          f"{len(disk_only)}; only in the scratchpad {len(nowhere)}")
    share = (len(reached) + len(summary_only)) / len(planted)
    print(f"  share of planted numbers in what the model was sent or in the compaction input: "
          f"{share:.0%}")
    if not report.defenses:
        return {}
    goals = {
        f"{report.label}: peak main-model request <= threshold": peak <= report.threshold,
        f"{report.label}: no request over the window (compaction included)":
            max(peak, peak_summary) <= report.window and not refused,
        f"{report.label}: every planted number reached the model or the compaction input":
            share == 1.0,
    }
    big = [t for t, n in zip(turns, sizes, strict=True) if n >= STAGE_GOAL_MESSAGES]
    if big:
        goals[f"{report.label}: stages < {STAGE_GOAL_MS:.0f} ms in every turn with >= "
              f"{STAGE_GOAL_MESSAGES} messages in view ({len(big)} turns, max "
              f"{max(big) * 1000:.2f} ms)"] = max(big) * 1000 < STAGE_GOAL_MS
    return goals


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Context defenses over a scripted session.")
    parser.add_argument("--provider", choices=sorted(MODELS), default="openai")
    parser.add_argument("--window", type=int, default=DEFAULT_WINDOW,
                        help=f"context window (tokens) of the main and fast model "
                             f"(default {DEFAULT_WINDOW:,}, the design's default)")
    parser.add_argument("--small-window", type=int, default=SMALL_WINDOW,
                        help="window of the extra run that forces compaction (0 = skip it)")
    parser.add_argument("--history", type=int, default=HISTORY_MESSAGES,
                        help="earlier-session messages in the view (to measure at ~500)")
    parser.add_argument("--no-read-back", action="store_true",
                        help="the scripted model never reads saved results back")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    raw = sum(len(make_payload(i, rng).text) for i in range(TOTAL_CALLS))
    print(f"context session benchmark: {TOTAL_CALLS} research calls, {raw / 1e6:.2f} MB of raw "
          f"tool output, {args.provider} ({MODELS[args.provider]}) SDK against the fake server")
    print("request tokens = dexter's estimator over the text of each recorded request body")
    runs = [("defenses on", True, args.window)]
    if args.small_window:
        runs.append(("defenses on, small window", True, args.small_window))
    runs.append(("defenses off", False, args.window))
    goals: dict[str, bool] = {}
    for label, defenses, window in runs:
        report = run_session(label, defenses=defenses, provider=args.provider, window=window,
                             history=args.history, seed=args.seed,
                             read_back=not args.no_read_back)
        goals.update(print_report(report))
    print()
    for name, met in goals.items():
        print(f"GOAL {'MET' if met else 'NOT MET'}: {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
