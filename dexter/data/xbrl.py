"""Turn SEC XBRL company facts into statements (pure functions, no I/O).

Company facts (``/api/xbrl/companyfacts/CIK##########.json``) list, per concept and unit,
every value any filing reported: ``start`` (durations only), ``end``, ``val``, ``fy``/``fp``
(the fiscal year and period *of the filing*, not of the value), ``form``, ``filed``, ``accn``
and sometimes ``frame``. The same period appears in several filings (as a comparative);
the value shown is the latest filed (it includes restatements), the period label comes from
the earliest filing (the one that reported that period as its own).

Quarters: 10-Qs report 3-month income values but only year-to-date cash flows, and no
filing reports Q4 alone. Missing quarters are derived from consecutive year-to-date values
with the same start (6M - 3M, 9M - 6M, FY - 9M) and marked as derived.
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

PeriodKind = Literal["annual", "quarterly", "ttm"]

QUARTER_DAYS = range(80, 106)
HALF_DAYS = range(170, 195)
NINE_MONTH_DAYS = range(260, 290)
YEAR_DAYS = range(350, 381)


@dataclass(frozen=True, slots=True)
class Fact:
    """One reported value of one concept."""

    concept: str
    value: float
    end: str
    start: str | None
    fy: int | None
    fp: str | None
    form: str
    filed: str
    accn: str
    frame: str | None = None

    @property
    def days(self) -> int | None:
        """Length of the period in days (inclusive), or None for an instant."""
        if not self.start:
            return None
        return (dt.date.fromisoformat(self.end) - dt.date.fromisoformat(self.start)).days + 1


@dataclass(frozen=True, slots=True)
class PeriodValue:
    """The value chosen for one period, the fact it came from and how it was obtained."""

    value: float
    start: str | None
    end: str
    fact: Fact
    label_fact: Fact
    derived: str | None = None


@dataclass(frozen=True, slots=True)
class LineItem:
    """A statement field and the concepts that can fill it, in fallback order.

    ``concepts`` are ``us-gaap`` names unless written ``taxonomy:Name``. ``sign=-1``
    turns a payment (reported positive) into an outflow, as Financial Datasets shows it
    (``PAYMENT_FIELDS``; the source says so once in its notes, not per value).
    """

    field: str
    concepts: tuple[str, ...]
    instant: bool = False
    unit: str = "USD"
    sign: int = 1

    @property
    def additive(self) -> bool:
        """Amounts add up over periods; per-share values and share counts do not."""
        return self.unit == "USD"


INCOME_ITEMS: tuple[LineItem, ...] = (
    LineItem("revenue", ("Revenues", "RevenueFromContractWithCustomerExcludingAssessedTax",
                         "RevenueFromContractWithCustomerIncludingAssessedTax",
                         "SalesRevenueNet", "SalesRevenueGoodsNet")),
    LineItem("cost_of_revenue", ("CostOfRevenue", "CostOfGoodsAndServicesSold",
                                 "CostOfGoodsSold")),
    LineItem("gross_profit", ("GrossProfit",)),
    LineItem("research_and_development", ("ResearchAndDevelopmentExpense",)),
    LineItem("selling_general_and_administrative_expenses",
             ("SellingGeneralAndAdministrativeExpense",)),
    LineItem("operating_expense", ("OperatingExpenses", "CostsAndExpenses")),
    LineItem("operating_income", ("OperatingIncomeLoss",)),
    LineItem("interest_expense", ("InterestExpense", "InterestExpenseNonoperating")),
    LineItem("income_tax_expense", ("IncomeTaxExpenseBenefit",)),
    LineItem("net_income", ("NetIncomeLoss", "ProfitLoss",
                            "NetIncomeLossAvailableToCommonStockholdersBasic")),
    LineItem("earnings_per_share", ("EarningsPerShareBasic",), unit="USD/shares"),
    LineItem("earnings_per_share_diluted", ("EarningsPerShareDiluted",
                                            "EarningsPerShareBasicAndDiluted"),
             unit="USD/shares"),
    LineItem("weighted_average_shares", ("WeightedAverageNumberOfSharesOutstandingBasic",),
             unit="shares"),
    LineItem("weighted_average_shares_diluted",
             ("WeightedAverageNumberOfDilutedSharesOutstanding",), unit="shares"),
)

BALANCE_ITEMS: tuple[LineItem, ...] = (
    LineItem("total_assets", ("Assets",), instant=True),
    LineItem("current_assets", ("AssetsCurrent",), instant=True),
    LineItem("cash_and_equivalents", ("CashAndCashEquivalentsAtCarryingValue",
                                      "CashCashEquivalentsRestrictedCashAndRestrictedCashEquivalents",
                                      "Cash"), instant=True),
    LineItem("short_term_investments", ("ShortTermInvestments",
                                        "MarketableSecuritiesCurrent",
                                        "AvailableForSaleSecuritiesDebtSecuritiesCurrent"),
             instant=True),
    LineItem("total_liabilities", ("Liabilities",), instant=True),
    LineItem("current_liabilities", ("LiabilitiesCurrent",), instant=True),
    LineItem("long_term_debt", ("LongTermDebtNoncurrent", "LongTermDebt"), instant=True),
    LineItem("current_debt", ("DebtCurrent", "LongTermDebtCurrent"), instant=True),
    LineItem("short_term_borrowings", ("CommercialPaper", "ShortTermBorrowings"), instant=True),
    LineItem("shareholders_equity", ("StockholdersEquity",
                                     "StockholdersEquityIncludingPortionAttributableToNoncontrollingInterest"),
             instant=True),
    LineItem("liabilities_and_equity", ("LiabilitiesAndStockholdersEquity",), instant=True),
    LineItem("outstanding_shares", ("CommonStockSharesOutstanding",), instant=True,
             unit="shares"),
)

CASH_FLOW_ITEMS: tuple[LineItem, ...] = (
    LineItem("net_cash_flow_from_operations", (
        "NetCashProvidedByUsedInOperatingActivities",
        "NetCashProvidedByUsedInOperatingActivitiesContinuingOperations")),
    LineItem("capital_expenditure", ("PaymentsToAcquirePropertyPlantAndEquipment",
                                     "PaymentsToAcquireProductiveAssets"), sign=-1),
    LineItem("depreciation_and_amortization", ("DepreciationDepletionAndAmortization",
                                               "DepreciationAmortizationAndAccretionNet",
                                               "DepreciationAndAmortization", "Depreciation")),
    LineItem("share_based_compensation", ("ShareBasedCompensation",
                                          "AllocatedShareBasedCompensationExpense")),
    LineItem("net_cash_flow_from_investing", ("NetCashProvidedByUsedInInvestingActivities",)),
    LineItem("net_cash_flow_from_financing", ("NetCashProvidedByUsedInFinancingActivities",)),
    LineItem("dividends_paid", ("PaymentsOfDividends", "PaymentsOfDividendsCommonStock"),
             sign=-1),
    LineItem("share_repurchases", ("PaymentsForRepurchaseOfCommonStock",), sign=-1),
)

PAYMENT_FIELDS: tuple[str, ...] = tuple(i.field for i in CASH_FLOW_ITEMS if i.sign < 0)

STATEMENT_ITEMS: dict[str, tuple[LineItem, ...]] = {
    "income": INCOME_ITEMS,
    "balance": BALANCE_ITEMS,
    "cash_flow": CASH_FLOW_ITEMS,
}


# --------------------------------------------------------------------------------------------
# Reading facts
# --------------------------------------------------------------------------------------------


def concept_facts(companyfacts: Mapping[str, Any], concept: str, unit: str) -> list[Fact]:
    """All facts of ``concept`` (``us-gaap`` unless ``taxonomy:Name``) in ``unit``."""
    taxonomy, _, name = concept.rpartition(":")
    taxonomy = taxonomy or "us-gaap"
    units = companyfacts.get("facts", {}).get(taxonomy, {}).get(name, {}).get("units", {})
    facts: list[Fact] = []
    for row in units.get(unit, []):
        try:
            facts.append(Fact(
                concept=name, value=float(row["val"]), end=str(row["end"]),
                start=str(row["start"]) if row.get("start") else None,
                fy=int(row["fy"]) if row.get("fy") is not None else None,
                fp=str(row["fp"]) if row.get("fp") else None,
                form=str(row.get("form", "")), filed=str(row.get("filed", "")),
                accn=str(row.get("accn", "")), frame=row.get("frame"),
            ))
        except (KeyError, TypeError, ValueError):
            continue
    return facts


def _pick(facts: Iterable[Fact]) -> dict[tuple[str | None, str], PeriodValue]:
    """One value per (start, end): latest filed for the value, earliest for the label."""
    by_period: dict[tuple[str | None, str], list[Fact]] = {}
    for fact in facts:
        by_period.setdefault((fact.start, fact.end), []).append(fact)
    chosen: dict[tuple[str | None, str], PeriodValue] = {}
    for key, group in by_period.items():
        group.sort(key=lambda f: (f.filed, f.accn))
        latest, earliest = group[-1], group[0]
        chosen[key] = PeriodValue(latest.value, latest.start, latest.end, latest, earliest)
    return chosen


def _months(days: int) -> str:
    if days in YEAR_DAYS:
        return "FY"
    return f"{round(days / 30.4)}M YTD"


def annual_values(facts: Iterable[Fact]) -> dict[str, PeriodValue]:
    """Fiscal-year values keyed by period end."""
    return {pv.end: pv for (start, _), pv in _pick(facts).items()
            if start and pv.fact.days in YEAR_DAYS}


def quarterly_values(facts: Iterable[Fact], *, derive: bool = True) -> dict[str, PeriodValue]:
    """Three-month values keyed by period end; missing quarters derived from YTD values
    when ``derive`` (only for additive amounts: never per-share values or share counts)."""
    picked = _pick(facts)
    quarters = {pv.end: pv for (start, _), pv in picked.items()
                if start and pv.fact.days in QUARTER_DAYS}
    if not derive:
        return quarters
    by_start: dict[str, list[PeriodValue]] = {}
    for (start, _), pv in picked.items():
        if start and (pv.fact.days or 0) >= QUARTER_DAYS.start:
            by_start.setdefault(start, []).append(pv)
    for group in by_start.values():
        group.sort(key=lambda pv: pv.end)
        for shorter, longer in itertools.pairwise(group):
            gap = (dt.date.fromisoformat(longer.end) - dt.date.fromisoformat(shorter.end)).days
            if gap not in QUARTER_DAYS or longer.end in quarters:
                continue
            q_start = (dt.date.fromisoformat(shorter.end) + dt.timedelta(days=1)).isoformat()
            how = (f"{_months(longer.fact.days or 0)} ({longer.fact.form} {longer.fact.accn}) "
                   f"minus {_months(shorter.fact.days or 0)} ({shorter.fact.form} "
                   f"{shorter.fact.accn})")
            quarters[longer.end] = PeriodValue(
                longer.value - shorter.value, q_start, longer.end, longer.fact,
                longer.label_fact, how,
            )
    return quarters


def instant_values(facts: Iterable[Fact]) -> dict[str, PeriodValue]:
    """Point-in-time values (balance sheet) keyed by date."""
    return {pv.end: pv for (start, _), pv in _pick(facts).items() if start is None}


# --------------------------------------------------------------------------------------------
# Labels and provenance
# --------------------------------------------------------------------------------------------


def filing_period_ends(companyfacts: Mapping[str, Any]) -> dict[str, str]:
    """Accession number -> the latest period end it reports (its own period)."""
    ends: dict[str, str] = {}
    for concept in companyfacts.get("facts", {}).get("us-gaap", {}).values():
        for rows in concept.get("units", {}).values():
            for row in rows:
                accn, end = row.get("accn"), row.get("end")
                if isinstance(accn, str) and isinstance(end, str) and end > ends.get(accn, ""):
                    ends[accn] = end
    return ends


def fiscal_year(pv: PeriodValue, filing_ends: Mapping[str, str]) -> int:
    """The fiscal year of a period: the reporting filing's ``fy`` shifted back by the whole
    years between the filing's own period and this one (comparatives), else the end year."""
    end_year = int(pv.end[:4])
    fy = pv.label_fact.fy
    own_end = filing_ends.get(pv.label_fact.accn)
    if fy is None or own_end is None:
        return end_year
    gap = (dt.date.fromisoformat(own_end) - dt.date.fromisoformat(pv.end)).days
    return fy - round(gap / 365.25)


