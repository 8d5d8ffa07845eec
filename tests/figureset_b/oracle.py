"""The held-out set's oracle: what is true, read from the raw SEC ``companyfacts`` JSON with
the standard library only (it must never import dexter, nor the team's own figure set).

Written independently of ``tests/figureset/oracle.py``: its own concept choices, its own
fiscal calendar rule, its own derivations (a fourth quarter as the year less nine months,
TTM as four quarters, free cash flow as operating cash flow less capex, margins, growth and
basis-point changes computed from the facts at full precision).

A figure's *meaning* is what its words claim: company, metric, period, role (``level``,
``growth``, ``bps``, ``change``), for a growth rate or change the base period, the number as
written in base units with its sign, the tolerance its rounding allows, and the sources it
cites. ``label`` decides:

- ``true``: the claimed quantity's value, within the tolerance, with the sign written;
- ``sign``: the claimed quantity's magnitude with the opposite sign;
- ``misattributed``: not the claimed value, but (within the tolerance) the value of another
  metric, period or company among what the answer's sources hold (levels against levels,
  per-share against per-share, percentages against margins and growth rates);
- ``fabricated``: none of these.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1] / "fixtures" / "sec-real" / "data.sec.gov"
CIK = {"AAPL": "0000320193", "TSLA": "0001318605"}

# metric -> XBRL concepts (first that has the period wins), and its kind
CONCEPT: dict[str, tuple[str, ...]] = {
    "revenue": ("RevenueFromContractWithCustomerExcludingAssessedTax", "Revenues"),
    "cost_of_revenue": ("CostOfGoodsAndServicesSold", "CostOfRevenue"),
    "gross_profit": ("GrossProfit",),
    "rnd": ("ResearchAndDevelopmentExpense",),
    "sga": ("SellingGeneralAndAdministrativeExpense",),
    "opex": ("OperatingExpenses",),
    "operating_income": ("OperatingIncomeLoss",),
    "income_tax": ("IncomeTaxExpenseBenefit",),
    "net_income": ("NetIncomeLoss",),
    "eps_basic": ("EarningsPerShareBasic",),
    "eps_diluted": ("EarningsPerShareDiluted",),
    "ocf": ("NetCashProvidedByUsedInOperatingActivities",),
    "capex": ("PaymentsToAcquirePropertyPlantAndEquipment",),
    "sbc": ("ShareBasedCompensation",),
    "dividends": ("PaymentsOfDividends",),
    "buybacks": ("PaymentsForRepurchaseOfCommonStock",),
    "total_assets": ("Assets",),
    "total_liabilities": ("Liabilities",),
    "equity": ("StockholdersEquity",),
    "cash": ("CashAndCashEquivalentsAtCarryingValue",),
    "current_assets": ("AssetsCurrent",),
    "current_liabilities": ("LiabilitiesCurrent",),
}
INCOME = ("revenue", "cost_of_revenue", "gross_profit", "rnd", "sga", "opex",
          "operating_income", "income_tax", "net_income", "eps_basic", "eps_diluted")
CASH = ("ocf", "capex", "sbc", "dividends", "buybacks", "fcf")
BALANCE = ("total_assets", "total_liabilities", "equity", "cash", "current_assets",
           "current_liabilities")
PER_SHARE = ("eps_basic", "eps_diluted")
MARGIN_OF = {"gross_margin": "gross_profit", "operating_margin": "operating_income",
             "net_margin": "net_income"}


@dataclass(frozen=True)
class Period:
    """``FY`` (fiscal year), ``Q`` (fiscal quarter ``q`` of fiscal year ``year``) or
    ``TTM`` (four quarters to the end of fiscal quarter ``q`` of ``year``)."""
    kind: str
    year: int
    q: int = 0

    @property
    def name(self) -> str:
        if self.kind == "FY":
            return f"FY{self.year}"
        return f"{'TTM ' if self.kind == 'TTM' else ''}Q{self.q} FY{self.year}"

    def previous(self) -> Period:
        """The same period a year earlier (y/y base)."""
        return Period(self.kind, self.year - 1, self.q)

    def prior_quarter(self) -> Period:
        return Period(self.kind, self.year, self.q - 1) if self.q > 1 \
            else Period(self.kind, self.year - 1, 4)


def parse_period(name: str) -> Period:
    ttm = name.startswith("TTM ")
    name = name.removeprefix("TTM ")
    if name.startswith("FY"):
        return Period("FY", int(name[2:]))
    q, fy = name.split()
    return Period("TTM" if ttm else "Q", int(fy[2:]), int(q[1:]))


@cache
def _facts(ticker: str) -> dict[str, Any]:
    path = ROOT / "api" / "xbrl" / "companyfacts" / f"CIK{CIK[ticker]}.json"
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))["facts"]["us-gaap"]
    return data


@cache
def fiscal_year_end(ticker: str) -> tuple[int, int]:
    sub = json.loads((ROOT / "submissions" / f"CIK{CIK[ticker]}.json").read_text())
    mmdd = str(sub["fiscalYearEnd"])
    return int(mmdd[:2]), int(mmdd[2:])


def _quarter_end(ticker: str, p: Period) -> dt.date:
    """The nominal end of a fiscal quarter (the real one is within a week of it)."""
    month, day = fiscal_year_end(ticker)
    end = dt.date(p.year, month, min(day, 28))
    back = 3 * (4 - p.q) if p.kind != "FY" else 0
    m = end.month - back
    y = end.year
    while m <= 0:
        m += 12
        y -= 1
    return dt.date(y, m, min(end.day, 28))


def _rows(ticker: str, concept: str) -> list[dict[str, Any]]:
    node = _facts(ticker).get(concept)
    if not node:
        return []
    units = node["units"]
    for unit in ("USD", "USD/shares"):
        if unit in units:
            rows: list[dict[str, Any]] = units[unit]
            return rows
    return []


def _pick(ticker: str, concept: str, end: dt.date, days: tuple[int, int] | None
          ) -> float | None:
    """The latest-filed fact ending within 8 days of ``end`` whose duration is in ``days``
    (``None``: an instant)."""
    best: tuple[str, float] | None = None
    for row in _rows(ticker, concept):
        e = dt.date.fromisoformat(row["end"])
        if abs((e - end).days) > 8:
            continue
        if days is None:
            if "start" in row:
                continue
        else:
            if "start" not in row:
                continue
            length = (e - dt.date.fromisoformat(row["start"])).days
            if not days[0] <= length <= days[1]:
                continue
        key = (row["filed"], float(row["val"]))
        if best is None or key[0] > best[0]:
            best = key
    return best[1] if best else None


YEAR = (350, 380)
QUARTER = (80, 100)
NINE = (260, 285)


def _concepts(ticker: str, metric: str) -> tuple[str, ...]:
    # Tesla files revenue as Revenues (RevenueFromContract... covers only a few years)
    if ticker == "TSLA" and metric == "revenue":
        return tuple(reversed(CONCEPT[metric]))
    return CONCEPT[metric]


def _flow(ticker: str, metric: str, p: Period) -> float | None:
    for concept in _concepts(ticker, metric):
        end = _quarter_end(ticker, p)
        if p.kind == "FY":
            v = _pick(ticker, concept, end, YEAR)
        elif p.kind == "Q":
            v = _pick(ticker, concept, end, QUARTER)
            if v is None and p.q == 4 and metric not in PER_SHARE:
                year = _pick(ticker, concept, end, YEAR)
                nine = _pick(ticker, concept, _quarter_end(ticker, Period("Q", p.year, 3)),
                             NINE)
                v = year - nine if year is not None and nine is not None else None
            if v is None and metric not in PER_SHARE:
                # cash flow statements report year-to-date: this quarter = YTD - prior YTD
                ytd = _pick(ticker, concept, end, (80 + 91 * (p.q - 1), 100 + 91 * (p.q - 1)))
                prior = (_pick(ticker, concept, _quarter_end(ticker, p.prior_quarter()),
                               (80 + 91 * (p.q - 2), 100 + 91 * (p.q - 2)))
                         if p.q > 1 else 0.0)
                v = ytd - prior if ytd is not None and prior is not None else None
        else:  # TTM
            quarters = [Period("Q", p.year, p.q)]
            while len(quarters) < 4:
                quarters.append(quarters[-1].prior_quarter())
            parts = [_flow(ticker, metric, q) for q in quarters]
            v = sum(x for x in parts if x is not None) if None not in parts else None
        if v is not None:
            return v
    return None


def value(ticker: str, metric: str, period: str) -> float | None:
    """A level in base units (dollars, dollars per share)."""
    p = parse_period(period)
    if metric == "fcf":
        ocf, capex = value(ticker, "ocf", period), value(ticker, "capex", period)
        return ocf - capex if ocf is not None and capex is not None else None
    if metric in MARGIN_OF:
        part, rev = value(ticker, MARGIN_OF[metric], period), value(ticker, "revenue", period)
        return 100 * part / rev if part is not None and rev else None
    if metric in BALANCE:
        for concept in CONCEPT[metric]:
            v = _pick(ticker, concept, _quarter_end(ticker, p), None)
            if v is not None:
                return v
        return None
    return _flow(ticker, metric, p)


def growth(ticker: str, metric: str, period: str, base: str) -> float | None:
    new, old = value(ticker, metric, period), value(ticker, metric, base)
    if new is None or old is None or old == 0:
        return None
    return 100 * (new / old - 1)


def bps(ticker: str, margin: str, period: str, base: str) -> float | None:
    """A margin's change in percentage points (120 bps = 1.2)."""
    new, old = value(ticker, margin, period), value(ticker, margin, base)
    return new - old if new is not None and old is not None else None


