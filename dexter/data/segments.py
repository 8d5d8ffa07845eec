"""Segment, geographic and product figures from the filings' own XBRL (keyless).

Company facts carry no dimensions, so "how much of Apple's revenue is Services" needs the
filing: each 10-K / 10-Q tags its segment note with contexts whose explicit members name
the slice (``us-gaap:StatementBusinessSegmentsAxis = aapl:GreaterChinaSegmentMember``).
:mod:`dexter.data.xbrl_facts` reads those facts; this module picks the ones of one axis
and turns them into records:

- **Axes**: ``segment`` (``us-gaap:StatementBusinessSegmentsAxis``), ``geography``
  (``srt:StatementGeographicalAxis``), ``product`` (``srt:ProductOrServiceAxis``), or any
  axis of the filing the user names (``--axis MajorCustomers``). A fact counts when its
  context has that axis alone, or with ``srt:ConsolidationItemsAxis =
  us-gaap:OperatingSegmentsMember`` (how segment totals are often tagged). Facts with two
  slicing axes (automotive segment x leasing) are left out.
- **Metrics**: revenue, operating income, gross profit, cost of revenue, net income,
  long-lived assets (the concept lists are the statements' own), or an XBRL concept named
  by the user.
- **Labels**: the filing's label linkbase when it can be read ("Wearables, Home and
  Accessories"), else the member's name in words ("Greater China", country codes as
  country names).
- **Periods**: on the company's fiscal calendar, as statements are: ``FY2024`` for 12
  months, ``Q2 2025`` for 3; a Q4 missing from the 10-Qs is the fiscal year (10-K) less
  the nine months to Q3, marked as derived.
- **Checks**: per axis, metric and period, the members' sum is compared with the total
  the filing states (the segment total, else the consolidated figure); when the axis holds
  two breakdowns (Products + Services, and iPhone + Mac + ... + Services), each breakdown
  that adds up to the total is named.

Every record names the filing it came from (form, accession number, filed date, URL).
"""

from __future__ import annotations

import datetime as dt
import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from dexter.data.base import DataError, NotFoundError
from dexter.data.fiscal import FiscalCalendar
from dexter.data.xbrl import INCOME_ITEMS
from dexter.data.xbrl_facts import FilingFacts, XbrlFact

SEGMENT_AXIS = "us-gaap:StatementBusinessSegmentsAxis"
GEOGRAPHY_AXIS = "srt:StatementGeographicalAxis"
PRODUCT_AXIS = "srt:ProductOrServiceAxis"
CONSOLIDATION = ("srt:ConsolidationItemsAxis", "us-gaap:OperatingSegmentsMember")

AXES: dict[str, str] = {"segment": SEGMENT_AXIS, "geography": GEOGRAPHY_AXIS,
                        "product": PRODUCT_AXIS}
AXIS_LABELS: dict[str, str] = {SEGMENT_AXIS: "Business segment",
                               GEOGRAPHY_AXIS: "Geography", PRODUCT_AXIS: "Product or service"}
_AXIS_WORDS: dict[str, tuple[str, ...]] = {
    "segment": ("segment", "segments", "business", "businesses", "operating segment",
                "reportable segment", "division"),
    "geography": ("geography", "geographic", "geographical", "region", "regions", "country",
                  "countries", "geo"),
    "product": ("product", "products", "service", "services", "product line", "category"),
}
DEFAULT_AXES: tuple[str, ...] = ("segment", "geography", "product")


def _us_gaap(field: str) -> tuple[str, ...]:
    item = next(i for i in INCOME_ITEMS if i.field == field)
    return tuple(c if ":" in c else f"us-gaap:{c}" for c in item.concepts)


METRICS: dict[str, tuple[str, ...]] = {
    "revenue": _us_gaap("revenue"),
    "operating_income": _us_gaap("operating_income"),
    "gross_profit": _us_gaap("gross_profit"),
    "cost_of_revenue": _us_gaap("cost_of_revenue"),
    "net_income": _us_gaap("net_income"),
    "long_lived_assets": ("us-gaap:LongLivedAssets", "us-gaap:NoncurrentAssets"),
}
"""Metric field -> XBRL concepts in fallback order (the statements' own lists)."""
DEFAULT_METRICS: tuple[str, ...] = ("revenue", "operating_income", "gross_profit")

