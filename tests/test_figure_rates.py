"""The figure check measured on a labelled set: analyst-style answers over Apple's and
Tesla's real SEC data (tests/fixtures/figureset/cases.jsonl, written by
tests/figureset/generate.py), each figure labelled by an oracle that reads the raw SEC JSON
with none of dexter's code (tests/figureset/oracle.py).

The sources are fetched by dexter's own finance tools from the real SEC responses over
HTTP (tests/figure_sources.py) and checked exactly as a run checks its answer. Goals (the
issue's): fabricated figures accepted at most 2 %, misattributed figures caught at least
80 %, true figures flagged at most 2 %, non-figures flagged never. A figure the check does
not read at all counts as accepted.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from dexter.evidence.verify import FAILED, verify_answer
from dexter.tools.base import ToolOutput
from tests.figure_sources import ledger_for, shared_outputs
from tests.figureset.generate import Generator, fetched_of
from tests.figureset.oracle import Oracle, meaning_from

CASES = Path(__file__).parent / "fixtures" / "figureset" / "cases.jsonl"
MUST_CATCH = ("misattributed", "sign", "miscited")


def load_cases() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CASES.read_text(encoding="utf-8").splitlines()
            if line.strip()]


@dataclass
class Outcome:
    case: str
    text: str
    label: str
    status: str
    """dexter's status, or ``unread`` when it read no figure there."""
    reason: str


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ToolOutput]:
    return shared_outputs(tmp_path_factory)


@pytest.fixture(scope="module")
def outcomes(outputs: dict[str, ToolOutput]) -> tuple[list[Outcome], list[Outcome]]:
    figures: list[Outcome] = []
    non_figures: list[Outcome] = []
    for case in load_cases():
        check = verify_answer(case["answer"], ledger_for(case["sources"], outputs))
        found = check.figures
        for item in case["figures"]:
            match = next((f for f in found if f.claim.start < item["end"]
                          and item["start"] < f.claim.end), None)
            figures.append(Outcome(case["id"], item["text"], item["label"],
                                   match.status if match else "unread",
                                   match.reason if match else ""))
        for item in case["non_figures"]:
            match = next((f for f in found if f.claim.start < item["end"]
                          and item["start"] < f.claim.end), None)
            non_figures.append(Outcome(case["id"], item["text"], "non_figure",
                                       match.status if match else "unread",
                                       match.reason if match else ""))
    return figures, non_figures


def _rate(items: list[Outcome], flagged: bool) -> tuple[int, int]:
    hits = sum(1 for o in items if (o.status in FAILED) == flagged)
    return hits, len(items)


def _report(figures: list[Outcome], non_figures: list[Outcome]) -> Iterator[str]:
    by = Counter((o.label, o.status) for o in figures)
    for (label, status), n in sorted(by.items()):
        yield f"{label:>14} -> {status:<13} {n}"
    for o in figures:
        wrong = (o.label == "true" and o.status in FAILED) or \
            (o.label == "fabricated" and o.status not in FAILED) or \
            (o.label in MUST_CATCH and o.status not in FAILED)
        if wrong:
            yield f"  {o.case} {o.label}: {o.text!r} -> {o.status} ({o.reason})"
    for o in non_figures:
        if o.status != "unread":
            yield f"  {o.case} non-figure {o.text!r} read as a figure -> {o.status}"


def test_the_labels_are_the_oracles() -> None:
    """Every stored label is what the oracle decides from the raw JSON now."""
    oracle = Oracle()
    for case in load_cases():
        fetched = fetched_of(case["sources"])
        for item in case["figures"]:
            assert oracle.label(meaning_from(item["meaning"]), fetched) == item["label"], \
                (case["id"], item["text"])


def test_the_set_is_what_the_generator_writes() -> None:
    """The committed set is reproduced by its generator (so it can be grown and reviewed)."""
    written = Generator(Oracle()).all_cases()
    assert [json.loads(json.dumps(c)) for c in written] == load_cases()


def test_the_set_is_large_and_mixed() -> None:
    cases = load_cases()
    labels = Counter(f["label"] for c in cases for f in c["figures"])
    assert sum(labels.values()) >= 300
    assert labels["true"] >= 150 and labels["fabricated"] >= 100
    assert labels["misattributed"] >= 60 and labels["sign"] >= 8
    assert sum(len(c["non_figures"]) for c in cases) >= 150
    intents = Counter(f["intent"] for c in cases for f in c["figures"])
    for kind in ("near_miss", "swapped", "scale", "random", "wrong_period", "wrong_line",
                 "wrong_company", "sign", "miscited"):
        assert intents[kind] >= 5, kind


def test_the_four_rates_meet_their_goals(outcomes: tuple[list[Outcome], list[Outcome]]
                                         ) -> None:
    figures, non_figures = outcomes
    fabricated = [o for o in figures if o.label == "fabricated"]
    wrong = [o for o in figures if o.label in MUST_CATCH]
    true = [o for o in figures if o.label == "true"]
    accepted, n_fab = _rate(fabricated, flagged=False)
    caught, n_wrong = _rate(wrong, flagged=True)
    flagged, n_true = _rate(true, flagged=True)
    read = sum(1 for o in non_figures if o.status != "unread")
    report = "\n".join(_report(figures, non_figures))
    print(f"\nfabricated accepted {accepted}/{n_fab}; misattributed, sign flips and miscited "
          f"caught {caught}/{n_wrong}; true flagged {flagged}/{n_true}; non-figures read "
          f"{read}/{len(non_figures)}\n{report}")
    assert accepted <= 0.02 * n_fab, report
    assert caught >= 0.80 * n_wrong, report
    assert flagged <= 0.02 * n_true, report
    assert read == 0, report


def test_a_change_said_the_wrong_way_is_caught_against_the_calculator(
        outcomes: tuple[list[Outcome], list[Outcome]]) -> None:
    """The cases whose growth rates the calculator computed: each one said to go the wrong
    way ("up" on a decline) is flagged, whichever form the expression has, and each true
    one is accepted."""
    calculated = {c["id"] for c in load_cases() if any(s.startswith("calc:")
                                                       for s in c["sources"])}
    figures = [o for o in outcomes[0] if o.case in calculated]
    labels = Counter(o.label for o in figures)
    assert labels["sign"] >= 5 and labels["true"] >= 5
    assert [o for o in figures if o.label == "sign" and o.status not in FAILED] == []
    assert [o for o in figures if o.label == "true" and o.status in FAILED] == []
