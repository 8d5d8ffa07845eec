"""Answer markdown with numeric table columns right-aligned.

rich's ``Markdown`` honours a table's alignment row (``---:``) but does not guess it, so the
answer text is pre-processed: each table column whose body cells are mostly numbers, money
or percentages gets a right-aligned delimiter, unless the author already chose an alignment.
Tables are located with the same markdown parser rich uses, so code blocks are left alone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from markdown_it import MarkdownIt
from markdown_it.token import Token
from rich.markdown import Markdown

_NUMBER_RE = re.compile(
    r"""^[(]?[~≈<>]?[-+−]?[$€£¥]?[-+−]?
        (\d[\d,]*(\.\d+)?|\.\d+)
        \s?(%|x|×|pp|bps|bp|[kmbtKMBT]|bn|mn|mm)?[)]?\*?$""",
    re.VERBOSE,
)
_NEUTRAL_CELLS = frozenset({"", "-", "–", "—", "n/a", "na", "nm", "n.m.", "none", "null", "?"})
_DELIMITER_CELL_RE = re.compile(r":?-+:?")
_EMPHASIS_RE = re.compile(r"[*_`]")


def looks_numeric(cell: str) -> bool:
    """Whether a table cell reads as a number: ``1,234``, ``$4.2B``, ``-3.5%``, ``(12)``, ``1.8x``."""
    text = _EMPHASIS_RE.sub("", cell).strip().replace(" ", "").replace("\u00a0", "")
    return bool(_NUMBER_RE.match(text))


def is_numeric_column(cells: Sequence[str]) -> bool:
    """True when more than half of the column's meaningful cells are numbers.

    Placeholder cells (``-``, ``—``, ``N/A``, empty) count neither way.
    """
    meaningful = [c for c in cells if _EMPHASIS_RE.sub("", c).strip().lower() not in _NEUTRAL_CELLS]
    if not meaningful:
        return False
    return sum(looks_numeric(c) for c in meaningful) * 2 > len(meaningful)


def _table_columns(tokens: Sequence[Token], start: int) -> tuple[list[bool], list[list[str]]]:
    """For the table opening at ``tokens[start]``: per column, (already aligned, body cells)."""
    aligned: list[bool] = []
    columns: list[list[str]] = []
    column = 0
    in_body = False
    for index in range(start + 1, len(tokens)):
        token = tokens[index]
        if token.type == "table_close":
            break
        if token.type == "tbody_open":
            in_body = True
        elif token.type == "tr_open":
            column = 0
        elif token.type == "th_open":
            aligned.append("style" in token.attrs)
            columns.append([])
        elif token.type == "td_open":
            if in_body and column < len(columns):
                columns[column].append(tokens[index + 1].content)
            column += 1
    return aligned, columns


def _realign(line: str, right: Sequence[bool]) -> str:
    matches = list(_DELIMITER_CELL_RE.finditer(line))
    if len(matches) != len(right):
        return line
    out, last = [], 0
    for match, make_right in zip(matches, right, strict=True):
        out.append(line[last:match.start()])
        out.append(match.group().rstrip(":") + ":" if make_right else match.group())
        last = match.end()
    out.append(line[last:])
    return "".join(out)


def align_numeric_columns(text: str) -> str:
    """``text`` with every mostly-numeric table column marked right-aligned (``---:``)."""
    if "|" not in text:
        return text
    text = text.replace("\r\n", "\n")
    tokens = MarkdownIt().enable("table").parse(text)
    lines = text.split("\n")
    for index, token in enumerate(tokens):
        if token.type != "table_open" or not token.map:
            continue
        aligned, columns = _table_columns(tokens, index)
        right = [not done and is_numeric_column(cells) for done, cells in zip(aligned, columns, strict=True)]
        delimiter = token.map[0] + 1
        if any(right) and delimiter < len(lines):
            lines[delimiter] = _realign(lines[delimiter], right)
    return "\n".join(lines)


def answer_markdown(text: str) -> Markdown:
    """The final answer as a rich ``Markdown`` renderable, numeric table columns right-aligned."""
    return Markdown(align_numeric_columns(text))
