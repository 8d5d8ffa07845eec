"""Quantities in text: the figures an answer states, and the numbers a source holds.

An answer's figures are *claims*: each has the value it states in base units (``$383.3
billion`` is 383.3e9), the tolerance its written precision implies (half a unit of the last
digit written, times its scale: 0.05e9 there), and a kind (money, percent, multiple,
number). What is not a claim (see docs/verification.md, "What counts as a figure"):

- years (1900-2100 written bare), dates (``2024-09-28``, ``9/28/2024``, ``Sep 28, 2024``),
  period names (``Q3``, ``FY2024``, ``H1``), form names (``10-K``, ``8-K``), citation ids
  (``S3``) and numbers glued to letters;
- list numbering at the start of a line (``1.``, ``2)``);
- counts: bare integers up to 12 (``4 quarters``, ``3 segments``) and bare integers before
  a unit of time (``30 days``);
- references: a number after ``Item``, ``Note``, ``Part``, ``Section``, ``Page``, ...;
- anything inside a URL.

A source's numbers are every number in its text, unsigned, with a scale word applied when
one follows (``1.2 billion`` gives 1.2 and 1.2e9).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Kind = Literal["money", "percent", "multiple", "number"]

_CORE = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|\.\d+")
_URL = re.compile(r"https?://\S+|www\.\S+")
_SCALE_WORDS = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
_SCALE_GLUED = {"k": 1e3, "m": 1e6, "mm": 1e6, "mn": 1e6, "b": 1e9, "bn": 1e9, "t": 1e12,
                "tn": 1e12}
_AFTER = re.compile(
    r"(?P<close>\))?(?P<glued>(?:mm|mn|bn|tn|[kmbt])(?![a-z]))?"
    r"(?:\s?(?P<word>thousand|million|billion|trillion)s?\b)?"
    r"(?P<close2>\))?"
    r"\s?(?P<unit>%|percent\b|per cent\b|x(?![a-z])|×|times\b|bps\b|basis points?\b)?",
    re.IGNORECASE)
_CURRENCY = re.compile(r"(?:US\$|C\$|A\$|\$|€|£|¥|USD|EUR|GBP)\s?[(]?\s?$")
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "sept", "oct",
           "nov", "dec", "january", "february", "march", "april", "june", "july", "august",
           "september", "october", "november", "december")
_MONTH_BEFORE = re.compile(r"\b(?:" + "|".join(_MONTHS) + r")\.?\s+$", re.IGNORECASE)
_MONTH_AFTER = re.compile(r"^(?:st|nd|rd|th)?\s+(?:" + "|".join(_MONTHS) + r")\b", re.IGNORECASE)
_REFERENCE_BEFORE = re.compile(
    r"\b(?:item|items|note|notes|part|section|page|pages|exhibit|rule|topic|asc|table|"
    r"step|schedule|chapter|form|cik|no\.|number|#)\s*$", re.IGNORECASE)
_TIME_AFTER = re.compile(
    r"^[\s-]*(?:days?|weeks?|months?|quarters?|years?|hours?|minutes?|seconds?|yrs?|qtrs?)\b",
    re.IGNORECASE)
_LIST_NUMBER = re.compile(r"(?:^|\n)[ \t>*-]*$")
_ISO_BEFORE = re.compile(r"\d{4}-$|\d-\d{2}-$")
_ISO_AFTER = re.compile(r"-\d{2}-\d{2}")
_LIST_AFTER = re.compile(r"[.)]\s")
_NEGATIVE_CURRENCY = re.compile(r"[-−]\s?(?:US\$|\$|€|£|¥)\s?$")
_LEAD = re.compile(r"(?:[-−]\s?)?(?:US\$|C\$|A\$|\$|€|£|¥)\s?[(]?\s?$|[(]$")


@dataclass(frozen=True, slots=True)
class Claim:
    """One figure an answer states."""

    text: str
    """As written, e.g. ``$383.3 billion`` or ``(1,234)``."""
    start: int
    end: int
    value: float
    """Unsigned, in base units (dollars, percent points, times)."""
    tolerance: float
    """Half a unit of the last digit written, in base units."""
    kind: Kind
    negative: bool = False
    scaled: bool = False
    """A scale was written (``billion``, ``B``): the value is not a bare table number."""


def extract_claims(text: str) -> list[Claim]:
    """Every figure ``text`` states, in order (see the module docstring for what is not)."""
    masked = _URL.sub(lambda m: " " * len(m.group()), text)
    claims: list[Claim] = []
    for match in _CORE.finditer(masked):
        claim = _claim_at(masked, match, text)
        if claim is not None:
            claims.append(claim)
    return claims


def source_numbers(text: str) -> list[float]:
    """Every number in a source's text, unsigned; a following scale word adds the scaled
    value too (``1.2 billion`` gives 1.2 and 1.2e9)."""
    out: list[float] = []
    for match in _CORE.finditer(text):
        try:
            value = float(match.group().replace(",", ""))
        except ValueError:
            continue
        out.append(value)
        after = _AFTER.match(text, match.end())
        if after is not None:
            scale = _scale(after)
            if scale != 1.0:
                out.append(value * scale)
    return out


def _scale(after: re.Match[str]) -> float:
    word, glued = after.group("word"), after.group("glued")
    if word:
        return _SCALE_WORDS[word.lower()]
    if glued:
        return _SCALE_GLUED[glued.lower()]
    return 1.0


def _claim_at(masked: str, match: re.Match[str], original: str) -> Claim | None:
    start, end = match.span()
    raw = match.group()
    prev = masked[start - 1] if start else ""
    nxt = masked[end] if end < len(masked) else ""
    if prev.isalpha() or prev in "/_#@" or (prev == "." and start > 1 and masked[start - 2].isalnum()):
        return None  # Q3, FY2024, S3, a path or a version number
    if nxt == "/" or (nxt == "-" and end + 1 < len(masked) and masked[end + 1].isalpha()):
        return None  # 9/28/2024, 10-K
    if "e" in raw.lower():
        return None  # exponent notation is data, not prose
    before = masked[max(0, start - 24):start]
    if _ISO_BEFORE.search(before) or _ISO_AFTER.match(masked, end):
        return None  # an ISO date
    if _REFERENCE_BEFORE.search(before) or _MONTH_BEFORE.search(before):
        return None
    after = _AFTER.match(masked, end)
    assert after is not None  # every group is optional
    unit = (after.group("unit") or "").lower()
    scale = _scale(after)
    glued = after.group("glued")
    if glued and nxt.isspace():
        scale = 1.0 if not after.group("word") else scale  # "5 m" is not five million
        glued = None
    currency = bool(_CURRENCY.search(before))
    decimals = len(raw.split(".")[1]) if "." in raw else 0
    bare = not currency and not unit and scale == 1.0 and decimals == 0
    value = float(raw.replace(",", ""))
    if bare and "," not in raw:
        if 1900 <= value <= 2100 or value <= 12:
            return None  # a year, or a count
        if _TIME_AFTER.match(masked[end:end + 20]) or _MONTH_AFTER.match(masked[end:end + 14]):
            return None
    if bare and _LIST_NUMBER.search(masked[max(0, start - 8):start]) and \
            _LIST_AFTER.match(masked, end):
        return None  # list numbering
    kind: Kind = "number"
    if unit in ("%", "percent", "per cent"):
        kind = "percent"
    elif unit in ("bps", "basis points", "basis point"):
        kind, value, scale = "percent", value / 100, 1.0
        decimals += 2
    elif unit in ("x", "×", "times"):
        kind = "multiple"
    elif currency:
        kind = "money"
    negative = prev in "-−" and not (start > 1 and masked[start - 2].isdigit())
    if before.rstrip().endswith("(") and (after.group("close") or after.group("close2")):
        negative = True
    if currency and _NEGATIVE_CURRENCY.search(before):
        negative = True
    tolerance = 0.5 * 10.0 ** (-decimals) * scale
    text_end = after.end() if (unit or scale != 1.0) else end
    text_start = start
    lead = _LEAD.search(before)
    if lead is not None and (currency or before.endswith("(")):
        text_start = start - (len(before) - lead.start())
    if after.group("close") and not unit and scale == 1.0:
        text_end = end + 1
    text = original[text_start:text_end].rstrip()
    return Claim(text=text, start=text_start, end=text_start + len(text), value=value * scale,
                 tolerance=tolerance, kind=kind, negative=negative, scaled=scale != 1.0)
