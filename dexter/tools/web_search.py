"""``web_search(query)``: Exa, Perplexity, Tavily, LangSearch, then a keyless fallback.

Providers with a key set are tried in the order Exa, Perplexity, Tavily, LangSearch, with
``[tools] web_search_provider`` moved to the front; a provider that fails (HTTP error, bad
answer, no results) hands over to the next. With no key set, or when every keyed provider
failed, the keyless ``ddgs`` metasearch answers, clearly labelled. Each API is called
directly over HTTP; ``EXA_BASE_URL``, ``PERPLEXITY_BASE_URL``, ``TAVILY_BASE_URL`` and
``LANGSEARCH_BASE_URL`` override the endpoints (tests, proxies). Keys never appear in
results or errors.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, Field

from dexter.secrets import scrub, secret_values
from dexter.tls import httpx_context
from dexter.tools.base import Tool, ToolContext, ToolFailure, ToolOutput

if TYPE_CHECKING:
    import httpx  # imported on the first search, not at start-up

MAX_RESULTS = 5
SNIPPET_CHARS = 500
PROVIDER_TIMEOUT_SECONDS = 20.0
KEYLESS_LABEL = "ddgs keyless metasearch"


class SearchFailure(Exception):
    """One provider could not answer; the message is safe to show (no keys)."""


@dataclass(frozen=True, slots=True)
class SearchResult:
    """One hit."""

    title: str
    url: str
    date: str = ""
    snippet: str = ""


@dataclass(frozen=True, slots=True)
class SearchAnswer:
    """What one provider returned."""

    provider: str
    results: tuple[SearchResult, ...]
    summary: str = ""


Caller = Callable[["httpx.AsyncClient", str, str, str], Awaitable[SearchAnswer]]


@dataclass(frozen=True, slots=True)
class Provider:
    """A keyed search API."""

    id: str
    name: str
    key_env: str
    base_env: str
    default_base: str
    call: Caller

    def base_url(self, env: Mapping[str, str]) -> str:
        """The endpoint root (env override first)."""
        return (env.get(self.base_env) or self.default_base).rstrip("/")


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _trim(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SNIPPET_CHARS else text[:SNIPPET_CHARS - 1] + "…"


async def _post(client: httpx.AsyncClient, url: str, name: str, headers: dict[str, str],
                body: dict[str, Any]) -> Any:
    import httpx

    try:
        response = await client.post(url, headers=headers, json=body)
    except httpx.TimeoutException:
        raise SearchFailure(f"{name}: timed out") from None
    except httpx.HTTPError as exc:
        raise SearchFailure(f"{name}: {exc.__class__.__name__}") from None
    if response.status_code >= 400:
        raise SearchFailure(f"{name}: HTTP {response.status_code} {response.reason_phrase}")
    try:
        return response.json()
    except ValueError:
        raise SearchFailure(f"{name}: the answer was not JSON") from None


def _results(items: Any, title: str, url: str, date: str, snippet: Callable[[dict[str, Any]], str]) -> tuple[SearchResult, ...]:
    out = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and _text(item.get(url)):
            out.append(SearchResult(_text(item.get(title)) or _text(item.get(url)),
                                    _text(item.get(url)), _text(item.get(date)),
                                    _trim(snippet(item))))
    return tuple(out[:MAX_RESULTS])


async def _exa(client: httpx.AsyncClient, base: str, key: str, query: str) -> SearchAnswer:
    data = await _post(client, f"{base}/search", "Exa", {"x-api-key": key},
                       {"query": query, "numResults": MAX_RESULTS, "contents": {"highlights": True}})

    def snippet(item: dict[str, Any]) -> str:
        highlights = item.get("highlights")
        if isinstance(highlights, list) and highlights:
            return " … ".join(str(h) for h in highlights)
        return _text(item.get("summary")) or _text(item.get("text"))

    results = _results(data.get("results") if isinstance(data, dict) else None,
                       "title", "url", "publishedDate", snippet)
    return SearchAnswer("Exa", results)


async def _perplexity(client: httpx.AsyncClient, base: str, key: str, query: str) -> SearchAnswer:
    data = await _post(client, f"{base}/chat/completions", "Perplexity",
                       {"Authorization": f"Bearer {key}"},
                       {"model": "sonar", "messages": [{"role": "user", "content": query}]})
    if not isinstance(data, dict):
        raise SearchFailure("Perplexity: unexpected answer")
    choices = data.get("choices") or [{}]
    summary = _text(((choices[0] or {}).get("message") or {}).get("content"))
    results = _results(data.get("search_results"), "title", "url", "date",
                       lambda item: _text(item.get("snippet")))
    if not results:
        citations = [c for c in data.get("citations") or [] if isinstance(c, str)]
        results = tuple(SearchResult(url, url) for url in citations[:MAX_RESULTS])
    return SearchAnswer("Perplexity", results, summary)


async def _tavily(client: httpx.AsyncClient, base: str, key: str, query: str) -> SearchAnswer:
    data = await _post(client, f"{base}/search", "Tavily", {"Authorization": f"Bearer {key}"},
                       {"query": query, "max_results": MAX_RESULTS, "search_depth": "basic"})
    items = data.get("results") if isinstance(data, dict) else data
    results = _results(items, "title", "url", "published_date", lambda item: _text(item.get("content")))
    summary = _text(data.get("answer")) if isinstance(data, dict) else ""
    return SearchAnswer("Tavily", results, summary)


async def _langsearch(client: httpx.AsyncClient, base: str, key: str, query: str) -> SearchAnswer:
    data = await _post(client, f"{base}/v1/web-search", "LangSearch",
                       {"Authorization": f"Bearer {key}"},
                       {"query": query, "summary": True, "count": MAX_RESULTS, "freshness": "noLimit"})
    if not isinstance(data, dict):
        raise SearchFailure("LangSearch: unexpected answer")
    if data.get("code") not in (200, None):
        raise SearchFailure(f"LangSearch: error code {data.get('code')} ({_text(data.get('msg'))[:100]})")
    pages = ((data.get("data") or {}).get("webPages") or {}).get("value")
    results = _results(pages, "name", "url", "datePublished",
                       lambda item: _text(item.get("summary")) or _text(item.get("snippet")))
    return SearchAnswer("LangSearch", results)


PROVIDERS: tuple[Provider, ...] = (
    Provider("exa", "Exa", "EXASEARCH_API_KEY", "EXA_BASE_URL", "https://api.exa.ai", _exa),
    Provider("perplexity", "Perplexity", "PERPLEXITY_API_KEY", "PERPLEXITY_BASE_URL",
             "https://api.perplexity.ai", _perplexity),
    Provider("tavily", "Tavily", "TAVILY_API_KEY", "TAVILY_BASE_URL", "https://api.tavily.com",
             _tavily),
    Provider("langsearch", "LangSearch", "LANGSEARCH_API_KEY", "LANGSEARCH_BASE_URL",
             "https://api.langsearch.com", _langsearch),
)


def _ddgs_search(query: str, max_results: int) -> list[dict[str, Any]]:
    from ddgs import DDGS

    return list(DDGS().text(query, max_results=max_results) or [])


# Replaced in tests (there is no internet there): (query, max_results) -> [{title, href, body}].
keyless_search: Callable[[str, int], list[dict[str, Any]]] = _ddgs_search


async def _keyless(query: str) -> SearchAnswer:
    try:
        items = await asyncio.to_thread(keyless_search, query, MAX_RESULTS)
    except Exception as exc:
        raise SearchFailure(f"keyless search: {exc.__class__.__name__}: {str(exc)[:200]}") from None
    results = tuple(
        SearchResult(_text(i.get("title")) or _text(i.get("href") or i.get("url")),
                     _text(i.get("href") or i.get("url")), _text(i.get("date")),
                     _trim(_text(i.get("body") or i.get("snippet"))))
        for i in items if isinstance(i, dict) and _text(i.get("href") or i.get("url"))
    )[:MAX_RESULTS]
    return SearchAnswer(KEYLESS_LABEL, results)


def provider_order(env: Mapping[str, str], preferred: str = "") -> list[Provider]:
    """Providers that have a key, preferred first."""
    keyed = [p for p in PROVIDERS if env.get(p.key_env, "").strip()]
    wanted = preferred.strip().lower()
    keyed.sort(key=lambda p: p.id != wanted)
    return keyed


def _scrub(message: str, env: Mapping[str, str]) -> str:
    keys = [env.get(provider.key_env, "") for provider in PROVIDERS]
    return scrub(message, secret_values(env, keys))


async def search(query: str, preferred: str = "", env: Mapping[str, str] | None = None) -> tuple[SearchAnswer, list[str]]:
    """The first answer with results, and the failures on the way (safe messages)."""
    env = os.environ if env is None else env
    import httpx

    failures: list[str] = []
    timeout = httpx.Timeout(PROVIDER_TIMEOUT_SECONDS)
    async with httpx.AsyncClient(timeout=timeout, verify=httpx_context()) as client:
        for provider in provider_order(env, preferred):
            try:
                found = await provider.call(client, provider.base_url(env), env[provider.key_env].strip(), query)
            except SearchFailure as exc:
                failures.append(_scrub(str(exc), env))
                continue
            if found.results:
                return found, failures
            failures.append(f"{provider.name}: no results")
    try:
        found = await _keyless(query)
    except SearchFailure as exc:
        failures.append(_scrub(str(exc), env))
        raise ToolFailure("Web search failed: " + " | ".join(failures)) from None
    if not found.results:
        failures.append("keyless search: no results")
        raise ToolFailure(f"No web results for {query!r} ({' | '.join(failures)}). "
                          "Try different words.")
    return found, failures


def format_answer(query: str, found: SearchAnswer, failures: list[str], keyed: bool) -> str:
    """The result text the model sees."""
    lines = [f'Web search results for "{query}" (provider: {found.provider})']
    if found.provider == KEYLESS_LABEL:
        why = ("every search API failed" if keyed else "no search API key is set "
               "(EXASEARCH_API_KEY, PERPLEXITY_API_KEY, TAVILY_API_KEY or LANGSEARCH_API_KEY)")
        lines.append(f"Note: keyless fallback used because {why}; results may be less complete.")
    if failures:
        lines.append("Providers that failed first: " + " | ".join(failures))
    if found.summary:
        lines.append(f"\nSummary: {found.summary}")
    for number, result in enumerate(found.results, 1):
        lines.append(f"\n{number}. {result.title}\n   {result.url}")
        if result.date:
            lines.append(f"   Date: {result.date}")
        if result.snippet:
            lines.append(f"   {result.snippet}")
    return "\n".join(lines)


class WebSearchParams(BaseModel):
    """Arguments of ``web_search``."""

    query: str = Field(min_length=1, description="What to search the web for.")


class WebSearchTool(Tool[WebSearchParams]):
    """Search the web."""

    name: ClassVar[str] = "web_search"
    description: ClassVar[str] = (
        "Search the web for current information (news, filings, company pages). Returns up "
        "to 5 results with title, URL, date and snippet, and says which search provider "
        "answered. Use web_fetch to read a result in full."
    )
    params: ClassVar[type[BaseModel]] = WebSearchParams
    concurrency_safe: ClassVar[bool] = True
    compactable: ClassVar[bool] = True

    async def run(self, args: WebSearchParams, ctx: ToolContext) -> ToolOutput:
        preferred = ctx.settings.tools.web_search_provider
        ctx.progress(f"Searching: {args.query}")
        found, failures = await search(args.query, preferred)
        keyed = bool(provider_order(os.environ))
        text = format_answer(args.query, found, failures, keyed)
        return ToolOutput(text, source_urls=tuple(r.url for r in found.results))
