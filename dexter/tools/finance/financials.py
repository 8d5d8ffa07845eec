"""``get_financials``: statements, company facts, ratios, segments and earnings."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from dexter.tools.finance.router import RoutedFinanceTool, today_line, unavailable_block
from dexter.tools.finance.subtools import FINANCIALS, SubTool


class GetFinancials(RoutedFinanceTool):
    """Company fundamentals from Financial Datasets or, without a key, SEC EDGAR."""

    name = "get_financials"
    description = (
        "Financial statements and fundamentals: income statements, balance sheets, cash flow, "
        "company facts (shares outstanding), key ratios, revenue and operating income by "
        "business segment, geography and product (from the filings), industry peers by SIC "
        "code with a metric (comps), earnings. Handles several companies and metrics in one "
        "call; every number comes with its period and source filing. Input: a plain-language "
        "query, e.g. 'Apple and Microsoft quarterly revenue, operating margin and free cash "
        "flow for the last 4 quarters' or 'Apple revenue by segment and by product, FY2024'. "
        "No key: compute multiples from get_market_data's price and these shares."
    )
    subtools = FINANCIALS
    progress_text = "Choosing financial data to fetch..."

    def router_prompt(self, offered: Sequence[SubTool], missing: Sequence[SubTool],
                      today: dt.date) -> str:
        """Routing instructions for fundamentals."""
        return f"""You route a financial data request to data tools. {today_line(today)}

Call the tool(s) that fetch exactly the data the request needs. Rules:
- Use tickers, not names (Apple=AAPL, Microsoft=MSFT, Amazon=AMZN, Alphabet/Google=GOOGL,
  Meta=META, Nvidia=NVDA, Tesla=TSLA, Berkshire Hathaway=BRK-B).
- Comparing companies: call the same tool once per ticker.
- Periods: annual for years, quarterly for quarters, ttm for trailing twelve months. Use the
  smallest limit that answers: latest = 1, a short trend = 3-4, "past 5 years" = 5 annual or
  20 quarterly. Use report_period_gte/lte (YYYY-MM-DD) for date ranges ("since 2020").
- Valuation or DCF work needs statements (get_all_financial_statements) and company facts
  (shares outstanding); add get_key_ratios for market multiples when it is offered.
- Revenue, margins, EPS -> get_income_statements; debt, cash, equity -> get_balance_sheets;
  capex, free cash flow, buybacks -> get_cash_flow_statements.
- Revenue or profit of a segment, region, country or product line ("how much is Services",
  "Americas vs Greater China", "iPhone revenue") -> get_financial_segments (axis segment,
  geography or product; member for just one; omit axis for all three).
- Peers, comps, "companies like X" -> get_peers (metric and calendar year), then the
  statements of the peers that matter.
- Only call the tools you were given.{unavailable_block(missing)}
Call the appropriate tool(s) now."""
