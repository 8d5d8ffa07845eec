"""``web_fetch(url, prompt)``: fetch a page, convert it to text, answer the prompt about it.

- Every request and every redirect target (at most 10, followed by hand) passes the SSRF
  guard in :mod:`dexter.tools.net`, and the connection is pinned to the checked address.
- Bodies are streamed and cut at 10 MB; a PDF larger than that is refused (a cut PDF
  cannot be parsed); other text keeps its first 10 MB with a note.
- HTML becomes markdown through ``trafilatura`` (main content, links and tables kept; the
  whole page's text when no main content is found), PDF becomes text through ``pypdf``,
  JSON and plain text stay as they are; other binary types are refused.
- The converted page is cached for 15 minutes in memory and on disk under
  ``DEXTER_HOME/cache/web`` (so different prompts reuse one download).
- The page, cut at 100,000 characters, is given to the fast model with the prompt. A
  prompt that asks for the raw text (see :func:`wants_raw`) returns the text itself.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import time
from collections import OrderedDict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, Field

from dexter.evidence.text_tables import tables_from_markdown
from dexter.filelock import write_atomic
from dexter.messages import UserMessage
from dexter.providers.base import ChatModel, ModelRequest
from dexter.providers.errors import ProviderError
from dexter.tls import httpx_context
from dexter.tools.base import Tool, ToolContext, ToolFailure, ToolOutput
from dexter.tools.files import is_binary
from dexter.tools.net import check_url, parse_url, pinned_request

if TYPE_CHECKING:
    import httpx  # imported on the first fetch, not at start-up

MAX_BYTES = 10 * 1024 * 1024
MAX_REDIRECTS = 10
MAX_PAGE_CHARS = 100_000
CACHE_TTL_SECONDS = 15 * 60
CONNECT_TIMEOUT_SECONDS = 10.0
READ_TIMEOUT_SECONDS = 30.0
TOTAL_TIMEOUT_SECONDS = 60.0
ANSWER_MAX_TOKENS = 4_096
_MEMORY_ENTRIES = 64
_REDIRECT_CODES = frozenset({301, 302, 303, 307, 308})
_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/ld+json",
               "application/javascript", "application/rss+xml", "application/atom+xml",
               "application/x-ndjson", "image/svg+xml", "application/csv")
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_HEADERS = {
    "User-Agent": "dexter-research-agent/0.1 (+https://github.com/)",
    "Accept": "text/html, application/xhtml+xml, application/pdf, application/json, "
              "text/plain;q=0.9, */*;q=0.5",
}
_RAW_PROMPTS = frozenset({
    "raw", "raw text", "the raw text", "return the raw text", "return raw text", "raw content",
    "return the raw content", "full text", "the full text", "return the full text",
    "verbatim", "return the text",
})
_SYSTEM = (
    "You extract information from one web page for a financial research agent. Answer the "
    "request using only the page content given. Quote figures, dates and names exactly as "
    "they appear; put exact wording in quotation marks and keep each quote under 125 "
    "characters. If the page does not contain the answer, say so plainly instead of guessing."
)


@dataclass(frozen=True, slots=True)
class Page:
    """A fetched and converted page, as cached."""

    url: str
    final_url: str
    status: int
    content_type: str
    title: str
    text: str
    note: str
    fetched_at: float
    private_ok: bool


_memory: OrderedDict[str, Page] = OrderedDict()


def clear_memory_cache() -> None:
    """Forget every page cached in memory (tests; ``/clear``)."""
    _memory.clear()


def wants_raw(prompt: str) -> bool:
    """True when the prompt asks for the page text itself rather than an answer.

    That is: an empty prompt, a prompt starting with ``raw:``, or (ignoring case, spaces
    and trailing ``.``/``!``/``:``) one of ``raw``, ``raw text``, ``return the raw text``,
    ``full text``, ``verbatim``... A prompt that merely mentions raw text is answered.
    """
    text = prompt.strip().lower()
    if not text or text.startswith("raw:"):
        return True
    return " ".join(text.split()).strip(" .!:") in _RAW_PROMPTS


class WebFetchParams(BaseModel):
    """Arguments of ``web_fetch``."""

    url: str = Field(description="The http(s) URL to fetch.")
    prompt: str = Field(description="What to extract from or answer about the page. Use 'raw' "
                                    "to get the page text itself instead of an answer.")


# -- cache -------------------------------------------------------------------------------


def _cache_file(home: Path, url: str) -> Path:
    return home / "cache" / "web" / (hashlib.sha256(url.encode()).hexdigest()[:32] + ".json")


def _fresh(page: Page, allow_private: bool) -> bool:
    if time.time() - page.fetched_at > CACHE_TTL_SECONDS:
        return False
    return allow_private or not page.private_ok


def cache_get(home: Path, url: str, allow_private: bool) -> Page | None:
    """A fresh cached page for ``url`` (memory first, then disk), or None."""
    page = _memory.get(url)
    if page is not None and _fresh(page, allow_private):
        _memory.move_to_end(url)
        return page
    path = _cache_file(home, url)
    try:
        page = Page(**json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError, RecursionError):
        return None
    if page.url != url or not _fresh(page, allow_private):
        return None
    _remember(url, page)
    return page


def _remember(url: str, page: Page) -> None:
    _memory[url] = page
    _memory.move_to_end(url)
    while len(_memory) > _MEMORY_ENTRIES:
        _memory.popitem(last=False)


def cache_put(home: Path, page: Page) -> None:
    """Cache a page under its requested URL, in memory and (best effort) on disk."""
    _remember(page.url, page)
    path = _cache_file(home, page.url)
    data = json.dumps(asdict(page), ensure_ascii=False).encode("utf-8", "replace")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, data)  # another dexter may write the same page: whole files only
    except OSError:
        return


# -- conversion --------------------------------------------------------------------------


def html_to_markdown(html: str, url: str) -> tuple[str, str]:
    """(title, markdown) of the main content; the page's whole text if none is found."""
    import trafilatura

    markdown = trafilatura.extract(
        html, url=url, output_format="markdown", include_links=True, include_tables=True,
        include_formatting=True, include_comments=False, favor_recall=True,
    )
    metadata = trafilatura.extract_metadata(html)
    title = (metadata.title if metadata is not None and metadata.title else "") or ""
    if not markdown:
        markdown = trafilatura.html2txt(html) or ""
    return title, markdown.strip()


