"""Periods: the ones an answer names in prose, the ones a data table's rows hold, and when
the two are the same period.

Prose names periods many ways; each becomes a :class:`PeriodRef`:

- a fiscal year: ``FY2024``, ``FY 2024``, ``FY24``, ``FY'24``, ``fiscal 2024``, ``fiscal year
  2024``, ``the 2024 fiscal year``, ``fiscal years 2024 and 2023``;
- a calendar or bare year: ``2024``, ``calendar 2024``, ``CY2024`` (a bare year is the
  fiscal year of that name, or the one that mostly falls in that calendar year: NVIDIA's
  year to January 26, 2025 is "2024" to many writers);
- a quarter: ``Q3 FY2025``, ``Q3 2025``, ``Q3'25``, ``3Q25``, ``the third quarter of fiscal
  2025``, ``fiscal third quarter``; written without "fiscal"/"FY" it may also be the
  calendar quarter (for Apple ``Q3 2025`` may be the June or the September quarter);
- a quarter by the month it ends in: ``the June quarter``, ``the September 2024 quarter``;
- a period by its end date: ``the year ended September 28, 2024``, ``three months ended
  June 28, 2025``, ``as of September 28, 2024``;
- trailing twelve months: ``TTM``, ``LTM``, ``trailing twelve months``;
- half years and year-to-date (``H1``, ``nine months``, ``YTD``): no table row is one of
  these, so they only constrain derived figures.

A table row's period (:class:`RowPeriod`) comes from its index label (``FY2024
(2024-09-28)``, ``Q1 2026 (2025-12-27)``, ``Q3 FY2025 (2025-06-28)``, ``TTM to 2025-12-27``)
and its date: the data layer already named it in the company's fiscal calendar, so
matching needs no calendar of its own, except where prose is calendar-based ("the June
quarter", a bare year): then the row's end date decides. Pure functions.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Collection
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

RefKind = Literal["fy", "year", "calendar", "quarter", "month", "date", "ttm", "partial"]
RowKind = Literal["fy", "quarter", "ttm", "partial", "instant", "other"]
TOLERANCE_DAYS = 7
"""52/53-week years end within a week of a nominal date."""

MONTHS = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4,
    "apr": 4, "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8,
    "september": 9, "sept": 9, "sep": 9, "october": 10, "oct": 10, "november": 11, "nov": 11,
    "december": 12, "dec": 12,
}
_ORDINALS = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4,
             "4th": 4}


@dataclass(frozen=True, slots=True)
class PeriodRef:
    """A period prose names."""

    kind: RefKind
    year: int | None = None
    """The fiscal year (``fy``, ``quarter``, ``month`` of a fiscal year) or the calendar year
    (``year``, ``calendar``, ``month`` of a calendar year)."""
    quarter: int | None = None
    month: int | None = None
    """``month``: the month the quarter ends in."""
    end: dt.date | None = None
    """``date`` (and ``ttm`` "ended ..."): the period's end."""
    annual: bool | None = None
    """``date``: a year ended (True), a quarter ended (False), a point in time (None)."""
    fiscal: bool = True
    """``quarter``: False when written without "fiscal"/"FY" (``Q3 2025``), so the calendar
    quarter is meant as much as the fiscal one; ``month``: True when the year is a fiscal
    year ("the December quarter of fiscal 2026")."""
    calendar: bool = False
    """``month``: the year is the calendar year the quarter ends in ("the December 2025
    quarter"); ``partial``: a calendar year's half ("H1 calendar 2025")."""
    span: int = 0
    """``partial``: how many quarters it sums (2: a half, 3: nine months; 0: not said). Its
    last quarter is ``quarter`` of ``year`` (``fiscal``; a bare year may be either), or the
    quarter ending in ``month`` of calendar ``year``, or the one ending on ``end``."""

    def describe(self) -> str:
        """How a reason names the period: ``FY2024``, ``Q3 FY2025``, ``the June quarter``."""
        if self.kind in ("fy", "year"):
            return f"FY{self.year}"
        if self.kind == "calendar":
            return f"calendar {self.year}"
        if self.kind == "quarter":
            year = f" FY{self.year}" if self.year and self.fiscal else \
                f" {self.year}" if self.year else ""
            return f"Q{self.quarter}{year}"
        if self.kind == "month":
            name = dt.date(2001, self.month or 1, 1).strftime("%B")
            return f"the {name} quarter" + (f" of {self.year}" if self.year else "")
        if self.kind == "date" and self.end is not None:
            what = {True: "the year ended ", False: "the quarter ended ", None: ""}[self.annual]
            return f"{what}{self.end:%B} {self.end.day}, {self.end.year}"
        if self.kind == "ttm":
            return "the trailing twelve months"
        if self.kind == "partial" and self.span:
            what = "the first half" if self.span == 2 and self.quarter == 2 else \
                "the second half" if self.span == 2 and self.quarter == 4 else \
                f"the {'first ' if self.quarter else ''}{'six' if self.span == 2 else 'nine'} months"
            if self.end is not None:
                return f"{what} ended {self.end:%B} {self.end.day}, {self.end.year}"
            if self.month is not None and self.year is not None:
                return f"{what} ended {dt.date(2001, self.month, 1):%B} {self.year}"
            if self.year is not None:
                return f"{what} of {'FY' if self.fiscal else 'calendar ' if self.calendar else ''}" \
                    f"{self.year}"
            return what
        return "a part of the year"


