"""``dexter eval`` end to end, below the CLI: plan (dataset, output directory, resume),
open the session and the judge, run, write the summary and the report.

The CLI (``dexter/cli/eval_cmd.py``) only turns flags into :class:`EvalOptions`, picks the
display and maps outcomes to exit codes. Everything an eval directory holds is described
in docs/eval.md.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

from dexter import __version__
from dexter.agent.factory import Session, build_session
from dexter.agent.loop import AgentSetup
from dexter.config import ConfigError, Settings
from dexter.evals.dataset import (
    DatasetError,
    EvalQuestion,
    default_dataset_path,
    file_digest,
    load_dataset,
    select,
)
from dexter.evals.from_runs import (
    EarlierEval,
    FromRunsError,
    load_earlier,
    replay_setup,
    rules_text,
)
from dexter.evals.judge import Judge
from dexter.evals.outputs import (
    META_FILE,
    REPORT_FILE,
    RESULTS_FILE,
    SCRATCHPAD_DIR,
    SUMMARY_FILE,
    OutputError,
    QuestionResult,
    ResultsFile,
    read_json,
    summarize,
    write_json,
    write_text,
)
from dexter.evals.report import report_markdown
from dexter.evals.runner import Display, EvalRunner, Pricing, Stop, Tally, pending_questions
from dexter.providers.base import ChatModel
from dexter.providers.pricing import model_price

MAX_JOBS = 32


class EvalUsageError(Exception):
    """A problem with the flags, the dataset or the output directory (exit code 2)."""


@dataclass
class EvalOptions:
    """The flags of ``dexter eval``."""

    dataset: Path | None = None
    judge_model: str | None = None
    jobs: int = 4
    limit: int | None = None
    type_name: str | None = None
    out: Path | None = None
    max_cost: float | None = None
    allow: Sequence[str] = ()
    yes: bool = False
    retry_failed: bool = False
    from_runs: Path | None = None


@dataclass
class PreparedEval:
    """An eval ready to run: what it covers, where it writes, what it runs with."""

    settings: Settings
    options: EvalOptions
    out_dir: Path
    dataset_path: Path
    questions: list[EvalQuestion]
    """The selected questions (after ``--type`` and ``--limit``)."""
    order: list[str]
    """Every question id of the dataset, in order (for the report)."""
    finished: dict[str, QuestionResult]
    pending: list[EvalQuestion]
    meta: dict[str, Any]
    session: Session
    judge: Judge
    judge_model_name: str
    pricing: Pricing
    recordings: dict[str, Path] | None = None
    """``--from-runs``: each question's recorded run (its tools answer from it)."""
    notices: list[str] = field(default_factory=list)
    """Lines to show when the eval starts."""
    results: ResultsFile = field(init=False)

    def __post_init__(self) -> None:
        self.results = ResultsFile(self.out_dir / RESULTS_FILE)

    @property
    def planned(self) -> int:
        """The questions this eval directory covers: those selected plus any it already has."""
        return len({q.id for q in self.questions} | set(self.finished))

    async def aclose(self) -> None:
        """Close the model clients (the judge's too when it has its own)."""
        setup = self.session.agent.setup
        await self.session.aclose()
        if self.judge.model is not setup.model and self.judge.model is not setup.fast_model:
            with contextlib.suppress(Exception):
                await self.judge.model.aclose()


def default_out_dir(model: str, today: date | None = None, *, suffix: str = "") -> Path:
    """``evals/<YYYY-MM-DD>-<model>[-<suffix>]`` (characters a path should not hold
    become ``-``)."""
    name = f"{(today or date.today()):%Y-%m-%d}-{model}" + (f"-{suffix}" if suffix else "")
    return Path("evals") / (re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "eval")


def _check_options(options: EvalOptions) -> None:
    if not 1 <= options.jobs <= MAX_JOBS:
        raise EvalUsageError(f"--jobs must be between 1 and {MAX_JOBS} (got {options.jobs}).")
    if options.limit is not None and options.limit < 1:
        raise EvalUsageError(f"--limit must be at least 1 (got {options.limit}).")
    if options.max_cost is not None and options.max_cost <= 0:
        raise EvalUsageError(f"--max-cost must be more than 0 dollars (got {options.max_cost}).")
    if options.from_runs is not None and options.dataset is not None:
        raise EvalUsageError("--from-runs takes its questions from the earlier eval; leave out "
                             "--dataset.")


def earlier_eval(directory: Path) -> EarlierEval:
    """The earlier eval of ``--from-runs``. Raises ``EvalUsageError``."""
    try:
        return load_earlier(directory)
    except FromRunsError as exc:
        raise EvalUsageError(str(exc)) from None


