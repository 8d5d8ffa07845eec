"""Turn SEC XBRL company facts into statements (pure functions, no I/O).

Company facts (``/api/xbrl/companyfacts/CIK##########.json``) list, per concept and unit,
every value any filing reported: ``start`` (durations only), ``end``, ``val``, ``fy``/``fp``
(the fiscal year and period *of the filing*, not of the value), ``form``, ``filed``, ``accn``
and sometimes ``frame``. The same period appears in several filings (as a comparative);
the value shown is the latest filed by a periodic report (10-K, 10-Q and their amendments
win over an 8-K or proxy with the same period), so restatements win and the table says
which values were restated. Period labels come from the company's fiscal calendar
(:mod:`dexter.data.fiscal`), one label per period; ends a few days apart are one period.
Per-share values and share counts are put on the basis of the latest stock split
(:mod:`dexter.data.splits`), and each adjusted value says so.

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

from dexter.data.fiscal import FiscalCalendar, calendar_for
from dexter.data.splits import Split, adjustment, detect_splits

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


PERIODIC_FORMS = frozenset({"10-K", "10-Q", "10-K/A", "10-Q/A", "10-KT", "10-QT", "20-F",
                            "20-F/A", "40-F", "40-F/A"})


def _pick(facts: Iterable[Fact]) -> dict[tuple[str | None, str], PeriodValue]:
    """One value per (start, end): the latest filed by a periodic report (any filing when
    none is), with the earliest such report kept to tell restatements."""
    by_period: dict[tuple[str | None, str], list[Fact]] = {}
    for fact in facts:
        by_period.setdefault((fact.start, fact.end), []).append(fact)
    chosen: dict[tuple[str | None, str], PeriodValue] = {}
    for key, group in by_period.items():
        periodic = [f for f in group if f.form in PERIODIC_FORMS] or group
        periodic.sort(key=lambda f: (f.filed, f.accn))
        latest, earliest = periodic[-1], periodic[0]
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
    restated: dict[str, str] = field(default_factory=dict)
    adjusted: dict[str, str] = field(default_factory=dict)


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


def _collect_rows(
    companyfacts: Mapping[str, Any], items: tuple[LineItem, ...], kind: PeriodKind,
    calendar: FiscalCalendar, splits: list[Split],
) -> list[_Row]:
    """One row per fiscal period (by label), each field from its best fact."""
    annual = kind == "annual"
    base_kind: PeriodKind = "annual" if annual else "quarterly"
    rows: dict[str, _Row] = {}
    for item in items:
        for end, pv in _field_values(companyfacts, item, base_kind).items():
            date = dt.date.fromisoformat(end)
            if annual and not calendar.is_year_end(date):
                continue  # a 12-month span that is not a fiscal year, or a mid-year instant
            label = calendar.label(end, annual=annual)
            row = rows.setdefault(label, _Row(end=end, start=pv.start, label=label))
            current = row.facts.get(item.field)
            if current is not None and (current.filed, current.accn) >= (pv.fact.filed, pv.fact.accn):
                continue  # the same period a few days apart: the later filing's value wins
            if end > row.end:
                row.end, row.start = end, pv.start or row.start
            _set_value(row, item, pv, splits)
    return sorted(rows.values(), key=lambda r: r.end, reverse=True)


def _set_value(row: _Row, item: LineItem, pv: PeriodValue, splits: list[Split]) -> None:
    value = pv.value
    name = item.field
    row.adjusted.pop(name, None)
    row.restated.pop(name, None)
    row.derived.pop(name, None)
    if item.unit in ("USD/shares", "shares") and splits:
        factor, later = adjustment(splits, pv.fact.filed)
        if factor != 1.0:
            value = round(value / factor, 4) if item.unit == "USD/shares" else value * factor
            how = "divided" if item.unit == "USD/shares" else "multiplied"
            row.adjusted[name] = (f"{how} by {factor:g} for the " +
                                  " and ".join(s.describe() for s in later) +
                                  f"; as filed: {_plain(pv.value)}")
    first = pv.label_fact
    if first.value != pv.fact.value and not _is_split_restatement(item, first, pv.fact, splits):
        row.restated[name] = (f"first reported as {_plain(first.value)} in {describe_filing(first)}; "
                              f"restated in {describe_filing(pv.fact)}")
    row.values[name] = value * item.sign
    row.facts[name] = pv.fact
    row.concepts[name] = pv.fact.concept
    if pv.derived:
        row.derived[name] = pv.derived


def _is_split_restatement(item: LineItem, first: Fact, latest: Fact, splits: list[Split]) -> bool:
    if item.unit not in ("USD/shares", "shares") or not first.value or not latest.value:
        return False
    factor, _ = adjustment([s for s in splits if s.effective_filed <= latest.filed], first.filed)
    ratio = first.value / latest.value if item.unit == "USD/shares" else latest.value / first.value
    return factor != 1.0 and abs(ratio / factor - 1) <= 0.02


def _plain(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:,.4g}"


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
    fiscal_year_end: str | None = None,
) -> list[dict[str, Any]]:
    """Records for one statement (``income``, ``balance``, ``cash_flow``), newest first.

    Each record has the Financial Datasets field names plus ``source_filing`` (the filing
    most of its numbers came from: form, accession number, filing date, the fiscal period
    it reports on and ``filing_url(accession)``), ``field_sources`` (fields from other
    filings),
    ``derived`` (field -> how it was computed), ``restated`` (field -> what was first
    reported) and ``split_adjusted`` (field -> the split and the value as filed).
    ``fiscal_year_end`` is submissions' ``fiscalYearEnd`` (``"0926"``); without it the
    calendar is read from the facts.
    """
    items = STATEMENT_ITEMS[statement]
    if kind == "ttm" and all(i.instant for i in items):
        kind = "quarterly"  # a balance sheet is a point in time: TTM means the latest quarters
    calendar = calendar_for(companyfacts, fiscal_year_end)
    rows = _collect_rows(companyfacts, items, kind, calendar, detect_splits(companyfacts))
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
        if main.fy and main.fp:
            # the period the filing reports on, labelled like the records' own periods
            record["source_filing"]["fiscal_period"] = (
                f"FY{main.fy}" if main.fp == "FY" else f"{main.fp} {main.fy}")
        others = {name: describe_filing(f) for name, f in row.facts.items()
                  if (f.accn, f.form) != (main.accn, main.form)}
        if others:
            record["field_sources"] = others
    if row.derived:
        record["derived"] = dict(row.derived)
    if row.restated:
        record["restated"] = dict(row.restated)
    if row.adjusted:
        record["split_adjusted"] = dict(row.adjusted)
    return record


def statements_from_filing(
    facts: Iterable[tuple[str, float, str | None, str]], statement: str,
    calendar: FiscalCalendar, *, ticker: str, source_filing: dict[str, Any],
) -> list[dict[str, Any]]:
    """Records of one statement from one filing's own consolidated facts
    (``(concept, value, start, end)``, concepts as ``us-gaap:Name``): every period the
    filing reports (its own and the comparatives), newest first, labelled on ``calendar``.
    Quarters, years and year-to-date spans (``6M to Q2 2025``); payments are shown as
    outflows, as for company facts; dates the filing reports only a figure or two for (an
    equity statement's opening balance) are left out."""
    items = STATEMENT_ITEMS[statement]
    by_concept: dict[str, list[tuple[float, str | None, str]]] = {}
    for concept, value, start, end in facts:
        by_concept.setdefault(concept.rpartition(":")[2], []).append((value, start, end))
    rows: dict[tuple[str | None, str], _Row] = {}
    for item in items:
        for concept in item.concepts:
            name = concept.rpartition(":")[2]
            taken = False
            for value, start, end in by_concept.get(name, []):
                days = (dt.date.fromisoformat(end) - dt.date.fromisoformat(start)).days + 1 \
                    if start else None
                if item.instant != (start is None):
                    continue
                if days is not None and not any(days in r for r in (
                        YEAR_DAYS, QUARTER_DAYS, HALF_DAYS, NINE_MONTH_DAYS)):
                    continue
                row = rows.setdefault((start, end), _Row(end=end, start=start))
                if item.field not in row.values:
                    row.values[item.field] = value * item.sign
                    taken = True
            if taken:
                break
    records = []
    most = max((len(r.values) for r in rows.values()), default=0)
    for (start, end), row in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0] or ""),
                                    reverse=True):
        if len(row.values) < min(3, most):
            continue
        days = (dt.date.fromisoformat(end) - dt.date.fromisoformat(start)).days + 1 \
            if start else None
        annual = days in YEAR_DAYS if days is not None else calendar.is_year_end(
            dt.date.fromisoformat(end))
        label = calendar.label(end, annual=annual)
        kind = "annual" if annual else "quarterly"
        if days is not None and (days in HALF_DAYS or days in NINE_MONTH_DAYS):
            label, kind = f"{round(days / 30.4)}M to {label}", "year_to_date"
        add_derived_fields(statement, row)
        record: dict[str, Any] = {"ticker": ticker, "report_period": end}
        if start:
            record["period_start"] = start
        record.update({"fiscal_period": label, "period": kind, "currency": "USD"})
        for name, value in row.values.items():
            record[name] = int(value) if float(value).is_integer() and abs(value) >= 1 else value
        record["source_filing"] = source_filing
        if row.derived:
            record["derived"] = dict(row.derived)
        records.append(record)
    return records


def latest_dei_value(companyfacts: Mapping[str, Any], concept: str, unit: str) -> Fact | None:
    """The most recent value of a cover-page (``dei``) concept, e.g. shares outstanding."""
    facts = concept_facts(companyfacts, f"dei:{concept}", unit)
    if not facts:
        return None
    return max(facts, key=lambda f: (f.end, f.filed))