@dataclass(slots=True)
class Mention:
    """A period named at ``start``-``end`` of a text (several for ``fiscal years 2023 and
    2024``)."""

    start: int
    end: int
    refs: tuple[PeriodRef, ...]


@dataclass(frozen=True, slots=True)
class RowPeriod:
    """The period of one table row."""

    kind: RowKind
    year: int | None
    quarter: int | None
    end: dt.date | None
    label: str
    """How a reason names it: ``FY2024``, ``Q3 FY2025``, ``TTM to 2025-12-27``."""


# -- prose ------------------------------------------------------------------------------------

_MONTH = r"(?:january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)"
_YEAR2 = r"(?:['’]?\d{2}(?!\d))"
_YEAR4 = r"(?:(?:19|20)\d{2}(?!\d))"
_FISCAL = r"(?:fiscal(?:[\s-]+year)?|fy)"
_DATE = rf"(?:{_MONTH}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+{_YEAR4}|\d{{1,2}}\s+{_MONTH}\s+{_YEAR4}|{_YEAR4}-\d{{2}}-\d{{2}})"
_SPAN = (r"(?P<span>(?:fiscal\s+)?years?|twelve\s+months|12\s+months|quarters?|three\s+months|"
         r"3\s+months|thirteen\s+weeks|13\s+weeks|fourteen\s+weeks|14\s+weeks|fiscal\s+quarters?|"
         r"six\s+months|6\s+months|nine\s+months|9\s+months|(?:52|53)\s+weeks|period)")

