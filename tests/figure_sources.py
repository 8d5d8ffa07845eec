"""The sources of the labelled figure set, fetched the way a run fetches them: dexter's own
finance tools (``get_financials``, ``read_filings``) against the real SEC responses in
tests/fixtures/sec-real, served over HTTP by the fake data server; each result joins a
ledger as the executor adds it (the tool's evidence text, its title, links and tables). A
``calc:<expression>`` source is the calculator's result on that expression."""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import os
import pickle
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from dexter.config import Settings
from dexter.data.http import RetryPolicy
from dexter.evidence import ledger as ledger_module
from dexter.evidence.ledger import SourceLedger
from dexter.evidence.sourcetext import Quantity, source_quantities
from dexter.messages import AssistantMessage, ToolCall
from dexter.testing.fakedata import FakeDataServer, RecordedTree, point_settings_at
from dexter.testing.scripted import ScriptedModel
from dexter.tools.base import ToolContext, ToolOutput, format_result
from dexter.tools.calculator import CalculatorTool
from dexter.tools.evaluator import evaluate, format_number, json_number
from dexter.tools.finance import finance_tools
from dexter.tools.finance.router import QueryArgs
from dexter.tools.finance.sources import SourceOptions
from tests.shared_fixtures import built_once

REAL = Path(__file__).parent / "fixtures" / "sec-real"
TODAY = dt.date(2026, 2, 15)

# spec -> (tool, the routing call, the Fetched periods the oracle is told about)
Spec = tuple[str, str, dict[str, Any]]
SPECS: dict[str, Spec] = {
    "AAPL-income-annual": ("get_financials", "get_income_statements",
                           {"ticker": "AAPL", "period": "annual", "limit": 5}),
    "AAPL-income-quarterly": ("get_financials", "get_income_statements",
                              {"ticker": "AAPL", "period": "quarterly", "limit": 6}),
    "AAPL-balance-annual": ("get_financials", "get_balance_sheets",
                            {"ticker": "AAPL", "period": "annual", "limit": 3}),
    "AAPL-cash-annual": ("get_financials", "get_cash_flow_statements",
                         {"ticker": "AAPL", "period": "annual", "limit": 3}),
    "AAPL-10k": ("read_filings", "read_10k_items",
                 {"ticker": "AAPL", "items": ["Item-7", "Item-8"], "fiscal_year": 2024}),
    "AAPL-10k-item7": ("read_filings", "read_10k_items",
                       {"ticker": "AAPL", "items": ["Item-7"], "fiscal_year": 2024}),
    "TSLA-income-annual": ("get_financials", "get_income_statements",
                           {"ticker": "TSLA", "period": "annual", "limit": 6}),
    "TSLA-balance-annual": ("get_financials", "get_balance_sheets",
                            {"ticker": "TSLA", "period": "annual", "limit": 3}),
    "TSLA-cash-annual": ("get_financials", "get_cash_flow_statements",
                         {"ticker": "TSLA", "period": "annual", "limit": 6}),
}


async def _fetch(keys: Sequence[str], specs: Mapping[str, Spec]) -> dict[str, ToolOutput]:
    out: dict[str, ToolOutput] = {}
    home = Path(tempfile.mkdtemp(prefix="figureset-"))
    with FakeDataServer(fallback=RecordedTree(REAL)) as server:
        settings = point_settings_at(Settings(), server, home)
        tools = {t.name: t for t in finance_tools(
            settings, source_options=SourceOptions(
                retry=RetryPolicy(max_retries=0, backoff_base=0.001), sec_rate_limiter=None,
                today=TODAY, use_cache=False), env={})}
        for key in keys:
            tool_name, sub, args = specs[key]
            model = ScriptedModel([AssistantMessage("", tool_calls=(ToolCall("c1", sub, args),))])
            ctx = ToolContext(settings=settings, cwd=home, home=home, fast_model=model)
            result = await tools[tool_name].run(QueryArgs(query=key), ctx)
            assert isinstance(result, ToolOutput) and not result.is_error, (key, result)
            out[key] = result
    return out


def fetch_outputs(keys: Sequence[str] = tuple(SPECS),
                  specs: Mapping[str, Spec] = SPECS) -> dict[str, ToolOutput]:
    """The tool output of each source spec (fetched once); ``specs``: the set's own."""
    os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
    return asyncio.run(_fetch(keys, specs))


def shared_outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ToolOutput]:
    """:func:`fetch_outputs` of every spec, fetched once for the test run (all its modules
    and workers, :func:`tests.shared_fixtures.built_once`) and read back from a pickle: the
    same tool outputs, equal field by field, without fetching and parsing the SEC responses
    again in each module of each worker (about 4 CPU-s each time)."""
    def build(folder: Path) -> None:
        (folder / "outputs.pickle").write_bytes(pickle.dumps(fetch_outputs()))

    folder = built_once(tmp_path_factory, "figure-sources", build)
    outputs = pickle.loads((folder / "outputs.pickle").read_bytes())
    assert isinstance(outputs, dict) and set(outputs) == set(SPECS)
    return outputs


def ledger_for(keys: Sequence[str], outputs: dict[str, ToolOutput],
               specs: Mapping[str, Spec] = SPECS) -> SourceLedger:
    """A ledger holding the sources ``keys`` in order (``S1``, ``S2``, ...), added as the
    executor adds a successful result."""
    ledger = SourceLedger()
    with quantities_read_once():
        for key in keys:
            if key.startswith("calc:"):
                _calculation(ledger, key.removeprefix("calc:"))
                continue
            tool_name, _, _ = specs[key]
            result = outputs[key]
            ledger.add(tool_name, {"query": key}, result.content, title=result.title,
                       urls=result.source_urls, tables=result.tables)
    return ledger


@contextmanager
def quantities_read_once() -> Iterator[None]:
    """Within it, ``SourceLedger.add`` reads the numbers of a text it has read before from
    :func:`_quantities_of` (the same frozen values) instead of reading them again."""
    with mock.patch.object(ledger_module, "source_quantities", _quantities_of):
        yield


@functools.cache
def _quantities_of(content: str) -> tuple[Quantity, ...]:
    """``source_quantities(content)``, read once per text: the labelled set adds the same
    nine tool outputs to hundreds of ledgers, and reading a 10-K's numbers is the costly
    part of each (the numbers are frozen values, the same whichever ledger holds them)."""
    return tuple(source_quantities(content))


def _calculation(ledger: SourceLedger, expression: str) -> None:
    """A calculator result as the executor adds it: the calculator's own evidence text (its
    result, as it reports it) and the expression."""
    value = evaluate(expression)
    data = {"expression": expression, "result": json_number(value),
            "formatted": format_number(value)}
    ledger.add("calculator", {"expression": expression},
               CalculatorTool().evidence(format_result(data)), kind="calculation",
               expression=expression)
