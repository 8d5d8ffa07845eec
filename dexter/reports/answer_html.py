"""The answer's markdown as safe HTML (markdown-it-py), shared by the HTML and PDF writers.

The answer quotes fetched text, which may be hostile: raw HTML in it is escaped, not
passed through; links are kept only when they point to http(s) (or to a source in the
same report); images become plain links, so opening the report fetches nothing.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

SAFE_SCHEMES = ("http://", "https://")


def safe_link(url: str) -> bool:
    """Whether a link may be kept: http(s), or an anchor to a source of this report."""
    lowered = url.strip().lower()
    return lowered.startswith(SAFE_SCHEMES) or lowered.startswith("#source-")


def answer_html(markdown: str) -> str:
    """The answer rendered to HTML (CommonMark with tables; raw HTML escaped)."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    md.validateLink = safe_link  # type: ignore[method-assign]
    md.add_render_rule("image", _image_as_link)
    return str(md.render(markdown))


def _image_as_link(self: Any, tokens: Sequence[Any], idx: int, options: Any,
                   env: Any) -> str:
    """An image is shown as a link to it (its alt text), never loaded."""
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    alt = "".join(str(child.content) for child in (token.children or [])) or src
    if not safe_link(src):
        return html.escape(alt)
    return f'<a href="{html.escape(src, quote=True)}">{html.escape(alt)}</a>'