ANNUAL_FORMS = ("10-K", "10-K/A", "20-F", "20-F/A", "40-F")
QUARTERLY_FORMS = ("10-Q", "10-Q/A")

# Members of the standard taxonomies, as filings label them.
_STANDARD_MEMBERS = {"us-gaap:ProductMember": "Products", "us-gaap:ServiceMember": "Services",
                     "srt:ProductMember": "Products", "srt:ServiceMember": "Services"}
COUNTRIES = {
    "US": "United States", "CN": "China", "JP": "Japan", "DE": "Germany", "GB": "United Kingdom",
    "FR": "France", "IN": "India", "CA": "Canada", "MX": "Mexico", "BR": "Brazil", "KR": "South Korea",
    "TW": "Taiwan", "HK": "Hong Kong", "SG": "Singapore", "AU": "Australia", "NL": "Netherlands",
    "IE": "Ireland", "CH": "Switzerland", "IT": "Italy", "ES": "Spain", "SE": "Sweden",
    "IL": "Israel", "NO": "Norway", "DK": "Denmark", "BE": "Belgium", "LU": "Luxembourg",
    "MY": "Malaysia", "TH": "Thailand", "VN": "Vietnam", "PH": "Philippines", "ID": "Indonesia",
    "ZA": "South Africa", "AE": "United Arab Emirates", "SA": "Saudi Arabia", "RU": "Russia",
    "PL": "Poland", "AT": "Austria", "FI": "Finland", "NZ": "New Zealand", "AR": "Argentina",
    "CL": "Chile", "CO": "Colombia", "PR": "Puerto Rico", "TR": "Turkey",
}
_SMALL_WORDS = {"and", "of", "the", "for", "in", "on", "to", "a", "an", "or", "other"}


def member_label(member: str, labels: dict[str, str] | None = None) -> str:
    """The reader's name of a member QName: the filing's label, a standard one, a country
    name for ``country:XX``, else the name in words (``aapl:RestOfAsiaPacificSegmentMember``
    -> ``Rest of Asia Pacific``)."""
    if labels and labels.get(member):
        return labels[member]
    if member in _STANDARD_MEMBERS:
        return _STANDARD_MEMBERS[member]
    prefix, _, name = member.rpartition(":")
    if prefix == "country":
        return COUNTRIES.get(name, name)
    name = re.sub(r"(Segment)?Member$", "", name) or name
    name = re.sub(r"(?<=[a-z])and(?=[A-Z])", " and ", name)
    name = re.sub(r"(?<![A-Za-z])I(?=[A-Z][a-z])", "i", name)  # IPhone -> iPhone
    words = re.findall(r"i[A-Z][a-z]+|[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", name)
    shown = [w.lower() if (w.lower() in _SMALL_WORDS and i) else w for i, w in enumerate(words)]
    return " ".join(shown) or member


def axis_label(axis: str, labels: dict[str, str] | None = None) -> str:
    """A reader's name for an axis."""
    if axis in AXIS_LABELS:
        return AXIS_LABELS[axis]
    if labels and labels.get(axis):
        return labels[axis]
    return member_label(axis.removesuffix("Axis"))


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def resolve_axes(wanted: str | None, available: Iterable[str]) -> list[str]:
    """The axis QNames ``wanted`` names (None: the three standard ones present), matched
    as a known word (segment, geography, product...) or against the filing's axis names."""
    present = list(dict.fromkeys(available))
    if not wanted:
        return [AXES[k] for k in DEFAULT_AXES if AXES[k] in present]
    key = wanted.strip().lower()
    for name, words in _AXIS_WORDS.items():
        if key == name or key in words:
            return [AXES[name]]
    norm = _norm(key.removesuffix("axis"))
    found = [a for a in present if norm and norm in _norm(a.rpartition(":")[2].removesuffix("Axis"))]
    if found:
        return found
    shown = ", ".join(sorted({a.rpartition(':')[2] for a in present})) or "none"
    raise DataError(f"No axis named '{wanted}' in this filing. Its axes: {shown}. Use "
                    f"segment, geography, product, or one of those names.")


