"""``dexter eval compare DIR_A DIR_B``: two evals side by side, question by question.

Questions are matched by id (the same dataset gives the same ids); a question whose text
differs between the two is reported apart, not compared. Deltas are B minus A. The means
are over the questions both scored (a failed run scores 0, a judge error is unscored), so
the two sides of a delta always cover the same questions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dexter.evals.outputs import (
    META_FILE,
    RESULTS_FILE,
    OutputError,
    QuestionResult,
    ResultsFile,
    read_json,
    summarize,
)
from dexter.evals.report import fmt_cost, fmt_rate, fmt_score

SCORED = ("ok", "failed")


@dataclass
class Row:
    """One question in both evals."""

    id: str
    type: str
    question: str
    status_a: str
    status_b: str
    score_a: float | None
    score_b: float | None

    @property
    def delta(self) -> float | None:
        """B minus A, when both are scored."""
        if self.score_a is None or self.score_b is None:
            return None
        return self.score_b - self.score_a

    def to_dict(self) -> dict[str, Any]:
        """The row as JSON."""
        return {"id": self.id, "type": self.type, "question": self.question,
                "status_a": self.status_a, "status_b": self.status_b,
                "score_a": self.score_a, "score_b": self.score_b, "delta": self.delta}


@dataclass
class Comparison:
    """Everything ``dexter eval compare`` prints."""

    dir_a: str
    dir_b: str
    model_a: str
    model_b: str
    rows: list[Row] = field(default_factory=list)
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)
    changed_question: list[str] = field(default_factory=list)
    summary_a: dict[str, Any] = field(default_factory=dict)
    summary_b: dict[str, Any] = field(default_factory=dict)

    def _both_scored(self) -> list[Row]:
        return [r for r in self.rows if r.delta is not None]

    def totals(self) -> dict[str, Any]:
        """Means over the questions both scored, counts of better/worse, cost and its ratio."""
        both = self._both_scored()
        mean_a = sum(r.score_a or 0.0 for r in both) / len(both) if both else None
        mean_b = sum(r.score_b or 0.0 for r in both) / len(both) if both else None
        cost_a = self.summary_a.get("total_cost_usd")
        cost_b = self.summary_b.get("total_cost_usd")
        ratio = cost_b / cost_a if cost_a and cost_b is not None else None
        return {
            "compared": len(both),
            "mean_score_a": mean_a,
            "mean_score_b": mean_b,
            "mean_delta": (mean_b - mean_a) if mean_a is not None and mean_b is not None else None,
            "pass_all_rate_a": self.summary_a.get("pass_all_rate"),
            "pass_all_rate_b": self.summary_b.get("pass_all_rate"),
            "improved": sum(1 for r in both if (r.delta or 0) > 0),
            "regressed": sum(1 for r in both if (r.delta or 0) < 0),
            "unchanged": sum(1 for r in both if r.delta == 0),
            "cost_usd_a": cost_a,
            "cost_usd_b": cost_b,
            "cost_ratio": ratio,
        }

    def to_dict(self) -> dict[str, Any]:
        """The comparison as one JSON object."""
        return {"a": {"dir": self.dir_a, "model": self.model_a},
                "b": {"dir": self.dir_b, "model": self.model_b},
                "totals": self.totals(), "questions": [r.to_dict() for r in self.rows],
                "only_a": self.only_a, "only_b": self.only_b,
                "question_text_differs": self.changed_question}


def _load(directory: Path) -> tuple[dict[str, QuestionResult], dict[str, Any]]:
    if not directory.is_dir():
        raise OutputError(f"No eval directory at {directory}.")
    path = directory / RESULTS_FILE
    if not path.is_file():
        raise OutputError(f"{directory} has no {RESULTS_FILE}: is it the --out of a dexter eval?")
    results = ResultsFile(path).read()
    meta = read_json(directory / META_FILE) or {}
    return results, meta


def compare_dirs(dir_a: Path, dir_b: Path) -> Comparison:
    """Compare two eval directories. Raises ``OutputError`` when one cannot be read."""
    results_a, meta_a = _load(dir_a)
    results_b, meta_b = _load(dir_b)
    model_a = str(meta_a.get("model") or next((r.model for r in results_a.values()), ""))
    model_b = str(meta_b.get("model") or next((r.model for r in results_b.values()), ""))
    comparison = Comparison(str(dir_a), str(dir_b), model_a, model_b)
    common: list[str] = []
    for ident, a in results_a.items():
        b = results_b.get(ident)
        if b is None:
            comparison.only_a.append(ident)
        elif " ".join(a.question.split()) != " ".join(b.question.split()):
            comparison.changed_question.append(ident)
        else:
            common.append(ident)
            comparison.rows.append(Row(
                ident, a.type, a.question, a.status, b.status,
                a.score if a.status in SCORED else None,
                b.score if b.status in SCORED else None))
    comparison.only_b = [ident for ident in results_b if ident not in results_a]
    comparison.summary_a = summarize([results_a[i] for i in common], meta={"model": model_a})
    comparison.summary_b = summarize([results_b[i] for i in common], meta={"model": model_b})
    return comparison


def _delta(value: float | None) -> str:
    return "-" if value is None else f"{value:+.3f}"


def comparison_renderable(comparison: Comparison) -> Any:
    """The per-question table and the totals as one rich renderable."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    table = Table(title=f"A: {comparison.model_a} ({comparison.dir_a})   "
                        f"B: {comparison.model_b} ({comparison.dir_b})", title_justify="left")
    for column, justify in (("id", "right"), ("type", "left"), ("A", "right"), ("B", "right"),
                            ("delta", "right"), ("question", "left")):
        table.add_column(column, justify=justify, overflow="ellipsis",  # type: ignore[arg-type]
                         no_wrap=column == "question", max_width=60 if column == "question" else None)
    for row in comparison.rows:
        table.add_row(row.id, row.type, _side(row.score_a, row.status_a),
                      _side(row.score_b, row.status_b), _delta(row.delta), row.question)
    totals = comparison.totals()
    lines = [
        f"Compared {totals['compared']} questions: mean score {fmt_score(totals['mean_score_a'])} → "
        f"{fmt_score(totals['mean_score_b'])} ({_delta(totals['mean_delta'])}); "
        f"{totals['improved']} better, {totals['regressed']} worse, {totals['unchanged']} the same.",
        f"Pass-all rate {fmt_rate(totals['pass_all_rate_a'])} → {fmt_rate(totals['pass_all_rate_b'])}.",
        f"Run cost {fmt_cost(totals['cost_usd_a'])} → {fmt_cost(totals['cost_usd_b'])}"
        + (f" (B/A = {totals['cost_ratio']:.2f}x)." if totals["cost_ratio"] is not None else "."),
    ]
    if comparison.only_a:
        lines.append(f"Only in A: {', '.join(comparison.only_a)}.")
    if comparison.only_b:
        lines.append(f"Only in B: {', '.join(comparison.only_b)}.")
    if comparison.changed_question:
        lines.append("Same id, different question (not compared): "
                     f"{', '.join(comparison.changed_question)}.")
    return Group(table, *(Text(line) for line in lines))


def _side(score: float | None, status: str) -> str:
    if status == "judge_error":
        return "judge error"
    if status == "failed":
        return "failed"
    return fmt_score(score)

