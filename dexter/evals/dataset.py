"""Eval datasets: questions with an expected answer and a rubric of criteria.

A dataset is a CSV file (a header row naming the columns) or a JSONL file (one object per
line). The columns, matched without regard to case, spaces or underscores:

- ``question`` and ``answer`` (required, non-empty text);
- ``rubric`` (required): a list of ``{"operator": ..., "criteria": ...}`` items, written as
  JSON or as a Python literal (most rows of the public 50 use single quotes); in JSONL it
  may also be the list itself. ``operator`` is ``correctness`` or ``contradiction``;
- ``question type`` or ``type`` (optional; empty when absent);
- ``id`` (optional): otherwise a question's id is its row number (1 for the first).

Anything else is ignored. Every problem raises :class:`DatasetError` naming the file, the
row and what is wrong.
"""

from __future__ import annotations

import ast
import csv
import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Literal

Operator = Literal["correctness", "contradiction"]
OPERATORS: tuple[Operator, ...] = ("correctness", "contradiction")
DEFAULT_DATASET = "finance_agent_public50.csv"

_COLUMNS = {
    "question": "question",
    "answer": "answer",
    "expectedanswer": "answer",
    "rubric": "rubric",
    "questiontype": "type",
    "type": "type",
    "id": "id",
}


class DatasetError(Exception):
    """A dataset that cannot be used; the message names the file, the row and the problem."""


@dataclass(frozen=True, slots=True)
class Criterion:
    """One rubric item: ``correctness`` (the answer states it) or ``contradiction`` (the
    answer does not contradict it)."""

    operator: Operator
    text: str

    def to_dict(self) -> dict[str, str]:
        """The item as it is written in datasets and results: ``{operator, criteria}``."""
        return {"operator": self.operator, "criteria": self.text}


@dataclass(frozen=True, slots=True)
class EvalQuestion:
    """One question of a dataset."""

    id: str
    question: str
    answer: str
    type: str
    rubric: tuple[Criterion, ...]


def default_dataset_path() -> Path:
    """The packaged public 50 (Vals AI Finance Agent Benchmark v1)."""
    return Path(str(resources.files("dexter.evals") / "data" / DEFAULT_DATASET))


def file_digest(path: Path) -> str:
    """The SHA-256 of a file's bytes (recorded with an eval to name its dataset exactly)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_dataset(path: Path) -> list[EvalQuestion]:
    """Read every question of a CSV or JSONL dataset. Raises :class:`DatasetError`."""
    if not path.is_file():
        raise DatasetError(f"No dataset at {path}.")
    suffix = path.suffix.lower()
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise DatasetError(f"{path} is not UTF-8 text.") from None
    except OSError as exc:
        raise DatasetError(f"Cannot read {path}: {exc.strerror}.") from None
    if suffix == ".csv":
        rows = _csv_rows(path, text)
    elif suffix in {".jsonl", ".ndjson"}:
        rows = _jsonl_rows(path, text)
    else:
        raise DatasetError(
            f"{path}: unknown dataset format '{suffix or '(none)'}'. Use a .csv file with a "
            "header row, or a .jsonl file with one object per line (question, answer, rubric).")
    questions = [_question(path, where, number, row) for number, (where, row) in enumerate(rows, 1)]
    if not questions:
        raise DatasetError(f"{path} holds no questions.")
    seen: dict[str, str] = {}
    for q, (where, _row) in zip(questions, rows, strict=True):
        if q.id in seen:
            raise DatasetError(f"{path} {where}: id '{q.id}' is used twice (first at {seen[q.id]}).")
        seen[q.id] = where
    return questions


def select(questions: Sequence[EvalQuestion], *, type_name: str | None = None,
           limit: int | None = None) -> list[EvalQuestion]:
    """The questions of one type (matched without regard to case), then the first ``limit``.

    Raises :class:`DatasetError` for a type the dataset does not have, listing those it has.
    """
    chosen = list(questions)
    if type_name is not None and type_name.strip():
        wanted = type_name.strip().casefold()
        chosen = [q for q in chosen if q.type.casefold() == wanted]
        if not chosen:
            known = ", ".join(sorted({q.type for q in questions if q.type})) or "none"
            raise DatasetError(f"No question has type '{type_name}'. Types in the dataset: {known}.")
    if limit is not None:
        chosen = chosen[:limit]
    return chosen


def parse_rubric(value: Any, where: str) -> tuple[Criterion, ...]:
    """A rubric from a list, or from its JSON or Python-literal text. Raises ``DatasetError``."""
    items = value
    if isinstance(value, str):
        items = _rubric_from_text(value, where)
    if not isinstance(items, list) or not items:
        raise DatasetError(f"{where}: the rubric must be a non-empty list of "
                           '{"operator": ..., "criteria": ...} items.')
    out: list[Criterion] = []
    for n, item in enumerate(items, 1):
        if not isinstance(item, Mapping):
            raise DatasetError(f"{where}: rubric item {n} is not an object with operator and criteria.")
        operator = item.get("operator")
        text = item.get("criteria")
        if operator not in OPERATORS:
            raise DatasetError(f"{where}: rubric item {n} has operator {operator!r}; "
                               "expected 'correctness' or 'contradiction'.")
        if not isinstance(text, str) or not text.strip():
            raise DatasetError(f"{where}: rubric item {n} has no criteria text.")
        out.append(Criterion(operator, text.strip()))
    return tuple(out)


def _rubric_from_text(text: str, where: str) -> Any:
    stripped = text.strip()
    if not stripped:
        raise DatasetError(f"{where}: the rubric is empty.")
    try:
        return json.loads(stripped)
    except (ValueError, RecursionError):
        pass
    try:
        return ast.literal_eval(stripped)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise DatasetError(f"{where}: the rubric is neither JSON nor a Python list literal.") from None


def _normalize(name: str) -> str:
    return "".join(ch for ch in name.casefold() if ch.isalnum())


def _columns(keys: Sequence[str]) -> dict[str, str]:
    """Our field name for each of the file's column names it recognises."""
    return {key: _COLUMNS[_normalize(key)] for key in keys if _normalize(key) in _COLUMNS}


