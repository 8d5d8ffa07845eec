"""The numbers a source's text holds, as evidence: the data, not the framing.

A tool result is read for its numbers once, when it joins the ledger. What is framing is
left out: line-number gutters (``141:`` of a numbered listing), JSON keys (only values are
data), links, e-mail addresses, SEC accession and file numbers, dates and times, years,
numbers glued to letters (``Q3``, ``FY2024``, ``S3``, ``10-K``).

Each number becomes a :class:`Quantity` with its sign (a minus or parentheses), its value
in base units and its *stated* scale: a scale is applied only where the source states it,
by a word after the number (``1.2 billion``, ``$5bn``) or by a table's unit line (``(in
millions)``, ``(dollars in thousands)``, ``$ in millions`` above or in the header of a table;
per-share amounts and share counts follow the table's "except" clause). A number whose
unit nobody states is its written value, never rescaled. Numbers in a table row keep the
row's label (with its section, ``Gross margin: Products``) and their column's header
(``2024``, ``Change``), which the check uses to say what a number is. Pure functions.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from dexter.evidence.numbers import (
    AFTER,
    CORE,
    glued_to_letters,
    mask_framing,
    scale_of,
)

MAX_JSON_CHARS = 2_000_000
_GUTTER = re.compile(r"^(\s*)(\d+)([:\t])", re.MULTILINE)
_UNIT_LINE = re.compile(
    r"(?:\(|\b)(?:(?:u\.s\.\s+)?dollars|amounts|figures|values|usd|us\$|\$|€|£)?\s*"
    r"(?:are\s+)?in\s+(?P<scale>thousands|millions|billions)\b(?P<rest>[^)\n]{0,160})"
    r"|\((?P<scale2>thousands|millions|billions)\s+of\s+(?:u\.s\.\s+)?dollars\b(?P<rest2>[^)\n]{0,160})"
    r"|(?:\(|\b)(?:usd|us\$|\$)\s*(?P<scale3>thousands|millions|billions|mm|mn|m|bn|b|k)\b",
    re.IGNORECASE)
_UNIT_SCALE = {"thousands": 1e3, "millions": 1e6, "billions": 1e9, "mm": 1e6, "mn": 1e6,
               "m": 1e6, "bn": 1e9, "b": 1e9, "k": 1e3}
_SHARES_IN = re.compile(r"shares?\b[^;)]{0,40}?\b(?:in|reflected in)\s+(thousands|millions)",
                        re.IGNORECASE)
_PERCENT_HEADER = re.compile(r"^\s*(?:%|percent|pct\.?|% change|change|change \(%\)|"
                             r"% of .*|percentage.*)\s*$", re.IGNORECASE)
_PERCENT_LABEL = re.compile(r"percentage|percent\b|%|\bmargin rate\b", re.IGNORECASE)
# a row that names a rate ("Effective tax rate", "Statutory federal income tax rate") holds
# percentages even where a text lost its "%" signs (a PDF's or a web page's table: a filing's
# text keeps them, dexter.data.filing_text): never the table's money scale; an amount at or
# of a rate ("Tax at statutory federal rate", "Effect of a change in tax rate") is money
_RATE_LABEL = re.compile(r"(?<!exchange )(?<!conversion )\brates?\s*(?:\(\d\)|\[\d\])?\s*$",
                         re.IGNORECASE)
_AMOUNT_AT_RATE = re.compile(r"\b(?:at|of|by|on|from|using|computed|impact|effect)\b",
                             re.IGNORECASE)
_YEAR_CELL = re.compile(r"^\s*(?:FY\s*)?(?:19|20)\d{2}\s*$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Quantity:
    """One number of a source's text."""

    value: float
    """Signed, in base units (the stated scale applied; percent points for a percentage)."""
    written: float
    """Unsigned, as written."""
    scale: float = 1.0
    """The scale the source states for it (1.0 when none)."""
    tolerance: float = 0.0
    """Half a unit of its last digit, times its scale (0 for a JSON number)."""
    percent: bool = False
    row: str = ""
    """Its table row's label, with the row's section (``Gross margin: Products``)."""
    column: str = ""
    """Its column's header in that table (``2024``, ``Change``), when the header aligns."""