def metric_concepts(metric: str) -> tuple[str, tuple[str, ...]]:
    """(field name, concepts) of a metric; an XBRL concept name (``LongLivedAssets``,
    ``us-gaap:LongLivedAssets``) becomes its own field (``long_lived_assets``)."""
    key = metric.strip()
    if key.lower() in METRICS:
        return key.lower(), METRICS[key.lower()]
    concept = key if ":" in key else f"us-gaap:{key}"
    local = concept.rpartition(":")[2]
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", local):
        raise DataError(f"'{metric}' is neither a metric ({', '.join(METRICS)}) nor an XBRL "
                        f"concept name such as LongLivedAssets.")
    field = re.sub(r"(?<!^)(?=[A-Z])", "_", local).lower()
    return field, (concept,)


# --------------------------------------------------------------------------------------------
# Facts of one filing -> slices
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Slice:
    """One value of one member (or the axis total, ``member`` None) for one period."""

    axis: str
    member: str | None
    field: str
    concept: str
    value: float
    start: str | None
    end: str
    accession: str
    total_kind: str = ""
    """For ``member`` None: ``segments`` (the segment total) or ``consolidated``."""


def _member_of(fact: XbrlFact, axis: str) -> str | None:
    dims = fact.dims
    if len(dims) == 1 and dims[0][0] == axis:
        return dims[0][1]
    if len(dims) == 2 and CONSOLIDATION in dims:
        other = next(d for d in dims if d != CONSOLIDATION)
        return other[1] if other[0] == axis else None
    return None


def slices(facts: FilingFacts, *, axes: list[str], fields: list[tuple[str, tuple[str, ...]]],
           accession: str) -> list[Slice]:
    """The members' values of each axis and metric (the first concept with any value on
    that axis), and the totals they are checked against."""
    out: list[Slice] = []
    by_concept: dict[str, list[XbrlFact]] = {}
    for fact in facts.facts:
        if fact.unit.upper() in ("USD", "EUR", "JPY", "GBP", "CNY", "CAD", "CHF") or \
                fact.unit.upper().endswith("USD"):
            by_concept.setdefault(fact.concept, []).append(fact)
    for axis in axes:
        for field, concepts in fields:
            for concept in concepts:
                members = [(f, _member_of(f, axis)) for f in by_concept.get(concept, [])]
                chosen = [(f, m) for f, m in members if m is not None]
                if not chosen:
                    continue
                for fact, member in chosen:
                    out.append(Slice(axis, member, field, concept, fact.value,
                                     fact.context.start, fact.context.end, accession))
                # the totals: of the same concept when the filing states one, else the
                # metric's next concept (Tesla tags segments "Revenues" and the income
                # statement "RevenueFromContractWithCustomer...")
                seen: set[tuple[str, str | None, str]] = set()
                for total_concept in (concept, *[c for c in concepts if c != concept]):
                    for fact in by_concept.get(total_concept, []):
                        if fact.dims == (CONSOLIDATION,):
                            kind = "segments"
                        elif not fact.dims:
                            kind = "consolidated"
                        else:
                            continue
                        key = (kind, fact.context.start, fact.context.end)
                        if key in seen:
                            continue
                        seen.add(key)
                        out.append(Slice(axis, None, field, total_concept, fact.value,
                                         fact.context.start, fact.context.end, accession,
                                         kind))
                break
    return out


def available_axes(facts: FilingFacts) -> list[str]:
    """Every axis a fact of the filing is sliced by, most used first."""
    counts: dict[str, int] = {}
    for fact in facts.facts:
        for axis, _ in fact.dims:
            counts[axis] = counts.get(axis, 0) + 1
    return sorted(counts, key=lambda a: -counts[a])


# --------------------------------------------------------------------------------------------
# Slices of several filings -> records
# --------------------------------------------------------------------------------------------

YEAR = range(350, 381)
QUARTER = range(80, 106)
NINE_MONTHS = range(260, 290)


def days_of(start: str | None, end: str) -> int | None:
    if not start:
        return None
    return (dt.date.fromisoformat(end) - dt.date.fromisoformat(start)).days + 1


@dataclass
class _Value:
    value: float
    start: str | None
    end: str
    accession: str
    concept: str
    derived: str = ""