def period_label(pv: PeriodValue, kind: PeriodKind, filing_ends: Mapping[str, str]) -> str:
    """``FY2024`` or ``Q3 2024`` (fiscal, as the company counts them)."""
    year = fiscal_year(pv, filing_ends)
    if kind == "annual":
        return f"FY{year}"
    fp = pv.label_fact.fp or ""
    days = pv.fact.days
    if fp == "FY" or (days is not None and days in YEAR_DAYS):
        quarter = "Q4"
    else:
        quarter = fp if fp in {"Q1", "Q2", "Q3", "Q4"} else "Q?"
    return f"{quarter} {year}"


def describe_filing(fact: Fact) -> str:
    """``10-K 0000320193-24-000123 filed 2024-11-01``."""
    return f"{fact.form} {fact.accn} filed {fact.filed}"


# --------------------------------------------------------------------------------------------
# Statements
# --------------------------------------------------------------------------------------------


@dataclass
class _Row:
    end: str
    start: str | None = None
    label: str = ""
    values: dict[str, float] = field(default_factory=dict)
    facts: dict[str, Fact] = field(default_factory=dict)
    derived: dict[str, str] = field(default_factory=dict)
    concepts: dict[str, str] = field(default_factory=dict)


def _values_for(item: LineItem, facts: list[Fact], kind: PeriodKind) -> dict[str, PeriodValue]:
    if item.instant:
        return instant_values(facts)
    if kind == "annual":
        return annual_values(facts)
    return quarterly_values(facts, derive=item.additive)