_ALTERNATIVES: tuple[str, ...] = (
        # the year ended September 28, 2024 / three months ended June 28, 2025
        rf"(?P<ended>{_SPAN}\s+(?:then\s+)?(?:ended|ending)\s+(?:on\s+)?(?P<edate>{_DATE}))",
        # as of September 28, 2024
        rf"(?P<asof>(?:as\s+of|as\s+at|at|on)\s+(?P<adate>{_DATE}))",
        # trailing twelve months
        r"(?P<ttm>\b(?:ttm|ltm|trailing[\s-]+(?:twelve|12)[\s-]+months?|last[\s-]+(?:twelve|12)"
        r"[\s-]+months|trailing[\s-]+four[\s-]+quarters)\b)",
        # H1 2025, the first half of fiscal 2025, nine months, YTD
        r"(?P<partial>\b(?P<pw>h[12]|[12]h|first\s+half|second\s+half|[69]m|ytd|year[\s-]to[\s-]date|"
        r"first\s+(?:nine|six)\s+months|first\s+(?:three|two)\s+quarters|nine[\s-]months?|"
        r"six[\s-]months?)\b"
        # ... of fiscal 2025, FY25, calendar 2025, 2025; ... ended June 2025
        rf"(?:(?:\s+of|,)?\s+(?:the\s+)?(?:(?P<pf>{_FISCAL})[\s-]*['’]?\s*(?P<pfy>{_YEAR4}|{_YEAR2})"
        rf"|(?P<pc>calendar(?:\s+year)?|cy)\s*['’]?\s*(?P<pcy>{_YEAR4}|{_YEAR2})"
        rf"|(?P<py>{_YEAR4}|['’]\d{{2}}(?!\d)))(?![\w%])"
        rf"|\s+(?:then\s+)?(?:ended|ending)\s+(?P<pm>{_MONTH})\.?,?\s+(?P<pmy>{_YEAR4}))?)",
        # fiscal years 2023 and 2024 / FY2023-FY2024
        rf"(?P<years>\b(?:fiscal\s+years|fy)\s*(?P<ylist>{_YEAR4}(?:\s*(?:,|and|&|to|through|-|–)\s*"
        rf"(?:fy\s*)?{_YEAR4})+))",
        # Q3 FY2025, Q3 2025, Q3'25, Q3 of fiscal 2025, fiscal Q3 2025, FQ3 2025
        rf"(?P<q>\b(?P<qf1>fiscal\s+)?f?q(?P<qn>[1-4])(?:\s*(?:of\s+)?(?P<qf2>{_FISCAL})?\s*['’-]?\s*"
        rf"(?P<qy>{_YEAR4}|{_YEAR2}))?(?![\w]))",
        # 3Q25, 3Q 2025, 3QFY25
        rf"(?P<q2>\b(?P<q2n>[1-4])q\s*(?P<q2f>fy)?\s*['’]?\s*(?P<q2y>{_YEAR4}|\d{{2}})\b)",
        # the third quarter of fiscal 2025, fiscal third-quarter 2025, third fiscal quarter
        rf"(?P<oq>\b(?P<oqf1>fiscal\s+)?(?P<oqn>first|second|third|fourth|1st|2nd|3rd|4th)"
        rf"[\s-]+(?P<oqf2>fiscal[\s-]+)?quarter(?:\s+of)?(?:[\s,]+(?:the\s+)?(?P<oqf3>{_FISCAL})?"
        rf"\s*['’]?\s*(?P<oqy>{_YEAR4}|{_YEAR2}))?)",
        # the June quarter, the September 2024 quarter, June-quarter, the March-2021
        # quarter, Mar-21 qtr, the June '25 quarter
        rf"(?P<mq>\b(?P<mqm>{_MONTH})\.?(?:[\s-]+(?P<mqy>{_YEAR4})|(?:-|\s*['’])(?P<mqys>\d{{2}})"
        rf"(?!\d))?[\s-]+(?:quarter|qtr\b)(?:\s+of\s+"
        rf"(?P<mqf>{_FISCAL})?\s*(?P<mqy2>{_YEAR4}))?)",
        # FY2024, FY 2024, FY24, FY'24, fiscal 2024, fiscal year 2024, fiscal-2024
        rf"(?P<fy>\b{_FISCAL}[\s-]*['’]?\s*(?P<fyy>{_YEAR4}|{_YEAR2}))",
        # the 2024 fiscal year
        rf"(?P<fy2>\b(?P<fy2y>{_YEAR4})\s+fiscal\s+year)",
        # calendar 2024, CY2024, CY24
        rf"(?P<cy>\b(?:calendar(?:\s+year)?|cy)\s*['’]?\s*(?P<cyy>{_YEAR4}|{_YEAR2}))",
        # a bare year (not a date's, not an amount's)
        rf"(?P<year>(?<![\w$€£.,/-]){_YEAR4}(?![\w%/]|[.,]\d|-\d))",
)


_PATTERNS = {re.match(r"\(\?P<(\w+)>", alt).group(1): re.compile(alt, re.IGNORECASE)  # type: ignore[union-attr]
             for alt in _ALTERNATIVES}
_SPAN_WORDS = ("year", "years", "twelve", "12", "quarter", "quarters", "three", "3",
               "thirteen", "13", "fourteen", "14", "six", "6", "nine", "9", "52", "53", "period",
               "fiscal")
# Which alternatives a mention starting with a word may be, in order: the patterns are tried
# only where a mention can start, not at every character of a long answer.
_DISPATCH: dict[str, tuple[str, ...]] = {}
for _word in _SPAN_WORDS:
    _DISPATCH[_word] = ("ended",)
for _word in ("as", "at", "on"):
    _DISPATCH[_word] = ("asof",)
for _word in ("ttm", "ltm", "trailing", "last"):
    _DISPATCH[_word] = ("ttm",)
for _word in ("h1", "h2", "1h", "2h", "first", "second", "9m", "6m", "ytd", "year", "nine", "six"):
    _DISPATCH[_word] = (*_DISPATCH.get(_word, ()), "partial")
_DISPATCH["fiscal"] = ("ended", "years", "q", "oq", "fy")
_DISPATCH["fy"] = ("years", "fy")
for _word in ("first", "second", "third", "fourth", "1st", "2nd", "3rd", "4th"):
    _DISPATCH[_word] = (*_DISPATCH.get(_word, ()), "oq")
for _word in MONTHS:
    _DISPATCH[_word] = ("mq",)
for _word in ("calendar", "cy"):
    _DISPATCH[_word] = ("cy",)
_FY_TOKEN = re.compile(r"fy\d{2,4}|cy\d{2,4}|f?q[1-4]\w*|[1-4]q\w*|(?:19|20)\d{2}")