def _csv_rows(path: Path, text: str) -> list[tuple[str, dict[str, Any]]]:
    reader = csv.DictReader(text.splitlines(keepends=True))
    header = reader.fieldnames or []
    fields = _columns(header)
    missing = [name for name in ("question", "answer", "rubric") if name not in fields.values()]
    if missing:
        raise DatasetError(
            f"{path}: the header has no {', '.join(missing)} column (it has: "
            f"{', '.join(header) or 'nothing'}). Columns needed: Question, Answer, Rubric; "
            "optional: Question Type, id.")
    rows: list[tuple[str, dict[str, Any]]] = []
    try:
        for number, raw in enumerate(reader, 1):
            rows.append((f"row {number}", {fields[k]: v for k, v in raw.items()
                                           if k is not None and k in fields}))
    except csv.Error as exc:
        raise DatasetError(f"{path}: not valid CSV near line {reader.line_num}: {exc}.") from None
    return rows


def _jsonl_rows(path: Path, text: str) -> list[tuple[str, dict[str, Any]]]:
    rows: list[tuple[str, dict[str, Any]]] = []
    for number, line in _numbered_lines(text):
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            raise DatasetError(f"{path} line {number}: not valid JSON.") from None
        if not isinstance(obj, dict):
            raise DatasetError(f"{path} line {number}: expected a JSON object.")
        fields = _columns(list(obj))
        rows.append((f"line {number}", {fields[k]: v for k, v in obj.items() if k in fields}))
    return rows


def _numbered_lines(text: str) -> Iterator[tuple[int, str]]:
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            yield number, line


def _question(path: Path, where: str, number: int, row: Mapping[str, Any]) -> EvalQuestion:
    place = f"{path} {where}"
    values: dict[str, str] = {}
    for name in ("question", "answer"):
        value = row.get(name)
        if not isinstance(value, str) or not value.strip():
            raise DatasetError(f"{place}: the {name} is {'missing' if value is None else 'empty'}.")
        values[name] = value.strip()
    if "rubric" not in row or row["rubric"] is None:
        raise DatasetError(f"{place}: the rubric is missing.")
    rubric = parse_rubric(row["rubric"], place)
    kind = row.get("type")
    raw_id = row.get("id")
    ident = str(raw_id).strip() if raw_id is not None and str(raw_id).strip() else str(number)
    return EvalQuestion(
        id=ident, question=values["question"], answer=values["answer"],
        type=kind.strip() if isinstance(kind, str) else "", rubric=rubric,
    )