def _field_values(
    companyfacts: Mapping[str, Any], item: LineItem, kind: PeriodKind
) -> dict[str, PeriodValue]:
    """Per period end, the value of the first concept in the fallback list that has one."""
    merged: dict[str, PeriodValue] = {}
    for concept in item.concepts:
        for end, pv in _values_for(item, concept_facts(companyfacts, concept, item.unit),
                                   kind).items():
            merged.setdefault(end, pv)
    return merged


def _period_ends(
    companyfacts: Mapping[str, Any], items: tuple[LineItem, ...], kind: PeriodKind
) -> dict[str, PeriodValue]:
    """The period ends of this statement kind, with a representative value for labels."""
    durations = [i for i in items if not i.instant]
    if durations:
        ends: dict[str, PeriodValue] = {}
        for item in durations:
            for end, pv in _field_values(companyfacts, item, kind).items():
                ends.setdefault(end, pv)
        return ends
    # Balance sheet: instants reported by a 10-K are annual; all are quarterly ends.
    ends = {}
    for item in items:
        for end, pv in _field_values(companyfacts, item, kind).items():
            if kind == "annual" and pv.label_fact.fp != "FY":
                continue
            ends.setdefault(end, pv)
    return ends


def _collect_rows(
    companyfacts: Mapping[str, Any], items: tuple[LineItem, ...], kind: PeriodKind
) -> list[_Row]:
    base_kind: PeriodKind = "annual" if kind == "annual" else "quarterly"
    ends = _period_ends(companyfacts, items, base_kind)
    filing_ends = filing_period_ends(companyfacts)
    rows = {end: _Row(end=end, start=pv.start, label=period_label(pv, base_kind, filing_ends))
            for end, pv in ends.items()}
    for item in items:
        for end, pv in _field_values(companyfacts, item, base_kind).items():
            row = rows.get(end)
            if row is None:
                continue
            row.values[item.field] = pv.value * item.sign
            row.facts[item.field] = pv.fact
            row.concepts[item.field] = pv.fact.concept
            if pv.derived:
                row.derived[item.field] = pv.derived
    return sorted(rows.values(), key=lambda r: r.end, reverse=True)


