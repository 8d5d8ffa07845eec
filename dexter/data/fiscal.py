"""A company's fiscal calendar, and the label of any period in it (pure functions).

Labels come from the company's own fiscal year end and the period's dates, never from the
``fy``/``fp`` of whichever filing reported a fact: filers put the year the fiscal year
*started* in ``fy`` (NVIDIA FY2011-FY2014), a 10-K that tags its quarterly table says
``fp=FY`` for every quarter (Apple FY2018), and a comparative carries the quarter of the
filing that reported it (a year-end balance first seen in a Q1 10-Q).

- The fiscal year end is ``fiscalYearEnd`` from the submissions feed (``"0926"``), or the
  most common month and day of the 10-K annual periods' ends. Companies on 52/53-week
  years end within a week of it, so dates within :data:`TOLERANCE_DAYS` match.
- A fiscal year is named by the calendar year it ends in (Apple's year to 2024-09-28 is
  FY2024, NVIDIA's to 2025-01-26 is FY2025), except that a year ending in the first week
  of January belongs to the year before (a 52/53-week year "ending December 31").
- A quarter is numbered by the months since the previous fiscal year end (Q4 ends at the
  year end). Periods whose ends are a few days apart are the same period.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

TOLERANCE_DAYS = 7


@dataclass(frozen=True, slots=True)
class FiscalCalendar:
    """The month and day a company's fiscal year nominally ends on."""

    month: int
    day: int

    @classmethod
    def parse(cls, mmdd: str | None) -> FiscalCalendar | None:
        """From submissions' ``fiscalYearEnd`` (``"0926"``); None when absent or invalid."""
        text = (mmdd or "").strip()
        if len(text) != 4 or not text.isdigit():
            return None
        month, day = int(text[:2]), int(text[2:])
        if not 1 <= month <= 12 or not 1 <= day <= 31:
            return None
        return cls(month, day)

    @classmethod
    def infer(cls, annual_ends: Iterable[str]) -> FiscalCalendar:
        """The most common month and day among the ends of annual (10-K) periods,
        clustering 52/53-week ends within a week. Calendar year when there are none."""
        ends = [dt.date.fromisoformat(e) for e in annual_ends]
        if not ends:
            return cls(12, 31)
        votes: Counter[tuple[int, int]] = Counter()
        for end in ends:
            votes[(end.month, end.day)] += sum(
                1 for other in ends if abs(_day_of_year_gap(end, other)) <= TOLERANCE_DAYS)
        (month, day), _ = votes.most_common(1)[0]
        return cls(month, day)

    def year_end_in(self, year: int) -> dt.date:
        """The nominal fiscal year end in calendar ``year`` (Feb 29 falls back to 28)."""
        day = min(self.day, _days_in_month(year, self.month))
        return dt.date(year, self.month, day)

    def year_end_for(self, end: dt.date) -> dt.date:
        """The nominal end of the fiscal year that contains the date ``end``."""
        candidate = self.year_end_in(end.year)
        if end > candidate + dt.timedelta(days=TOLERANCE_DAYS):
            candidate = self.year_end_in(end.year + 1)
        elif end <= self.year_end_in(end.year - 1) + dt.timedelta(days=TOLERANCE_DAYS):
            candidate = self.year_end_in(end.year - 1)
        return candidate

    def is_year_end(self, end: dt.date) -> bool:
        """True when ``end`` is (within a week of) a fiscal year end."""
        return abs((end - self.year_end_for(end)).days) <= TOLERANCE_DAYS

    def fiscal_year(self, end: dt.date) -> int:
        """The fiscal year a period ending on ``end`` belongs to."""
        year_end = self.year_end_for(end)
        actual = end if abs((end - year_end).days) <= TOLERANCE_DAYS else year_end
        if actual.month == 1 and actual.day <= TOLERANCE_DAYS:
            return actual.year - 1
        return year_end.year

    def quarter(self, end: dt.date) -> int:
        """1-4: the fiscal quarter that ends on (about) ``end``."""
        year_end = self.year_end_for(end)
        previous = self.year_end_in(year_end.year - 1)
        months = (end - previous).days / 30.44
        return max(1, min(4, round(months / 3)))

    def label(self, end: str, *, annual: bool) -> str:
        """``FY2024`` or ``Q3 2024`` for a period ending on ``end`` (ISO date)."""
        date = dt.date.fromisoformat(end)
        year = self.fiscal_year(date)
        return f"FY{year}" if annual else f"Q{self.quarter(date)} {year}"

    def describe(self) -> str:
        """``fiscal year ends around Sep 26``."""
        return f"fiscal year ends around {dt.date(2001, self.month, self.day):%b} {self.day}"


def _days_in_month(year: int, month: int) -> int:
    following = dt.date(year + (month == 12), month % 12 + 1, 1)
    return (following - dt.timedelta(days=1)).day


def _day_of_year_gap(a: dt.date, b: dt.date) -> int:
    """Days between two dates' month-and-day, across the year boundary (Dec 30 ~ Jan 2)."""
    gap = (a.replace(year=2001) if (a.month, a.day) != (2, 29) else dt.date(2001, 2, 28)) - \
          (b.replace(year=2001) if (b.month, b.day) != (2, 29) else dt.date(2001, 2, 28))
    days = gap.days
    if days > 182:
        days -= 365
    elif days < -182:
        days += 365
    return days


def calendar_for(companyfacts: Mapping[str, Any], fiscal_year_end: str | None = None) -> FiscalCalendar:
    """The calendar from submissions' ``fiscalYearEnd`` when given, else from the facts."""
    parsed = FiscalCalendar.parse(fiscal_year_end)
    if parsed is not None:
        return parsed
    ends: list[str] = []
    for concept in companyfacts.get("facts", {}).get("us-gaap", {}).values():
        for rows in concept.get("units", {}).values():
            for row in rows:
                start, end = row.get("start"), row.get("end")
                if row.get("form") not in ("10-K", "10-K/A") or not start or not end:
                    continue
                try:
                    days = (dt.date.fromisoformat(end) - dt.date.fromisoformat(start)).days
                except (TypeError, ValueError):
                    continue
                if 350 <= days <= 380:
                    ends.append(end)
        if len(ends) > 400:
            break
    return FiscalCalendar.infer(ends)
