"""``read_filings``: SEC filings lists and the text of 10-K, 10-Q and 8-K sections."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from dexter.data.filing_text import ITEMS_10K, ITEMS_10Q
from dexter.tools.finance.router import RoutedFinanceTool, today_line, unavailable_block
from dexter.tools.finance.subtools import FILINGS, SubTool


def _catalog(items: dict[str, str]) -> str:
    return "\n".join(f"  - {key}: {title}" for key, title in items.items())


class ReadFilings(RoutedFinanceTool):
    """Filing text from SEC EDGAR (keyless) or Financial Datasets."""

    name = "read_filings"
    description = (
        "SEC filings: lists a company's filings of any form, returns the text of chosen 10-K, "
        "10-Q and 8-K sections (risk factors, business, MD&A, financial statements), reads "
        "earnings press releases (the quarter's figures from their tables, the outlook and "
        "guidance), and searches the full text of every filer's documents ('which companies "
        "mentioned tariffs in their 10-Ks in 2025'). Input: a plain-language query, e.g. "
        "'Tesla's latest 10-K risk factors' or 'Adobe's latest earnings release guidance'."
    )
    subtools = FILINGS
    progress_text = "Choosing filings to read..."
    max_calls = 3  # each call downloads a whole filing; sections are long

    def router_prompt(self, offered: Sequence[SubTool], missing: Sequence[SubTool],
                      today: dt.date) -> str:
        """Routing instructions for filings."""
        return f"""You choose which SEC filing sections to read. {today_line(today)}

Rules:
- Use tickers (Apple=AAPL, Tesla=TSLA, Nvidia=NVDA).
- Annual topics (business, risk factors, full-year MD&A, audited statements) -> read_10k_items.
  Quarterly updates -> read_10q_items. Material events, earnings releases, executive
  changes -> read_8k (items 2.02 = results, 5.02 = officers).
- At most 3 calls. Ask for the fewest items that answer (at most 3 per filing). Leave
  accession_number out to get the latest filing; use fiscal_year / period_end for an
  older one.
- Earnings results, guidance, outlook, "what did the company say about next quarter" ->
  get_earnings_releases (limit 1 for the latest; filing_date bounds for an older one).
- Which companies or filings mention a word or phrase -> search_filings (a phrase in double
  quotes; forms, dates and entity to narrow it).
- Use list_filings only when the request is about which filings exist or their dates.
10-K items:
{_catalog(ITEMS_10K)}
10-Q items:
{_catalog(ITEMS_10Q)}
{unavailable_block(missing)}Call the appropriate tool(s) now."""
