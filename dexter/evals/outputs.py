"""What an eval writes: ``results.jsonl`` (one line per question, appended whole and
flushed as each finishes), ``summary.json`` and the ``eval.json`` that names the eval.

Statuses of a result line:

- ``ok``: the run answered and the judge graded it; ``score`` is the fraction of criteria
  passed and ``passed_all`` whether every one passed;
- ``failed``: the run did not answer (provider error, iteration limit, an exception):
  score 0, no verdicts, ``error`` says why;
- ``judge_error``: the run answered but no usable verdicts came back; unscored
  (``score`` and ``passed_all`` are null) and left out of the means.

A question's latest line wins (``--retry-failed`` appends new lines for the same ids).
"""

from __future__ import annotations

import json
import math
import os
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from dexter.secrets import scrub
from dexter.text import clean

Status = Literal["ok", "failed", "judge_error"]
RESULTS_FILE = "results.jsonl"
SUMMARY_FILE = "summary.json"
REPORT_FILE = "report.md"
META_FILE = "eval.json"
SCRATCHPAD_DIR = "scratchpads"


class OutputError(Exception):
    """An eval directory that cannot be read or written; the message says which file and why."""


@dataclass
class QuestionResult:
    """One line of ``results.jsonl``."""

    id: str
    question: str
    type: str
    status: Status
    answer: str = ""
    expected: str = ""
    rubric: list[dict[str, str]] = field(default_factory=list)
    score: float | None = None
    passed_all: bool | None = None
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    run_status: str = ""
    error: str = ""
    error_kind: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    judge_input_tokens: int = 0
    judge_output_tokens: int = 0
    judge_cost_usd: float | None = None
    judge_attempts: int = 0
    seconds: float = 0.0
    scratchpad: str = ""
    verification: dict[str, Any] | None = None
    model: str = ""
    judge_model: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The line's fields, in a stable order."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> QuestionResult:
        """A result from a ``results.jsonl`` line (unknown keys are ignored)."""
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)

    @property
    def spend(self) -> float:
        """What this question cost, run and judge (unpriced parts count 0)."""
        return (self.cost_usd or 0.0) + (self.judge_cost_usd or 0.0)

    @property
    def criteria_passed(self) -> int:
        """How many verdicts passed."""
        return sum(1 for v in self.verdicts if v.get("passed") is True)


def score_of(verdicts: Sequence[Mapping[str, Any]]) -> tuple[float, bool]:
    """(fraction of criteria passed, whether all passed) for a non-empty list of verdicts."""
    passed = sum(1 for v in verdicts if v.get("passed") is True)
    return passed / len(verdicts), passed == len(verdicts)