def from_runs_model(directory: Path) -> str | None:
    """The model of the eval in ``directory`` (``--from-runs`` reruns with it unless
    ``--model`` says otherwise); None when it cannot be told."""
    try:
        meta = read_json(directory / META_FILE)
    except OutputError:
        return None
    model = meta.get("model") if meta else None
    return model if isinstance(model, str) and model.strip() else None


def _judge_model(session: Session, name: str, settings: Settings) -> ChatModel:
    """The judge's model, reusing the session's clients when it is the same model."""
    from dexter.providers.call import create_chat_model
    from dexter.providers.registry import resolve_model

    resolved = resolve_model(name, settings)
    setup = session.agent.setup
    for candidate in (setup.fast_model, setup.model):
        if candidate.model == resolved.model and candidate.provider_id == resolved.provider.id:
            return candidate
    return create_chat_model(resolved, settings)


def _meta(options: EvalOptions, settings: Settings, judge: str, dataset: str,
          digest: str) -> dict[str, Any]:
    return {
        "model": settings.model,
        "judge_model": judge,
        "dataset": dataset,
        "dataset_sha256": digest,
        "from_runs": str(options.from_runs) if options.from_runs else "",
        "created": datetime.now().astimezone().isoformat(timespec="seconds"),
        "dexter_version": __version__,
    }


def _check_resume(out_dir: Path, meta: dict[str, Any], earlier: dict[str, Any] | None,
                  finished: dict[str, QuestionResult], questions: Sequence[EvalQuestion]) -> None:
    """An existing output directory must hold the same eval (models, questions)."""
    if earlier is not None:
        for key, flag in (("model", "--model"), ("judge_model", "--judge-model")):
            if earlier.get(key) and earlier.get(key) != meta[key]:
                raise EvalUsageError(
                    f"{out_dir} holds an eval with {key.replace('_', ' ')} {earlier[key]}, not "
                    f"{meta[key]}. Pass another --out, or {flag} {earlier[key]} to resume it.")
        if (earlier.get("from_runs") or "") != meta["from_runs"]:
            was = f"--from-runs {earlier['from_runs']}" if earlier.get("from_runs") else "live tools"
            raise EvalUsageError(f"{out_dir} holds an eval run with {was}. Pass another --out.")
    by_id = {q.id: q for q in questions}
    for ident, result in finished.items():
        q = by_id.get(ident)
        if q is not None and " ".join(q.question.split()) != " ".join(result.question.split()):
            raise EvalUsageError(
                f"{out_dir / RESULTS_FILE} was made from another dataset: question {ident} "
                "differs from the one recorded there. Pass another --out.")


@dataclass
class _Source:
    """Where an eval's questions come from: a dataset file, or an earlier eval."""

    questions: list[EvalQuestion]
    path: Path
    dataset: str
    digest: str
    earlier: EarlierEval | None = None
    notices: list[str] = field(default_factory=list)


def _source(options: EvalOptions) -> _Source:
    """Every question of the dataset (or of the earlier eval, for ``--from-runs``)."""
    if options.from_runs is not None:
        earlier = earlier_eval(options.from_runs)
        path = Path(str(earlier.meta.get("dataset") or options.from_runs))
        source = _Source(earlier.questions, path, str(path),
                         str(earlier.meta.get("dataset_sha256") or ""), earlier)
        if earlier.unrecorded:
            source.notices.append(
                f"Left out {len(earlier.unrecorded)} questions with no recorded run in "
                f"{options.from_runs}: {', '.join(earlier.unrecorded)}.")
        return source
    path = options.dataset or default_dataset_path()
    try:
        questions = load_dataset(path)
    except DatasetError as exc:
        raise EvalUsageError(str(exc)) from None
    return _Source(questions, path, str(path), file_digest(path))