def _alternatives(token: str) -> tuple[str, ...]:
    found = _DISPATCH.get(token)
    if found is not None:
        return found
    if token[0] in "fcq1234" and _FY_TOKEN.fullmatch(token):
        if token.startswith("fy"):
            return ("years", "fy")
        if token.startswith("cy"):
            return ("cy",)
        if token[0] in "fq":
            return ("q",)
        if token[1] == "q":
            return ("q2",)
        return ("fy2", "year")
    return ()


def _year(text: str) -> int:
    digits = text.strip("'’ ")
    value = int(digits)
    return value if value >= 100 else 2000 + value if value < 70 else 1900 + value


@lru_cache(maxsize=4096)
def _date(text: str) -> dt.date | None:
    text = text.strip().lower().replace(",", " ")
    iso = _ISO_DATE.fullmatch(text)
    try:
        if iso:
            return dt.date(int(iso[1]), int(iso[2]), int(iso[3]))
        words = _DATE_WORD.findall(text)
        month = next(MONTHS[w] for w in words if w in MONTHS)
        numbers = [int(w) for w in words if w.isdigit()]
        day, year = (numbers[0], numbers[1]) if numbers[0] < 100 else (numbers[1], numbers[0])
        return dt.date(year, month, day)
    except (StopIteration, IndexError, ValueError):
        return None


_WORD = re.compile(r"[A-Za-z0-9]+")
_ISO_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_DATE_WORD = re.compile(r"[a-z]+|\d+")
_YEAR = re.compile(r"(?:19|20)\d{2}")
_RANGE = re.compile(r"to|through|-|–")


def find_periods(text: str, words: Collection[str] | None = None) -> list[Mention]:
    """Every period ``text`` names, in order; ``words``: the distinct words of ``text`` in
    lower case (letters and digits), when the caller has them already."""
    # table headers and labels repeat: those are remembered, an answer is read once
    return list(_short_periods(text) if len(text) < 200 else _find_periods(text, words))


@lru_cache(maxsize=4096)
def _short_periods(text: str) -> tuple[Mention, ...]:
    return _find_periods(text)


def _find_periods(text: str, words: Collection[str] | None = None) -> tuple[Mention, ...]:
    out: list[Mention] = []
    reached = 0
    lowered = text.lower()
    for start, token in _starts(lowered, words):
        if start < reached or (start and text[start - 1].isalnum()):
            continue
        names = _alternatives(token)
        if token == "fiscal" and lowered[start + 6:start + 12].lstrip(" \t\n-")[:1] in _YEAR_START:
            names = ("fy",)  # "fiscal 2024": no span, list or quarter can start so
        for name in names:
            if name == "ended" and not _may_end(lowered, start):
                continue
            match = _PATTERNS[name].match(text, start)
            if match is None:
                continue
            # the same period is named again and again: its references are read once (by
            # the alternative, the words and the characters around them, all that the
            # match's groups depend on)
            end = match.end()
            key = (name, start == 0, text[max(0, start - 1):end + 2])
            refs = _REFS.get(key)
            if refs is None:
                refs = _refs(match)
                if len(_REFS) < 8192:
                    _REFS[key] = refs
            if refs:
                out.append(Mention(match.start(), match.end(), refs))
                reached = match.end()
                break
    return tuple(out)


_REFS: dict[tuple[str, bool, str], tuple[PeriodRef, ...]] = {}
"""The references of a period as written, by the alternative that read it (read once)."""


def _starts(lowered: str, words: Collection[str] | None = None) -> list[tuple[int, str]]:
    """Where a period can start in ``lowered``: ``(offset, word)`` for every word a
    period's name begins with, in order. The words the text holds are found first (or
    given), then each one's places (a scan for one literal word is fast; a Python loop over
    every word of a long answer is not)."""
    if len(lowered) < 400:
        return [(m.start(), m[0]) for m in _WORD.finditer(lowered) if _alternatives(m[0])]
    found = [(m.start(), token) for token in (set(_WORD.findall(lowered)) if words is None
                                              else words)
             if _alternatives(token) and _SPAN_UNIT.get(token, "") in lowered
             for m in _literal(token).finditer(lowered)]
    found.sort()
    return found


def _may_end(lowered: str, start: int) -> bool:
    """Whether "... ended"/"... ending" can follow a span word at ``start``: the next "end"
    is near, or what lies before it is mostly spaces (a span and "then" are at most 18
    letters: "fiscal quarters then")."""
    at = lowered.find("end", start)
    if at < 0:
        return False
    return at - start <= 40 or len("".join(lowered[start:start + 40].split())) <= 18


_SPAN_UNIT = {"3": "month", "6": "month", "9": "month", "12": "month", "13": "week",
              "14": "week", "52": "week", "53": "week"}
