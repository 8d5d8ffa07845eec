"""``get_market_data``: prices, crypto, news, insider and institutional data."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from dexter.tools.finance.router import RoutedFinanceTool, today_line, unavailable_block
from dexter.tools.finance.subtools import MARKET_DATA, SubTool


class GetMarketData(RoutedFinanceTool):
    """Market data: Financial Datasets with a key; stock prices also keyless (Yahoo Finance)."""

    name = "get_market_data"
    description = (
        "Market data: current and historical stock and crypto prices, company and market "
        "news, insider trades and ownership (Forms 3/4/5), institutional holdings (13F: what "
        "a manager holds in a quarter and how it changed) and beneficial (13D/G) holders. "
        "Input: a plain-language query, e.g. 'Why did NVDA move last week?' or 'Apple "
        "insider sales in August 2024'. Stock prices need no key (Yahoo Finance), nor do "
        "insider trades and a manager's 13F holdings (SEC EDGAR); news, crypto, holders of "
        "a company and 13D/G need FINANCIAL_DATASETS_API_KEY."
    )
    subtools = MARKET_DATA
    progress_text = "Choosing market data to fetch..."

    def router_prompt(self, offered: Sequence[SubTool], missing: Sequence[SubTool],
                      today: dt.date) -> str:
        """Routing instructions for market data."""
        return f"""You route a market data request to data tools. {today_line(today)}

Call the tool(s) that fetch exactly the data the request needs. Rules:
- Use tickers (Apple=AAPL, Nvidia=NVDA, Tesla=TSLA); crypto pairs like BTC-USD, ETH-USD,
  SOL-USD.
- Dates are YYYY-MM-DD. "last month", "past year", "YTD", "2024" become start_date/end_date
  relative to the current date. Current prices -> get_stock_price or
  get_crypto_price_snapshot, not a history. A price on a past date (e.g. at a fiscal year
  end) -> get_stock_prices over the few days up to that date; yearly prices -> interval
  month.
- "Why did X move" -> recent prices plus get_company_news. Broad market news ->
  get_company_news without a ticker.
- Insider names and institution names are resolved for you: pass the name as written, do
  not look names up first. Insider trades in a date range -> filing_date_gte/lte.
- What a fund or manager holds -> get_institutional_holdings with filer_name (or filer_cik)
  and quarter (2024Q4); what it bought or sold -> also compare_to "previous".
- Only call the tools you were given.{unavailable_block(missing)}
Call the appropriate tool(s) now."""
