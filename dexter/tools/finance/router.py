"""The routing meta-tool: a model picks sub-tools for a natural-language query, dexter runs
them (bounded concurrency, a timeout that cancels the request) and merges the results under
unique names.

Improvements over the reference: only sub-tools the configured sources support are offered;
a name the model made up is reported, never crashed on; identical calls run once; two
results never overwrite each other; a sub-call that times out is really cancelled; a source
whose plan does not cover the data falls back to the next source.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from dexter.config import Settings
from dexter.data.base import (
    AuthError,
    DataError,
    DataResult,
    NotFoundError,
    PlanError,
    UnsupportedError,
)
from dexter.evidence.documents import Document, documents_from_data
from dexter.evidence.tables import DataTable
from dexter.messages import ToolCall, UserMessage
from dexter.providers.base import ChatModel, ModelRequest
from dexter.providers.errors import ProviderError
from dexter.tools.base import Tool, ToolContext, ToolFailure, ToolOutput, format_result
from dexter.tools.finance.sources import (
    SourceOptions,
    SourceSet,
    build_sources,
    capability_list,
    unlock_message,
)
from dexter.tools.finance.subtools import SubTool


class QueryArgs(BaseModel):
    """The one parameter of every finance meta-tool."""

    query: str


@dataclass
class RouterConfig:
    """Limits of one meta-tool call."""

    max_concurrency: int = 4
    subcall_timeout: float = 45.0
    router_max_tokens: int = 2048


@dataclass
class _Planned:
    call: ToolCall
    sub: SubTool | None = None
    args: BaseModel | None = None
    key: str = ""
    error: str | None = None


@dataclass
class _Outcome:
    key: str
    result: DataResult | None = None
    error: str | None = None
    notes: list[str] = field(default_factory=list)


def routing_model(ctx: ToolContext) -> ChatModel:
    """The fast model when configured, else the main one."""
    model = ctx.fast_model or ctx.model
    if model is None:
        raise ToolFailure("The finance tools need a model to route the query, and none is "
                          "configured for this run.")
    return model


def today_line(today: dt.date) -> str:
    """``Current date: Friday, November 29, 2024``."""
    return f"Current date: {today.strftime('%A, %B %d, %Y')} ({today.isoformat()})."


def _args_text(arguments: dict[str, Any]) -> str:
    return json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)


def plan_calls(calls: Sequence[ToolCall], offered: Sequence[SubTool],
               known: Sequence[SubTool], sources: SourceSet,
               max_calls: int | None = None) -> list[_Planned]:
    """Validate the model's calls, drop exact duplicates, give each a unique result key and
    skip valid calls beyond ``max_calls``."""
    by_name = {s.name: s for s in offered}
    all_names = {s.name: s for s in known}
    planned: list[_Planned] = []
    seen_calls: set[tuple[str, str]] = set()
    used_keys: set[str] = set()
    for call in calls:
        item = _Planned(call)
        signature = (call.name, _args_text(call.arguments))
        if signature in seen_calls and call.invalid_arguments is None:
            continue
        seen_calls.add(signature)
        sub = by_name.get(call.name)
        if sub is None:
            if call.name in all_names:
                item.error = unlock_message(all_names[call.name].capability)
            else:
                item.error = (f"Unknown sub-tool '{call.name}'. Available: "
                              f"{', '.join(by_name) or 'none'}.")
        elif call.invalid_arguments is not None:
            item.error = f"Arguments for {call.name} were not a JSON object."
        else:
            try:
                item.args = sub.params.model_validate(call.arguments)
                item.sub = sub
            except ValidationError as exc:
                problems = "; ".join(
                    f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
                    for err in exc.errors())
                item.error = f"Invalid arguments for {call.name}: {problems}"
        if item.sub is not None and max_calls is not None and len(used_keys) >= max_calls:
            item.sub = item.args = None
            item.error = (f"Skipped: at most {max_calls} calls per request. Ask again for "
                          f"the rest.")
        if item.sub is not None and item.args is not None:
            base = item.sub.merge_key(item.args)
            key, n = base, 2
            while key in used_keys:
                key, n = f"{base} #{n}", n + 1
            used_keys.add(key)
            item.key = key
        planned.append(item)
    return planned


async def _run_one(item: _Planned, sources: SourceSet, ctx: ToolContext,
                   config: RouterConfig, gate: asyncio.Semaphore) -> _Outcome:
    assert item.sub is not None and item.args is not None
    outcome = _Outcome(item.key)
    candidates = sources.for_capability(item.sub.capability)
    if not candidates:
        outcome.error = unlock_message(item.sub.capability)
        return outcome
    empty: DataResult | None = None
    async with gate:
        for i, source in enumerate(candidates):
            ctx.progress(f"Fetching {item.key} from {source.label}...")
            try:
                result = await asyncio.wait_for(item.sub.run(source, item.args),
                                                config.subcall_timeout)
            except (UnsupportedError, PlanError, AuthError, NotFoundError) as exc:
                # the next source (SEC EDGAR) may still have it; the note says why
                outcome.notes.append(str(exc))
                continue
            except TimeoutError:
                outcome.error = (f"{item.sub.name} timed out after {config.subcall_timeout:g}s "
                                 f"and was cancelled; ask for less data or try again.")
                break
            except DataError as exc:
                outcome.error = str(exc)
                break
            except Exception as exc:  # odd data must not lose the sibling results
                outcome.error = (f"{item.sub.name} failed on unexpected data from "
                                 f"{source.label}: {type(exc).__name__}: {exc}")
                break
            if is_empty(result.data) and i + 1 < len(candidates):
                # e.g. Financial Datasets has no rows for this company: EDGAR may have them
                empty = empty or result
                outcome.notes.append(f"{source.label} returned no data for {item.sub.name} "
                                     f"with these arguments.")
                continue
            outcome.result = result
            if outcome.notes:
                outcome.notes[0] = f"Fell back to {result.source}: {outcome.notes[0]}"
            return outcome
    if empty is not None:
        outcome.result = empty
        outcome.notes = [*outcome.notes, *([outcome.error] if outcome.error else [])]
        outcome.error = None
        return outcome
    if outcome.error is None:
        outcome.error = " ".join(outcome.notes) or f"No source could answer {item.sub.name}."
    outcome.notes = []
    return outcome


def is_empty(data: Any) -> bool:
    """No rows: an empty list, or an object whose every value is an empty list."""
    if isinstance(data, list):
        return not data
    if isinstance(data, dict) and data:
        return all(isinstance(v, list) and not v for v in data.values())
    return data is None


async def execute(planned: list[_Planned], sources: SourceSet, ctx: ToolContext,
                  config: RouterConfig) -> ToolOutput:
    """Run the valid calls concurrently (capped) and merge everything into one envelope."""
    gate = asyncio.Semaphore(max(1, config.max_concurrency))
    runnable = [p for p in planned if p.sub is not None]
    outcomes = await asyncio.gather(*(_run_one(p, sources, ctx, config, gate) for p in runnable))
    data: dict[str, Any] = {}
    errors: list[dict[str, Any]] = []
    urls: list[str] = []
    labels: list[str] = []
    tables: list[DataTable] = []
    documents: list[Document] = []
    for item in planned:
        if item.error is not None:
            errors.append({"tool": item.call.name, "args": item.call.arguments,
                           "error": item.error})
    for item, outcome in zip(runnable, outcomes, strict=True):
        if outcome.result is None:
            errors.append({"tool": item.call.name, "args": item.call.arguments,
                           "error": outcome.error})
            continue
        assert item.sub is not None
        entry = item.sub.render(outcome.result)
        if outcome.notes:
            entry["notes"] = [*outcome.notes, *entry.get("notes", [])]
        data[outcome.key] = entry
        tables.extend(item.sub.tables(outcome.key, outcome.result))
        documents.extend(documents_from_data(outcome.result.data))
        urls.extend(outcome.result.urls)
        labels.append(outcome.result.source)
    if not any(o.result for o in outcomes):
        return ToolOutput(failure_text(errors), is_error=True)
    if errors:
        data["_errors"] = errors
    keys = [k for k in data if not k.startswith("_")]
    title = "; ".join(keys) + " · " + ", ".join(dict.fromkeys(labels))
    return ToolOutput(format_result(data, urls), tuple(dict.fromkeys(urls)), title=title,
                      tables=tuple(tables), documents=tuple(documents))


def failure_text(errors: list[dict[str, Any]]) -> str:
    """Plain lines when every data call failed: the error first, then the call it was for."""
    if len(errors) == 1:
        return f"{errors[0]['error']} (call: {errors[0]['tool']} {_args_text(errors[0]['args'])})"
    return "\n".join(f"{i}. {e['error']} (call: {e['tool']} {_args_text(e['args'])})"
                     for i, e in enumerate(errors, 1))


class FinanceTool(Tool[QueryArgs]):
    """Common base of the finance tools: a plain-language query, read-only, re-fetchable."""

    params = QueryArgs
    concurrency_safe = True
    compactable = True

    def __init__(self, settings: Settings, *, config: RouterConfig | None = None,
                 source_options: SourceOptions | None = None,
                 env: dict[str, str] | None = None) -> None:
        self.settings = settings
        self.config = config or RouterConfig()
        self.source_options = source_options or SourceOptions()
        self.env = env

    def _today(self) -> dt.date:
        return self.source_options.today or dt.date.today()


class RoutedFinanceTool(FinanceTool):
    """Base of ``get_financials``, ``get_market_data`` and ``read_filings``."""

    subtools: tuple[SubTool, ...] = ()
    progress_text = "Routing the query..."
    max_calls: int | None = None

    def router_prompt(self, offered: Sequence[SubTool], missing: Sequence[SubTool],
                      today: dt.date) -> str:
        """The routing system prompt."""
        raise NotImplementedError

    async def run(self, args: QueryArgs, ctx: ToolContext) -> ToolOutput:
        """Route the query, run the chosen sub-tools, return merged results."""
        query = args.query.strip()
        if not query:
            raise ToolFailure(f"{self.name} needs a query in plain words, e.g. 'Apple revenue "
                              f"and free cash flow for the last 4 years'.")
        async with build_sources(ctx.settings if ctx.settings else self.settings, self.env,
                                 self.source_options) as sources:
            offered = [s for s in self.subtools if sources.supports(s.capability)]
            missing = [s for s in self.subtools if not sources.supports(s.capability)]
            if not offered:
                raise ToolFailure(unlock_message(
                    self.subtools[0].capability,
                    capability_list(s.capability for s in self.subtools)))
            ctx.progress(self.progress_text)
            calls = await self._route(query, offered, missing, ctx)
            planned = plan_calls(calls, offered, self.subtools, sources, self.max_calls)
            return await execute(planned, sources, ctx, self.config)

    async def _route(self, query: str, offered: Sequence[SubTool], missing: Sequence[SubTool],
                     ctx: ToolContext) -> tuple[ToolCall, ...]:
        model = routing_model(ctx)
        request = ModelRequest(
            system=self.router_prompt(offered, missing, self._today()),
            messages=(UserMessage(query),),
            tools=tuple(s.spec() for s in offered),
            max_tokens=self.config.router_max_tokens,
        )
        try:
            response = await model.complete(request)
        except ProviderError as exc:
            raise ToolFailure(f"Routing the query with {model.model} failed: {exc.message}") \
                from None
        calls = response.message.tool_calls
        if not calls:
            hint = ""
            if missing:
                hint = " " + unlock_message(missing[0].capability,
                                            capability_list(s.capability for s in missing))
            said = response.message.text.strip()
            raise ToolFailure(f"No data call fits this query with the configured sources "
                              f"({', '.join(s.name for s in offered)})."
                              f"{' Router: ' + said[:300] if said else ''}{hint}")
        return calls


def unavailable_block(missing: Sequence[SubTool]) -> str:
    """Prompt text naming sub-tools hidden because no configured source supports them."""
    if not missing:
        return ""
    names = ", ".join(s.name for s in missing)
    return (f"\nNot available with the configured data sources (they need "
            f"FINANCIAL_DATASETS_API_KEY): {names}. Do not call them; if the query needs only "
            f"those, call no tool and say so.\n")
