"""web_fetch against a local server (private network switch on): conversion, limits, cache."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from dexter.config import Settings
from dexter.messages import AssistantMessage, UserMessage
from dexter.providers.base import ModelRequest, ModelResponse, StreamChunk
from dexter.providers.errors import ProviderError
from dexter.tools import web_fetch
from dexter.tools.base import ToolContext, ToolFailure, ToolOutput
from dexter.tools.web_fetch import MAX_PAGE_CHARS, WebFetchTool, clear_memory_cache, wants_raw
from tests.fixtures.web.fake_http import FakeHTTP, make_pdf, serving

ARTICLE = (Path(__file__).parent / "fixtures" / "web" / "article.html").read_bytes()


class ScriptedModel:
    """A ChatModel double that answers ``complete`` from a list and records requests."""

    def __init__(self, *replies: str | Exception) -> None:
        self.replies = list(replies)
        self.requests: list[ModelRequest] = []

    @property
    def model(self) -> str:
        return "fast-test"

    @property
    def provider_id(self) -> str:
        return "test"

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return ModelResponse(AssistantMessage(text=reply))

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk | ModelResponse]:
        yield await self.complete(request)

    async def aclose(self) -> None:
        return None


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> None:
    clear_memory_cache()
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest.fixture
def server() -> Iterator[FakeHTTP]:
    with serving() as fake:
        yield fake


def make_ctx(tmp_path: Path, fast_model: Any = None) -> ToolContext:
    settings = Settings()
    settings.tools.allow_private_network = True
    return ToolContext(settings=settings, cwd=tmp_path, home=tmp_path / ".dexter", fast_model=fast_model)


async def fetch(ctx: ToolContext, url: str, prompt: str = "raw") -> ToolOutput:
    tool = WebFetchTool()
    result = await tool.run(tool.parse_args({"url": url, "prompt": prompt}), ctx)
    assert isinstance(result, ToolOutput)
    return result


async def test_html_article_becomes_clean_markdown(tmp_path: Path, server: FakeHTTP) -> None:
    server.route("/article", body=ARTICLE, headers={"Content-Type": "text/html; charset=utf-8"})
    result = await fetch(make_ctx(tmp_path), server.url("/article"))
    text = result.content
    assert "Title: Acme Corp Q3 results beat estimates" in text
    assert "revenue of $4.2 billion" in text
    assert "| Sensors | $2.6B | 15% |" in text
    assert "[earnings release](https://investors.example.com/q3-2025)" in text
    assert "## Segment results" in text
    for boilerplate in ("Subscribe to our newsletter", "Cookie settings", "zero commissions", "Sign in"):
        assert boilerplate not in text
    assert result.source_urls == (server.url("/article"),)


async def test_pdf_becomes_text(tmp_path: Path, server: FakeHTTP) -> None:
    pdf = make_pdf(["Annual Report 2025", "Revenue was 5.1 billion dollars."], title="Acme 10-K")
    server.route("/report.pdf", body=pdf, headers={"Content-Type": "application/pdf"})
    result = await fetch(make_ctx(tmp_path), server.url("/report.pdf"))
    assert "--- page 1 of 1 ---" in result.content
    assert "Revenue was 5.1 billion dollars." in result.content
    assert "Title: Acme 10-K" in result.content


async def test_json_and_plain_text_stay_as_they_are(tmp_path: Path, server: FakeHTTP) -> None:
    payload = json.dumps({"ticker": "ACME", "price": 12.5})
    server.route("/api", body=payload.encode(), headers={"Content-Type": "application/json"})
    server.route("/notes", body=b"line one\nline two\n", headers={"Content-Type": "text/plain"})
    ctx = make_ctx(tmp_path)
    assert (await fetch(ctx, server.url("/api"))).content.endswith(payload)
    assert (await fetch(ctx, server.url("/notes"))).content.endswith("line one\nline two\n")


async def test_binary_content_is_refused(tmp_path: Path, server: FakeHTTP) -> None:
    server.route("/logo.png", body=b"\x89PNG\r\n\x1a\n\x00\x00", headers={"Content-Type": "image/png"})
    with pytest.raises(ToolFailure, match="Cannot read content of type image/png"):
        await fetch(make_ctx(tmp_path), server.url("/logo.png"))


async def test_http_errors_are_clear(tmp_path: Path, server: FakeHTTP) -> None:
    with pytest.raises(ToolFailure, match="HTTP 404"):
        await fetch(make_ctx(tmp_path), server.url("/missing"))


async def test_relative_redirects_are_followed_and_reported(tmp_path: Path, server: FakeHTTP) -> None:
    server.route("/old", status=301, headers={"Location": "/moved"})
    server.route("/moved", status=302, headers={"Location": server.url("/final")})
    server.route("/final", body=b"final page", headers={"Content-Type": "text/plain"})
    result = await fetch(make_ctx(tmp_path), server.url("/old"))
    assert result.content.startswith(f"URL: {server.url('/final')}\nRedirected from: {server.url('/old')}")
    assert result.source_urls == (server.url("/final"),)


@pytest.mark.parametrize(("hops", "ok"), [(10, True), (11, False)])
async def test_at_most_ten_redirects(tmp_path: Path, server: FakeHTTP, hops: int, ok: bool) -> None:
    for i in range(hops):
        server.route(f"/hop{i}", status=307, headers={"Location": f"/hop{i + 1}"})
    server.route(f"/hop{hops}", body=b"arrived", headers={"Content-Type": "text/plain"})
    if ok:
        assert (await fetch(make_ctx(tmp_path), server.url("/hop0"))).content.endswith("arrived")
    else:
        with pytest.raises(ToolFailure, match="Too many redirects"):
            await fetch(make_ctx(tmp_path), server.url("/hop0"))
        assert server.hits(f"/hop{hops}") == 0


async def test_size_cap_stops_the_download(tmp_path: Path, server: FakeHTTP) -> None:
    server.route("/huge.txt", repeat_bytes=11 * 1024 * 1024, headers={"Content-Type": "text/plain"})
    result = await fetch(make_ctx(tmp_path), server.url("/huge.txt"))
    assert "the download stopped at 10 MB" in result.content
    assert f"the text was cut at {MAX_PAGE_CHARS:,} characters" in result.content
    assert result.content.count("a") >= MAX_PAGE_CHARS


async def test_oversized_pdf_is_refused(tmp_path: Path, server: FakeHTTP) -> None:
    server.route("/big.pdf", repeat_bytes=11 * 1024 * 1024, headers={"Content-Type": "application/pdf"})
    with pytest.raises(ToolFailure, match="larger than the 10,485,760-byte limit"):
        await fetch(make_ctx(tmp_path), server.url("/big.pdf"))


async def test_slow_server_times_out(tmp_path: Path, server: FakeHTTP, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(web_fetch, "READ_TIMEOUT_SECONDS", 0.2)
    server.route("/slow", body=b"late", delay=1.0, headers={"Content-Type": "text/plain"})
    with pytest.raises(ToolFailure, match="timed out"):
        await fetch(make_ctx(tmp_path), server.url("/slow"))


async def test_second_fetch_is_served_from_cache(tmp_path: Path, server: FakeHTTP) -> None:
    server.route("/article", body=ARTICLE, headers={"Content-Type": "text/html"})
    model = ScriptedModel("Revenue was $4.2 billion.", "Net income was $610 million.")
    ctx = make_ctx(tmp_path, model)
    first = await fetch(ctx, server.url("/article"), "What was revenue?")
    second = await fetch(ctx, server.url("/article"), "What was net income?")
    assert server.hits("/article") == 1
    assert "from cache" not in first.content and "from cache" in second.content
    assert second.content.endswith("Net income was $610 million.")


async def test_disk_cache_survives_the_process_and_expires(tmp_path: Path, server: FakeHTTP,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    server.route("/notes", body=b"cached text", headers={"Content-Type": "text/plain"})
    ctx = make_ctx(tmp_path)
    await fetch(ctx, server.url("/notes"))
    assert list((tmp_path / ".dexter" / "cache" / "web").glob("*.json"))
    clear_memory_cache()
    assert "from cache" in (await fetch(ctx, server.url("/notes"))).content
    assert server.hits("/notes") == 1
    clear_memory_cache()
    monkeypatch.setattr(web_fetch, "CACHE_TTL_SECONDS", -1)
    await fetch(ctx, server.url("/notes"))
    assert server.hits("/notes") == 2


@pytest.mark.parametrize(("prompt", "raw"), [
    ("raw", True), ("RAW TEXT.", True), ("Return the raw text", True), ("raw: the whole page", True),
    ("", True), ("full text!", True), ("raw materials costs in the report", False),
    ("Summarize the raw data table", False), ("What was revenue?", False),
])
def test_raw_prompt_detection(prompt: str, raw: bool) -> None:
    assert wants_raw(prompt) is raw


async def test_prompt_is_answered_by_the_fast_model_from_the_capped_page(tmp_path: Path, server: FakeHTTP) -> None:
    long_page = ("word " * 40_000).encode()  # 200,000 characters
    server.route("/long", body=long_page, headers={"Content-Type": "text/plain"})
    model = ScriptedModel("It repeats one word.")
    result = await fetch(make_ctx(tmp_path, model), server.url("/long"), "What does the page say?")
    assert result.content.endswith("It repeats one word.")
    request = model.requests[0]
    assert request.tools == ()
    message = request.messages[0]
    assert isinstance(message, UserMessage)
    assert message.content.count("word") == MAX_PAGE_CHARS // 5
    assert message.content.endswith("Request: What does the page say?")
    assert "only the page content" in request.system


async def test_model_failure_suggests_raw(tmp_path: Path, server: FakeHTTP) -> None:
    server.route("/p", body=b"text", headers={"Content-Type": "text/plain"})
    model = ScriptedModel(ProviderError("overloaded", "The provider is overloaded."))
    with pytest.raises(ToolFailure, match="prompt='raw'"):
        await fetch(make_ctx(tmp_path, model), server.url("/p"), "summarize")


async def test_without_a_model_the_text_is_returned(tmp_path: Path, server: FakeHTTP) -> None:
    server.route("/p", body=b"the text", headers={"Content-Type": "text/plain"})
    result = await fetch(make_ctx(tmp_path), server.url("/p"), "summarize")
    assert "no model is available" in result.content and result.content.endswith("the text")


async def test_summary_through_the_real_openai_adapter(tmp_path: Path, server: FakeHTTP, fake_llm: Any) -> None:
    from dexter.providers.call import create_chat_model
    from dexter.providers.registry import resolve_model
    from dexter.testing.fakellm import Reply

    settings = Settings(model="gpt-4.1-mini")
    model = create_chat_model(resolve_model("gpt-4.1-mini", settings), settings)
    server.route("/article", body=ARTICLE, headers={"Content-Type": "text/html"})
    fake_llm.enqueue(Reply(text="Q3 revenue was $4.2 billion, up 12%."))
    try:
        result = await fetch(make_ctx(tmp_path, model), server.url("/article"), "Q3 revenue?")
    finally:
        await model.aclose()
    assert result.content.endswith("Q3 revenue was $4.2 billion, up 12%.")
    body = fake_llm.requests[0].body
    assert "tools" not in body
    assert "$4.2 billion" in json.dumps(body["messages"])
    fake_llm.assert_no_violations()