def prepare(settings: Settings, options: EvalOptions) -> PreparedEval:
    """Plan an eval and open its session and judge. Raises ``EvalUsageError`` (flags,
    dataset, output directory) or ``ConfigError`` (a missing key)."""
    _check_options(options)
    source = _source(options)
    everything, earlier_run = source.questions, source.earlier
    try:
        questions = select(everything, type_name=options.type_name, limit=options.limit)
    except DatasetError as exc:
        raise EvalUsageError(str(exc)) from None
    out_dir = options.out or default_out_dir(
        settings.model, suffix=f"from-{options.from_runs.name}" if options.from_runs else "")
    if out_dir.exists() and not out_dir.is_dir():
        raise EvalUsageError(f"--out {out_dir} is a file, not a directory.")
    settings = dataclasses.replace(settings, scratchpad_dir=str((out_dir / SCRATCHPAD_DIR).resolve()))

    from dexter.providers.registry import resolve_model

    judge_name = ((options.judge_model or "").strip()
                  or (earlier_run.judge_model if earlier_run is not None else "")
                  or resolve_model(settings.model, settings).fast_model)
    resolve_model(judge_name, settings)  # a bad judge name fails before anything runs
    pricing = Pricing(model_price(settings.model, settings), model_price(judge_name, settings))
    if options.max_cost is not None:
        unpriced = [name for name, info in ((settings.model, pricing.model),
                                            (judge_name, pricing.judge)) if info is None]
        if unpriced:
            raise EvalUsageError(
                f"--max-cost needs prices, and dexter's catalog has none for "
                f"{' and '.join(dict.fromkeys(unpriced))} (see dexter models). Run without "
                "--max-cost, or pick priced models.")
    meta = _meta(options, settings, judge_name, source.dataset, source.digest)
    try:
        earlier = read_json(out_dir / META_FILE)
        results = ResultsFile(out_dir / RESULTS_FILE)
        finished = results.read()
    except OutputError as exc:
        raise EvalUsageError(str(exc)) from None
    _check_resume(out_dir, meta, earlier, finished, everything)
    if earlier is not None:
        meta["created"] = earlier.get("created", meta["created"])

    allow = [item.strip() for item in options.allow if item.strip()]
    session = build_session(settings, interactive=False, memory_enabled=False,
                            preapproved=(allow, options.yes))
    try:
        from dexter.permissions.engine import allow_list_problems

        problems = allow_list_problems(allow, {t.name for t in session.agent.setup.tools})
        if problems:
            raise EvalUsageError("\n".join(problems))
        judge = Judge(_judge_model(session, judge_name, settings), max_retries=settings.max_retries)
    except (EvalUsageError, ConfigError):
        _close_quietly(session)
        raise
    return PreparedEval(
        settings=settings, options=options, out_dir=out_dir, dataset_path=source.path,
        questions=questions, order=[q.id for q in everything], finished=finished,
        pending=pending_questions(questions, finished, retry_failed=options.retry_failed),
        meta=meta, session=session, judge=judge, judge_model_name=judge_name, pricing=pricing,
        recordings=earlier_run.scratchpads if earlier_run is not None else None,
        notices=source.notices,
    )


def _close_quietly(session: Session) -> None:
    import asyncio

    with contextlib.suppress(Exception):
        asyncio.run(session.aclose())


async def execute(prepared: PreparedEval, display: Display) -> Stop | None:
    """Run the pending questions (results appended as they finish); returns why new
    questions stopped starting early, if they did. Closes the clients at the end."""
    setup = prepared.session.agent.setup
    recordings = prepared.recordings
    rules = rules_text(prepared.settings.home_path)

    async def setup_for(question: EvalQuestion) -> AgentSetup:
        if recordings is None:
            return setup
        return replay_setup(setup, recordings[question.id], rules=rules)

    runner = EvalRunner(
        setup_for=setup_for, judge=prepared.judge, results=prepared.results, display=display,
        model_name=prepared.settings.model, judge_model_name=prepared.judge_model_name,
        jobs=prepared.options.jobs, max_cost=prepared.options.max_cost, pricing=prepared.pricing,
        base_dir=prepared.out_dir,
    )
    tally = Tally(total=prepared.planned)
    for result in prepared.finished.values():
        tally.add(result)
    try:
        write_json(prepared.out_dir / META_FILE, prepared.meta)
        display.start(tally, len(prepared.pending))
        for notice in prepared.notices:
            display.notice(notice)
        return await runner.run(prepared.pending, tally)
    finally:
        await prepared.aclose()


def finish(prepared: PreparedEval) -> dict[str, Any]:
    """Write ``summary.json`` and ``report.md`` from every line of ``results.jsonl``;
    returns the summary. Raises ``OutputError``."""
    found = prepared.results.read()
    rank = {ident: n for n, ident in enumerate(prepared.order)}
    ordered = sorted(found.values(), key=lambda r: (rank.get(r.id, len(rank)), r.id))
    summary = summarize(ordered, planned=len({q.id for q in prepared.questions} | set(found)),
                        meta=prepared.meta)
    write_json(prepared.out_dir / SUMMARY_FILE, summary)
    write_text(prepared.out_dir / REPORT_FILE, report_markdown(summary, ordered))
    return summary
