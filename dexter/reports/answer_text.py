"""The answer's markdown as plain blocks (headings, paragraphs, list items, tables) for a
writer that has no markup, the workbook's Report sheet (pure).

Parsed with markdown-it (CommonMark with tables, raw HTML as text), so what reads as a
heading or a table in the HTML report is one here too; inline emphasis, code marks and
link syntax are dropped and the words kept (a link keeps its address in parentheses).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

BlockKind = Literal["heading", "paragraph", "item", "table", "code", "quote", "rule"]


@dataclass(frozen=True, slots=True)
class Block:
    """One block of the answer: its kind, plain text, and for a table its rows."""

    kind: BlockKind
    text: str = ""
    level: int = 0
    """A heading's level (1-6); a list item's depth (1 for the outer list)."""
    rows: tuple[tuple[str, ...], ...] = field(default=())
    """A table's cells as text, the header row first."""
    numeric: tuple[bool, ...] = ()
    """A table's right-aligned columns (as the markdown set them)."""


def answer_blocks(markdown: str) -> list[Block]:
    """The answer's blocks in order (see the module docstring)."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark", {"html": False}).enable("table").parse(markdown)
    blocks: list[Block] = []
    lists: list[list[int]] = []  # per open list: [ordered, next number]
    quote = 0
    i = 0
    while i < len(tokens):
        token = tokens[i]
        kind = token.type
        if kind in ("bullet_list_open", "ordered_list_open"):
            start = int(token.attrGet("start") or 1) if kind == "ordered_list_open" else 0
            lists.append([kind == "ordered_list_open", start])
        elif kind in ("bullet_list_close", "ordered_list_close"):
            lists.pop()
        elif kind == "blockquote_open":
            quote += 1
        elif kind == "blockquote_close":
            quote -= 1
        elif kind == "heading_open":
            blocks.append(Block("heading", inline_text(tokens[i + 1].children),
                                int(token.tag[1:])))
            i += 2
        elif kind == "paragraph_open":
            text = inline_text(tokens[i + 1].children)
            if lists and tokens[i - 1].type == "list_item_open":
                ordered, number = lists[-1]
                marker = f"{number}." if ordered else "•"
                if ordered:
                    lists[-1][1] += 1
                blocks.append(Block("item", f"{marker} {text}", len(lists)))
            else:
                blocks.append(Block("quote" if quote else "paragraph", text))
            i += 2
        elif kind in ("fence", "code_block"):
            blocks.append(Block("code", token.content.rstrip("\n")))
        elif kind == "hr":
            blocks.append(Block("rule"))
        elif kind == "table_open":
            i, block = _table(tokens, i)
            blocks.append(block)
        i += 1
    return blocks


def inline_text(children: Sequence[Any] | None) -> str:
    """An inline run as plain text: emphasis and code marks dropped, a link's address kept
    after its words, line breaks as spaces (a hard break as a new line)."""
    parts: list[str] = []
    href: list[str] = []
    for child in children or []:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type == "softbreak":
            parts.append(" ")
        elif child.type == "hardbreak":
            parts.append("\n")
        elif child.type == "link_open":
            href.append(str(child.attrGet("href") or ""))
        elif child.type == "link_close":
            url = href.pop() if href else ""
            shown = "".join(parts[-1:])
            if url and url not in shown and url.startswith(("http://", "https://")):
                parts.append(f" ({url})")
        elif child.type == "image":
            parts.append("".join(c.content for c in child.children or []) or
                         str(child.attrGet("src") or ""))
    return "".join(parts).strip()


def _table(tokens: Sequence[Any], start: int) -> tuple[int, Block]:
    rows: list[tuple[str, ...]] = []
    row: list[str] = []
    aligns: list[bool] = []
    i = start
    while i < len(tokens) and tokens[i].type != "table_close":
        token = tokens[i]
        if token.type == "tr_open":
            row = []
        elif token.type in ("th_open", "td_open"):
            if token.type == "th_open":
                aligns.append("text-align:right" in str(token.attrGet("style") or ""))
            row.append(inline_text(tokens[i + 1].children))
        elif token.type == "tr_close":
            rows.append(tuple(row))
        i += 1
    return i, Block("table", rows=tuple(rows), numeric=tuple(aligns))
