"""web_search against local fakes of Exa, Perplexity, Tavily and LangSearch, plus the keyless fallback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dexter.config import Settings
from dexter.tools import web_search
from dexter.tools.base import ToolContext, ToolFailure, ToolOutput
from dexter.tools.web_search import KEYLESS_LABEL, WebSearchTool
from tests.fixtures.web.fake_http import FakeHTTP, serving

KEYS = {"exa": ("EXASEARCH_API_KEY", "EXA_BASE_URL", "exa-key-123"),
        "perplexity": ("PERPLEXITY_API_KEY", "PERPLEXITY_BASE_URL", "pplx-key-456"),
        "tavily": ("TAVILY_API_KEY", "TAVILY_BASE_URL", "tvly-key-789"),
        "langsearch": ("LANGSEARCH_API_KEY", "LANGSEARCH_BASE_URL", "ls-key-000")}
PATHS = {"exa": "/exa/search", "perplexity": "/pplx/chat/completions", "tavily": "/tavily/search",
         "langsearch": "/ls/v1/web-search"}
BASES = {"exa": "/exa", "perplexity": "/pplx", "tavily": "/tavily", "langsearch": "/ls"}


def exa_ok(body: dict[str, Any]) -> tuple[int, Any]:
    return 200, {"results": [
        {"title": f"Exa hit {i}", "url": f"https://exa.example/{i}", "publishedDate": "2025-10-01",
         "highlights": ["Revenue rose", "to $4.2B"]} for i in range(8)]}


def perplexity_ok(body: dict[str, Any]) -> tuple[int, Any]:
    return 200, {"choices": [{"message": {"content": "Acme beat estimates."}}],
                 "search_results": [{"title": "Acme Q3", "url": "https://pplx.example/acme",
                                     "date": "2025-10-24"}],
                 "citations": ["https://pplx.example/acme"]}


def tavily_ok(body: dict[str, Any]) -> tuple[int, Any]:
    return 200, {"results": [{"title": "Tavily hit", "url": "https://tavily.example/a",
                              "content": "x" * 900, "published_date": "2025-09-30"}]}


def langsearch_ok(body: dict[str, Any]) -> tuple[int, Any]:
    return 200, {"code": 200, "msg": None, "data": {"webPages": {"value": [
        {"name": "LangSearch hit", "url": "https://ls.example/a", "snippet": "short",
         "summary": "Longer summary of the page.", "datePublished": "2025-08-01T00:00:00Z"}]}}}


OK = {"exa": exa_ok, "perplexity": perplexity_ok, "tavily": tavily_ok, "langsearch": langsearch_ok}


def fail(status: int) -> Any:
    return lambda body: (status, {"error": "nope"})


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHTTP]:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    for key_env, base_env, _ in KEYS.values():
        monkeypatch.delenv(key_env, raising=False)
        monkeypatch.delenv(base_env, raising=False)
    with serving() as fake:
        yield fake


@pytest.fixture(autouse=True)
def no_keyless(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The keyless search records its queries and returns nothing unless a test replaces it."""
    asked: list[str] = []

    def keyless(query: str, max_results: int) -> list[dict[str, Any]]:
        asked.append(query)
        return []

    monkeypatch.setattr(web_search, "keyless_search", keyless)
    return asked


def enable(monkeypatch: pytest.MonkeyPatch, server: FakeHTTP, *names: str) -> None:
    for name in names:
        key_env, base_env, key = KEYS[name]
        monkeypatch.setenv(key_env, key)
        monkeypatch.setenv(base_env, server.url(BASES[name]))


async def run(tmp_path: Path, query: str = "Acme Q3 results", preferred: str = "") -> ToolOutput:
    settings = Settings()
    settings.tools.web_search_provider = preferred
    ctx = ToolContext(settings=settings, cwd=tmp_path, home=tmp_path / ".dexter")
    tool = WebSearchTool()
    result = await tool.run(tool.parse_args({"query": query}), ctx)
    assert isinstance(result, ToolOutput)
    return result


async def test_exa(tmp_path: Path, server: FakeHTTP, monkeypatch: pytest.MonkeyPatch) -> None:
    enable(monkeypatch, server, "exa")
    server.route(PATHS["exa"], handler=exa_ok)
    result = await run(tmp_path)
    seen = server.seen[0]
    assert seen.headers["x-api-key"] == "exa-key-123"
    assert seen.body["query"] == "Acme Q3 results" and seen.body["numResults"] == 5
    assert "(provider: Exa)" in result.content
    assert "1. Exa hit 0\n   https://exa.example/0\n   Date: 2025-10-01\n   Revenue rose … to $4.2B" in result.content
    assert result.source_urls == tuple(f"https://exa.example/{i}" for i in range(5))


async def test_perplexity(tmp_path: Path, server: FakeHTTP, monkeypatch: pytest.MonkeyPatch) -> None:
    enable(monkeypatch, server, "perplexity")
    server.route(PATHS["perplexity"], handler=perplexity_ok)
    result = await run(tmp_path)
    seen = server.seen[0]
    assert seen.headers["authorization"] == "Bearer pplx-key-456"
    assert seen.body["model"] == "sonar"
    assert seen.body["messages"] == [{"role": "user", "content": "Acme Q3 results"}]
    assert "(provider: Perplexity)" in result.content and "Summary: Acme beat estimates." in result.content
    assert result.source_urls == ("https://pplx.example/acme",)


