"""The figure check on held-out set B (tests/figureset_b/: answers and phrasings of its own
over Apple's and Tesla's real SEC data, labelled by an oracle that reads the raw JSON),
checked as ``benchmarks/figure_holdout.py`` checks it (its code, imported), against the
issue's goals: fabricated figures accepted at most 2 %, misattributed figures (with sign
flips and miscited ones) caught at least 80 %, true figures flagged at most 2 %, non-figures
read never. The sources are the run's shared tool outputs (fetched once, pickled)."""

from __future__ import annotations

import pytest

from benchmarks.figure_holdout import Outcome, failed, rates, run
from dexter.tools.base import ToolOutput
from tests.figureset_b.sources import shared_outputs


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Outcome], list[Outcome]]:
    outputs: dict[str, ToolOutput] = shared_outputs(tmp_path_factory)
    return run(outputs)


def _failures(items: list[Outcome], label: str) -> list[str]:
    return [f"{o.case} {o.text!r} [{o.label}] -> {o.status}: {o.reason} | {o.sentence}"
            for o in items if failed(o) and o.label == label]


def test_set_b_is_the_size_it_was_labelled(
        outcomes: tuple[list[Outcome], list[Outcome]]) -> None:
    figures, non_figures = outcomes
    assert len(figures) >= 300 and len(non_figures) >= 100


def test_fabricated_figures_accepted_at_most_2_percent(
        outcomes: tuple[list[Outcome], list[Outcome]]) -> None:
    found = rates(*outcomes)
    assert found.met()["fabricated accepted"], (found.fabricated_accepted,
                                                _failures(outcomes[0], "fabricated"))


def test_misattributed_figures_caught_at_least_80_percent(
        outcomes: tuple[list[Outcome], list[Outcome]]) -> None:
    found = rates(*outcomes)
    missed = [f for label in ("misattributed", "sign", "miscited")
              for f in _failures(outcomes[0], label)]
    assert found.met()["misattributed caught"], (found.misattributed_caught, missed)


def test_true_figures_flagged_at_most_2_percent(
        outcomes: tuple[list[Outcome], list[Outcome]]) -> None:
    found = rates(*outcomes)
    assert found.met()["true flagged"], (found.true_flagged, _failures(outcomes[0], "true"))


def test_non_figures_are_never_read(outcomes: tuple[list[Outcome], list[Outcome]]) -> None:
    found = rates(*outcomes)
    assert found.met()["non-figures read"], (found.non_figures_read,
                                             _failures(outcomes[1], "non_figure"))
