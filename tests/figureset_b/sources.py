"""The sources of the held-out set, fetched as a run fetches them: dexter's own finance tools
against the recorded SEC responses over HTTP (the machinery of ``tests/figure_sources.py``),
with the set's own specs (Tesla quarterly and TTM statements, Apple quarterly cash flows,
Tesla quarterly balance sheets, besides the annual statements)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dexter.evidence.ledger import SourceLedger
from dexter.tools.base import ToolOutput
from tests import figure_sources

SPECS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "AAPL-income-annual": ("get_financials", "get_income_statements",
                           {"ticker": "AAPL", "period": "annual", "limit": 5}),
    "AAPL-income-quarterly": ("get_financials", "get_income_statements",
                              {"ticker": "AAPL", "period": "quarterly", "limit": 6}),
    "AAPL-balance-annual": ("get_financials", "get_balance_sheets",
                            {"ticker": "AAPL", "period": "annual", "limit": 3}),
    "AAPL-cash-annual": ("get_financials", "get_cash_flow_statements",
                         {"ticker": "AAPL", "period": "annual", "limit": 3}),
    "AAPL-cash-quarterly": ("get_financials", "get_cash_flow_statements",
                            {"ticker": "AAPL", "period": "quarterly", "limit": 4}),
    "TSLA-income-annual": ("get_financials", "get_income_statements",
                           {"ticker": "TSLA", "period": "annual", "limit": 6}),
    "TSLA-income-quarterly": ("get_financials", "get_income_statements",
                              {"ticker": "TSLA", "period": "quarterly", "limit": 6}),
    "TSLA-income-ttm": ("get_financials", "get_income_statements",
                        {"ticker": "TSLA", "period": "ttm", "limit": 2}),
    "TSLA-balance-annual": ("get_financials", "get_balance_sheets",
                            {"ticker": "TSLA", "period": "annual", "limit": 3}),
    "TSLA-balance-quarterly": ("get_financials", "get_balance_sheets",
                               {"ticker": "TSLA", "period": "quarterly", "limit": 4}),
    "TSLA-cash-annual": ("get_financials", "get_cash_flow_statements",
                         {"ticker": "TSLA", "period": "annual", "limit": 6}),
}


def fetch_outputs(keys: Sequence[str] = tuple(SPECS)) -> dict[str, ToolOutput]:
    """Each spec's tool output, fetched once from the fake data server."""
    figure_sources.SPECS.update(SPECS)
    return figure_sources.fetch_outputs(keys)


def ledger_for(keys: Sequence[str], outputs: dict[str, ToolOutput]) -> SourceLedger:
    figure_sources.SPECS.update(SPECS)
    return figure_sources.ledger_for(keys, outputs)
