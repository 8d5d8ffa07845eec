"""Context across sentences: what a change compares with, relative periods, and the period
a paragraph carries to its sentences that name none (docs/verification.md, "Context across
sentences").

- **Basis.** The words around a change say what it is measured against: ``y/y``, ``YoY``,
  ``year on year``, ``a year earlier``, ``the prior year`` the year-ago period only;
  ``QoQ``, ``q/q``, ``sequentially``, ``the previous quarter`` the quarter before only. With
  neither, both are tried (a quarter's change may be either).
- **Relative period.** A level figure followed by ``a year earlier``, ``a year ago``, ``the
  prior year``, ``last year``, ``the year-ago quarter`` (or a sentence led by one) is the
  year before the period of its sentence (or its paragraph); ``the previous quarter``, ``a
  quarter earlier`` the quarter before.
- **The paragraph's period.** Within one paragraph (the text between blank lines, or one
  list item), a sentence that names no period takes the one the last sentence naming a
  period bound its figures to. A new paragraph, a heading or a table starts afresh; a
  sentence that names several periods carries none (its paragraph's period is ambiguous),
  and the period is not given to a figure of another company than the sentence's. The carried period
  is checked only where the sources hold that period for the figure's line (the verdict
  drops it otherwise, :func:`dexter.evidence.verify`), so it can catch a value of another
  period of the same line and never flags a figure against a table of another grain.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from dexter.evidence.periods import Mention, PeriodRef, prior

if TYPE_CHECKING:
    from dexter.evidence.reading import Reading

_REL_YEAR = (r"a\s+year\s+(?:earlier|ago|before)|(?:the\s+)?(?:prior|previous|preceding)[\s-]+"
             r"year(?:['’]s)?(?:\s+(?:quarter|period))?|last\s+year(?:['’]s)?|the\s+year\s+before|"
             r"(?:the\s+)?year[\s-]+(?:ago|earlier)(?:\s+(?:quarter|period))?|(?:the\s+)?same\s+"
             r"(?:quarter|period)\s+(?:of\s+)?(?:last|a|the\s+prior|the\s+previous)\s+year")
_REL_QUARTER = (r"a\s+quarter\s+(?:earlier|ago|before)|(?:the\s+)?(?:prior|previous|preceding|"
                r"last|sequential)\s+quarter(?:['’]s)?")
_YEAR_BASIS = re.compile(rf"\b(?:y/y|yoy|year[\s-]+(?:over|on)[\s-]+year|{_REL_YEAR})")
_QUARTER_BASIS = re.compile(rf"(?:\bq/q|\bqoq\b|\bsequential(?:ly)?\b|\bquarter[\s-]+(?:over|on)"
                            rf"[\s-]+quarter|\b(?:{_REL_QUARTER}))")
_RELATIVE_AFTER = re.compile(
    rf"[\s,]*(?:in|for|during|of|from|than|versus|vs\.?|compared\s+(?:with|to)|against)?\s*"
    rf"(?:(?P<year>{_REL_YEAR})|(?P<quarter>{_REL_QUARTER}))")
_RELATIVE_LEAD = re.compile(
    rf"\s*(?:[-*•#]+\s*)?(?:(?:in|for|during|by\s+contrast|and)\s+)?(?:(?P<year>{_REL_YEAR})|"
    rf"(?P<quarter>{_REL_QUARTER}))\b")


def basis_of(before: str, after: str) -> str:
    """What a change is measured against, from the words right before and after it (lower
    case): ``year``, ``quarter`` or '' (not said). The words after it win."""
    for text in (after, before):
        if "year" not in text and "y/y" not in text and "yoy" not in text and \
                "q/q" not in text and "qoq" not in text and "quarter" not in text and \
                "sequential" not in text:
            continue
        if "y" in text and _YEAR_BASIS.search(text):
            if "q" in text and _QUARTER_BASIS.search(text):
                return ""  # both: not said which
            return "year"
        if "q" in text and _QUARTER_BASIS.search(text):
            return "quarter"
    return ""


def relative_after(text: str) -> str:
    """``year`` or ``quarter`` when ``text`` (lower case, right after a level figure) says
    the figure is of the year or the quarter before ("$1.40 a year earlier"), else ''."""
    return _relative(_RELATIVE_AFTER, text)


def relative_lead(text: str) -> str:
    """The same for the words that open a sentence ("A year earlier, EPS was $1.40")."""
    return _relative(_RELATIVE_LEAD, text)


def _relative(pattern: re.Pattern[str], text: str) -> str:
    if "year" not in text and "quarter" not in text:
        return ""
    found = pattern.match(text)
    if found is None:
        return ""
    return "year" if found.group("year") else "quarter"


def shifted(refs: Sequence[PeriodRef], basis: str) -> tuple[PeriodRef, ...]:
    """The periods before ``refs`` on ``basis`` ('' : the year and the quarter before)."""
    return tuple(b for p in refs for b in prior(p, basis))


def carry_periods(readings: Sequence[Reading], answer: str, units: Sequence[tuple[int, int]],
                  paragraph_starts: Sequence[int], periods: Sequence[Mention]) -> None:
    """Give the figures of a sentence that names no period the paragraph's period (module
    docstring). ``units``: the answer's sentences and table rows in order; ``periods``: the
    periods the answer names, in order."""
    by_unit: dict[tuple[int, int], list[Reading]] = {}
    wanting = False
    for r in readings:
        if not r.in_table:
            by_unit.setdefault(r.unit, []).append(r)
            wanting = wanting or (not r.periods and r.role != "cagr")
    if not wanting:
        return  # every figure names its period
    starts = [p.start for p in periods]
    # the last sentence of the paragraph that named periods (read only when needed)
    last: tuple[list[Reading], list[Mention]] | None = None
    paragraph = -2
    for unit in units:
        start, end = unit
        k = bisect.bisect_right(paragraph_starts, start) - 1
        if k != paragraph:
            paragraph, last = k, None
        if answer[start:end].lstrip()[:1] in ("#", "|"):
            last = None  # a heading or a table row starts afresh
            continue
        first = bisect.bisect_left(starts, start)
        found = by_unit.get(unit, [])
        if first < len(starts) and starts[first] < end:
            last = found, list(periods[first:bisect.bisect_left(starts, end, first)])
            continue
        if last is None or not any(not r.periods and r.role != "cagr" for r in found):
            continue
        state = _state_of(last[0], last[1], answer)
        if state is None:
            continue
        refs, text, companies = state
        for r in found:
            if r.periods or r.role == "cagr":
                continue
            if r.companies and not r.company_inherited and companies and \
                    not set(r.companies) & set(companies):
                continue  # another company's figure
            if r.is_base or r.relative:
                r.periods, r.period_text = shifted(refs, r.relative or r.basis), ""
            else:
                r.periods, r.period_text = refs, text
            r.period_inherited = True
            if r.role in ("growth", "difference") and r.periods and not r.base:
                r.base = shifted(r.periods, r.basis)


def _state_of(found: Sequence[Reading], named: Sequence[Mention], answer: str
              ) -> tuple[tuple[PeriodRef, ...], str, tuple[str, ...]] | None:
    """The period a sentence naming ``named`` carries: the one it names, when it names one
    period only (however often) and its figures are not all bases; None when it names
    several ("from $31.5 billion in 2020 to $53.8 billion in 2021": ambiguous), or a part
    of a year."""
    refs = named[-1].refs
    if any(p.refs != refs for p in named) or any(ref.kind == "partial" for ref in refs):
        return None
    if found and all(r.is_base or r.relative for r in found):
        return None
    companies = tuple(dict.fromkeys(c for r in found for c in r.companies))
    return refs, answer[named[-1].start:named[-1].end], companies
