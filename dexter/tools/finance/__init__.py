"""Finance tools: ``get_financials``, ``get_market_data``, ``read_filings``,
``stock_screener``, over Financial Datasets (with a key) and SEC EDGAR (keyless)."""

from __future__ import annotations

from typing import Any

from dexter.config import Settings
from dexter.tools.base import Tool
from dexter.tools.finance.filings import ReadFilings
from dexter.tools.finance.financials import GetFinancials
from dexter.tools.finance.market_data import GetMarketData
from dexter.tools.finance.router import RouterConfig
from dexter.tools.finance.screener import StockScreener
from dexter.tools.finance.sources import SourceOptions


def finance_tools(
    settings: Settings,
    *,
    config: RouterConfig | None = None,
    source_options: SourceOptions | None = None,
    env: dict[str, str] | None = None,
) -> list[Tool[Any]]:
    """The four finance meta-tools. ``env`` (default: the process environment, read at each
    call) supplies ``FINANCIAL_DATASETS_API_KEY``."""
    kwargs: dict[str, Any] = {"config": config, "source_options": source_options, "env": env}
    return [GetFinancials(settings, **kwargs), GetMarketData(settings, **kwargs),
            ReadFilings(settings, **kwargs), StockScreener(settings, **kwargs)]


__all__ = ["GetFinancials", "GetMarketData", "ReadFilings", "RouterConfig", "SourceOptions",
           "StockScreener", "finance_tools"]