def change(ticker: str, metric: str, period: str, base: str) -> float | None:
    new, old = value(ticker, metric, period), value(ticker, metric, base)
    return new - old if new is not None and old is not None else None


def truth(meaning: Mapping[str, Any]) -> float | None:
    role = meaning["role"]
    c, m, p, b = meaning["company"], meaning["metric"], meaning["period"], meaning["base"]
    if role == "level":
        return value(c, m, p)
    if role == "growth":
        return growth(c, m, p, b)
    if role == "bps":
        return bps(c, m, p, b)
    if role == "change":
        return change(c, m, p, b)
    raise ValueError(role)


# What each source spec holds: (company, statement metrics, periods)
HOLDS: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "AAPL-income-annual": ("AAPL", INCOME, tuple(f"FY{y}" for y in range(2021, 2026))),
    "AAPL-income-quarterly": ("AAPL", INCOME, ("Q4 FY2024", "Q1 FY2025", "Q2 FY2025",
                                               "Q3 FY2025", "Q4 FY2025", "Q1 FY2026")),
    "AAPL-balance-annual": ("AAPL", BALANCE, ("FY2023", "FY2024", "FY2025")),
    "AAPL-cash-annual": ("AAPL", CASH, ("FY2023", "FY2024", "FY2025")),
    "AAPL-cash-quarterly": ("AAPL", CASH, ("Q2 FY2025", "Q3 FY2025", "Q4 FY2025",
                                           "Q1 FY2026")),
    "TSLA-income-annual": ("TSLA", tuple(m for m in INCOME if m not in PER_SHARE),
                           tuple(f"FY{y}" for y in range(2016, 2022))),
    "TSLA-income-quarterly": ("TSLA", INCOME, ("Q2 FY2021", "Q3 FY2021", "Q4 FY2021",
                                               "Q1 FY2022", "Q2 FY2022", "Q3 FY2022")),
    "TSLA-income-ttm": ("TSLA", tuple(m for m in INCOME if m not in PER_SHARE),
                        ("TTM Q3 FY2022", "TTM Q2 FY2022")),
    "TSLA-balance-annual": ("TSLA", BALANCE, ("FY2019", "FY2020", "FY2021")),
    "TSLA-balance-quarterly": ("TSLA", BALANCE, ("Q4 FY2021", "Q1 FY2022", "Q2 FY2022",
                                                 "Q3 FY2022")),
    "TSLA-cash-annual": ("TSLA", tuple(m for m in CASH if m not in ("dividends", "buybacks")),
                         tuple(f"FY{y}" for y in range(2016, 2022))),
}
# Tesla's per-share figures are split-adjusted in what dexter fetches and as filed in the
# raw facts before the Q3 2022 10-Q: only Q3 FY2022 (filed after the split) is labelled.
TSLA_EPS_OK = ("Q3 FY2022",)