def _ratio(num: float | None, den: float | None) -> float | None:
    if num is None or not den:
        return None
    return round(num / den, 4)


def _derive_income(row: _Row) -> None:
    v = row.values
    if "gross_profit" not in v and "revenue" in v and "cost_of_revenue" in v:
        v["gross_profit"] = v["revenue"] - v["cost_of_revenue"]
        row.derived["gross_profit"] = "revenue - cost_of_revenue"
    for name, num in (("gross_margin", "gross_profit"), ("operating_margin", "operating_income"),
                      ("net_margin", "net_income")):
        ratio = _ratio(v.get(num), v.get("revenue"))
        if ratio is not None:
            v[name] = ratio
            row.derived[name] = f"{num} / revenue"


def _derive_balance(row: _Row) -> None:
    v = row.values
    if "total_liabilities" not in v and "liabilities_and_equity" in v \
            and "shareholders_equity" in v:
        v["total_liabilities"] = v["liabilities_and_equity"] - v["shareholders_equity"]
        row.derived["total_liabilities"] = "liabilities_and_equity - shareholders_equity"
    parts = [name for name in ("long_term_debt", "current_debt", "short_term_borrowings")
             if name in v]
    if parts:
        v["total_debt"] = sum(v[name] for name in parts)
        row.derived["total_debt"] = " + ".join(parts)


