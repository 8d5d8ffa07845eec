"""The finance meta-tools end to end: routing, validation, concurrency, timeouts, merging,
source fallback and no-key behaviour, against the fake data server."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from dexter.config import Settings
from dexter.data.http import RetryPolicy
from dexter.messages import AssistantMessage, ToolCall
from dexter.providers.base import ModelRequest, ModelResponse, StreamChunk
from dexter.testing.fakedata import FakeDataServer, Response, point_settings_at
from dexter.testing.fakellm import FakeLLM, Reply, ToolCallSpec
from dexter.tools.base import ToolContext, ToolFailure, ToolOutput
from dexter.tools.finance import RouterConfig, SourceOptions, finance_tools
from dexter.tools.finance.router import QueryArgs

TODAY = dt.date(2025, 3, 1)
KEYED = {"FINANCIAL_DATASETS_API_KEY": "fd-test-key"}


class ScriptedModel:
    """A ChatModel double that answers each ``complete`` with the next scripted calls."""

    def __init__(self, *turns: Sequence[tuple[str, dict[str, Any]]], text: str = "") -> None:
        self.turns = list(turns)
        self.text = text
        self.requests: list[ModelRequest] = []

    @property
    def model(self) -> str:
        return "scripted"

    @property
    def provider_id(self) -> str:
        return "test"

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        calls = self.turns.pop(0) if self.turns else []
        return ModelResponse(AssistantMessage(self.text, tool_calls=tuple(
            ToolCall(f"call_{i}", name, args) for i, (name, args) in enumerate(calls))))

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk | ModelResponse]:
        yield await self.complete(request)

    async def aclose(self) -> None:
        return None

    def offered(self) -> list[str]:
        return [t.name for t in self.requests[-1].tools]


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeDataServer]:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.delenv("FINANCIAL_DATASETS_API_KEY", raising=False)
    with FakeDataServer() as srv:
        yield srv


@pytest.fixture
def settings(server: FakeDataServer, tmp_path: Path) -> Settings:
    return point_settings_at(Settings(), server, tmp_path / "home")


def tools(settings: Settings, env: dict[str, str] | None = None,
          **config: Any) -> dict[str, Any]:
    built = finance_tools(
        settings, config=RouterConfig(**config),
        source_options=SourceOptions(retry=RetryPolicy(max_retries=1, backoff_base=0.001),
                                     sec_rate_limiter=None, today=TODAY),
        env=env if env is not None else {})
    return {t.name: t for t in built}


def context(settings: Settings, model: Any) -> tuple[ToolContext, list[str]]:
    progress: list[str] = []
    ctx = ToolContext(settings=settings, cwd=Path.cwd(), home=settings.home_path,
                      progress=progress.append, fast_model=model)
    return ctx, progress


async def run(tool: Any, query: str, ctx: ToolContext) -> tuple[ToolOutput, dict[str, Any]]:
    out = await tool.run(QueryArgs(query=query), ctx)
    assert isinstance(out, ToolOutput)
    return out, json.loads(out.content)


def test_four_tools_with_the_right_flags(settings: Settings) -> None:
    built = finance_tools(settings)
    assert [t.name for t in built] == ["get_financials", "get_market_data", "read_filings",
                                       "stock_screener"]
    assert all(t.concurrency_safe and t.compactable and not t.needs_approval for t in built)
    assert all(t.json_schema()["required"] == ["query"] for t in built)


async def test_edgar_answers_statements_without_a_key(settings: Settings) -> None:
    model = ScriptedModel([("get_income_statements", {"ticker": "aapl", "period": "annual",
                                                      "limit": 2}),
                           ("get_balance_sheets", {"ticker": "AAPL", "limit": 1})])
    ctx, progress = context(settings, model)
    out, body = await run(tools(settings)["get_financials"], "Apple revenue and debt", ctx)
    table = body["data"]["income_statements[AAPL, annual]"]
    assert table["source"] == "SEC EDGAR (XBRL company facts)"
    assert "| revenue | 391,035,000,000 | 383,285,000,000 |" in table["data"]
    assert "FY2024 (2024-09-28)" in table["data"]
    assert "Sources: FY2024 (2024-09-28): 10-K 0000320193-24-000123 filed 2024-11-01" in \
        table["data"]
    balance = body["data"]["balance_sheets[AAPL, annual]"]["data"]
    assert "| total_debt | 106,629,000,000 |" in balance
    assert "| outstanding_shares | 15,116,786,000 |" in balance
    assert any(u.endswith("companyfacts/CIK0000320193.json") for u in out.source_urls)
    assert body["source_urls"] == list(out.source_urls)
    assert not out.is_error
    assert "get_key_ratios" not in model.offered()
    assert "get_income_statements" in model.offered()
    assert "FINANCIAL_DATASETS_API_KEY" in model.requests[0].system
    assert any("from SEC EDGAR" in p for p in progress)


async def test_annual_and_quarterly_calls_never_overwrite_each_other(settings: Settings) -> None:
    model = ScriptedModel([("get_income_statements", {"ticker": "AAPL", "period": "annual"}),
                           ("get_income_statements", {"ticker": "AAPL", "period": "quarterly"}),
                           ("get_income_statements", {"ticker": "AAPL", "period": "annual",
                                                      "limit": 1}),
                           ("get_income_statements", {"ticker": "AAPL", "period": "annual"})])
    ctx, _ = context(settings, model)
    _, body = await run(tools(settings)["get_financials"], "Apple income", ctx)
    keys = [k for k in body["data"] if not k.startswith("_")]
    assert keys == ["income_statements[AAPL, annual]", "income_statements[AAPL, quarterly]",
                    "income_statements[AAPL, annual] #2"]
    assert "Q4 2024" in body["data"]["income_statements[AAPL, quarterly]"]["data"]


async def test_unknown_and_unavailable_sub_tools_are_reported_not_crashed(
        settings: Settings) -> None:
    model = ScriptedModel([("get_financial_metrics_snapshot", {"ticker": "AAPL"}),
                           ("get_key_ratios", {"ticker": "AAPL"}),
                           ("get_income_statements", {"ticker": "AAPL", "period": "weekly"}),
                           ("get_company_facts", {"ticker": "AAPL"})])
    ctx, _ = context(settings, model)
    out, body = await run(tools(settings)["get_financials"], "Apple P/E", ctx)
    errors = {e["tool"]: e["error"] for e in body["data"]["_errors"]}
    assert errors["get_financial_metrics_snapshot"].startswith(
        "Unknown sub-tool 'get_financial_metrics_snapshot'. Available: get_income_statements")
    assert "need FINANCIAL_DATASETS_API_KEY" in errors["get_key_ratios"]
    assert "Invalid arguments for get_income_statements: period" in \
        errors["get_income_statements"]
    assert "outstanding_shares: 15,115,823,000" in body["data"]["company_facts[AAPL]"]["data"]
    assert not out.is_error


async def test_all_failures_make_an_error_result(settings: Settings) -> None:
    model = ScriptedModel([("made_up_tool", {})])
    ctx, _ = context(settings, model)
    out = await tools(settings)["get_financials"].run(QueryArgs(query="x"), ctx)
    assert out.is_error
    assert out.content == ("Unknown sub-tool 'made_up_tool'. Available: get_income_statements, "
                           "get_balance_sheets, get_cash_flow_statements, "
                           "get_all_financial_statements, get_company_facts, "
                           "get_financial_segments, get_peers. (call: made_up_tool {})")


async def test_several_failures_are_numbered_plain_lines(settings: Settings) -> None:
    model = ScriptedModel([("get_income_statements", {"ticker": "APPL"}),
                           ("get_company_facts", {"ticker": "MSFTT"})])
    ctx, _ = context(settings, model)
    out = await tools(settings)["get_financials"].run(QueryArgs(query="x"), ctx)
    assert out.is_error
    first, second = out.content.splitlines()
    assert first.startswith("1. Unknown ticker 'APPL' in SEC EDGAR's company list. Did you "
                            "mean AAPL (Apple Inc.)?")
    assert first.endswith('(call: get_income_statements {"ticker": "APPL"})')
    assert second.startswith("2. Unknown ticker 'MSFTT'")


async def test_router_choosing_nothing_explains_what_would_help(settings: Settings) -> None:
    model = ScriptedModel([], text="I need P/E ratios, which are not offered.")
    ctx, _ = context(settings, model)
    with pytest.raises(ToolFailure) as err:
        await run(tools(settings)["get_financials"], "Apple P/E", ctx)
    assert "Router: I need P/E ratios" in str(err.value)
    assert "FINANCIAL_DATASETS_API_KEY" in str(err.value)


async def test_market_data_without_a_key_says_which_key_unlocks_it(settings: Settings) -> None:
    settings.tools.keyless_prices = False
    model = ScriptedModel(text="Prices are not offered.")
    ctx, _ = context(settings, model)
    with pytest.raises(ToolFailure) as err:
        await run(tools(settings)["get_market_data"], "AAPL price", ctx)
    # keyless: SEC EDGAR's insider trades and 13F holdings are offered, prices are not
    assert set(model.offered()) == {"get_insider_trades", "get_insider_names",
                                    "get_insider_ownership", "get_institutional_holdings"}
    assert "Stock prices, stock ticker lists, crypto prices, company news, and beneficial " \
           "ownership (13D/13G) need FINANCIAL_DATASETS_API_KEY (Financial Datasets)." \
           in str(err.value)
    assert "tools.keyless_prices" in str(err.value)


async def test_with_a_key_market_data_routes_to_financial_datasets(
        settings: Settings, server: FakeDataServer) -> None:
    model = ScriptedModel([("get_stock_price", {"ticker": "AAPL"}),
                           ("get_company_news", {"ticker": "AAPL", "limit": 3}),
                           ("get_company_news", {"limit": 2})])
    ctx, _ = context(settings, model)
    _, body = await run(tools(settings, KEYED)["get_market_data"], "Why did Apple move?", ctx)
    assert "price: 232.5" in body["data"]["price_snapshot[AAPL]"]["data"]
    assert "https://news.example.com/aapl/1" in body["data"]["news[AAPL]"]["data"]
    assert "news" in body["data"]
    assert all(r.headers.get("x-api-key") == "fd-test-key"
               for r in server.requests if r.path.startswith(("/prices", "/news")))
    assert len(model.offered()) == 12


async def test_plan_error_falls_back_to_edgar(settings: Settings, server: FakeDataServer) -> None:
    server.route("/financials/income-statements/", Response(402, {"error": "upgrade"}))
    model = ScriptedModel([("get_income_statements", {"ticker": "AAPL", "limit": 1})])
    ctx, _ = context(settings, model)
    _, body = await run(tools(settings, KEYED)["get_financials"], "Apple revenue", ctx)
    entry = body["data"]["income_statements[AAPL, annual]"]
    assert entry["source"] == "SEC EDGAR (XBRL company facts)"
    assert entry["notes"][0].startswith("Fell back to SEC EDGAR (XBRL company facts): Your "
                                        "Financial Datasets plan does not cover")


async def test_sub_call_timeout_cancels_the_request(settings: Settings,
                                                    server: FakeDataServer) -> None:
    server.route("/files/company_tickers.json", Response(body={}, delay=60.0))
    model = ScriptedModel([("get_company_facts", {"ticker": "AAPL"})])
    ctx, _ = context(settings, model)
    out = await tools(settings, subcall_timeout=1.0)["get_financials"].run(
        QueryArgs(query="Apple"), ctx)
    # the server would answer after 60 s: a timeout message proves the call was cut short
    assert out.content.startswith("get_company_facts timed out after 1s and was cancelled")
    assert out.is_error
    # the request the server received was abandoned: its connection closed. (On a loaded
    # machine the cancelled request may not have reached the server at all.)
    deadline = time.monotonic() + 30.0  # a ceiling on waiting, not a speed requirement
    while time.monotonic() < deadline and len(server.disconnects) < len(
            server.requests_for("/files/company_tickers.json")):
        await asyncio.sleep(0.02)
    received = [r.path for r in server.requests_for("/files/company_tickers.json")]
    assert [r.path for r in server.disconnects] == received


async def test_sub_calls_respect_the_concurrency_cap(settings: Settings,
                                                     server: FakeDataServer) -> None:
    server.route("/news", Response(body={"news": []}, delay=0.15))
    calls: list[tuple[str, dict[str, Any]]] = [
        ("get_company_news", {"ticker": t}) for t in ("AAPL", "BTC-USD", "ETH-USD")]
    calls += [("get_company_news", {"limit": n}) for n in (1, 2, 3)]
    model = ScriptedModel(calls)
    ctx, _ = context(settings, model)
    _, body = await run(tools(settings, KEYED, max_concurrency=2)["get_market_data"], "news",
                        ctx)
    assert len([k for k in body["data"] if k.startswith("news")]) == 6
    starts = sorted(r.at for r in server.requests_for("/news"))
    # at most two requests start within any window shorter than one response delay
    assert all(sum(1 for s in starts if t <= s < t + 0.12) <= 2 for t in starts)


async def test_read_filings_returns_sections_with_their_filing(settings: Settings) -> None:
    model = ScriptedModel([("read_10k_items", {"ticker": "AAPL", "items": ["Item-1A"]}),
                           ("read_8k", {"ticker": "AAPL", "items": ["2.02"]})])
    ctx, _ = context(settings, model)
    out, body = await run(tools(settings)["read_filings"], "Apple risks and last earnings", ctx)
    risks = body["data"]["10-K[AAPL, Item-1A]"]["data"]
    assert "## Item-1A - Risk Factors" in risks
    assert "accession_number: 0000320193-24-000123" in risks
    assert "Macroeconomic and Industry Risks" in risks
    eight_k = body["data"]["8-K[AAPL, 2.02]"]["data"]
    assert "Quarterly revenue of $94.9 billion" in eight_k
    assert any(u.endswith("aapl-20240928.htm") for u in out.source_urls)


async def test_read_filings_picks_an_older_10k_by_fiscal_year(settings: Settings) -> None:
    model = ScriptedModel([("read_10k_items", {"ticker": "AAPL", "items": ["Item-1"],
                                               "fiscal_year": 2019})])
    ctx, _ = context(settings, model)
    out = await tools(settings)["read_filings"].run(QueryArgs(query="Apple 2019 business"), ctx)
    assert out.content.startswith("No 10-K for AAPL matching period 2019.")


async def test_stock_screener_on_edgar_frames(settings: Settings) -> None:
    model = ScriptedModel([("screen_stocks", {
        "filters": [{"field": "revenue", "operator": "gt", "value": 100000000000},
                    {"field": "net_margin", "operator": "gt", "value": 0.1}],
        "period": "CY2023"})])
    ctx, _ = context(settings, model)
    _out, body = await run(tools(settings)["stock_screener"], "big profitable companies", ctx)
    screen = body["data"]["screen"]
    assert screen["source"] == "SEC EDGAR (XBRL frames)"
    assert "| AAPL | Apple Inc." in screen["data"]
    assert "MSFT" in screen["data"] and "TSLA" not in screen["data"]
    assert "net_margin" in model.requests[0].system


async def test_stock_screener_rejects_an_unknown_tool_name(settings: Settings) -> None:
    model = ScriptedModel([("run_screen", {"filters": []})])
    ctx, _ = context(settings, model)
    with pytest.raises(ToolFailure, match="unknown tool\\(s\\): run_screen"):
        await run(tools(settings)["stock_screener"], "cheap stocks", ctx)


async def test_no_model_is_a_clear_failure(settings: Settings) -> None:
    ctx = ToolContext(settings=settings, cwd=Path.cwd(), home=settings.home_path)
    with pytest.raises(ToolFailure, match="need a model"):
        await run(tools(settings)["get_financials"], "Apple", ctx)


async def test_routing_through_the_real_openai_adapter_and_fake_llm(
        settings: Settings, fake_llm: FakeLLM) -> None:
    from dexter.providers.openai_chat import OpenAIChatModel

    fake_llm.enqueue(Reply(tool_calls=[
        ToolCallSpec("get_stock_quote", {"ticker": "AAPL"}),
        ToolCallSpec("get_cash_flow_statements", {"ticker": "AAPL", "period": "annual",
                                                  "limit": 1})]))
    model = OpenAIChatModel(model="gpt-test", api_key="sk-test-openai",
                            base_url=fake_llm.openai_base_url)
    ctx, _ = context(settings, model)
    try:
        _out, body = await run(tools(settings)["get_financials"], "Apple free cash flow", ctx)
    finally:
        await model.aclose()
    assert body["data"]["_errors"][0]["error"].startswith("Unknown sub-tool 'get_stock_quote'")
    fcf = body["data"]["cash_flow_statements[AAPL, annual]"]["data"]
    assert "| free_cash_flow | 108,807,000,000 |" in fcf
    sent = fake_llm.requests_for("openai")[-1].body
    assert {t["function"]["name"] for t in sent["tools"]} >= {"get_income_statements",
                                                               "get_company_facts"}
    assert "get_key_ratios" not in {t["function"]["name"] for t in sent["tools"]}
    fake_llm.assert_no_violations()


def test_fakedata_harness_mode_serves_the_bundled_fixtures(tmp_path: Path) -> None:
    import subprocess
    import sys
    import urllib.request

    port_file = tmp_path / "port"
    proc = subprocess.Popen([sys.executable, "-m", "dexter.testing.fakedata", "--port-file",
                             str(port_file)], stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while not port_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        url = f"http://127.0.0.1:{port_file.read_text()}/files/company_tickers.json"
        request = urllib.request.Request(url, headers={"User-Agent": "t t@example.com"})
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(request, timeout=5) as reply:
            assert json.load(reply)["0"]["ticker"] == "AAPL"
    finally:
        proc.terminate()
        assert proc.wait(timeout=5) == 0


@pytest.mark.parametrize("env", [{}, KEYED], ids=["keyless", "keyed"])
async def test_routing_prompts_name_only_sub_tools_the_registry_offers(
        settings: Settings, env: dict[str, str]) -> None:
    """Every snake_case name a routing prompt mentions is an offered sub-tool, one of its
    parameters, or a sub-tool the prompt marks as unavailable (the reference's prompts named
    tools that did not exist)."""
    import re

    from dexter.tools.finance.router import RoutedFinanceTool
    from dexter.tools.registry import build_tools

    opts = SourceOptions(sec_rate_limiter=None, today=TODAY)
    registry = [t for t in build_tools(settings) if t.name in
                {"get_financials", "get_market_data", "read_filings", "stock_screener"}]
    assert len(registry) == 4
    for tool in registry:
        tool.env, tool.source_options = env, opts
        model = ScriptedModel(text="nothing fits")
        ctx, _ = context(settings, model)
        with pytest.raises(ToolFailure):
            await run(tool, "anything", ctx)
        if not model.requests:  # get_market_data without a key never routes
            assert tool.name == "get_market_data" and not env
            continue
        request = model.requests[0]
        offered = {t.name for t in request.tools}
        params = {p for t in request.tools for p in _schema_names(t.parameters)}
        hidden = ({s.name for s in tool.subtools} - offered
                  if isinstance(tool, RoutedFinanceTool) else set())
        # the screener's field catalog (one JSON line) lists data fields, not tools
        prose = "\n".join(line for line in request.system.splitlines()
                          if not line.startswith(("{", "[")))
        named = set(re.findall(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b", prose))
        unknown = named - offered - params - hidden
        assert not unknown, f"{tool.name} prompt names {sorted(unknown)}"
        if isinstance(tool, RoutedFinanceTool):
            assert offered <= {s.name for s in tool.subtools}
            assert all(name in request.system for name in hidden)


def _schema_names(schema: Any) -> set[str]:
    """Property names anywhere in a JSON schema (including $defs)."""
    names: set[str] = set()
    if isinstance(schema, dict):
        props = schema.get("properties")
        if isinstance(props, dict):
            names.update(props)
        for value in schema.values():
            names |= _schema_names(value)
    elif isinstance(schema, list):
        for value in schema:
            names |= _schema_names(value)
    return names


async def test_empty_financial_datasets_rows_fall_back_to_edgar(
        settings: Settings, server: FakeDataServer) -> None:
    server.route("/financials/cash-flow-statements/", {"cash_flow_statements": []})
    model = ScriptedModel([("get_cash_flow_statements", {"ticker": "AAPL",
                                                         "period": "quarterly", "limit": 4})])
    ctx, _ = context(settings, model)
    _, body = await run(tools(settings, KEYED)["get_financials"], "Apple quarterly FCF", ctx)
    entry = body["data"]["cash_flow_statements[AAPL, quarterly]"]
    assert entry["source"] == "SEC EDGAR (XBRL company facts)"
    assert entry["notes"][0] == ("Fell back to SEC EDGAR (XBRL company facts): Financial "
                                 "Datasets returned no data for get_cash_flow_statements "
                                 "with these arguments.")
    assert "| free_cash_flow | 23,903,000,000 |" in entry["data"]


async def test_empty_rows_are_kept_with_the_fallback_error_when_edgar_fails(
        settings: Settings, server: FakeDataServer) -> None:
    server.route("/financials/income-statements/", {"income_statements": []})
    server.route("/files/company_tickers.json", {})
    model = ScriptedModel([("get_income_statements", {"ticker": "AAPL"})])
    ctx, _ = context(settings, model)
    out, body = await run(tools(settings, KEYED)["get_financials"], "Apple revenue", ctx)
    entry = body["data"]["income_statements[AAPL, annual]"]
    assert entry["source"] == "Financial Datasets"
    assert entry["data"] == "(none: the source returned no rows for these arguments)"
    assert entry["notes"][1].startswith("Unknown ticker 'AAPL' in SEC EDGAR's company list.")
    assert not out.is_error


async def test_market_data_without_rows_says_so(settings: Settings,
                                                server: FakeDataServer) -> None:
    server.route("/news", {"news": []})
    model = ScriptedModel([("get_company_news", {"ticker": "AAPL"})])
    ctx, _ = context(settings, model)
    _, body = await run(tools(settings, KEYED)["get_market_data"], "Apple news", ctx)
    assert body["data"]["news[AAPL]"] == {
        "source": "Financial Datasets",
        "data": "(none: the source returned no rows for these arguments)"}


def test_derivations_are_grouped_not_repeated_per_field_and_period() -> None:
    from dexter.tools.finance.formatting import derived_summary, statement_table

    ytd = {f"Q{q} 2024": f"{3 * q}M YTD (10-Q A{q}) minus {3 * q - 3}M YTD (10-Q A{q - 1})"
           for q in (2, 3, 4)}
    fields = [f"item_{n}" for n in range(8)]
    records = [{"report_period": f"2024-0{q * 2}-30", "fiscal_period": f"Q{q} 2024",
                **{f: 1 for f in fields}, "free_cash_flow": 2,
                "derived": {**({f: ytd[f"Q{q} 2024"] for f in fields} if q > 1 else {}),
                            "free_cash_flow": "ops + capex"}}
               for q in (4, 3, 2, 1)]
    phrases = derived_summary(records)
    assert phrases == [
        f"{', '.join(fields)} = {ytd['Q4 2024']} [Q4 2024]",
        "free_cash_flow = ops + capex [all periods]",
        f"{', '.join(fields)} = {ytd['Q3 2024']} [Q3 2024]",
        f"{', '.join(fields)} = {ytd['Q2 2024']} [Q2 2024]",
    ]
    assert statement_table(records).count("minus") == 3


async def test_exact_date_parameters_reach_financial_datasets(
        settings: Settings, server: FakeDataServer) -> None:
    fin = ScriptedModel([("get_historical_key_ratios", {"ticker": "AAPL",
                                                        "report_period": "2024-09-28"})])
    ctx, _ = context(settings, fin)
    await run(tools(settings, KEYED)["get_financials"], "Apple P/E at FY2024 end", ctx)
    assert server.requests_for("/financial-metrics/")[-1].param("report_period") == "2024-09-28"
    market = ScriptedModel([("get_insider_trades", {"ticker": "AAPL",
                                                    "filing_date": "2024-10-04"}),
                            ("get_institutional_holdings", {"ticker": "AAPL",
                                                            "report_period": "2024-09-30"})])
    ctx, _ = context(settings, market)
    await run(tools(settings, KEYED)["get_market_data"], "Apple insiders and holders", ctx)
    assert server.requests_for("/insider-trades/")[-1].param("filing_date") == "2024-10-04"
    assert server.requests_for("/institutional-holdings/")[-1].param("report_period") == \
        "2024-09-30"


async def test_sec_requests_of_concurrent_tool_calls_share_the_ten_per_second_limit(
        settings: Settings, server: FakeDataServer) -> None:
    from dexter.tools.finance.sources import build_sources

    options = SourceOptions(use_cache=False, today=TODAY)  # the default, process-wide limiter
    first, second = build_sources(settings, {}, options), build_sources(settings, {}, options)

    async def three_listings(sources: Any) -> None:
        async with sources:
            for _ in range(3):
                edgar = next(s for s in sources.sources if s.name == "sec_edgar")
                await edgar.filings("AAPL", limit=1)

    await asyncio.gather(three_listings(first), three_listings(second))
    starts = sorted(r.at for r in server.requests)
    assert len(starts) == 12
    # as the server counts arrivals: the 11th came a full second after the first
    assert starts[10] - starts[0] >= 1.0


async def test_a_sub_call_that_breaks_on_odd_data_does_not_lose_the_others(
        settings: Settings, server: FakeDataServer) -> None:
    odd = {"facts": {"us-gaap": {"Revenues": {"units": {"USD": [
        {"start": "not-a-date", "end": "2024-09-28", "val": 1, "fy": 2024, "fp": "FY",
         "form": "10-K", "filed": "2024-11-01", "accn": "x"}]}}},
        "dei": {"EntityCommonStockSharesOutstanding": {"units": {"shares": [
            {"end": "2024-10-18", "val": 15115823000, "fy": 2024, "fp": "FY", "form": "10-K",
             "filed": "2024-11-01", "accn": "x"}]}}}}}
    server.route("/api/xbrl/companyfacts/CIK0000320193.json", odd)
    model = ScriptedModel([("get_income_statements", {"ticker": "AAPL"}),
                           ("get_company_facts", {"ticker": "AAPL"})])
    ctx, _ = context(settings, model)
    out, body = await run(tools(settings)["get_financials"], "Apple revenue and shares", ctx)
    assert "outstanding_shares: 15,115,823,000" in body["data"]["company_facts[AAPL]"]["data"]
    [error] = body["data"]["_errors"]
    assert error["tool"] == "get_income_statements"
    assert error["error"].startswith("get_income_statements failed on unexpected data from "
                                     "SEC EDGAR: ValueError:")
    assert not out.is_error


async def test_read_filings_reads_at_most_three_filings_per_request(
        settings: Settings, server: FakeDataServer) -> None:
    model = ScriptedModel([("read_10k_items", {"ticker": "AAPL", "items": [item]})
                           for item in ("Item-1", "Item-1A", "Item-7", "Item-8")])
    ctx, _ = context(settings, model)
    _out, body = await run(tools(settings)["read_filings"], "Apple 10-K, everything", ctx)
    assert [k for k in body["data"] if not k.startswith("_")] == [
        "10-K[AAPL, Item-1]", "10-K[AAPL, Item-1A]", "10-K[AAPL, Item-7]"]
    [skipped] = body["data"]["_errors"]
    assert skipped["args"]["items"] == ["Item-8"]
    assert skipped["error"] == "Skipped: at most 3 calls per request. Ask again for the rest."


async def test_a_rejected_key_or_unknown_ticker_at_financial_datasets_falls_back_to_edgar(
        settings: Settings, server: FakeDataServer) -> None:
    server.route("/financials/income-statements/", Response(401, {"error": "bad key"}))
    server.route("/financials/balance-sheets/", Response(404, {"error": "not covered"}))
    model = ScriptedModel([("get_income_statements", {"ticker": "AAPL", "limit": 1}),
                           ("get_balance_sheets", {"ticker": "AAPL", "limit": 1}),
                           ("get_cash_flow_statements", {"ticker": "ZZZZ"})])
    ctx, _ = context(settings, model)
    _, body = await run(tools(settings, KEYED)["get_financials"], "Apple", ctx)
    income = body["data"]["income_statements[AAPL, annual]"]
    assert income["source"] == "SEC EDGAR (XBRL company facts)"
    assert income["notes"][0].startswith(
        "Fell back to SEC EDGAR (XBRL company facts): Financial Datasets rejected the API key "
        "(HTTP 401)")
    assert "fd-test-key" not in json.dumps(body)
    balance = body["data"]["balance_sheets[AAPL, annual]"]
    assert balance["source"] == "SEC EDGAR (XBRL company facts)"
    assert "Unknown ticker 'AAPL' at Financial Datasets" in balance["notes"][0]
    [error] = body["data"]["_errors"]
    assert "Unknown ticker 'ZZZZ' in SEC EDGAR's company list" in error["error"]
