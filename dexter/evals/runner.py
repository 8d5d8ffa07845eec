"""Runs an eval's questions: ``jobs`` agent runs at once, each graded by the judge, each
result appended to ``results.jsonl`` the moment it is finished.

Every question is a normal non-interactive run: a fresh :class:`Agent` over the eval's
shared :class:`AgentSetup` (the same SDK model objects, hence the same clients, for every
run), a fresh :class:`Conversation`, its own scratchpad. A run that fails (provider error,
iteration limit, an exception in the loop) is recorded as ``failed`` and the eval goes on.
New questions stop starting when the spend reaches ``max_cost`` or when a provider error
would fail every question anyway (a bad key, billing, an unknown model).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from dexter.agent.conversation import Conversation
from dexter.agent.loop import Agent, AgentSetup
from dexter.evals.dataset import EvalQuestion
from dexter.evals.judge import Judge
from dexter.evals.outputs import OutputError, QuestionResult, ResultsFile, score_of
from dexter.events import Done, RunStart
from dexter.providers.pricing import usage_cost
from dexter.providers.registry import ModelInfo

FATAL_KINDS = frozenset({"auth", "billing", "not_found"})
"""Provider error kinds that would fail every later question the same way."""

SetupFor = Callable[[EvalQuestion], Awaitable[AgentSetup]]


class QuestionSetupError(Exception):
    """One question cannot be set up (e.g. its recording is unreadable): it fails with this
    message and the eval goes on."""


@dataclass
class Tally:
    """Running figures over the eval's results (those resumed and those finished now)."""

    total: int
    finished: int = 0
    scored: int = 0
    score_sum: float = 0.0
    spend: float = 0.0
    failed: int = 0
    judge_errors: int = 0

    def add(self, result: QuestionResult) -> None:
        """Count one result."""
        self.finished += 1
        self.spend += result.spend
        if result.status == "judge_error":
            self.judge_errors += 1
            return
        if result.status == "failed":
            self.failed += 1
        self.scored += 1
        self.score_sum += result.score or 0.0

    @property
    def mean_score(self) -> float | None:
        """The mean score so far (failed runs count 0; judge errors are left out)."""
        return self.score_sum / self.scored if self.scored else None


class Display(Protocol):
    """What shows an eval's progress: a progress bar, plain lines or JSON lines."""

    def start(self, tally: Tally, pending: int) -> None:
        """The eval begins: ``tally`` holds what earlier runs finished, ``pending`` are left."""

    def result(self, result: QuestionResult, tally: Tally) -> None:
        """One question finished (already counted in ``tally``)."""

    def notice(self, text: str) -> None:
        """A line to show as it is (a stop, a warning)."""

    def close(self) -> None:
        """The eval is over (or interrupted): release the terminal."""


@dataclass
class Pricing:
    """The catalog prices of the main and judge models (None when unpriced)."""

    model: ModelInfo | None = None
    judge: ModelInfo | None = None


@dataclass
class Stop:
    """Why new questions stopped starting."""

    reason: str
    fatal: bool = False
    hint: str = "run again with the same --out to go on"


