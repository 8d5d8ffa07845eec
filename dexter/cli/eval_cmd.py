"""``dexter eval`` and ``dexter eval compare``: flags in, exit code out; the work is in
``dexter.evals`` (docs/eval.md)."""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from dataclasses import dataclass, field
from pathlib import Path

from dexter.config import ConfigError
from dexter.frontend import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    print_error,
    settings_for,
    stdout_console,
)


@dataclass
class EvalCommand:
    """The flags of ``dexter eval`` (besides those of ``EvalOptions``)."""

    model: str | None = None
    config: Path | None = None
    max_iterations: int | None = None
    json_out: bool = False
    plain: bool = False
    dataset: Path | None = None
    judge_model: str | None = None
    jobs: int = 4
    limit: int | None = None
    type_name: str | None = None
    out: Path | None = None
    max_cost: float | None = None
    allow: list[str] = field(default_factory=list)
    yes: bool = False
    retry_failed: bool = False
    from_runs: Path | None = None


def run_eval(command: EvalCommand) -> int:
    """Run (or resume) an eval; 0 when it ran, 1 when a provider error stopped it, 2 for
    bad flags, dataset or output directory, 130 when interrupted."""
    from dexter.evals.display import JsonDisplay, PlainDisplay, ProgressDisplay
    from dexter.evals.harness import (
        EvalOptions,
        EvalUsageError,
        execute,
        finish,
        from_runs_model,
        prepare,
    )
    from dexter.evals.outputs import OutputError

    options = EvalOptions(
        dataset=command.dataset, judge_model=command.judge_model, jobs=command.jobs,
        limit=command.limit, type_name=command.type_name, out=command.out,
        max_cost=command.max_cost, allow=command.allow, yes=command.yes,
        retry_failed=command.retry_failed, from_runs=command.from_runs,
    )
    model = command.model
    if model is None and command.from_runs is not None:
        model = from_runs_model(command.from_runs)  # rerun with the earlier eval's model
    try:
        settings = settings_for(command.config, model=model,
                                max_iterations=command.max_iterations)
        from dexter.cli.ask import flag_problem

        no_memory = dataclasses.replace(settings, memory=dataclasses.replace(
            settings.memory, enabled=False))  # an eval's runs have no memory tools
        flags = flag_problem(no_memory, command.allow)  # a typo is told before a missing key
        if flags is not None:
            return flags
        prepared = prepare(settings, options)
    except (CliError, ConfigError, EvalUsageError) as exc:
        print_error(str(exc))
        return EXIT_USAGE

    console = stdout_console(plain=command.plain or command.json_out)
    display: JsonDisplay | PlainDisplay
    if command.json_out:
        display = JsonDisplay()
    elif console.is_terminal and not command.plain:
        display = ProgressDisplay(console)
    else:  # not a terminal: lines as they are, never wrapped
        display = PlainDisplay(stdout_console(plain=True))
    out_dir = str(prepared.out_dir)
    try:
        stop = asyncio.run(execute(prepared, display))
    except KeyboardInterrupt:
        display.close()
        try:
            finish(prepared)  # the summary and report of what finished
        except Exception as exc:  # the interrupt is what the user must see
            sys.stderr.write(f"Could not write the summary: {exc}\n")
        sys.stderr.write(f"\nInterrupted. Every finished question is in {out_dir}/results.jsonl; "
                         "run the same command again to go on.\n")
        return EXIT_INTERRUPTED
    except OutputError as exc:
        display.close()
        print_error(str(exc))
        return EXIT_FAILED
    display.close()
    try:
        summary = finish(prepared)
    except OutputError as exc:
        print_error(str(exc))
        return EXIT_FAILED
    display.summary(summary, out_dir)
    return EXIT_FAILED if stop is not None and stop.fatal else EXIT_OK


def run_compare(dir_a: Path, dir_b: Path, *, json_out: bool = False) -> int:
    """Compare two eval directories question by question (0, or 2 when one is unusable)."""
    import json

    from dexter.evals.compare import compare_dirs, comparison_renderable
    from dexter.evals.outputs import OutputError

    try:
        comparison = compare_dirs(dir_a, dir_b)
    except OutputError as exc:
        print_error(str(exc))
        return EXIT_USAGE
    if json_out:
        sys.stdout.write(json.dumps(comparison.to_dict(), ensure_ascii=False) + "\n")
        return EXIT_OK
    stdout_console().print(comparison_renderable(comparison))
    return EXIT_OK
