"""The answer's markdown as safe HTML (markdown-it-py), shared by the HTML and PDF writers.

The answer quotes fetched text, which may be hostile: raw HTML in it is escaped, not
passed through; links are kept only when they point to http(s) (or to a source in the
same report); images become plain links, so opening the report fetches nothing.
"""

from __future__ import annotations

import html
import re
from collections.abc import Collection, Sequence
from typing import Any

from dexter.evidence.report import MARK

SAFE_SCHEMES = ("http://", "https://")
CITATION = re.compile(r"\[(S\d+)\]")
_TAG = re.compile(r"(<[^>]*>)")



def safe_link(url: str) -> bool:
    """Whether a link may be kept: http(s), or an anchor to a source of this report."""
    lowered = url.strip().lower()
    return lowered.startswith(SAFE_SCHEMES) or lowered.startswith("#source-")


def answer_html(markdown: str, cited: Collection[str] = ()) -> str:
    """The answer rendered to HTML (CommonMark with tables; raw HTML escaped). A citation
    ``[S1]`` of a source in ``cited`` becomes a link to ``#source-S1``."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    md.validateLink = safe_link  # type: ignore[method-assign]
    md.add_render_rule("image", _image_as_link)
    if cited:
        known = frozenset(cited)
        md.core.ruler.push("citation_links", lambda state: _link_citations(state, known))
    return str(md.render(markdown))


def _link_citations(state: Any, known: frozenset[str]) -> None:
    from markdown_it.token import Token

    for block in state.tokens:
        if block.type != "inline" or not block.children:
            continue
        children: list[Token] = []
        depth = 0
        for token in block.children:
            depth += {"link_open": 1, "link_close": -1}.get(token.type, 0)
            if token.type != "text" or depth or not CITATION.search(token.content):
                children.append(token)
                continue
            start = 0
            for match in CITATION.finditer(token.content):
                if match.group(1) not in known:
                    continue
                if match.start() > start:
                    children.append(_text(token.content[start:match.start()]))
                children.append(Token("link_open", "a", 1,
                                      attrs={"href": f"#source-{match.group(1)}"}))
                children.append(_text(match.group(0)))
                children.append(Token("link_close", "a", -1))
                start = match.end()
            if start < len(token.content):
                children.append(_text(token.content[start:]))
        block.children = children


def _text(content: str) -> Any:
    from markdown_it.token import Token

    return Token("text", "", 0, content=content)


def _image_as_link(self: Any, tokens: Sequence[Any], idx: int, options: Any,
                   env: Any) -> str:
    """An image is shown as a link to it (its alt text), never loaded."""
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    alt = "".join(str(child.content) for child in (token.children or [])) or src
    if not safe_link(src):
        return html.escape(alt)
    return f'<a href="{html.escape(src, quote=True)}">{html.escape(alt)}</a>'


def marks(page: str, replacement: str) -> str:
    """The ⚠ after each unsupported figure in rendered HTML, replaced by ``replacement``
    (a highlighted one), in text only, never inside a tag."""
    parts = _TAG.split(page)
    return "".join(part if part.startswith("<") else part.replace(MARK.strip(), replacement)
                   for part in parts)
