"""dexter eval at scale: 1,000 synthetic questions through the real eval runner.

Each question is a real agent run (loop, verification, its own scratchpad) and a real
judge call, against an instant in-process model, 8 at once, every result appended to
results.jsonl; then the summary and report are written from the file. Goals: it finishes,
and memory stays flat: the Python heap (tracemalloc) after the last 100 questions is
within 1.2x of what it was after the first 100. Prints the figures; asserts nothing.
"""

from __future__ import annotations

import asyncio
import gc
import json
import re
import resource
import sys
import tempfile
import time
import tracemalloc
from collections.abc import AsyncIterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dexter.agent.loop import AgentSetup
from dexter.config import Settings
from dexter.evals.dataset import EvalQuestion, parse_rubric
from dexter.evals.judge import Judge
from dexter.evals.outputs import QuestionResult, ResultsFile, summarize
from dexter.evals.report import report_markdown
from dexter.evals.runner import EvalRunner, Pricing, Tally
from dexter.messages import AssistantMessage, Usage, UserMessage
from dexter.providers.base import ModelRequest, ModelResponse, StreamChunk
from dexter.providers.registry import ModelInfo
from dexter.tools.calculator import CalculatorTool

QUESTIONS = 1_000
JOBS = 8
WINDOW = 100
TYPES = ("Trends", "Beat or Miss", "Adjustments", "Market Analysis")


class InstantModel:
    """A ``ChatModel`` that answers at once and keeps nothing: the agent gets a short
    answer, the judge a verdict per criterion (every third one failing)."""

    def __init__(self, name: str) -> None:
        self._name = name

    @property
    def model(self) -> str:
        return self._name

    @property
    def provider_id(self) -> str:
        return "openai"

    def _reply(self, request: ModelRequest) -> ModelResponse:
        last = request.messages[-1]
        text = last.content if isinstance(last, UserMessage) else ""
        if request.json_output:
            count = len(re.findall(r"^\d+\. \[", text, flags=re.M))
            body = {"verdicts": [{"criterion": n, "passed": n % 3 != 0, "reason": "synthetic"}
                                 for n in range(1, count + 1)]}
            answer = json.dumps(body)
        else:
            answer = f"The answer to: {text[:60]}"
        usage = Usage(input_tokens=len(text) // 4 + 200, output_tokens=len(answer) // 4)
        return ModelResponse(AssistantMessage(text=answer), usage, "end_turn", self._name)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk | ModelResponse]:
        yield self._reply(request)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return self._reply(request)

    async def aclose(self) -> None:
        return None


def dataset() -> list[EvalQuestion]:
    out = []
    for n in range(1, QUESTIONS + 1):
        rubric = parse_rubric([{"operator": "correctness", "criteria": f"states fact {k} of {n}"}
                               for k in range(1, 2 + n % 5)], "synthetic")
        out.append(EvalQuestion(str(n), f"Synthetic question number {n} about company {n % 97}?",
                                f"Expected answer {n}.", TYPES[n % len(TYPES)], rubric))
    return out


class Meter:
    """A display that samples the heap and RSS after the first and the last window."""

    def __init__(self) -> None:
        self.samples: dict[str, tuple[int, int]] = {}

    def start(self, tally: Tally, pending: int) -> None:
        return None

    def result(self, result: QuestionResult, tally: Tally) -> None:
        if tally.finished in (WINDOW, QUESTIONS - WINDOW, QUESTIONS):
            gc.collect()
            heap = tracemalloc.get_traced_memory()[0]
            rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            self.samples[str(tally.finished)] = (heap, rss_kb)

    def notice(self, text: str) -> None:
        print(text)

    def close(self) -> None:
        return None


async def run(tmp: Path) -> tuple[Meter, float, Path]:
    settings = Settings(home=str(tmp / "home"), scratchpad_dir=str(tmp / "pads"))
    settings.memory.enabled = False
    main = InstantModel("bench-main")
    setup = AgentSetup(settings=settings, model=main, fast_model=main, context_window=128_000,
                       fast_context_window=128_000, tools=[CalculatorTool()],
                       system_prompt="You answer synthetic questions.")

    async def setup_for(_question: EvalQuestion) -> AgentSetup:
        return setup

    meter = Meter()
    price = ModelInfo("bench", "bench", 128_000, 1.0, 4.0)
    results = ResultsFile(tmp / "results.jsonl")
    runner = EvalRunner(setup_for=setup_for, judge=Judge(InstantModel("bench-judge")),
                        results=results, display=meter, model_name="bench-main",
                        judge_model_name="bench-judge", jobs=JOBS,
                        pricing=Pricing(price, price), base_dir=tmp)
    tally = Tally(total=QUESTIONS)
    started = time.perf_counter()
    await runner.run(dataset(), tally)
    return meter, time.perf_counter() - started, results.path


def main() -> None:
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        tracemalloc.start()
        meter, seconds, path = asyncio.run(run(tmp))
        tracemalloc.stop()
        started = time.perf_counter()
        found = ResultsFile(path).read()
        ordered = list(found.values())
        summary = summarize(ordered, planned=QUESTIONS)
        report = report_markdown(summary, ordered)
        outputs = time.perf_counter() - started
        pads = len(list((tmp / "pads").glob("*.jsonl")))
        size_mb = path.stat().st_size / 1e6

    first_heap, first_rss = meter.samples[str(WINDOW)]
    late_heap, _ = meter.samples[str(QUESTIONS - WINDOW)]
    last_heap, last_rss = meter.samples[str(QUESTIONS)]
    ratio = last_heap / first_heap
    print(f"eval_scale: {QUESTIONS} questions, {JOBS} at once, instant model and judge")
    print(f"  finished:  {len(found)} results ({summary['completed']} graded), {pads} scratchpads, "
          f"results.jsonl {size_mb:.1f} MB")
    print(f"  time:      {seconds:.1f} s ({QUESTIONS / seconds:.0f} questions/s; "
          f"summary + report {outputs * 1000:.0f} ms, report {len(report) / 1e6:.1f} MB)")
    print(f"  mean score {summary['mean_score']:.3f}, spend ${summary['spend_usd']:.2f}")
    print(f"  heap after question {WINDOW}: {first_heap / 1e6:.2f} MB; after "
          f"{QUESTIONS - WINDOW}: {late_heap / 1e6:.2f} MB; after {QUESTIONS}: "
          f"{last_heap / 1e6:.2f} MB")
    print(f"  heap growth last/first window: {ratio:.2f}x (goal <= 1.2x: "
          f"{'met' if ratio <= 1.2 else 'NOT met'})")
    print(f"  peak RSS: {first_rss / 1024:.0f} MB after {WINDOW}, {last_rss / 1024:.0f} MB "
          f"after {QUESTIONS}")


if __name__ == "__main__":
    main()