"""A number starts a period only before its unit ("3 months ended", "52 weeks ended")."""
_YEAR_START = frozenset("0123456789'’")
_SPACE_AFTER = frozenset(("3", "6", "9", "12", "13", "14", "52", "53", "as", "at", "on"))
"""Words that start a period only before a space ("3 months ended", "as of", "at Sep 28")."""


@lru_cache(maxsize=4096)
def _literal(token: str) -> re.Pattern[str]:
    """``token`` as a whole word of a lower-case text (the literal first, so the scan
    skips to its places)."""
    word = re.escape(token)
    after = r"(?=\s)" if token in _SPACE_AFTER else "(?![a-z0-9])"
    return re.compile(rf"{word}(?<![a-z0-9]{word}){after}")


def _partial_ref(m: re.Match[str]) -> PeriodRef:
    """A half or nine months: its quarters (see :attr:`PeriodRef.span`)."""
    word = " ".join(m.group("pw").lower().split())
    if "ytd" in word or "date" in word:
        return PeriodRef("partial")
    span = 3 if word in ("9m", "nine months", "nine-months", "nine month", "nine-month",
                         "first nine months", "first three quarters") else 2
    last = 4 if word in ("h2", "2h", "second half") else span
    if m.group("pm"):
        return PeriodRef("partial", year=int(m.group("pmy")), month=MONTHS[
            m.group("pm").lower().rstrip(".")], calendar=True, span=span)
    if m.group("pf"):
        return PeriodRef("partial", year=_year(m.group("pfy")), quarter=last, span=span)
    if m.group("pc"):
        return PeriodRef("partial", year=_year(m.group("pcy")), quarter=last, fiscal=False,
                         calendar=True, span=span)
    year = _year(m.group("py")) if m.group("py") else None
    return PeriodRef("partial", year=year, quarter=last, fiscal=year is None, span=span)


def _refs(m: re.Match[str]) -> tuple[PeriodRef, ...]:
    groups = m.groupdict()

    def g(name: str) -> str:
        return groups.get(name) or ""

    if g("ended"):
        end = _date(g("edate"))
        span = g("span").lower()
        if end is None:
            return ()
        if any(w in span for w in ("six", "6 ", "nine", "9 ")):
            return (PeriodRef("partial", end=end, span=3 if "nine" in span or "9" in span
                              else 2),)
        annual = "year" in span or "twelve" in span or "12" in span or "52" in span \
            or "53" in span
        quarterly = "quarter" in span or "three" in span or "3 " in span or "13" in span \
            or "14" in span or "thirteen" in span or "fourteen" in span
        return (PeriodRef("date", end=end, annual=True if annual else False if quarterly
                          else None),)
    if g("asof"):
        end = _date(g("adate"))
        return (PeriodRef("date", end=end),) if end else ()
    if g("ttm"):
        return (PeriodRef("ttm"),)
    if g("partial"):
        return (_partial_ref(m),)
    if g("years"):
        years = [int(y) for y in _YEAR.findall(g("ylist"))]
        text = g("ylist")
        if _RANGE.search(text) and len(years) == 2 and years[0] != years[1]:
            low, high = sorted(years)
            if high - low <= 12:
                years = list(range(low, high + 1))
        return tuple(PeriodRef("fy", year=y) for y in dict.fromkeys(years))
    if g("q"):
        year = _year(g("qy")) if g("qy") else None
        fiscal = bool(g("qf1") or g("qf2") or g("q").lower().startswith("fq"))
        return (PeriodRef("quarter", year=year, quarter=int(g("qn")), fiscal=fiscal),)
    if g("q2"):
        return (PeriodRef("quarter", year=_year(g("q2y")), quarter=int(g("q2n")),
                          fiscal=bool(g("q2f"))),)
    if g("oq"):
        year = _year(g("oqy")) if g("oqy") else None
        fiscal = bool(g("oqf1") or g("oqf2") or g("oqf3"))
        return (PeriodRef("quarter", year=year, quarter=_ORDINALS[g("oqn").lower()],
                          fiscal=fiscal),)
    if g("mq"):
        month = MONTHS[g("mqm").lower()]
        if g("mqy") or g("mqys"):
            year = int(g("mqy")) if g("mqy") else _year(g("mqys"))
            return (PeriodRef("month", year=year, month=month, calendar=True),)
        named = g("mqy2")
        return (PeriodRef("month", year=int(named) if named else None, month=month,
                          fiscal=bool(g("mqf"))),)
    if g("fy"):
        return (PeriodRef("fy", year=_year(g("fyy"))),)
    if g("fy2"):
        return (PeriodRef("fy", year=int(g("fy2y"))),)
    if g("cy"):
        return (PeriodRef("calendar", year=_year(g("cyy"))),)
    if g("year"):
        return (PeriodRef("year", year=int(g("year"))),)
    return ()