def pdf_to_text(data: bytes) -> tuple[str, str]:
    """(title, text) of a PDF, page by page, stopping once past ``MAX_PAGE_CHARS``."""
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise ToolFailure("The PDF is encrypted; its text cannot be read.")
        parts, used = [], 0
        for number, page in enumerate(reader.pages, 1):
            text = (page.extract_text() or "").strip()
            parts.append(f"--- page {number} of {len(reader.pages)} ---\n{text}")
            used += len(text)
            if used > MAX_PAGE_CHARS:
                break
        title = str(reader.metadata.title) if reader.metadata and reader.metadata.title else ""
    except (PdfReadError, ValueError, KeyError, OSError) as exc:
        raise ToolFailure(f"The PDF could not be read ({exc}).") from None
    text = "\n\n".join(parts)
    if not any(line.strip() and not line.startswith("--- page") for line in text.splitlines()):
        raise ToolFailure("The PDF has no extractable text (it may be scanned images).")
    return title, text


def _decode(data: bytes, charset: str | None) -> str:
    try:
        return data.decode(charset or "utf-8", errors="replace")
    except LookupError:
        return data.decode("utf-8", errors="replace")


def convert(data: bytes, content_type: str, charset: str | None, url: str) -> tuple[str, str]:
    """(title, text) for a response body by content type."""
    if content_type == "application/pdf" or data.startswith(b"%PDF-"):
        return pdf_to_text(data)
    head = data[:1024].lstrip().lower()
    if content_type in _HTML_TYPES or (not content_type and head.startswith((b"<!doctype html", b"<html"))):
        return html_to_markdown(_decode(data, charset), url)
    if content_type.startswith(_TEXT_TYPES) or (not is_binary(data[:8192]) and not content_type):
        return "", _decode(data, charset)
    raise ToolFailure(f"Cannot read content of type {content_type or 'unknown'} "
                      f"({len(data):,} bytes): web_fetch reads HTML, PDF, JSON and text.")


