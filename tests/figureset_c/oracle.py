"""The independent oracle of held-out set C: every figure's label, decided from the raw SEC
companyfacts JSON (tests/fixtures/sec-real, a copy of ../shared/data/sec-real) with a small
concept table of its own. Imports nothing of dexter.

Periods are keyed ``FY2024``, ``Q3 FY2025`` and ``TTM Q1 FY2026`` (the four quarters to that
one) in each company's fiscal calendar: Apple's year ends in late September (its December
quarter is Q1 of the next fiscal year), Tesla's on December 31. A fourth quarter is the year
less its first three quarters (the 10-K states no three-month Q4 for flows).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FACTS = ROOT / "tests" / "fixtures" / "sec-real" / "data.sec.gov" / "api" / "xbrl" / "companyfacts"
CIKS = {"AAPL": "0000320193", "TSLA": "0001318605"}
FY_END_MONTH = {"AAPL": 9, "TSLA": 12}

CONCEPTS: dict[str, tuple[str, ...]] = {
    "revenue": ("RevenueFromContractWithCustomerExcludingAssessedTax", "Revenues", "SalesRevenueNet"),
    "cost_of_revenue": ("CostOfGoodsAndServicesSold", "CostOfRevenue"),
    "gross_profit": ("GrossProfit",),
    "rnd": ("ResearchAndDevelopmentExpense",),
    "sga": ("SellingGeneralAndAdministrativeExpense",),
    "operating_income": ("OperatingIncomeLoss",),
    "income_tax": ("IncomeTaxExpenseBenefit",),
    "net_income": ("NetIncomeLoss",),
    "eps_basic": ("EarningsPerShareBasic",),
    "eps_diluted": ("EarningsPerShareDiluted",),
    "diluted_shares": ("WeightedAverageNumberOfDilutedSharesOutstanding",),
    "cfo": ("NetCashProvidedByUsedInOperatingActivities",),
    "capex": ("PaymentsToAcquirePropertyPlantAndEquipment",),
    "buybacks": ("PaymentsForRepurchaseOfCommonStock",),
    "dividends": ("PaymentsOfDividends",),
}
"""Each metric's us-gaap concepts, first found wins for a period."""
STATEMENT = {m: "cash" if m in ("cfo", "capex", "buybacks", "dividends", "fcf") else "income"
             for m in (*CONCEPTS, "fcf")}
FLOWS_NOT_SUMMED = ("eps_basic", "eps_diluted", "diluted_shares")
"""Per-share amounts and share counts: no Q4 by subtraction, no TTM by sum."""
RATIOS = {"gross_margin": "gross_profit", "operating_margin": "operating_income",
          "net_margin": "net_income"}


def _d(s: str) -> date:
    return date.fromisoformat(s)


def fiscal_label(ticker: str, end: date, quarter: bool) -> str:
    """The fiscal period a period ending on ``end`` is (a year's end may fall a few days
    into October for a 52/53-week year)."""
    fy_month = FY_END_MONTH[ticker]
    month = end.month if end.day > 7 else (end.month - 2) % 12 + 1
    year = end.year if end.day > 7 or end.month != 1 else end.year - 1
    fy = year + (1 if month > fy_month else 0)
    if not quarter:
        return f"FY{fy}"
    q = ((month - fy_month - 1) % 12) // 3 + 1
    return f"Q{q} FY{fy}"


@cache
def values(ticker: str) -> dict[tuple[str, str], float]:
    """(metric, period) -> value, the latest filed, with Q4s, TTMs, FCF and margins."""
    facts = json.loads((FACTS / f"CIK{CIKS[ticker]}.json").read_text())["facts"]["us-gaap"]
    out: dict[tuple[str, str], float] = {}
    for metric, concepts in CONCEPTS.items():
        best: dict[str, tuple[str, float]] = {}
        for concept in concepts:
            if concept not in facts:
                continue
            for unit_rows in facts[concept]["units"].values():
                for row in unit_rows:
                    if "start" not in row:
                        continue
                    days = (_d(row["end"]) - _d(row["start"])).days
                    if 350 <= days <= 380:
                        key = fiscal_label(ticker, _d(row["end"]), False)
                    elif 80 <= days <= 100:
                        key = fiscal_label(ticker, _d(row["end"]), True)
                    else:
                        continue
                    if key not in best or row["filed"] >= best[key][0]:
                        best[key] = (row["filed"], float(row["val"]))
            for key, (_, val) in best.items():
                out.setdefault((metric, key), val)
    for (metric, period), val in list(out.items()):
        if not period.startswith("FY") or metric in FLOWS_NOT_SUMMED:
            continue
        qs = [out.get((metric, f"Q{q} {period}")) for q in (1, 2, 3)]
        if all(v is not None for v in qs) and (metric, f"Q4 {period}") not in out:
            out[(metric, f"Q4 {period}")] = val - sum(v for v in qs if v is not None)
    for (metric, period), val in list(out.items()):
        if metric == "cfo" and ("capex", period) in out:
            out[("fcf", period)] = val - out[("capex", period)]
    for (metric, period) in list(out):
        if period.startswith("FY") and metric not in FLOWS_NOT_SUMMED:
            qs = [out.get((metric, f"Q{q} {period}")) for q in (1, 2, 3)]
            if all(v is not None for v in qs):
                out[(metric, f"H1 {period}")] = sum(v for v in qs[:2] if v is not None)
                out[(metric, f"9M {period}")] = sum(v for v in qs if v is not None)
    for (metric, period) in list(out):
        if period.startswith("Q") and metric not in FLOWS_NOT_SUMMED:
            ttm = [out.get((metric, p)) for p in last_four(period)]
            if all(v is not None for v in ttm):
                out[(metric, f"TTM {period}")] = sum(v for v in ttm if v is not None)
    for ratio, part in RATIOS.items():
        for (metric, period), val in list(out.items()):
            if metric == part and ("revenue", period) in out:
                out[(ratio, period)] = 100 * val / out[("revenue", period)]
    return out


