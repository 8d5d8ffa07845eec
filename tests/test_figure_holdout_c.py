"""The figure check on set C (tests/figureset_c/: analyst-note phrasings over Apple's and
Tesla's real SEC data, generated and labelled by code that reads neither the check nor the
other sets), checked as ``benchmarks/figure_holdout_c.py`` checks it (its ``run``, imported)
against the issue's four goals, on each half: DEV, whose failures were read to fix the
check, and HELD, whose failures nobody reads (the benchmark prints only its rates), so that
HELD says how the check fares on phrasings it was not tuned on."""

from __future__ import annotations

import pytest

from benchmarks.figure_holdout import Outcome, failed, rates
from benchmarks.figure_holdout_c import run

Halves = dict[str, tuple[list[Outcome], list[Outcome]]]
HALVES = pytest.mark.parametrize("half", ["dev", "held"])


@pytest.fixture(scope="module")
def halves() -> Halves:
    return run()


def _misses(items: list[Outcome], *labels: str) -> int:
    """How many outcomes of ``labels`` failed: a count only, so that a failing HELD
    assertion does not print the figures that would tune the check on it."""
    return sum(1 for o in items if o.label in labels and failed(o))


@HALVES
def test_set_c_is_the_size_it_was_labelled(halves: Halves, half: str) -> None:
    figures, non_figures = halves[half]
    assert len(figures) >= 300 and len(non_figures) >= 250


@HALVES
def test_fabricated_figures_accepted_at_most_2_percent(halves: Halves, half: str) -> None:
    found = rates(*halves[half])
    assert found.met()["fabricated accepted"], found.fabricated_accepted


@HALVES
def test_misattributed_figures_caught_at_least_80_percent(halves: Halves, half: str) -> None:
    found = rates(*halves[half])
    assert found.met()["misattributed caught"], found.misattributed_caught


@HALVES
def test_true_figures_flagged_at_most_2_percent(halves: Halves, half: str) -> None:
    found = rates(*halves[half])
    assert found.met()["true flagged"], (found.true_flagged,
                                         _misses(halves[half][0], "true"))


@HALVES
def test_non_figures_are_never_read(halves: Halves, half: str) -> None:
    found = rates(*halves[half])
    assert found.met()["non-figures read"], found.non_figures_read