@dataclass(frozen=True)
class Known:
    company: str
    metric: str
    period: str
    role: str
    value: float


def _metrics_for(metrics: Sequence[str], company: str) -> Iterator[str]:
    for m in metrics:
        if company == "AAPL" or m not in ("dividends", "buybacks"):
            yield m


@cache
def known(sources: tuple[str, ...]) -> tuple[Known, ...]:
    """Every quantity the sources hold or a reader derives from them: levels, margins, and
    growth / change between the periods of one source."""
    out: list[Known] = []
    for key in sources:
        if key not in HOLDS:
            continue
        company, metrics, periods = HOLDS[key]
        for m in _metrics_for(metrics, company):
            if company == "TSLA" and m in PER_SHARE:
                ps: Iterable[str] = [p for p in periods if p in TSLA_EPS_OK]
            else:
                ps = periods
            for p in ps:
                v = value(company, m, p)
                if v is not None:
                    out.append(Known(company, m, p, "level", v))
            for p in periods:
                for b in periods:
                    if p == b:
                        continue
                    g = growth(company, m, p, b)
                    if g is not None and not (company == "TSLA" and m in PER_SHARE):
                        out.append(Known(company, m, p, "growth", g))
        if metrics[0] == "revenue":
            for margin in MARGIN_OF:
                for p in periods:
                    v = value(company, margin, p)
                    if v is not None:
                        out.append(Known(company, margin, p, "level", v))
                    for b in periods:
                        d = bps(company, margin, p, b) if b != p else None
                        if d is not None:
                            out.append(Known(company, margin, p, "bps", d))
    return tuple(out)