def last_four(period: str) -> list[str]:
    q, fy = int(period[1]), int(period[-4:])
    keys = []
    for _ in range(4):
        keys.append(f"Q{q} FY{fy}")
        q, fy = (q - 1, fy) if q > 1 else (4, fy - 1)
    return keys


def prior(period: str) -> str:
    """The same period a year earlier."""
    if period.startswith("TTM "):
        return "TTM " + prior(period[4:])
    return period[:-4] + str(int(period[-4:]) - 1)


def previous_quarter(period: str) -> str:
    q, fy = int(period[1]), int(period[-4:])
    return f"Q{q - 1} FY{fy}" if q > 1 else f"Q4 FY{fy - 1}"


def growth(ticker: str, metric: str, period: str, base: str | None = None) -> float | None:
    v = values(ticker)
    now, then = v.get((metric, period)), v.get((metric, base or prior(period)))
    if now is None or not then:
        return None
    return 100 * (now - then) / abs(then)


def change_pts(ticker: str, ratio: str, period: str, base: str | None = None) -> float | None:
    v = values(ticker)
    now, then = v.get((ratio, period)), v.get((ratio, base or prior(period)))
    return None if now is None or then is None else now - then


def cagr(ticker: str, metric: str, start: str, end: str) -> float | None:
    v = values(ticker)
    a, b = v.get((metric, start)), v.get((metric, end))
    years = int(end[-4:]) - int(start[-4:])
    if not a or not b or a <= 0 or b <= 0 or years <= 0:
        return None
    growth_factor: float = (b / a) ** (1.0 / years)
    return 100 * (growth_factor - 1)


@dataclass(frozen=True)
class Claim:
    """What a figure's words say: ``kind`` level / growth / pts / cagr; ``value`` signed, in
    base units (dollars, shares, percent or points); ``half_unit`` the rounding written."""

    ticker: str
    metric: str
    period: str
    kind: str
    value: float
    half_unit: float
    base: str = ""
    cited: tuple[str, ...] = ()


@dataclass(frozen=True)
class Scope:
    """What each of a case's sources holds: id -> (ticker, statement, periods)."""

    sources: dict[str, tuple[str, str, tuple[str, ...]]]

    def holds(self, sid: str, ticker: str, metric: str, period: str) -> bool:
        t, statement, periods = self.sources[sid]
        stmt = "income" if metric in RATIOS else STATEMENT[metric]
        if period[:3] in ("H1 ", "9M "):
            n = 2 if period.startswith("H1") else 3
            return all(self.holds(sid, ticker, metric, f"Q{q} {period[3:]}")
                       for q in range(1, n + 1))
        return t == ticker and stmt == statement and period in periods


def truth(c: Claim, ticker: str | None = None, metric: str | None = None,
          period: str | None = None) -> float | None:
    t, m, p = ticker or c.ticker, metric or c.metric, period or c.period
    if c.kind == "level":
        return values(t).get((m, p))
    if c.kind == "growth":
        return growth(t, m, p, c.base or None)
    if c.kind == "pts":
        return change_pts(t, m, p, c.base or None)
    return cagr(t, m, c.base, p)


def _near(a: float | None, b: float, half: float) -> bool:
    return a is not None and abs(a - b) <= half * 1.0001


def _every_number(tickers: tuple[str, ...]) -> list[float]:
    return [v for t in tickers for v in values(t).values()]


def label(c: Claim, scope: Scope, kind_values: list[float] | None = None) -> str:
    """``true``, ``miscited``, ``sign``, ``misattributed``, ``fabricated`` or ``ambiguous``
    (the generator drops those)."""
    tickers = tuple(sorted({s[0] for s in scope.sources.values()}))
    right = truth(c)
    if _near(right, c.value, c.half_unit):
        if not c.cited or any(scope.holds(s, c.ticker, c.metric, c.period) for s in c.cited):
            return "true"
        holders = [s for s in scope.sources if scope.holds(s, c.ticker, c.metric, c.period)]
        return "miscited" if holders else "ambiguous"
    if right is not None and c.value and _near(right, -c.value, c.half_unit):
        return "sign"
    # another line, period or company of the case's sources
    for sid, (t, _stmt, periods) in scope.sources.items():
        for metric in (*CONCEPTS, "fcf", *RATIOS):
            for p in periods:
                if (t, metric, p) == (c.ticker, c.metric, c.period):
                    continue
                if not scope.holds(sid, t, metric, p):
                    continue
                if c.kind == "level" and _near(values(t).get((metric, p)), c.value, c.half_unit):
                    return "misattributed"
                if c.kind != "level" and metric == c.metric and _near(
                        truth(c, t, metric, p), c.value, c.half_unit):
                    return "misattributed"
    pool = kind_values if kind_values is not None else _every_number(tickers)
    if any(_near(v, c.value, c.half_unit) or _near(-v, c.value, c.half_unit) for v in pool):
        return "ambiguous"
    return "fabricated"
