"""The sources of held-out set C: dexter's own finance tools against the recorded SEC
responses over HTTP, through set B's plumbing (``tests/figureset_b/sources.py`` and the
machinery it imports), with this set's own specs; and what each spec holds, for the oracle."""

from __future__ import annotations

from collections.abc import Sequence

from dexter.evidence.ledger import SourceLedger
from dexter.tools.base import ToolOutput
from tests import figure_sources  # the machinery tests/figureset_b/sources.py is built on
from tests.figureset_c.holds import HOLDS

__all__ = ["HOLDS", "SPECS", "fetch_outputs", "ledger_for"]

SPECS: dict[str, tuple[str, str, dict[str, object]]] = {
    "AAPL-inc-a": ("get_financials", "get_income_statements",
                   {"ticker": "AAPL", "period": "annual", "limit": 5}),
    "AAPL-inc-q": ("get_financials", "get_income_statements",
                   {"ticker": "AAPL", "period": "quarterly", "limit": 8}),
    "AAPL-inc-ttm": ("get_financials", "get_income_statements",
                     {"ticker": "AAPL", "period": "ttm", "limit": 2}),
    "AAPL-cf-a": ("get_financials", "get_cash_flow_statements",
                  {"ticker": "AAPL", "period": "annual", "limit": 4}),
    "TSLA-inc-a": ("get_financials", "get_income_statements",
                   {"ticker": "TSLA", "period": "annual", "limit": 6}),
    "TSLA-inc-q": ("get_financials", "get_income_statements",
                   {"ticker": "TSLA", "period": "quarterly", "limit": 8}),
    "TSLA-cf-a": ("get_financials", "get_cash_flow_statements",
                  {"ticker": "TSLA", "period": "annual", "limit": 6}),
}


def fetch_outputs(keys: Sequence[str] = tuple(SPECS)) -> dict[str, ToolOutput]:
    return figure_sources.fetch_outputs(keys, SPECS)


def ledger_for(keys: Sequence[str], outputs: dict[str, ToolOutput]) -> SourceLedger:
    return figure_sources.ledger_for(keys, outputs, SPECS)