@dataclass
class EvalRunner:
    """Runs questions with at most ``jobs`` at once; see the module docstring."""

    setup_for: SetupFor
    judge: Judge
    results: ResultsFile
    display: Display
    model_name: str
    judge_model_name: str
    jobs: int = 4
    max_cost: float | None = None
    pricing: Pricing = field(default_factory=Pricing)
    base_dir: Path | None = None
    """Scratchpad paths under it are recorded relative to it (the eval directory)."""
    stop: Stop | None = None

    async def run(self, pending: Iterable[EvalQuestion], tally: Tally) -> Stop | None:
        """Run every pending question (or until a stop); returns why it stopped early."""
        queue = deque(pending)
        self._check_budget(tally)

        write_error: OutputError | None = None

        async def worker() -> None:
            nonlocal write_error
            while queue and self.stop is None:
                question = queue.popleft()
                result = await self.run_question(question)
                try:
                    self.results.append(result)
                except OutputError as exc:  # the disk is full or gone: nothing more can be kept
                    write_error = write_error or exc
                    self.stop = Stop(str(exc), fatal=True)
                    return
                tally.add(result)
                self.display.result(result, tally)
                if result.error_kind in FATAL_KINDS and self.stop is None:
                    self.stop = Stop(f"Stopped starting new questions: {result.error}", fatal=True)
                self._check_budget(tally)

        async with asyncio.TaskGroup() as group:
            for _ in range(max(1, min(self.jobs, len(queue)))):
                group.create_task(worker())
        if write_error is not None:
            raise write_error
        if self.stop is not None and queue:
            self.display.notice(f"{self.stop.reason} ({_count(len(queue))} not run; "
                                f"{self.stop.hint}).")
        return self.stop

    def _check_budget(self, tally: Tally) -> None:
        if self.stop is None and self.max_cost is not None and tally.spend >= self.max_cost:
            self.stop = Stop(f"Spend ${tally.spend:.4f} reached --max-cost ${self.max_cost:.2f}: "
                             "stopped starting new questions",
                             hint="raise --max-cost and run again with the same --out to go on")

    async def run_question(self, question: EvalQuestion) -> QuestionResult:
        """One question: the agent's run, then the judge. Never raises (but cancels)."""
        result = QuestionResult(
            id=question.id, question=question.question, type=question.type, status="failed",
            expected=question.answer, rubric=[c.to_dict() for c in question.rubric],
            model=self.model_name, judge_model=self.judge_model_name,
        )
        started = time.monotonic()
        done: Done | None = None
        try:
            agent = Agent(await self.setup_for(question))
            async with aclosing(agent.run(question.question, Conversation())) as events:
                async for event in events:
                    if isinstance(event, RunStart):
                        result.scratchpad = self._relative(event.scratchpad)
                    elif isinstance(event, Done):
                        done = event
        except QuestionSetupError as exc:
            result.error = str(exc)
            result.score, result.passed_all = 0.0, False
            return result
        except Exception as exc:  # a bug or a broken tool: this question fails, the eval goes on
            result.error = f"the run raised {type(exc).__name__}: {exc}"
            result.score, result.passed_all = 0.0, False
            result.seconds = round(time.monotonic() - started, 3)
            return result
        result.seconds = round(time.monotonic() - started, 3)
        if done is None:
            result.error = "the run ended without an answer"
            result.score, result.passed_all = 0.0, False
            return result
        self._record_run(result, done)
        if done.status != "ok":
            result.error = done.answer if done.status == "error" else _status_text(done)
            result.error_kind = done.error_kind or done.status
            result.score, result.passed_all = 0.0, False
            return result
        try:
            await self._grade(result, question, done.answer)
        except Exception as exc:  # a bug in grading: this question is unscored, the eval goes on
            result.status, result.score, result.passed_all = "judge_error", None, None
            result.error = f"grading raised {type(exc).__name__}: {exc}"
            result.error_kind = "exception"
        return result

    def _relative(self, path: str) -> str:
        if not path or self.base_dir is None:
            return path
        try:
            return Path(path).resolve().relative_to(self.base_dir.resolve()).as_posix()
        except ValueError:
            return path

    def _record_run(self, result: QuestionResult, done: Done) -> None:
        usage = done.token_usage
        result.answer = done.answer if done.status == "ok" else ""
        result.run_status = done.status
        result.input_tokens = usage.get("input_tokens", 0)
        result.output_tokens = usage.get("output_tokens", 0)
        result.cost_usd = _rounded(usage_cost(usage, self.pricing.model))
        result.verification = done.verification
        result.seconds = round(done.total_time_ms / 1000, 3) or result.seconds

    async def _grade(self, result: QuestionResult, question: EvalQuestion, answer: str) -> None:
        outcome = await self.judge.grade(question, answer)
        usage = outcome.usage.to_dict()
        result.judge_input_tokens = outcome.usage.input_tokens
        result.judge_output_tokens = outcome.usage.output_tokens
        result.judge_cost_usd = _rounded(usage_cost(usage, self.pricing.judge))
        result.judge_attempts = outcome.attempts
        if outcome.verdicts is None:
            result.status = "judge_error"
            result.error, result.error_kind = outcome.error, outcome.error_kind
            result.score = result.passed_all = None
            return
        result.status = "ok"
        result.verdicts = [v.to_dict() for v in outcome.verdicts]
        result.score, result.passed_all = score_of(result.verdicts)


def _rounded(usd: float | None) -> float | None:
    """Dollars to a millionth of a cent: enough for any price, no float noise in files."""
    return None if usd is None else round(usd, 8)


def _status_text(done: Done) -> str:
    if done.status == "max_iterations":
        return f"the run reached the iteration limit ({done.iterations}) without an answer"
    return f"the run ended with status {done.status}"


def _count(n: int) -> str:
    return f"{n} question" if n == 1 else f"{n} questions"


def pending_questions(questions: Sequence[EvalQuestion], finished: dict[str, QuestionResult],
                      *, retry_failed: bool = False) -> list[EvalQuestion]:
    """The questions without a result yet (with ``retry_failed``, also failed and
    judge-error ones)."""
    out = []
    for q in questions:
        previous = finished.get(q.id)
        if previous is None or (retry_failed and previous.status != "ok"):
            out.append(q)
    return out