# -- fetching ----------------------------------------------------------------------------


@dataclass
class _Download:
    final_url: str
    status: int
    content_type: str
    charset: str | None
    body: bytes
    truncated: bool


async def _read_body(response: httpx.Response, content_type: str) -> tuple[bytes, bool]:
    declared = response.headers.get("content-length", "")
    is_pdf = content_type == "application/pdf"
    if is_pdf and declared.isdigit() and int(declared) > MAX_BYTES:
        raise ToolFailure(f"The PDF is {int(declared):,} bytes, over the {MAX_BYTES:,}-byte limit.")
    chunks, total = [], 0
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        total += len(chunk)
        if total > MAX_BYTES:
            if is_pdf:
                raise ToolFailure(f"The PDF is larger than the {MAX_BYTES:,}-byte limit.")
            return b"".join(chunks)[:MAX_BYTES], True
    return b"".join(chunks), False


async def download(url: str, *, allow_private: bool, progress: Any = None) -> _Download:
    """GET ``url`` following up to ``MAX_REDIRECTS`` redirects, each checked by the guard."""
    import httpx

    timeout = httpx.Timeout(READ_TIMEOUT_SECONDS, connect=CONNECT_TIMEOUT_SECONDS)
    current = parse_url(url)
    async with httpx.AsyncClient(timeout=timeout, follow_redirects=False, verify=httpx_context()) as client:
        for hop in range(MAX_REDIRECTS + 1):
            checked = await check_url(current, allow_private=allow_private)
            if progress is not None:
                progress(f"Fetching {checked.host}...")
            response = await client.send(pinned_request(client, checked, _HEADERS), stream=True)
            try:
                location = response.headers.get("location")
                if response.status_code in _REDIRECT_CODES and location:
                    if hop == MAX_REDIRECTS:
                        raise ToolFailure(f"Too many redirects (more than {MAX_REDIRECTS}) "
                                          f"starting at {url}.")
                    current = parse_url(str(checked.url.join(location)))
                    continue
                if response.status_code >= 400:
                    raise ToolFailure(f"HTTP {response.status_code} {response.reason_phrase} "
                                      f"for {checked.url}.")
                content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
                body, truncated = await _read_body(response, content_type)
                return _Download(str(checked.url), response.status_code, content_type,
                                 response.charset_encoding, body, truncated)
            finally:
                await response.aclose()
    raise ToolFailure(f"Too many redirects starting at {url}.")  # pragma: no cover


async def fetch_page(url: str, home: Path, *, allow_private: bool, progress: Any = None) -> tuple[Page, bool]:
    """The converted page for ``url`` and whether it came from the cache."""
    import httpx

    key = str(parse_url(url))
    cached = cache_get(home, key, allow_private)
    if cached is not None:
        return cached, True
    try:
        async with asyncio.timeout(TOTAL_TIMEOUT_SECONDS):
            got = await download(key, allow_private=allow_private, progress=progress)
    except TimeoutError:
        raise ToolFailure(f"Fetching {url} timed out after {TOTAL_TIMEOUT_SECONDS:g} s.") from None
    except httpx.TimeoutException:
        raise ToolFailure(f"Fetching {url} timed out (no response within "
                          f"{READ_TIMEOUT_SECONDS:g} s).") from None
    except httpx.HTTPError as exc:
        raise ToolFailure(f"Could not fetch {url}: {exc.__class__.__name__}: {exc}.") from None
    title, text = await asyncio.to_thread(convert, got.body, got.content_type, got.charset,
                                          got.final_url)
    notes = []
    if got.truncated:
        notes.append(f"the download stopped at {MAX_BYTES // (1024 * 1024)} MB")
    if len(text) > MAX_PAGE_CHARS:
        text = text[:MAX_PAGE_CHARS]
        notes.append(f"the text was cut at {MAX_PAGE_CHARS:,} characters")
    page = Page(key, got.final_url, got.status, got.content_type, title, text,
                "; ".join(notes), time.time(), allow_private)
    cache_put(home, page)
    return page, False