# -- table rows -------------------------------------------------------------------------------

_ROW_FY = re.compile(r"^\s*FY\s*(\d{4})\b", re.IGNORECASE)
_ROW_Q = re.compile(r"^\s*Q([1-4])\s*(?:FY)?\s*(\d{4})\b", re.IGNORECASE)
_ROW_TTM = re.compile(r"^\s*(?:TTM|LTM)\b", re.IGNORECASE)
_ISO = re.compile(r"(\d{4})-(\d{2})-(\d{2})")


def row_period(label: str, date: str = "", hint: str = "") -> RowPeriod:
    """The period of a table row from its index label and ISO date; ``hint`` is the
    table's title (``income_statements[AAPL, quarterly]``), read when the label names no
    period."""
    end = _iso(date) or _iso(label)
    if (m := _ROW_FY.match(label)) is not None:
        return RowPeriod("fy", int(m[1]), None, end, f"FY{m[1]}")
    if (m := _ROW_Q.match(label)) is not None:
        return RowPeriod("quarter", int(m[2]), int(m[1]), end, f"Q{m[1]} FY{m[2]}")
    if _ROW_TTM.match(label):
        return RowPeriod("ttm", None, None, end,
                         f"the twelve months to {end.isoformat()}" if end else "TTM")
    lowered = hint.lower()
    if end is not None and ("annual" in lowered or "quarterly" in lowered):
        kind: RowKind = "fy" if "annual" in lowered else "quarter"
        year = end.year - 1 if end.month == 1 and end.day <= TOLERANCE_DAYS else end.year
        label_text = f"FY{year}" if kind == "fy" else f"the quarter to {end.isoformat()}"
        return RowPeriod(kind, year if kind == "fy" else None, None, end, label_text)
    return RowPeriod("other", None, None, end, label.strip() or (end.isoformat() if end else ""))


def _iso(text: str) -> dt.date | None:
    m = _ISO.search(text or "")
    if m is None:
        return None
    try:
        return dt.date(int(m[1]), int(m[2]), int(m[3]))
    except ValueError:
        return None


def _month_of(end: dt.date) -> tuple[int, int]:
    """The (year, month) a period ending on ``end`` is named for: a 52/53-week period that
    ends in the first days of a month belongs to the month before (Apple's June quarter
    may end on July 1)."""
    shifted = end - dt.timedelta(days=TOLERANCE_DAYS) if end.day <= TOLERANCE_DAYS else end
    return shifted.year, shifted.month


month_of = _month_of
"""The (year, month) a period ending on a date is named for (for derived figures)."""


@dataclass(frozen=True, slots=True)
class Calendar:
    """A company's fiscal year end (month and day), for naming a period known only by its
    end date: "Three Months Ended March 3, 2023" is Adobe's Q1 FY2023."""

    month: int
    day: int

    def year_end(self, year: int) -> dt.date:
        """The nominal fiscal year end in calendar ``year``."""
        return dt.date(year, self.month, min(self.day, 28 if self.month == 2 else 30
                                              if self.month in (4, 6, 9, 11) else 31))

    def fiscal_year(self, end: dt.date) -> int:
        """The fiscal year a period ending on ``end`` belongs to (named by the calendar year
        the fiscal year ends in; one ending in the first week of January is the year
        before's)."""
        year = end.year
        while self.year_end(year) + dt.timedelta(days=TOLERANCE_DAYS) < end:
            year += 1
        while self.year_end(year - 1) + dt.timedelta(days=TOLERANCE_DAYS) >= end:
            year -= 1
        close = self.year_end(year)
        return year - 1 if close.month == 1 and close.day <= TOLERANCE_DAYS else year

    def quarter(self, end: dt.date) -> int:
        """1-4: the fiscal quarter a quarter ending on ``end`` is."""
        year = end.year
        while self.year_end(year) + dt.timedelta(days=TOLERANCE_DAYS) < end:
            year += 1
        while self.year_end(year - 1) + dt.timedelta(days=TOLERANCE_DAYS) >= end:
            year -= 1
        months = (end - self.year_end(year - 1)).days / 30.44
        return max(1, min(4, round(months / 3)))

    def text(self) -> str:
        """``MMDD``, as the SEC's ``fiscalYearEnd`` writes it."""
        return f"{self.month:02d}{self.day:02d}"

    @classmethod
    def parse(cls, text: str) -> Calendar | None:
        """From ``MMDD``; None when it is not one."""
        if len(text) != 4 or not text.isdigit():
            return None
        month, day = int(text[:2]), int(text[2:])
        return cls(month, day) if 1 <= month <= 12 and 1 <= day <= 31 else None