def _kind(metric: str, role: str) -> str:
    if role in ("growth", "bps") or metric in MARGIN_OF:
        return "pct"
    if metric in PER_SHARE:
        return "per_share"
    return "money"


def covers(sources: Sequence[str], company: str, metric: str, period: str) -> bool:
    for key in sources:
        if key in HOLDS:
            c, metrics, periods = HOLDS[key]
            names = set(metrics) | (set(MARGIN_OF) if metrics[0] == "revenue" else set())
            if c == company and metric in names and period in periods:
                return True
    return False


def label(meaning: Mapping[str, Any], sources: Sequence[str]) -> str:
    written = float(meaning["written"])
    tol = float(meaning["tolerance"]) * 1.0000001
    t = truth(meaning)
    if t is not None and abs(written - t) <= tol:
        cited = meaning.get("cited_sources")
        if cited is not None and not covers(cited, meaning["company"], meaning["metric"],
                                            meaning["period"]):
            return "miscited"
        return "true"
    if t is not None and written != 0 and abs(-written - t) <= tol and abs(t) > tol:
        return "sign"
    kind = _kind(meaning["metric"], meaning["role"])
    for k in known(tuple(sources)):
        if _kind(k.metric, k.role) != kind:
            continue
        if abs(abs(written) - abs(k.value)) <= tol:
            return "misattributed"
    return "fabricated"
