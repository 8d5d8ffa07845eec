"""The sources of the held-out set, fetched as a run fetches them: dexter's own finance tools
against the recorded SEC responses over HTTP (the machinery of ``tests/figure_sources.py``),
with the set's own specs (Tesla quarterly and TTM statements, Apple quarterly cash flows,
Tesla quarterly balance sheets, besides the annual statements)."""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from pathlib import Path

import pytest

from dexter.evidence.ledger import SourceLedger
from dexter.tools.base import ToolOutput
from tests import figure_sources
from tests.shared_fixtures import built_once

NEW: dict[str, figure_sources.Spec] = {
    "AAPL-cash-quarterly": ("get_financials", "get_cash_flow_statements",
                            {"ticker": "AAPL", "period": "quarterly", "limit": 4}),
    "TSLA-income-quarterly": ("get_financials", "get_income_statements",
                              {"ticker": "TSLA", "period": "quarterly", "limit": 6}),
    "TSLA-income-ttm": ("get_financials", "get_income_statements",
                        {"ticker": "TSLA", "period": "ttm", "limit": 2}),
    "TSLA-balance-quarterly": ("get_financials", "get_balance_sheets",
                               {"ticker": "TSLA", "period": "quarterly", "limit": 4}),
}
"""The set's specs that the team's set does not have."""
USED = ("AAPL-income-annual", "AAPL-income-quarterly", "AAPL-balance-annual",
        "AAPL-cash-annual", "TSLA-income-annual", "TSLA-balance-annual", "TSLA-cash-annual")
SPECS: dict[str, figure_sources.Spec] = {
    **{key: figure_sources.SPECS[key] for key in USED}, **NEW}
"""Every spec the set's cases cite: the team's annual and Apple quarterly ones, and its own."""


def fetch_outputs(keys: Sequence[str] = tuple(SPECS)) -> dict[str, ToolOutput]:
    """Each spec's tool output, fetched once from the fake data server."""
    return figure_sources.fetch_outputs(keys, SPECS)


def shared_outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ToolOutput]:
    """:func:`fetch_outputs` of every spec, built once for the test run: the team's specs
    from the pickle :func:`figure_sources.shared_outputs` shares, the set's own four from
    one of their own (fetched by the first worker that asks)."""
    def build(folder: Path) -> None:
        (folder / "outputs.pickle").write_bytes(pickle.dumps(fetch_outputs(tuple(NEW))))

    folder = built_once(tmp_path_factory, "figureset-b-sources", build)
    own = pickle.loads((folder / "outputs.pickle").read_bytes())
    assert isinstance(own, dict) and set(own) == set(NEW)
    team = figure_sources.shared_outputs(tmp_path_factory)
    return {**{key: team[key] for key in USED}, **own}


def ledger_for(keys: Sequence[str], outputs: dict[str, ToolOutput]) -> SourceLedger:
    """A ledger of the sources ``keys`` in order, as :func:`figure_sources.ledger_for`."""
    return figure_sources.ledger_for(keys, outputs, SPECS)