_FISCAL_END = re.compile(rf"(?<!quarter )(?<!quarter of )fiscal\s+(?:year\s+)?(?:(?P<y>{_YEAR4})\s+)?(?:ended|ending)\s+"
                         rf"(?:on\s+)?(?P<date>{_DATE})", re.IGNORECASE)
_QUARTER_END = re.compile(rf"(?P<q>first|second|third|fourth)\s+quarter\s+(?:of\s+)?fiscal\s+"
                          rf"(?:year\s+)?(?P<y>{_YEAR4})\s+(?:ended|ending)\s+(?P<date>{_DATE})",
                          re.IGNORECASE)


def calendar_in(text: str) -> Calendar | None:
    """The fiscal year end a filing or a release states ("for the fiscal year ended
    September 28, 2024"; "first quarter fiscal year 2023 ended March 3, 2023"), or None."""
    head = text[:400_000]
    found = _FISCAL_END.search(head)
    if found is not None:
        end = _date(found.group("date"))
        if end is not None:
            return Calendar(end.month, end.day)
    found = _QUARTER_END.search(head)
    if found is not None:
        end = _date(found.group("date"))
        if end is not None:
            back = (4 - _ORDINALS[found.group("q").lower()]) * 91
            year_end = end + dt.timedelta(days=back)
            return Calendar(year_end.month, year_end.day)
    return None


def fiscal_year_of(end: dt.date) -> int:
    """The fiscal year a year ending on ``end`` is named for (the calendar year it ends in;
    a year ending in the first week of January belongs to the year before)."""
    return end.year - 1 if end.month == 1 and end.day <= TOLERANCE_DAYS else end.year


def column_period(header: str, calendar: Calendar | None = None) -> RowPeriod | None:
    """The period a text table's column header names (``2024``, ``Years ended|September
    28, 2024``, ``Three Months Ended|June 28, 2025``), or None when it names none; with the
    source's ``calendar`` a quarter known by its end date gets its fiscal number."""
    if _ROW_FY.match(header) or _ROW_Q.match(header) or _ROW_TTM.match(header):
        return row_period(header)  # a data table's own label: "Q1 2026 (2025-12-27)"
    found = find_periods(header.replace("|", " "))
    if len(found) != 1 or len(found[0].refs) != 1:
        return None
    ref = found[0].refs[0]
    if ref.kind in ("fy", "year") and ref.year is not None:
        return RowPeriod("fy", ref.year, None, None, f"FY{ref.year}")
    if ref.kind == "quarter" and ref.quarter is not None and ref.fiscal:
        return RowPeriod("quarter", ref.year, ref.quarter, None, ref.describe())
    if ref.kind == "date" and ref.end is not None:
        if ref.annual is True:
            year = calendar.fiscal_year(ref.end) if calendar else fiscal_year_of(ref.end)
            return RowPeriod("fy", year, None, ref.end, f"FY{year}")
        if ref.annual is False:
            if calendar is not None:
                year, quarter = calendar.fiscal_year(ref.end), calendar.quarter(ref.end)
                return RowPeriod("quarter", year, quarter, ref.end, f"Q{quarter} FY{year}")
            return RowPeriod("quarter", None, None, ref.end, ref.describe())
        return RowPeriod("instant", None, None, ref.end, ref.describe())
    if ref.kind == "partial":
        return RowPeriod("partial", None, None, ref.end, ref.describe())
    return None


def compare(ref: PeriodRef, row: RowPeriod) -> bool | None:
    """Whether the table row ``row`` is the period ``ref`` names; None when the row says
    too little to tell (a quarter known only by its end date, for a ``Q3 FY2025``)."""
    if ref.kind == "fy":  # the common case, decided at once (as the rules below decide it)
        if row.kind == "fy":
            return None if row.year is None else row.year == ref.year
        if row.kind in ("quarter", "ttm"):
            return False
    if row.kind == "other":
        return None
    if row.kind == "instant":
        if ref.kind == "date" and ref.end is not None and row.end is not None:
            return abs((row.end - ref.end).days) <= TOLERANCE_DAYS
        return None
    if row.kind == "partial":
        if ref.kind == "partial":
            return None if ref.end is None or row.end is None else \
                abs((row.end - ref.end).days) <= TOLERANCE_DAYS
        return False
    if ref.kind == "quarter" and row.kind == "quarter" and row.quarter is None:
        return None
    if ref.kind in ("fy", "year", "calendar") and row.kind == "fy" and row.year is None:
        return None
    if ref.kind == "date" and ref.end is not None and row.end is None:
        # a filing's "2024" column and "the year ended September 28, 2024"
        if row.kind == "fy" and row.year is not None and ref.annual is not False:
            return fiscal_year_of(ref.end) == row.year
        return None
    return matches(ref, row)