def period_values(found: list[Slice], period: str, calendar: FiscalCalendar,
                  order: dict[str, int]) -> dict[tuple[str, str | None, str, str, str], _Value]:
    """One value per (axis, member, field, total kind, fiscal label): the newest filing's
    (``order``: accession -> 0 for the newest). Quarterly: 3-month values, and a missing Q4
    derived as the fiscal year less the nine months to Q3."""
    chosen: dict[tuple[str, str | None, str, str, str], _Value] = {}
    ranked = sorted(found, key=lambda s: order.get(s.accession, 99))
    annual = period == "annual"
    durations: dict[tuple[str, str | None, str, str], list[Slice]] = {}
    for item in ranked:
        days = days_of(item.start, item.end)
        end = dt.date.fromisoformat(item.end)
        if days is None:  # an instant (long-lived assets): labelled by the date
            if annual and not calendar.is_year_end(end):
                continue
            label = calendar.label(item.end, annual=annual or calendar.is_year_end(end))
        elif annual and days in YEAR and calendar.is_year_end(end):
            label = calendar.label(item.end, annual=True)
        elif not annual and days in QUARTER:
            label = calendar.label(item.end, annual=False)
        else:
            durations.setdefault((item.axis, item.member, item.field, item.total_kind),
                                 []).append(item)
            continue
        key = (item.axis, item.member, item.field, item.total_kind, label)
        chosen.setdefault(key, _Value(item.value, item.start, item.end, item.accession,
                                      item.concept))
    if not annual:
        _derive_q4(durations, chosen, calendar)
    return chosen


def _derive_q4(durations: dict[tuple[str, str | None, str, str], list[Slice]],
               chosen: dict[tuple[str, str | None, str, str, str], _Value],
               calendar: FiscalCalendar) -> None:
    for (axis, member, field, kind), items in durations.items():
        years = [s for s in items if days_of(s.start, s.end) in YEAR]
        nines = [s for s in items if days_of(s.start, s.end) in NINE_MONTHS]
        for year in years:
            nine = next((n for n in nines if n.start == year.start), None)
            if nine is None:
                continue
            label = calendar.label(year.end, annual=False)
            key = (axis, member, field, kind, label)
            if key in chosen:
                continue
            q_start = (dt.date.fromisoformat(nine.end) + dt.timedelta(days=1)).isoformat()
            chosen[key] = _Value(year.value - nine.value, q_start, year.end, year.accession,
                                 year.concept, f"fiscal year ({year.accession}) minus nine "
                                 f"months ({nine.accession})")


def build_records(values: dict[tuple[str, str | None, str, str, str], _Value], *,
                  ticker: str, period: str, labels: dict[str, str],
                  filings: dict[str, dict[str, Any]], member_filter: str | None,
                  limit: int) -> tuple[list[dict[str, Any]], list[str]]:
    """Records (one per axis, member and period, the members first and the total last)
    and the notes of the sum checks, newest periods first, at most ``limit`` periods."""
    periods = sorted({(k[4], v.end) for k, v in values.items()}, key=lambda p: p[1],
                     reverse=True)
    kept_labels = [label for label, _ in dict.fromkeys(periods)][:limit]
    kept = set(kept_labels)
    rows: dict[tuple[str, str | None, str, str], dict[str, Any]] = {}
    for (axis, member, field, kind, label), value in values.items():
        if label not in kept:
            continue
        if member is not None and member_filter and not _member_matches(member, labels,
                                                                         member_filter):
            continue
        key = (axis, member, kind, label)
        record = rows.get(key)
        if record is None:
            filing = filings.get(value.accession, {})
            record = {
                "ticker": ticker,
                "axis": axis_label(axis, labels),
                "segment": member_label(member, labels) if member else (
                    "Total of segments" if kind == "segments" else "Total (consolidated)"),
                "fiscal_period": label, "report_period": value.end,
                **({"period_start": value.start} if value.start else {}),
                "period": period, "currency": "USD",
                "dimension": axis, "member": member or "",
                "is_total": member is None,
                "source_filing": filing,
            }
            rows[key] = record
        record[field] = int(value.value) if float(value.value).is_integer() else value.value
        record.setdefault("concepts", {})[field] = value.concept
        if value.derived:
            record.setdefault("derived", {})[field] = value.derived
    _shares_of_total(list(rows.values()))
    axis_order = {a: i for i, a in enumerate(AXES.values())}

    def sort_key(r: dict[str, Any]) -> tuple[int, str, int, bool, float]:
        size = next((float(r[f]) for f in ("revenue", *METRICS) if isinstance(r.get(f), int | float)), 0.0)
        return (axis_order.get(r["dimension"], len(axis_order)), r["dimension"],
                kept_labels.index(r["fiscal_period"]), r["is_total"], -size)

    records = sorted(rows.values(), key=sort_key)
    if member_filter and not any(not r["is_total"] for r in records):
        raise NotFoundError(f"No member matching '{member_filter}' on the axes read. Members "
                            f"found: {', '.join(sorted({member_label(k[1], labels) for k in values if k[1]})) or 'none'}.")
    return records, sum_checks(records)


