"""How an eval shows its progress: a rich progress bar on a terminal (running mean score
and spend), plain lines otherwise, or JSON lines with ``--json``."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any, TextIO

from dexter.evals.outputs import QuestionResult
from dexter.evals.report import fmt_cost, fmt_score, fmt_seconds, summary_table
from dexter.evals.runner import Tally
from dexter.secrets import scrub


def result_line(result: QuestionResult, tally: Tally) -> str:
    """One finished question as a line: mark, id, type, score, time, cost, running figures."""
    kind = f" [{result.type}]" if result.type else ""
    if result.status == "ok":
        mark = "✓" if result.passed_all else "·"
        what = f"{fmt_score(result.score)} ({result.criteria_passed}/{len(result.verdicts)})"
    elif result.status == "failed":
        mark, what = "✗", f"failed: {result.error}"
    else:
        mark, what = "?", f"judge error: {result.error}"
    cost = "" if result.cost_usd is None else f" · {fmt_cost(result.spend)}"
    return (f"{mark} {result.id}{kind} {what} · {fmt_seconds(result.seconds)}{cost}"
            f"  [{tally.finished}/{tally.total} · mean {fmt_score(tally.mean_score)} · "
            f"spend {fmt_cost(tally.spend)}]")


class PlainDisplay:
    """A line per finished question (stdout is not a terminal, or ``--plain``)."""

    def __init__(self, console: Any) -> None:
        self.console = console

    def start(self, tally: Tally, pending: int) -> None:
        """Say what runs and what an earlier run already finished."""
        resumed = f" ({tally.finished} already in results.jsonl)" if tally.finished else ""
        self.console.print(f"Running {pending} of {tally.total} questions{resumed}.")

    def result(self, result: QuestionResult, tally: Tally) -> None:
        """Print the question's line."""
        self.console.print(result_line(result, tally))

    def notice(self, text: str) -> None:
        """Print a line as it is."""
        self.console.print(text)

    def close(self) -> None:
        """Nothing to release."""

    def summary(self, summary: Mapping[str, Any], out_dir: str) -> None:
        """The summary table and where the outputs are."""
        self.console.print(summary_table(summary))
        self.console.print(f"Results, summary and report in {out_dir}")


class ProgressDisplay(PlainDisplay):
    """A rich progress bar with the running mean score and spend; finished questions are
    printed above it."""

    def __init__(self, console: Any) -> None:
        super().__init__(console)
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self.progress = Progress(
            TextColumn("[bold]eval[/]"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[figures]}"), TimeElapsedColumn(),
            console=console, transient=True,
        )
        self.task: Any = None

    @staticmethod
    def _figures(tally: Tally) -> str:
        return f"mean {fmt_score(tally.mean_score)} · spend {fmt_cost(tally.spend)}"

    def start(self, tally: Tally, pending: int) -> None:
        """Show the bar, counting what earlier runs finished."""
        super().start(tally, pending)
        self.progress.start()
        self.task = self.progress.add_task("eval", total=tally.total, completed=tally.finished,
                                           figures=self._figures(tally))

    def result(self, result: QuestionResult, tally: Tally) -> None:
        """Print the line above the bar and move the bar."""
        from rich.text import Text

        self.progress.console.print(Text(result_line(result, tally)))
        self.progress.update(self.task, completed=tally.finished, figures=self._figures(tally))

    def notice(self, text: str) -> None:
        """Print a line above the bar."""
        from rich.text import Text

        self.progress.console.print(Text(text))

    def close(self) -> None:
        """Remove the bar."""
        self.progress.stop()


class JsonDisplay:
    """JSON lines: ``eval_start``, one ``eval_result`` per question (its results.jsonl line
    under ``result``, with the running figures), ``eval_notice`` lines, and
    ``eval_summary`` (summary.json's content) last."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout

    def _emit(self, kind: str, data: Mapping[str, Any]) -> None:
        self.stream.write(scrub(json.dumps({"type": kind, **data}, ensure_ascii=False)) + "\n")
        self.stream.flush()

    def start(self, tally: Tally, pending: int) -> None:
        """The plan: questions in the eval, already finished, to run now."""
        self._emit("eval_start", {"questions": tally.total, "finished": tally.finished,
                                  "pending": pending})

    def result(self, result: QuestionResult, tally: Tally) -> None:
        """The question's results.jsonl line, with the running figures."""
        self._emit("eval_result", {"result": result.to_dict(), "finished": tally.finished,
                                   "mean_score": tally.mean_score, "spend_usd": tally.spend})

    def notice(self, text: str) -> None:
        """A stop or a warning."""
        self._emit("eval_notice", {"message": text})

    def close(self) -> None:
        """Nothing to release."""

    def summary(self, summary: Mapping[str, Any], out_dir: str) -> None:
        """``summary.json``'s content and the output directory."""
        self._emit("eval_summary", {**summary, "out": out_dir})