async def answer(model: ChatModel, page: Page, prompt: str) -> str:
    """The fast model's answer to ``prompt`` from the page text."""
    user = (f"Web page: {page.final_url}\nTitle: {page.title or '(none)'}\n---\n{page.text}\n---\n\n"
            f"Request: {prompt}")
    request = ModelRequest(system=_SYSTEM, messages=(UserMessage(content=user),),
                           max_tokens=ANSWER_MAX_TOKENS)
    response = await model.complete(request)
    return response.message.text.strip()


def _header(page: Page, requested: str, cached: bool) -> str:
    lines = [f"URL: {page.final_url}"]
    if page.final_url != requested:
        lines.append(f"Redirected from: {requested}")
    facts = [f"HTTP {page.status}", page.content_type or "unknown type",
             f"{len(page.text):,} characters"]
    if cached:
        facts.append("from cache")
    lines.append("Fetched: " + " · ".join(facts))
    if page.title:
        lines.append(f"Title: {page.title}")
    if page.note:
        lines.append(f"Note: {page.note}.")
    return "\n".join(lines)


class WebFetchTool(Tool[WebFetchParams]):
    """Fetch a URL and answer a prompt about it."""

    name: ClassVar[str] = "web_fetch"
    description: ClassVar[str] = (
        "Fetch a web page or PDF (http/https) and answer a prompt about its content with a "
        "fast model (HTML is reduced to its main content as markdown; PDFs to text). Use "
        "prompt='raw' to get the page text itself (up to 100,000 characters). Public "
        "addresses only; pages are cached for 15 minutes."
    )
    params: ClassVar[type[BaseModel]] = WebFetchParams
    concurrency_safe: ClassVar[bool] = True
    compactable: ClassVar[bool] = True

    async def run(self, args: WebFetchParams, ctx: ToolContext) -> ToolOutput:
        allow_private = bool(ctx.settings.tools.allow_private_network)
        page, cached = await fetch_page(args.url, ctx.home, allow_private=allow_private,
                                        progress=ctx.progress)
        header = _header(page, str(parse_url(args.url)), cached)
        model = ctx.fast_model or ctx.model
        # the page's tables, as numbers, for reports (whatever the model is told)
        tables = tuple(tables_from_markdown(page.title or page.final_url, page.text))
        if wants_raw(args.prompt) or model is None:
            why = "" if wants_raw(args.prompt) else "(no model is available to answer the prompt; here is the text)\n"
            return ToolOutput(f"{header}\n\n{why}{page.text}", source_urls=(page.final_url,),
                              tables=tables)
        ctx.progress("Reading the page...")
        try:
            reply = await answer(model, page, args.prompt)
        except ProviderError as exc:
            raise ToolFailure(f"The page was fetched, but the model could not answer ({exc}). "
                              "Call web_fetch again with prompt='raw' to get the text.") from None
        return ToolOutput(f"{header}\n\n{reply or '(the model returned no answer)'}",
                          source_urls=(page.final_url,), tables=tables)


def web_tools() -> list[Tool[Any]]:
    """``web_search`` and ``web_fetch``, for the tool registry."""
    from dexter.tools.web_search import WebSearchTool

    return [WebSearchTool(), WebFetchTool()]