def _derive_cash_flow(row: _Row) -> None:
    v = row.values
    if "net_cash_flow_from_operations" in v and "capital_expenditure" in v:
        v["free_cash_flow"] = v["net_cash_flow_from_operations"] + v["capital_expenditure"]
        row.derived["free_cash_flow"] = (
            "net_cash_flow_from_operations + capital_expenditure (capex is negative)")


_DERIVERS: dict[str, Callable[[_Row], None]] = {
    "income": _derive_income, "balance": _derive_balance, "cash_flow": _derive_cash_flow,
}


def add_derived_fields(statement: str, row: _Row) -> None:
    """Fill computed fields (margins, total debt, free cash flow) and say how."""
    _DERIVERS[statement](row)


def _ttm_rows(quarter_rows: list[_Row], items: tuple[LineItem, ...]) -> list[_Row]:
    """Trailing twelve months at each quarter end with four contiguous quarters before it."""
    ascending = sorted(quarter_rows, key=lambda r: r.end)
    out: list[_Row] = []
    for i in range(3, len(ascending)):
        window = ascending[i - 3:i + 1]
        if not _contiguous(window):
            continue
        last = window[-1]
        row = _Row(end=last.end, start=window[0].start, label=f"TTM to {last.end}")
        for item in items:
            if item.instant:
                if item.field in last.values:
                    row.values[item.field] = last.values[item.field]
                    row.facts[item.field] = last.facts[item.field]
                continue
            if item.additive and all(item.field in r.values for r in window):
                row.values[item.field] = sum(r.values[item.field] for r in window)
                row.facts[item.field] = last.facts[item.field]
                row.derived[item.field] = "sum of the last four quarters"
        out.append(row)
    return sorted(out, key=lambda r: r.end, reverse=True)


def _contiguous(window: list[_Row]) -> bool:
    for before, after in itertools.pairwise(window):
        if not after.start:
            return False
        gap = (dt.date.fromisoformat(after.start) - dt.date.fromisoformat(before.end)).days
        if not 0 < gap <= 8:
            return False
    return True


def build_statement(
    companyfacts: Mapping[str, Any],
    statement: str,
    kind: PeriodKind,
    *,
    ticker: str,
    filing_url: Callable[[str], str],
) -> list[dict[str, Any]]:
    """Records for one statement (``income``, ``balance``, ``cash_flow``), newest first.

    Each record has the Financial Datasets field names plus ``source_filing`` (the filing
    most of its numbers came from), ``field_sources`` (fields from other filings) and
    ``derived`` (field -> how it was computed).
    """
    items = STATEMENT_ITEMS[statement]
    if kind == "ttm" and all(i.instant for i in items):
        kind = "quarterly"  # a balance sheet is a point in time: TTM means the latest quarters
    rows = _collect_rows(companyfacts, items, kind)
    if kind == "ttm":
        rows = _ttm_rows(rows, items)
    records: list[dict[str, Any]] = []
    for row in rows:
        if not row.values:
            continue
        add_derived_fields(statement, row)
        records.append(_record(row, items, kind, ticker, filing_url))
    return records


def _record(
    row: _Row, items: tuple[LineItem, ...], kind: PeriodKind, ticker: str,
    filing_url: Callable[[str], str],
) -> dict[str, Any]:
    record: dict[str, Any] = {"ticker": ticker, "report_period": row.end}
    if row.start and not all(i.instant for i in items):
        record["period_start"] = row.start
    record.update({"fiscal_period": row.label, "period": kind, "currency": "USD"})
    for name, value in row.values.items():
        record[name] = int(value) if float(value).is_integer() and abs(value) >= 1 else value
    counts = Counter(row.facts.values())
    main = counts.most_common(1)[0][0] if counts else None
    if main is not None:
        record["source_filing"] = {"form": main.form, "accession_number": main.accn,
                                   "filed": main.filed, "url": filing_url(main.accn)}
        others = {name: describe_filing(f) for name, f in row.facts.items()
                  if (f.accn, f.form) != (main.accn, main.form)}
        if others:
            record["field_sources"] = others
    if row.derived:
        record["derived"] = dict(row.derived)
    return record


def latest_dei_value(companyfacts: Mapping[str, Any], concept: str, unit: str) -> Fact | None:
    """The most recent value of a cover-page (``dei``) concept, e.g. shares outstanding."""
    facts = concept_facts(companyfacts, f"dei:{concept}", unit)
    if not facts:
        return None
    return max(facts, key=lambda f: (f.end, f.filed))