def matches(ref: PeriodRef, row: RowPeriod) -> bool:
    """Whether the table row ``row`` is the period ``ref`` names."""
    if ref.kind == "partial" or row.kind in ("partial", "other", "instant"):
        return False
    if ref.kind == "ttm":
        return row.kind == "ttm" and (ref.end is None or row.end is None
                                      or abs((row.end - ref.end).days) <= TOLERANCE_DAYS)
    if ref.kind == "fy":
        return row.kind == "fy" and row.year == ref.year
    if ref.kind in ("year", "calendar"):
        if row.kind != "fy" or ref.year is None:
            return False
        if ref.kind == "year" and row.year == ref.year:
            return True
        if row.end is None:
            return row.year == ref.year
        # the fiscal year that mostly lies in that calendar year
        return dt.date(ref.year, 6, 30) < row.end <= dt.date(ref.year + 1, 6, 30)
    if ref.kind == "quarter":
        if row.kind != "quarter":
            return False
        if row.quarter == ref.quarter and (ref.year is None or row.year == ref.year):
            return True
        if ref.fiscal or row.end is None or ref.quarter is None:
            return False
        year, month = _month_of(row.end)
        return (month + 2) // 3 == ref.quarter and (ref.year is None or year == ref.year)
    if ref.kind == "month":
        if row.kind != "quarter" or row.end is None:
            return False
        year, month = _month_of(row.end)
        if month != ref.month or ref.year is None:
            return month == ref.month
        if ref.calendar:
            return year == ref.year
        return ref.year == row.year or (not ref.fiscal and ref.year == year)
    if ref.kind == "date" and ref.end is not None and row.end is not None:
        if abs((row.end - ref.end).days) > TOLERANCE_DAYS:
            return False
        return ref.annual is None or (row.kind == "fy") == ref.annual
    return False


@lru_cache(maxsize=4096)
def prior(ref: PeriodRef, basis: str = "") -> tuple[PeriodRef, ...]:
    """The periods a change from ``ref`` is measured against: the year before, and for a
    quarter also the quarter before (sequential). ``basis``: what the words compare with,
    ``year`` (year on year, "a year earlier": the year-ago period only) or ``quarter``
    (quarter on quarter, sequentially: the quarter before only; a year has none)."""
    if basis:
        return _prior_on(ref, basis)
    if ref.kind in ("fy", "year", "calendar") and ref.year is not None:
        return (PeriodRef(ref.kind, year=ref.year - 1),)
    if ref.kind == "quarter" and ref.quarter is not None:
        year_ago = PeriodRef("quarter", year=ref.year - 1 if ref.year else None,
                             quarter=ref.quarter, fiscal=ref.fiscal)
        q, y = (ref.quarter - 1, ref.year) if ref.quarter > 1 else \
            (4, ref.year - 1 if ref.year else None)
        return (year_ago, PeriodRef("quarter", year=y, quarter=q, fiscal=ref.fiscal))
    if ref.kind == "month" and ref.month is not None:
        return (PeriodRef("month", year=ref.year - 1 if ref.year else None, month=ref.month,
                          fiscal=ref.fiscal, calendar=ref.calendar),)
    if ref.kind == "date" and ref.end is not None:
        try:
            return (PeriodRef("date", end=ref.end.replace(year=ref.end.year - 1),
                              annual=ref.annual),)
        except ValueError:
            return ()
    return ()


def _prior_on(ref: PeriodRef, basis: str) -> tuple[PeriodRef, ...]:
    both = prior(ref)
    if basis == "year":
        return both[:1]
    if ref.kind == "quarter":
        return both[1:]
    if ref.kind == "month" and ref.month is not None:
        # the quarter three months before; a fiscal year named with it may end between
        month, year = ref.month - 3, ref.year
        if month < 1:
            month += 12
            year = (year - 1 if ref.calendar else None) if year is not None else None
        return (PeriodRef("month", year=year, month=month, fiscal=ref.fiscal,
                          calendar=ref.calendar and year is not None),)
    if ref.kind == "date" and ref.end is not None and ref.annual is False:
        return (PeriodRef("date", end=ref.end - dt.timedelta(days=91), annual=False),)
    return ()
