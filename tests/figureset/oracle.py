"""The independent oracle of the labelled figure set: what is true, read from the raw SEC
JSON with none of dexter's code.

It reads Apple's and Tesla's ``companyfacts`` and ``submissions`` (tests/fixtures/sec-real),
picks each metric's XBRL concepts itself, names periods by the company's own fiscal year end
(``fiscalYearEnd`` in the submissions: Apple's ``0926``, Tesla's ``1231``) with its own rule,
and decides the label of every figure of the set from the figure's meaning (company,
metric, period, sign, the number as written and its rounding) and the sources its answer
fetched:

- ``true``: the value of that metric, period and company, at the precision written, with
  the sign the words give it (a growth rate, margin or share computed from the facts);
- ``sign``: the right magnitude with the wrong sign (a loss called a profit);
- ``miscited``: true, but the sources the figure cites do not hold it (another company's
  statement is cited);
- ``misattributed``: not the value of what the words name, but the value of another
  metric, period or company among what the answer fetched;
- ``fabricated``: no fetched value at all.

Only the standard library; this module must never import dexter.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1] / "fixtures" / "sec-real"
CIKS = {"AAPL": "0000320193", "TSLA": "0001318605"}

# The XBRL concepts that report each metric, in the order they are tried.
CONCEPTS: dict[str, tuple[str, ...]] = {
    "revenue": ("RevenueFromContractWithCustomerExcludingAssessedTax", "Revenues",
                "SalesRevenueNet"),
    "cost_of_revenue": ("CostOfGoodsAndServicesSold", "CostOfRevenue", "CostOfGoodsSold"),
    "gross_profit": ("GrossProfit",),
    "research_and_development": ("ResearchAndDevelopmentExpense",),
    "sga": ("SellingGeneralAndAdministrativeExpense",),
    "operating_expenses": ("OperatingExpenses",),
    "operating_income": ("OperatingIncomeLoss",),
    "income_tax": ("IncomeTaxExpenseBenefit",),
    "net_income": ("NetIncomeLoss",),
    "eps_basic": ("EarningsPerShareBasic",),
    "eps_diluted": ("EarningsPerShareDiluted",),
    "operating_cash_flow": ("NetCashProvidedByUsedInOperatingActivities",),
    "capex": ("PaymentsToAcquirePropertyPlantAndEquipment",),
    "total_assets": ("Assets",),
    "total_liabilities": ("Liabilities",),
    "equity": ("StockholdersEquity",),
    "cash": ("CashAndCashEquivalentsAtCarryingValue",),
    "current_assets": ("AssetsCurrent",),
    "current_liabilities": ("LiabilitiesCurrent",),
}
STATEMENT_OF = {
    **dict.fromkeys(("revenue", "cost_of_revenue", "gross_profit", "research_and_development",
                     "sga", "operating_expenses", "operating_income", "income_tax",
                     "net_income", "eps_basic", "eps_diluted"), "income"),
    **dict.fromkeys(("operating_cash_flow", "capex", "free_cash_flow"), "cash_flow"),
    **dict.fromkeys(("total_assets", "total_liabilities", "equity", "cash", "current_assets",
                     "current_liabilities"), "balance"),
}
INSTANT = {"total_assets", "total_liabilities", "equity", "cash", "current_assets",
           "current_liabilities"}

# Segment net sales from Apple's FY2024 10-K ("Products and Services Performance" and
# "Segment Operating Performance", dollars in millions); each is checked against the raw
# filing HTML when the oracle loads.
APPLE_10K = (ROOT / "www.sec.gov" / "Archives" / "edgar" / "data" / "320193"
             / "000032019324000123" / "aapl-20240928.htm")
SEGMENTS: dict[tuple[str, str], float] = {
    ("iphone", "FY2024"): 201_183e6, ("iphone", "FY2023"): 200_583e6,
    ("services", "FY2024"): 96_169e6, ("services", "FY2023"): 85_200e6,
    ("mac", "FY2024"): 29_984e6, ("mac", "FY2023"): 29_357e6,
    ("greater_china", "FY2024"): 66_952e6, ("greater_china", "FY2023"): 72_559e6,
    ("americas", "FY2024"): 167_045e6, ("americas", "FY2023"): 162_560e6,
}


@dataclass(frozen=True)
class Fact:
    company: str
    metric: str
    period: str
    """``FY2024``, ``Q3 FY2025`` (the company's fiscal calendar)."""
    value: float


def _fiscal_year_end(ticker: str) -> tuple[int, int]:
    path = ROOT / "data.sec.gov" / "submissions" / f"CIK{CIKS[ticker]}.json"
    text = json.loads(path.read_text(encoding="utf-8"))["fiscalYearEnd"]
    return int(text[:2]), int(text[2:])


def _label(end: dt.date, days: int, fye: tuple[int, int]) -> str | None:
    """The fiscal period a fact of ``days`` days ending on ``end`` covers."""
    month, day = fye
    # the fiscal year a date falls in: the year whose nominal end is on or after it
    nominal = dt.date(end.year, month, min(day, 28))
    year = end.year if end <= nominal + dt.timedelta(days=10) else end.year + 1
    if 350 <= days <= 380 or days == 0:
        return f"FY{year}"
    if 80 <= days <= 100:
        start_of_year = dt.date(year - 1, month, min(day, 28))
        months = (end - start_of_year).days / 30.44
        quarter = min(4, max(1, round(months / 3)))
        return f"Q{quarter} FY{year}"
    return None


def load_facts() -> list[Fact]:
    """Every fact of the metrics above for both companies, latest filing winning."""
    facts: dict[tuple[str, str, str], tuple[str, float]] = {}
    for ticker, cik in CIKS.items():
        fye = _fiscal_year_end(ticker)
        path = ROOT / "data.sec.gov" / "api" / "xbrl" / "companyfacts" / f"CIK{cik}.json"
        gaap = json.loads(path.read_text(encoding="utf-8"))["facts"]["us-gaap"]
        for metric, concepts in CONCEPTS.items():
            for rank, concept in enumerate(concepts):
                for unit in gaap.get(concept, {}).get("units", {}).values():
                    for row in unit:
                        if row.get("form") not in ("10-K", "10-Q", "10-K/A", "10-Q/A"):
                            continue
                        end = dt.date.fromisoformat(row["end"])
                        if metric in INSTANT:
                            days = 0
                            if abs((end - dt.date(end.year, fye[0], min(fye[1], 28))).days) > 10 \
                                    and not (fye == (12, 31) and end.month == 12 and end.day >= 24):
                                continue  # a quarter-end balance: only year ends are used
                        else:
                            if "start" not in row:
                                continue
                            days = (end - dt.date.fromisoformat(row["start"])).days
                        period = _label(end, days, fye)
                        if period is None:
                            continue
                        key = (ticker, metric, period)
                        stamp = f"{9 - rank}{row.get('filed', '')}"
                        if key not in facts or stamp > facts[key][0]:
                            facts[key] = (stamp, float(row["val"]))
    out = [Fact(c, m, p, v) for (c, m, p), (_, v) in facts.items()]
    # free cash flow: operating cash flow less capital expenditure
    by = {(f.company, f.metric, f.period): f.value for f in out}
    for (c, m, p), v in list(by.items()):
        if m == "operating_cash_flow" and (c, "capex", p) in by:
            out.append(Fact(c, "free_cash_flow", p, v - by[(c, "capex", p)]))
    html = APPLE_10K.read_text(encoding="utf-8")
    for (segment, period), value in SEGMENTS.items():
        assert f">{value / 1e6:,.0f}<" in html, (segment, period)
        out.append(Fact("AAPL", f"segment:{segment}", period, value))
    return out


@dataclass(frozen=True)
class Meaning:
    """What one figure of the set says, as its generator wrote it."""

    company: str
    metric: str
    """A metric above; ``segment:<name>``; or ``growth:<metric>``, ``margin:<metric>``,
    ``share:<metric>``, ``points:<metric>``, ``cagr:<metric>`` for a derived figure."""
    period: str
    base: str = ""
    """For growth, points and CAGR: the period it is measured from."""
    written: float = 0.0
    """The figure's value as written, in base units, signed as its words say."""
    tolerance: float = 0.0
    cited: tuple[str, ...] = ()


@dataclass(frozen=True)
class Fetched:
    """One source an answer's run fetched."""

    id: str
    company: str
    statement: str
    """``income``, ``balance``, ``cash_flow`` or ``10k`` (the 10-K text)."""
    periods: tuple[str, ...]


class Oracle:
    """Decides labels from the raw facts."""

    def __init__(self) -> None:
        self.facts = load_facts()
        self.by_key = {(f.company, f.metric, f.period): f.value for f in self.facts}

    def value(self, company: str, metric: str, period: str, base: str = "") -> float | None:
        """The true value of a (possibly derived) metric, or None when unknown."""
        kind, _, name = metric.partition(":")
        if not name:
            return self.by_key.get((company, metric, period))
        if kind == "segment":
            return self.by_key.get((company, metric, period))
        now = self.by_key.get((company, name, period))
        if kind == "margin":
            revenue = self.by_key.get((company, "revenue", period))
            return None if now is None or not revenue else now / revenue * 100
        if kind == "share":
            revenue = self.by_key.get((company, "revenue", period))
            return None if now is None or not revenue else now / revenue * 100
        then = self.by_key.get((company, name, base))
        if now is None or then is None or then <= 0:
            return None
        if kind == "growth":
            return (now / then - 1) * 100
        if kind == "cagr":
            years = int(period[2:]) - int(base[2:])
            return (math.pow(now / then, 1 / years) - 1) * 100 if years > 0 and now > 0 else None
        if kind == "points":
            revenue_now = self.by_key.get((company, "revenue", period))
            revenue_then = self.by_key.get((company, "revenue", base))
            if not revenue_now or not revenue_then:
                return None
            return (now / revenue_now - then / revenue_then) * 100
        return None

    def held(self, fetched: Sequence[Fetched]) -> list[Fact]:
        """The facts the fetched sources hold."""
        out = []
        for f in self.facts:
            for s in fetched:
                if f.company != s.company or f.period not in s.periods:
                    continue
                statement = STATEMENT_OF.get(f.metric, "10k" if f.metric.startswith(
                    "segment:") else "")
                if statement == s.statement or (s.statement == "10k" and
                                                (statement in ("income", "balance", "cash_flow")
                                                 or f.metric.startswith("segment:"))):
                    out.append(f)
                    break
        return out

    def label(self, m: Meaning, fetched: Sequence[Fetched]) -> str:
        """The figure's label (see the module docstring)."""
        truth = self.value(m.company, m.metric, m.period, m.base)
        tol = m.tolerance * (1 + 1e-9) + 1e-9
        held = self.held(fetched)
        if truth is not None and abs(truth - m.written) <= tol:
            if m.cited and not self._cited_holds(m, fetched):
                return "miscited"
            return "true"
        if truth is not None and abs(abs(truth) - abs(m.written)) <= tol and truth != 0:
            return "sign"
        derived = ":" in m.metric and not m.metric.startswith("segment:")
        if not derived and any(abs(abs(f.value) - abs(m.written)) <= tol for f in held):
            return "misattributed"
        return "fabricated"

    def _cited_holds(self, m: Meaning, fetched: Sequence[Fetched]) -> bool:
        kind, _, name = m.metric.partition(":")
        metric = m.metric if kind == "segment" or not name else name
        statement = STATEMENT_OF.get(metric, "10k")
        for s in fetched:
            if s.id in m.cited and s.company == m.company and (
                    s.statement == statement or s.statement == "10k"):
                return True
        return False


def periods_of(facts: Iterable[Fact], company: str, metric: str, kind: str) -> list[str]:
    """The periods of one company's metric that have a fact, oldest first (``kind``:
    ``FY`` or ``Q``)."""
    found = {f.period for f in facts if f.company == company and f.metric == metric
             and f.period.startswith(kind)}
    return sorted(found, key=lambda p: (int(p[-4:]), p))


def as_dict(m: Meaning) -> dict[str, Any]:
    """A JSON-ready meaning."""
    return {"company": m.company, "metric": m.metric, "period": m.period, "base": m.base,
            "written": m.written, "tolerance": m.tolerance, "cited": list(m.cited)}


def meaning_from(data: Mapping[str, Any]) -> Meaning:
    """The meaning :func:`as_dict` wrote."""
    return Meaning(str(data["company"]), str(data["metric"]), str(data["period"]),
                   str(data.get("base", "")), float(data["written"]),
                   float(data["tolerance"]), tuple(data.get("cited", ())))