async def test_tavily_snippets_are_trimmed(tmp_path: Path, server: FakeHTTP, monkeypatch: pytest.MonkeyPatch) -> None:
    enable(monkeypatch, server, "tavily")
    server.route(PATHS["tavily"], handler=tavily_ok)
    result = await run(tmp_path)
    assert server.seen[0].headers["authorization"] == "Bearer tvly-key-789"
    assert server.seen[0].body["max_results"] == 5
    assert "(provider: Tavily)" in result.content and "Date: 2025-09-30" in result.content
    snippet = next(line.strip() for line in result.content.splitlines() if line.strip().startswith("xxx"))
    assert len(snippet) == 500 and snippet.endswith("…")


async def test_langsearch(tmp_path: Path, server: FakeHTTP, monkeypatch: pytest.MonkeyPatch) -> None:
    enable(monkeypatch, server, "langsearch")
    server.route(PATHS["langsearch"], handler=langsearch_ok)
    result = await run(tmp_path)
    assert server.seen[0].headers["authorization"] == "Bearer ls-key-000"
    assert server.seen[0].body["summary"] is True
    assert "(provider: LangSearch)" in result.content
    assert "LangSearch hit\n   https://ls.example/a\n   Date: 2025-08-01T00:00:00Z\n   Longer summary" in result.content


async def test_falls_back_in_order_and_never_shows_keys(tmp_path: Path, server: FakeHTTP,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    enable(monkeypatch, server, "exa", "perplexity", "tavily", "langsearch")
    server.route(PATHS["exa"], handler=fail(500))
    server.route(PATHS["perplexity"], handler=fail(401))
    server.route(PATHS["tavily"], handler=tavily_ok)
    server.route(PATHS["langsearch"], handler=langsearch_ok)
    result = await run(tmp_path)
    assert [s.path for s in server.seen] == [PATHS["exa"], PATHS["perplexity"], PATHS["tavily"]]
    assert "(provider: Tavily)" in result.content
    assert "Exa: HTTP 500" in result.content and "Perplexity: HTTP 401" in result.content
    for _, _, key in KEYS.values():
        assert key not in result.content


async def test_preferred_provider_goes_first(tmp_path: Path, server: FakeHTTP, monkeypatch: pytest.MonkeyPatch) -> None:
    enable(monkeypatch, server, "exa", "langsearch")
    server.route(PATHS["exa"], handler=exa_ok)
    server.route(PATHS["langsearch"], handler=langsearch_ok)
    result = await run(tmp_path, preferred="LangSearch")
    assert [s.path for s in server.seen] == [PATHS["langsearch"]]
    assert "(provider: LangSearch)" in result.content


async def test_langsearch_error_code_falls_through(tmp_path: Path, server: FakeHTTP,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    enable(monkeypatch, server, "langsearch", "tavily")
    server.route(PATHS["langsearch"], handler=lambda body: (200, {"code": 429, "msg": "rate limited"}))
    server.route(PATHS["tavily"], handler=tavily_ok)
    result = await run(tmp_path, preferred="langsearch")
    assert "LangSearch: error code 429 (rate limited)" in result.content
    assert "(provider: Tavily)" in result.content


async def test_no_key_uses_the_labelled_keyless_fallback(tmp_path: Path, server: FakeHTTP,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    def keyless(query: str, max_results: int) -> list[dict[str, Any]]:
        assert max_results == 5
        return [{"title": "DDG hit", "href": "https://ddg.example/a", "body": "snippet"}]

    monkeypatch.setattr(web_search, "keyless_search", keyless)
    result = await run(tmp_path)
    assert f"(provider: {KEYLESS_LABEL})" in result.content
    assert "keyless fallback used because no search API key is set" in result.content
    assert result.source_urls == ("https://ddg.example/a",)
    assert server.seen == []


async def test_keyless_is_the_last_resort_after_keyed_failures(tmp_path: Path, server: FakeHTTP,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    enable(monkeypatch, server, "tavily")
    server.route(PATHS["tavily"], handler=fail(503))
    monkeypatch.setattr(web_search, "keyless_search",
                        lambda q, n: [{"title": "t", "href": "https://ddg.example/b", "body": "b"}])
    result = await run(tmp_path)
    assert "because every search API failed" in result.content and "Tavily: HTTP 503" in result.content


async def test_everything_failing_is_a_clear_error(tmp_path: Path, server: FakeHTTP,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    enable(monkeypatch, server, "exa")
    server.route(PATHS["exa"], handler=lambda body: (200, {"results": []}))

    def broken(query: str, max_results: int) -> list[dict[str, Any]]:
        raise RuntimeError("network unreachable")

    monkeypatch.setattr(web_search, "keyless_search", broken)
    with pytest.raises(ToolFailure, match=r"Exa: no results \| keyless search: RuntimeError: network unreachable"):
        await run(tmp_path)


async def test_no_results_anywhere(tmp_path: Path, server: FakeHTTP, no_keyless: list[str]) -> None:
    with pytest.raises(ToolFailure, match="No web results for 'zzz'"):
        await run(tmp_path, query="zzz")
    assert no_keyless == ["zzz"]


def test_tool_is_always_available_and_read_only() -> None:
    from dexter.tools.web_fetch import web_tools

    assert [t.name for t in web_tools()] == ["web_search", "web_fetch"]
    tool = WebSearchTool()
    assert (tool.name, tool.concurrency_safe, tool.compactable, tool.needs_approval) == \
        ("web_search", True, True, False)