def _shares_of_total(records: list[dict[str, Any]]) -> None:
    """Each member's revenue as a fraction of the consolidated revenue of its period."""
    totals = {(r["dimension"], r["fiscal_period"]): r.get("revenue") for r in records
              if r["is_total"] and r["segment"] == "Total (consolidated)"}
    for record in records:
        total = totals.get((record["dimension"], record["fiscal_period"]))
        value = record.get("revenue")
        if record["is_total"] or not isinstance(value, int | float) or not total:
            continue
        record["share_of_total"] = round(value / total, 4)
        record.setdefault("derived", {})["share_of_total"] = "revenue / consolidated revenue"


def _member_matches(member: str, labels: dict[str, str], wanted: str) -> bool:
    norm = _norm(wanted)
    return bool(norm) and (norm in _norm(member.rpartition(":")[2]) or
                           norm in _norm(member_label(member, labels)))


def sum_checks(records: list[dict[str, Any]]) -> list[str]:
    """For each axis and metric: whether the members add up to the stated total in each
    period (periods with the same outcome share one note)."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for record in records:
        for field in record.get("concepts", {}):
            groups.setdefault((record["axis"], field, record["fiscal_period"]), []).append(record)
    outcomes: dict[tuple[str, str, str], list[tuple[str, str]]] = {}
    for (axis, field, label), group in groups.items():
        members = [(r["segment"], float(r[field])) for r in group if not r["is_total"]
                   and isinstance(r.get(field), int | float)]
        totals = {r["segment"]: float(r[field]) for r in group if r["is_total"]
                  and isinstance(r.get(field), int | float)}
        total_name = "Total of segments" if "Total of segments" in totals else \
            "Total (consolidated)"
        total = totals.get(total_name)
        if total is None or len(members) < 2:
            continue
        whole = sum(v for _, v in members)
        parts = [] if _same(whole, total) else breakdowns(members, total)
        if _same(whole, total):
            outcome = f"the {len(members)} members add up to the {total_name.lower()}"
        elif parts:
            outcome = ("; ".join(" + ".join(p) for p in parts) +
                       f" each add up to the {total_name.lower()} (the axis holds more than "
                       f"one breakdown)")
        else:
            outcome = (f"the members do not add up to the {total_name.lower()} (the "
                       f"difference is eliminations, corporate or unallocated items)")
            label = f"{label}: {_money(whole)} against {_money(total)}"
        outcomes.setdefault((axis, field, outcome), []).append(
            (label, "" if "against" in label else _money(total)))
    notes = []
    for (axis, field, outcome), periods in outcomes.items():
        shown = ", ".join(f"{p} ({t})" if t else p for p, t in periods)
        notes.append(f"{axis}, {field.replace('_', ' ')}: {outcome}: {shown}.")
    return notes


def breakdowns(members: list[tuple[str, float]], total: float, limit: int = 2) -> list[list[str]]:
    """Groups of at least two members that add up to ``total`` exactly (largest first);
    axes with more than 16 members are not searched."""
    if len(members) > 16:
        return []
    found: list[list[str]] = []
    for size in range(len(members), 1, -1):
        for combo in itertools.combinations(members, size):
            if _same(sum(v for _, v in combo), total):
                names = [n for n, _ in combo]
                if not any(set(names) <= set(f) for f in found):
                    found.append(names)
                if len(found) >= limit:
                    return found
    return found


def _same(a: float, b: float) -> bool:
    return abs(a - b) <= max(1.0, abs(b) * 1e-9)


def _money(value: float) -> str:
    return f"${value / 1e6:,.0f} million"
