"""``stock_screener``: screen companies by financial criteria.

With Financial Datasets the full screener (sectors, valuation, growth) is used; without a
key SEC EDGAR's XBRL frames give simple screens on reported values for one calendar period
(e.g. revenue above $100B and net margin above 20% in CY2024).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from dexter.data.base import Capability, DataError, DataSource, ScreenFilter
from dexter.messages import UserMessage
from dexter.providers.base import ModelRequest, ToolSpec
from dexter.providers.errors import ProviderError
from dexter.tools.base import ToolContext, ToolFailure, ToolOutput, format_result
from dexter.tools.finance.formatting import render_result
from dexter.tools.finance.router import FinanceTool, QueryArgs, routing_model, today_line
from dexter.tools.finance.sources import build_sources

CATALOG_CHARS = 8_000


class FilterSpec(BaseModel):
    field: str = Field(min_length=1)
    operator: Literal["gt", "gte", "lt", "lte", "eq", "in"]
    value: float | str | list[float] | list[str]


class ScreenArgs(BaseModel):
    filters: list[FilterSpec] = Field(min_length=1)
    currency: str = "USD"
    limit: int = Field(25, ge=1, le=100)
    period: str | None = Field(None, description="SEC EDGAR only: CY2024 or CY2024Q3")


def _spec() -> ToolSpec:
    schema = ScreenArgs.model_json_schema()
    schema.pop("title", None)
    return ToolSpec("screen_stocks", "Run the stock screen with these filters.", schema)


class StockScreener(FinanceTool):
    """Translate a plain-language screen into filters and run it."""

    name = "stock_screener"
    description = (
        "Screen stocks by financial criteria, e.g. 'US tech companies with revenue over $10B "
        "and net margin above 20%'. Without FINANCIAL_DATASETS_API_KEY it screens reported "
        "SEC figures (revenue, income, assets, debt, cash flow, margins) for one calendar "
        "period; sector and valuation screens need the key."
    )

    def _prompt(self, source: DataSource, catalog: Any, today: dt.date) -> str:
        text = json.dumps(catalog, ensure_ascii=False, default=str)[:CATALOG_CHARS]
        edgar = source.name == "sec_edgar"
        period_rule = (f"- Set period to the calendar year asked for (default "
                       f"CY{today.year - 1}); CY2024Q3 for a quarter.\n" if edgar else
                       "- Leave period out.\n")
        return f"""You turn a stock-screening request into filters. {today_line(today)}
Source: {source.label}. Fields you may use (only these):
{text}

Rules:
- Operators: gt, gte, lt, lte, eq, in. "between a and b" is two filters (gte a, lte b).
- Margins, ratios, growth and returns are decimals: 20% -> 0.2.
- Money is in units, not millions: $10B -> 10000000000.
- Defaults: "low P/E" -> lt 15, "high growth" -> gt 0.2, limit 25, currency USD.
- Put the most important filter first: results are sorted by it.
{period_rule}Call screen_stocks now."""

    async def run(self, args: QueryArgs, ctx: ToolContext) -> ToolOutput:
        """Fetch the field catalog, let the model write filters, run the screen."""
        query = args.query.strip()
        if not query:
            raise ToolFailure("stock_screener needs criteria in plain words, e.g. 'revenue "
                              "over $100B and net margin above 20%'.")
        async with build_sources(ctx.settings or self.settings, self.env,
                                 self.source_options) as sources:
            source = sources.for_capability(Capability.SCREENER)[0]
            ctx.progress(f"Loading {source.label} screener fields...")
            try:
                catalog = await asyncio.wait_for(source.screener_filters(),
                                                 self.config.subcall_timeout)
            except (DataError, TimeoutError) as exc:
                raise ToolFailure(f"Could not load the screener fields: {exc or 'timed out'}") \
                    from None
            screen = await self._filters(query, source, catalog.data, ctx)
            ctx.progress(f"Screening with {len(screen.filters)} filter(s)...")
            filters = tuple(ScreenFilter(f.field, f.operator, f.value) for f in screen.filters)
            try:
                result = await asyncio.wait_for(
                    source.screen(filters, currency=screen.currency, limit=screen.limit,
                                  period=screen.period),
                    self.config.subcall_timeout)
            except TimeoutError:
                raise ToolFailure(f"The screen timed out after {self.config.subcall_timeout:g}s "
                                  f"and was cancelled.") from None
            except DataError as exc:
                raise ToolFailure(f"The screen failed: {exc} Filters were: "
                                  f"{json.dumps([f.model_dump() for f in screen.filters])}") \
                    from None
        entry = render_result(result)
        entry["filters"] = [f.model_dump() for f in screen.filters]
        if screen.period:
            entry["period"] = screen.period
        urls = [*catalog.urls, *result.urls]
        return ToolOutput(format_result({"screen": entry}, urls), tuple(dict.fromkeys(urls)))

    async def _filters(self, query: str, source: DataSource, catalog: Any,
                       ctx: ToolContext) -> ScreenArgs:
        model = routing_model(ctx)
        today = self._today()
        request = ModelRequest(system=self._prompt(source, catalog, today),
                               messages=(UserMessage(query),), tools=(_spec(),),
                               max_tokens=self.config.router_max_tokens)
        try:
            response = await model.complete(request)
        except ProviderError as exc:
            raise ToolFailure(f"Translating the screen with {model.model} failed: "
                              f"{exc.message}") from None
        calls = [c for c in response.message.tool_calls if c.name == "screen_stocks"]
        if not calls:
            others = [c.name for c in response.message.tool_calls]
            detail = (f" It called unknown tool(s): {', '.join(others)}." if others
                      else f" {response.message.text.strip()[:300]}")
            raise ToolFailure(f"The model did not produce screen filters.{detail}")
        try:
            return ScreenArgs.model_validate(calls[0].arguments)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}"
                                 for e in exc.errors())
            raise ToolFailure(f"The screen filters were invalid: {problems}") from None