class ResultsFile:
    """``results.jsonl`` of one eval directory: read the finished lines, append new ones."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.skipped_lines = 0

    def read(self) -> dict[str, QuestionResult]:
        """The latest result per question id, in the order ids first appear.

        Lines that are not valid JSON objects with an ``id`` (a line cut short by a crash)
        are skipped and counted in ``skipped_lines``.
        """
        self.skipped_lines = 0
        found: dict[str, QuestionResult] = {}
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return found
        except (OSError, UnicodeDecodeError) as exc:
            raise OutputError(f"Cannot read {self.path}: {getattr(exc, 'strerror', exc)}.") from None
        for line in text.splitlines():
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                result = QuestionResult.from_dict(data)
            except (ValueError, TypeError, RecursionError):
                self.skipped_lines += 1
                continue
            if not isinstance(result.id, str) or not result.id:
                self.skipped_lines += 1
                continue
            found[result.id] = result
        return found

    def append(self, result: QuestionResult) -> None:
        """Write one whole line and flush it. Raises ``OutputError``."""
        line = clean(scrub(json.dumps(result.to_dict(), ensure_ascii=False))) + "\n"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a+b") as f:
                if f.tell() > 0:
                    f.seek(-1, os.SEEK_END)
                    if f.read(1) != b"\n":  # a line cut short by a crash: start afresh
                        line = "\n" + line
                f.write(line.encode("utf-8"))
                f.flush()  # in the OS's hands now: a killed dexter loses no finished line
        except OSError as exc:
            raise OutputError(f"Cannot write {self.path}: {exc.strerror}.") from None


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def _total(values: Iterable[float | None]) -> float | None:
    """The sum of the known values; None when none is known (an unpriced model)."""
    known = [v for v in values if v is not None]
    return round(math.fsum(known), 8) if known else None


def _rates(results: Sequence[QuestionResult]) -> dict[str, Any]:
    scored = [r for r in results if r.status in ("ok", "failed")]
    return {
        "questions": len(results),
        "scored": len(scored),
        "mean_score": _mean([r.score or 0.0 for r in scored]),
        "pass_all_rate": _mean([1.0 if r.passed_all else 0.0 for r in scored]),
    }


def summarize(results: Sequence[QuestionResult], *, planned: int | None = None,
              meta: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``summary.json``: counts, means (a failed run scores 0, a judge error is left out),
    means per type, cost, tokens and time. ``planned`` is the number of questions the eval
    covers (``not_run`` = planned minus those with a result)."""
    questions = max(planned if planned is not None else 0, len(results))
    rates = _rates(results)
    by_type: dict[str, dict[str, Any]] = {}
    for kind in sorted({r.type for r in results}):
        by_type[kind or "(none)"] = _rates([r for r in results if r.type == kind])
    costs = [r.cost_usd for r in results if r.cost_usd is not None]
    seconds = [r.seconds for r in results]
    total_cost = _total(r.cost_usd for r in results)
    judge_cost = _total(r.judge_cost_usd for r in results)
    summary: dict[str, Any] = {
        **{k: v for k, v in (meta or {}).items() if k in ("model", "judge_model", "dataset",
                                                          "from_runs")},
        "questions": questions,
        "completed": sum(1 for r in results if r.status == "ok"),
        "failed": sum(1 for r in results if r.status == "failed"),
        "judge_errors": sum(1 for r in results if r.status == "judge_error"),
        "not_run": questions - len(results),
        "scored": rates["scored"],
        "mean_score": rates["mean_score"],
        "pass_all_rate": rates["pass_all_rate"],
        "criteria": sum(len(r.verdicts) for r in results),
        "criteria_passed": sum(r.criteria_passed for r in results),
        "by_type": by_type,
        "total_cost_usd": total_cost,
        "median_cost_usd": _median(costs),
        "judge_cost_usd": judge_cost,
        "spend_usd": _total([total_cost, judge_cost]),
        "input_tokens": sum(r.input_tokens for r in results),
        "output_tokens": sum(r.output_tokens for r in results),
        "judge_input_tokens": sum(r.judge_input_tokens for r in results),
        "judge_output_tokens": sum(r.judge_output_tokens for r in results),
        "total_seconds": round(math.fsum(seconds), 3),
        "median_seconds": _median(seconds),
    }
    return summary


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    """Write a JSON file whole (a temporary file renamed over it). Raises ``OutputError``."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        raise OutputError(f"Cannot write {path}: {exc.strerror}.") from None


def write_text(path: Path, text: str) -> None:
    """Write a text file whole (a temporary file renamed over it). Raises ``OutputError``."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(scrub(text), encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        raise OutputError(f"Cannot write {path}: {exc.strerror}.") from None


def read_json(path: Path) -> dict[str, Any] | None:
    """A JSON object file, or None when absent. Raises ``OutputError`` when unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise OutputError(f"Cannot read {path}: {getattr(exc, 'strerror', None) or exc}.") from None
    except RecursionError:
        raise OutputError(f"Cannot read {path}: its JSON is nested too deeply.") from None
    if not isinstance(data, dict):
        raise OutputError(f"{path} is not a JSON object.")
    return data