def strip_gutter(text: str) -> str:
    """``text`` without a line-number gutter (``1:``, ``  2\\t``) when its lines carry one:
    at least three lines whose leading numbers count up by one."""
    found = list(_GUTTER.finditer(text))
    if len(found) < 3:
        return text
    run = 0
    for a, b in itertools.pairwise(found):
        if int(b.group(2)) == int(a.group(2)) + 1:
            run += 1
    if run < max(2, (len(found) - 1) // 2):
        return text
    return _GUTTER.sub(lambda m: m.group(1) + " " * (len(m.group(2)) + 1), text)


def source_quantities(text: str) -> list[Quantity]:
    """Every number ``text`` holds as evidence (see the module docstring). A JSON text is
    read for its values only: numbers as they are, strings as text."""
    stripped = text.lstrip()
    if stripped[:1] in ("{", "[") and len(stripped) <= MAX_JSON_CHARS:
        try:
            data = json.loads(stripped)
        except (ValueError, RecursionError):
            pass
        else:
            out: list[Quantity] = []
            for item in _json_values(data, 0):
                if isinstance(item, str):
                    out.extend(text_quantities(item))
                else:
                    out.append(Quantity(item, abs(item)))
            return out
    return text_quantities(text)


def _json_values(data: Any, depth: int) -> Iterator[float | str]:
    if depth > 60:
        return
    if isinstance(data, dict):
        for key, value in data.items():
            if key in ("source_urls", "urls", "url", "link", "links", "href"):
                continue
            yield from _json_values(value, depth + 1)
    elif isinstance(data, list):
        for value in data:
            yield from _json_values(value, depth + 1)
    elif isinstance(data, bool) or data is None:
        return
    elif isinstance(data, int | float):
        number = float(data)
        if number == number and abs(number) != float("inf"):
            yield number
    elif isinstance(data, str) and any(ch.isdigit() for ch in data):
        yield data


def text_quantities(text: str) -> list[Quantity]:
    """The numbers of a plain text (not JSON): prose, and tables whose cells are separated
    by ``|`` (markdown, or filing text as :mod:`dexter.data.filing_text` writes it)."""
    text = strip_gutter(text)
    originals = text.split("\n")
    masked = mask_framing(text).split("\n")
    out: list[Quantity] = []
    index = 0
    previous: _Table | None = None
    previous_end = -10
    while index < len(masked):
        if _is_table_line(masked[index]) or (_is_section(masked[index]) and index + 1 <
                                             len(masked) and _is_table_line(masked[index + 1])):
            stop = index
            while stop < len(masked) and (_is_table_line(masked[stop]) or (
                    _is_section(masked[stop]) and stop + 1 < len(masked)
                    and _is_table_line(masked[stop + 1]))):
                stop += 1
            context = [line for line in originals[max(0, index - 4):index]
                       if line.strip() and len(line) < 400]
            inherit = previous if index - previous_end <= 2 else None
            table = _Table(context, inherit)
            for line, original in zip(masked[index:stop], originals[index:stop], strict=True):
                out.extend(table.read(line, original))
            previous, previous_end = table, stop
            index = stop
            continue
        out.extend(_line_quantities(masked[index], 1.0))
        index += 1
    return out


def _is_table_line(line: str) -> bool:
    return " | " in line or (line.lstrip().startswith("|") and line.count("|") >= 2)


def _is_section(line: str) -> bool:
    text = line.strip()
    return text.endswith(":") and 0 < len(text.split()) <= 14 and not any(
        ch.isdigit() for ch in text)


def _spans(line: str) -> list[tuple[int, int]]:
    """The character spans of a table line's cells (a leading and a trailing ``|`` of a
    markdown row open and close it)."""
    bars = [i for i, ch in enumerate(line) if ch == "|"]
    start, end = 0, len(line)
    stripped = line.strip()
    if stripped.startswith("|"):
        start = bars.pop(0) + 1
    if stripped.endswith("|") and bars:
        end = bars.pop()
    edges = [start - 1, *[b for b in bars if start <= b < end], end]
    return [(a + 1, b) for a, b in itertools.pairwise(edges)]


def _has_value(cell: str) -> bool:
    return bool(_line_quantities(cell, 1.0))


class _Table:
    """Reads one table's rows: its unit line, headers, sections and row labels."""

    def __init__(self, context: list[str], previous: _Table | None) -> None:
        stated = _table_unit("\n".join(context))
        if stated is None and previous is not None:
            stated = previous.unit
        self.unit: tuple[float, bool, float] = stated or (1.0, False, 1.0)
        self.caption = " ".join(c.strip() for c in context[-1:]
                                if len(c) < 60 and " | " not in c) if context else ""
        self.headers: list[str] = previous.headers if previous is not None else []
        self.spans: list[str] = []
        self.section = ""
        self.seen_data = False

    def read(self, line: str, original: str) -> list[Quantity]:
        spans = _spans(original)
        cells = [line[a:b].strip() for a, b in spans]
        labels = [original[a:b].strip() for a, b in spans]
        if any("-" in c for c in cells) and all(set(c) <= set("-: ") for c in cells):
            return []  # a markdown separator row
        if not any(_has_value(c) for c in cells[1:]) and not (
                cells[0] and _has_value(cells[0]) and not re.search(r"[A-Za-z]{2,}", cells[0])):
            named = [c for c in labels if c]
            found = _table_unit(original)
            if found is not None:
                self.unit = found
            if len(named) == 1 and (self.seen_data or named[0].endswith(":")):
                self.section = named[0].rstrip(":").strip()
            elif len(named) >= 1 and not self.seen_data:
                if self.headers and len(self.headers) < len(labels) and not self.spans:
                    self.spans = self.headers
                self.headers = labels
            return []
        self.seen_data = True
        scale, per_share_exempt, share_scale = self.unit
        label = labels[0] if re.search(r"[A-Za-z]{2,}", cells[0]) or not _has_value(cells[0]) \
            else ""
        values = cells[1:] if label or not cells[0] else cells
        shown_cells = labels[1:] if label or not cells[0] else labels
        row_label = f"{self.section}: {label}" if self.section and label else \
            label or self.section
        row_scale = scale
        context_label = f"{self.section} {label}".lower()
        if re.search(r"\bshares\b|\bshare count", context_label) and \
                "equity" not in context_label:
            row_scale = share_scale
        elif per_share_exempt and re.search(r"per[\s-](?:diluted\s+|basic\s+)?share",
                                            context_label):
            row_scale = 1.0
        row_percent = bool(_PERCENT_LABEL.search(row_label)) or (
            bool(_RATE_LABEL.search(label)) and not _AMOUNT_AT_RATE.search(label))
        shown = [c for c in values if c and c not in ("$", "%", "US$")]
        heads = self._heads(len(cells), len(shown))
        out: list[Quantity] = []
        position = 0
        for i, cell in enumerate(values):
            if not cell or cell in ("$", "%", "US$"):
                continue
            following = values[i + 1] if i + 1 < len(values) else ""
            column = heads[position] if heads else ""
            position += 1
            if shown_cells[i].startswith("{"):
                out.extend(_json_cell(shown_cells[i], column))
                continue
            percent = row_percent or following == "%" or bool(
                column and _PERCENT_HEADER.match(column.split("|")[-1]))
            for q in _line_quantities(cell, row_scale, percent=percent):
                out.append(Quantity(q.value, q.written, q.scale, q.tolerance, q.percent,
                                    row_label, column.replace("|", " ").strip()))
        if label.lower().startswith("total"):
            self.section = ""  # a total closes its section
        return out

    def _heads(self, row_cells: int, shown: int) -> list[str]:
        """The header over each shown value cell of a row (with its spanning header and the
        caption, ``Three Months Ended|June 28, 2025``), or [] when they do not line up."""
        heads = _column_heads(self.headers, row_cells, shown)
        if not heads:
            return []
        spans = [h for h in self.spans if h]
        if spans and len(heads) % len(spans) == 0:
            width = len(heads) // len(spans)
            return [f"{spans[i // width]}|{h}" for i, h in enumerate(heads)]
        if self.caption and not _YEAR_CELL.match(heads[0]):
            return [f"{self.caption}|{h}" for h in heads]
        return heads


_AS_FILED = re.compile(r"as filed:\s*(-?[\d,]*\.?\d+)")


def _json_cell(text: str, column: str) -> list[Quantity]:
    """A cell holding a JSON object of notes per field (``{"earnings_per_share": "...; as
    filed: 4.9"}``): each note's value as filed, as a number of that field."""
    try:
        data = json.loads(text)
    except ValueError:
        return []
    out: list[Quantity] = []
    if not isinstance(data, dict):
        return out
    for key, note in data.items():
        found = _AS_FILED.search(note) if isinstance(note, str) else None
        if found is None:
            continue
        raw = found.group(1).replace(",", "")
        value = float(raw)
        decimals = len(raw.split(".")[1]) if "." in raw else 0
        out.append(Quantity(value, abs(value), 1.0, 0.5 * 10.0 ** -decimals, False,
                            f"{key} (as filed)", column.replace("|", " ").strip()))
    return out


def _column_heads(headers: list[str], row_cells: int, shown: int) -> list[str]:
    """The header over each shown value cell of a row, or [] when they do not line up."""
    if not headers:
        return []
    if len(headers) == row_cells and row_cells == shown + 1:
        return headers[1:]  # the first header names the label column ("field")
    named = [h for h in headers if h]
    if len(named) == shown:
        return named
    years = [h for h in named if _YEAR_CELL.match(h)]
    if len(years) == shown:
        return years
    return []


def _table_unit(text: str) -> tuple[float, bool, float] | None:
    """(the scale a table's unit line states, whether per-share amounts are excepted, the
    scale of its share counts), or None when ``text`` states no unit."""
    found = list(_UNIT_LINE.finditer(text))
    if not found:
        return None
    match = found[-1]  # the last unit line before the table is the one that applies
    word = (match.group("scale") or match.group("scale2") or match.group("scale3")).lower()
    scale = _UNIT_SCALE[word]
    rest = (match.group("rest") or match.group("rest2") or "").lower()
    exempt = "per share" in rest or "per-share" in rest or "except" in rest
    shares = _SHARES_IN.search(rest)
    share_scale = _UNIT_SCALE[shares.group(1).lower()] if shares else \
        1.0 if "except" in rest and "share" in rest else scale
    return scale, exempt or "share" in rest, share_scale


def _number_spans(text: str) -> Iterator[re.Match[str]]:
    """The numbers of ``text`` that are not part of a word or code."""
    for match in CORE.finditer(text):
        if glued_to_letters(text, match.start(), match.end()):
            continue
        raw = match.group()
        if "e" in raw.lower():
            continue
        yield match


def _line_quantities(line: str, scale: float, *, percent: bool = False) -> list[Quantity]:
    out: list[Quantity] = []
    for match in _number_spans(line):
        start, end = match.span()
        raw = match.group()
        value = float(raw.replace(",", ""))
        decimals = len(raw.split(".")[1]) if "." in raw else 0
        after = AFTER.match(line, end)
        assert after is not None
        unit = (after.group("unit") or "").lower()
        stated = scale_of(after)
        if after.group("glued") and end < len(line) and line[end].isspace():
            stated = 1.0
        is_percent = percent or unit.startswith(("%", "percent", "per"))
        if unit.startswith(("bps", "basis", "bp")):
            is_percent, value, decimals = True, value / 100, decimals + 2
        if not is_percent and stated == 1.0 and scale == 1.0 and "," not in raw and \
                not decimals and 1900 <= value <= 2100:
            continue  # a year
        applied = stated if stated != 1.0 else (1.0 if is_percent else scale)
        before = line[max(0, start - 3):start]
        negative = before.rstrip().endswith(("(", "($", "-", "−", "-$", "−$")) and \
            not (start > 1 and line[start - 2].isalnum())
        magnitude = value * applied
        out.append(Quantity(-magnitude if negative else magnitude, value, applied,
                            0.5 * 10.0 ** (-decimals) * applied, is_percent))
    return out
