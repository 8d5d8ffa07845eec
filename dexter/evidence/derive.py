"""Derived figures: growth rates, margins, shares, CAGRs and differences recomputed from the
table cells the sentence ties them to.

A figure that is a change or a ratio rarely appears in a source as written: "revenue grew
2.0%" is 391,035 over 383,285. When the words name the metric and (or the sentence's other
figures pin down) the periods, the figure is computed from the cells and accepted when it
agrees at the precision written (``2.0%``: within 0.05 points). What is computed:

- growth: the named metric in the named period against the base period ("from FY2023"),
  else the prior year (and, for a quarter, the prior quarter); a decline is negative;
- CAGR: between the first and the last period named, per year;
- difference: the same two cells subtracted (an amount, or a margin's change in points);
- share: the named metric over the metric after "of" ("24.6% of revenue");
- a ratio metric with no cell of its own: its two parts (gross profit over revenue).

No period named and no figure to tie to: only the latest period (and its base) is tried,
so a made-up rate cannot hide among every pair of years.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from dexter import metrics
from dexter.evidence.index import Evidence, EvidenceIndex
from dexter.evidence.periods import (
    TOLERANCE_DAYS,
    PeriodRef,
    RowPeriod,
    compare,
    fiscal_year_of,
    month_of,
    prior,
)
from dexter.evidence.reading import Reading


@dataclass(slots=True)
class Derivation:
    """A figure computed from cells: ``ok`` when it agrees with the claim."""

    ok: bool
    value: float
    reason: str
    source: str
    cells: tuple[Evidence, ...]
    other: bool = False
    """The figure is another period's or another line's sum (not ``ok``: misattributed)."""


def _cells(index: EvidenceIndex, field: str, pool: Collection[str] | None,
           companies: Sequence[str]) -> list[Evidence]:
    return [e for e in index.field_cells(field, pool)
            if e.period is not None and e.period.kind in ("fy", "quarter", "ttm")
            and (not companies or not e.entity or e.entity in companies)
            and e.kind not in ("percent",)]


def _group(cells: Sequence[Evidence]) -> dict[RowPeriod, list[Evidence]]:
    groups: dict[RowPeriod, list[Evidence]] = {}
    for e in cells:
        if e.period is not None:
            groups.setdefault(e.period, []).append(e)
    return groups


def _at(cells: Sequence[Evidence] | dict[RowPeriod, list[Evidence]], ref: PeriodRef
        ) -> list[Evidence]:
    groups = cells if isinstance(cells, dict) else _group(cells)
    return [e for period, found in groups.items() if compare(ref, period) is True
            for e in found]


def _latest(cells: Sequence[Evidence]) -> list[PeriodRef]:
    """The latest annual and quarterly periods among ``cells``, as references."""
    out: list[PeriodRef] = []
    for kind in ("fy", "quarter"):
        rows = [e.period for e in cells if e.period is not None and e.period.kind == kind
                and e.period.year is not None]
        if not rows:
            continue
        last = max(rows, key=lambda p: (p.year or 0, p.quarter or 0))
        out.append(PeriodRef("fy", year=last.year) if kind == "fy" else
                   PeriodRef("quarter", year=last.year, quarter=last.quarter))
    return out


def _earlier(then: RowPeriod, now: RowPeriod) -> bool:
    """Whether ``then`` is a period before ``now``."""
    if then.end is not None and now.end is not None:
        return then.end < now.end
    key = (then.year or 0, then.quarter or 0)
    return key < (now.year or 0, now.quarter or 0) and then.label != now.label


def _signed(r: Reading) -> float:
    negative = r.claim.negative or r.direction < 0
    return -r.claim.value if negative else r.claim.value


def _agrees(r: Reading, value: float) -> bool:
    tolerance = r.claim.tolerance * (1 + 1e-9) + 1e-9
    target = _signed(r)
    if abs(value - target) <= tolerance:
        return True
    # no direction written ("revenue growth of 2%"): the size must agree and not fall
    return r.direction == 0 and not r.claim.negative and abs(abs(value) - r.claim.value) \
        <= tolerance and value >= 0


def _describe(period: RowPeriod | None) -> str:
    return period.label if period is not None else ""


def _tied_periods(tied: Sequence[Evidence]) -> list[PeriodRef]:
    """The years and quarters of the cells a sentence's other figures matched."""
    return [PeriodRef("fy", year=e.period.year) if e.period.kind == "fy" else
            PeriodRef("quarter", year=e.period.year, quarter=e.period.quarter)
            for e in tied if e.period is not None and e.period.year is not None
            and e.period.kind in ("fy", "quarter")]


def _pairs(r: Reading, cells: Sequence[Evidence], tied: Sequence[Evidence]
           ) -> list[tuple[Evidence, Evidence]]:
    """(current, base) cell pairs of one metric for a change."""
    current: list[PeriodRef] = list(r.periods) or _tied_periods(tied)
    if not current:
        current = _latest(cells)
    groups = _group(cells)
    out: list[tuple[Evidence, Evidence]] = []
    for ref in current:
        bases = list(r.base) or list(prior(ref, r.basis))
        for now in _at(groups, ref):
            for base_ref in bases:
                for then in _at(groups, base_ref):
                    if then.entity == now.entity and then.period is not None and \
                            now.period is not None and then.period.kind == now.period.kind \
                            and _earlier(then.period, now.period):
                        out.append((now, then))
    return out


def derive(r: Reading, index: EvidenceIndex, pool: Collection[str] | None,
           tied: Sequence[Evidence]) -> Derivation | None:
    """The claim recomputed from cells (None when nothing can be computed for it).
    ``tied``: cells the sentence's other figures matched (they pin down the metric and
    the periods when the words do not)."""
    fields = list(r.fields)
    if not fields and not r.qualified:
        fields = list(dict.fromkeys(f for e in tied for f in e.fields))
    if not fields:
        return None
    companies = list(r.companies) or list(dict.fromkeys(e.entity for e in tied if e.entity))
    if not companies and pool is None and len(index.entities) > 1:
        return None  # whose growth? the words name no company and no source is cited
    tried: list[Derivation] = []
    for name in fields:
        metric = metrics.metric(name)
        if metric is None:
            continue
        base_field = metric.growth_of or name
        found = _derive_one(r, index, pool, companies, name, base_field, metric, tied)
        if found is not None:
            if found.ok:
                return found
            tried.append(found)
    return tried[0] if tried else None


def _derive_one(r: Reading, index: EvidenceIndex, pool: Collection[str] | None,
                companies: Sequence[str], name: str, base_field: str, metric: metrics.Metric,
                tied: Sequence[Evidence]) -> Derivation | None:
    claim = r.claim
    label = metrics.label(base_field).lower()
    if r.role in ("growth", "cagr") and claim.kind == "percent":
        cells = _cells(index, base_field, pool, companies)
        if not cells:
            return None
        if r.role == "cagr":
            return _cagr(r, cells, label)
        first: tuple[float, Evidence, Evidence] | None = None
        for now, then in _pairs(r, cells, tied):
            if then.value <= 0 or (now.value < 0 and then.value < 0):
                continue
            growth = (now.value / then.value - 1) * 100
            ok = _agrees(r, growth)
            if ok or first is None:
                first = (growth, now, then)
            if ok:
                break
        if first is None:
            return None
        growth, now, then = first
        verb = "grew" if growth >= 0 else "fell"
        return Derivation(_agrees(r, growth), growth,
                          f"{label} {verb} {abs(growth):.1f}% from {_describe(then.period)} to "
                          f"{_describe(now.period)} [{now.source}]", now.source, (now, then))
    if r.role == "difference":
        ratio_field = metric.kind == "ratio"
        if not ratio_field:
            cells = _cells(index, base_field, pool, companies)
        elif metric.parts is not None:
            cells = _ratio_cells(index, metric.parts, pool, companies)
        else:
            cells = [e for e in index.by_field.get(name, ()) if e.kind == "percent"
                     and (pool is None or e.source in pool) and e.period is not None]
        earliest: Derivation | None = None
        for now, then in _pairs(r, cells, tied):
            change = now.value - then.value
            found = Derivation(_agrees(r, change), change,
                               f"{label} changed by {_amount(change, claim.kind, ratio_field)} "
                               f"from {_describe(then.period)} to {_describe(now.period)} "
                               f"[{now.source}]", now.source, (now, then))
            if found.ok:
                return found
            earliest = earliest or found
        return earliest
    if r.role == "share" and claim.kind == "percent":
        return _ratio(r, index, pool, companies, name, r.denominator, label, tied)
    if claim.kind in ("percent", "multiple") and metric.parts is not None:
        numerator, denominator = metric.parts
        return _ratio(r, index, pool, companies, numerator, (denominator,),
                      metric.label.lower(), tied, percent=claim.kind == "percent")
    if claim.kind in ("money", "number") and r.periods and any(p.kind == "ttm"
                                                              for p in r.periods):
        return _trailing(r, index, pool, companies, name, label)
    if claim.kind in ("money", "number") and any(p.kind == "partial" and p.span
                                                 for p in r.periods):
        return _sum_of_quarters(r, index, pool, companies, name, label)
    return None


def _ratio_cells(index: EvidenceIndex, parts: tuple[str, str], pool: Collection[str] | None,
                 companies: Sequence[str]) -> list[Evidence]:
    """A ratio per period computed from its two parts' cells (exact, where the tables'
    own ratio cells are rounded), as percent-point evidence."""
    tops = _cells(index, parts[0], pool, companies)
    bottoms = {(e.entity, e.source, e.period.label if e.period else ""): e
               for e in _cells(index, parts[1], pool, companies)}
    out = []
    for top in tops:
        key = (top.entity, top.source, top.period.label if top.period else "")
        bottom = bottoms.get(key)
        if bottom is not None and bottom.value:
            ratio = top.value / bottom.value * 100
            out.append(Evidence(top.source, ratio, abs(ratio), "percent", top.where,
                                top.fields, top.label, top.period, top.entity, top.table,
                                top.row, top.column))
    return out


def _amount(value: float, kind: str, points: bool) -> str:
    if points:
        return f"{value:+.1f} points"
    size = abs(value)
    for scale, word in ((1e12, "trillion"), (1e9, "billion"), (1e6, "million")):
        if size >= scale:
            return f"{'-' if value < 0 else ''}{size / scale:,.1f} {word}"
    return f"{value:,.2f}"


def _ratio(r: Reading, index: EvidenceIndex, pool: Collection[str] | None,
           companies: Sequence[str], numerator: str, denominators: Sequence[str], label: str,
           tied: Sequence[Evidence], *, percent: bool = True) -> Derivation | None:
    tops = _cells(index, numerator, pool, companies)
    first: Derivation | None = None
    refs: list[PeriodRef] = list(r.periods) or _tied_periods(tied)
    for denominator in denominators:
        bottoms = _cells(index, denominator, pool, companies)
        candidates = [(t, b) for t in tops for b in bottoms
                      if t.entity == b.entity and t.period is not None and b.period is not None
                      and t.period.kind == b.period.kind and t.period.label == b.period.label]
        if refs:
            candidates = [(t, b) for t, b in candidates
                          if any(compare(ref, t.period) is True for ref in refs
                                 if t.period is not None)]
        for top, bottom in candidates:
            if bottom.value == 0:
                continue
            value = top.value / bottom.value * (100 if percent else 1)
            ok = abs(value - (-claim_value(r) if r.claim.negative else claim_value(r))) <= \
                r.claim.tolerance * (1 + 1e-9) + 1e-9
            unit = "%" if percent else "x"
            found = Derivation(ok, value, f"{label} {_describe(top.period)} is "
                               f"{value:.1f}{unit} ({metrics.label(top.fields[0]).lower()} over "
                               f"{metrics.label(bottom.fields[0]).lower()}) [{top.source}]",
                               top.source, (top, bottom))
            if ok:
                return found
            if refs:
                first = first or found
    return first


def claim_value(r: Reading) -> float:
    """The claim's value (unsigned)."""
    return r.claim.value


def _cagr(r: Reading, cells: Sequence[Evidence], label: str) -> Derivation | None:
    refs = [*r.base, *r.periods]
    years = sorted({p.year for p in refs if p.year is not None
                    and p.kind in ("fy", "year", "calendar")} |
                   {fiscal_year_of(p.end) for p in refs if p.kind == "date" and p.end
                    and p.annual})
    if len(years) < 2:
        return None
    start, end = years[0], years[-1]
    first_cells = _at(cells, PeriodRef("fy", year=start))
    last_cells = _at(cells, PeriodRef("fy", year=end))
    found: Derivation | None = None
    for now in last_cells:
        for then in first_cells:
            if now.entity != then.entity or then.value <= 0 or now.value <= 0:
                continue
            value = (math.pow(now.value / then.value, 1 / (end - start)) - 1) * 100
            result = Derivation(_agrees(r, value), value,
                                f"{label} compounded {value:.1f}% a year from FY{start} to "
                                f"FY{end} [{now.source}]", now.source, (now, then))
            if result.ok:
                return result
            found = found or result
    return found


def _trailing(r: Reading, index: EvidenceIndex, pool: Collection[str] | None,
              companies: Sequence[str], name: str, label: str) -> Derivation | None:
    quarters = sorted((e for e in _cells(index, name, pool, companies)
                       if e.period is not None and e.period.kind == "quarter"
                       and e.period.end is not None),
                      key=lambda e: (e.entity, e.source, e.period.end if e.period else None))
    first: Derivation | None = None
    for i in range(len(quarters) - 3):
        window = quarters[i:i + 4]
        if len({(e.entity, e.source) for e in window}) != 1:
            continue
        ends = [e.period.end for e in window if e.period is not None and e.period.end]
        if len(ends) != 4 or (ends[-1] - ends[0]).days > 300:
            continue
        total = sum(e.value for e in window)
        ok = abs(abs(total) - r.claim.value) <= r.claim.tolerance * (1 + 1e-9)
        found = Derivation(ok, total, f"{label} over the four quarters to {ends[-1]} "
                           f"[{window[-1].source}]", window[-1].source, tuple(window))
        if ok:
            return found
        first = found
    return first


_Quarter = tuple[str, int, int]
"""A fiscal quarter of a company: (entity, fiscal year, quarter)."""


def _sum_of_quarters(r: Reading, index: EvidenceIndex, pool: Collection[str] | None,
                     companies: Sequence[str], name: str, label: str) -> Derivation | None:
    """A half year's or nine months' amount as the sum of its fiscal quarters' cells (a
    missing fourth quarter is the year's cell less the first three)."""
    quarters, years = _by_quarter(_cells(index, name, pool, companies))
    if not quarters:
        return None
    first: Derivation | None = None
    spans: set[int] = set()
    for ref in r.periods:
        if ref.kind != "partial" or not ref.span:
            continue
        spans.add(ref.span)
        lasts = _last_quarters(ref, quarters)
        if ref.quarter == 4 and ref.year is not None and not ref.calendar:
            # a fourth quarter no row states: the year's less its first three
            lasts.extend((entity, year, 4) for entity, year in years if year == ref.year
                         and (entity, year, 4) not in quarters)
        for last in lasts:
            found = _window(last, ref.span, quarters, years)
            if found is None:
                continue
            total = sum(value for value, _ in found)
            used = tuple(e for _, group in found for e in group)
            # a loss is negative however it is written ("-$1.2 billion", "a loss of $1.2
            # billion"); a negative figure is no positive sum
            sign_ok = (r.claim.negative or r.polarity < 0) if total < 0 else \
                not r.claim.negative
            ok = sign_ok and abs(abs(total) - r.claim.value) <= \
                r.claim.tolerance * (1 + 1e-9) + 1e-9
            names = " + ".join(f"Q{q} FY{y}" for y, q in _keys(last, ref.span))
            result = Derivation(ok, total, f"{label} of {ref.describe()} is {names}: "
                                f"{_amount(total, r.claim.kind, False)} [{used[0].source}]",
                                used[0].source, used)
            if ok:
                return result
            first = first or result
    if first is not None and r.claim.digits > 2:
        other = _other_sum(r, index, companies, name, spans, first.cells)
        if other is not None:
            return other
    return first


def _by_quarter(cells: Sequence[Evidence]
                ) -> tuple[dict[_Quarter, Evidence], dict[tuple[str, int], Evidence]]:
    """The cells of each fiscal quarter and of each fiscal year (a table's cell first)."""
    quarters: dict[_Quarter, Evidence] = {}
    years: dict[tuple[str, int], Evidence] = {}
    for e in sorted(cells, key=lambda e: e.where != "table"):
        period = e.period
        if period is None or period.year is None:
            continue
        if period.kind == "quarter" and period.quarter is not None:
            quarters.setdefault((e.entity, period.year, period.quarter), e)
        elif period.kind == "fy":
            years.setdefault((e.entity, period.year), e)
    return quarters, years


def _other_sum(r: Reading, index: EvidenceIndex, companies: Sequence[str], name: str,
               spans: Collection[int], named: Sequence[Evidence]) -> Derivation | None:
    """The sum of the same span of quarters of another period of the line, or of the
    period's quarters of another line, that the figure is (read as misattributed)."""
    periods = {(e.entity, e.period.year, e.period.quarter) for e in named
               if e.period is not None and e.period.kind == "quarter"}
    # (the sources the named quarters came from only: a long run's ledger holds many)
    sources = sorted({e.source for e in named})
    lines = {f for sid in sources for e in index.by_source.get(sid, ()) for f in e.fields}
    for field in [name, *sorted(lines - {name})]:
        metric = metrics.metric(field)
        if metric is None or metric.kind == "ratio":
            continue
        quarters, years = _by_quarter(_cells(index, field, sources, companies))
        for span in spans:
            for last in quarters:
                keys = _keys(last, span)
                if field == name and all((last[0], *k) in periods for k in keys):
                    continue  # the period named
                if field != name and not all((last[0], *k) in periods for k in keys):
                    continue  # another line: of the period named only
                found = _window(last, span, quarters, years)
                if found is None:
                    continue
                total = sum(value for value, _ in found)
                if abs(abs(total) - r.claim.value) > r.claim.tolerance * (1 + 1e-9) + 1e-9:
                    continue
                used = tuple(e for _, group in found for e in group)
                names = " + ".join(f"Q{q} FY{y}" for y, q in keys)
                return Derivation(False, total, f"{metrics.label(field).lower()} of {names} "
                                  f"[{used[0].source}]", used[0].source, used, other=True)
    return None


def _keys(last: _Quarter, span: int) -> list[tuple[int, int]]:
    """The (fiscal year, quarter) of the ``span`` quarters up to ``last``, in order."""
    _, year, quarter = last
    out = []
    for _ in range(span):
        out.append((year, quarter))
        year, quarter = (year, quarter - 1) if quarter > 1 else (year - 1, 4)
    return out[::-1]


def _window(last: _Quarter, span: int, quarters: dict[_Quarter, Evidence],
            years: dict[tuple[str, int], Evidence]
            ) -> list[tuple[float, tuple[Evidence, ...]]] | None:
    """Each quarter's value and the cells it comes from, or None when one is missing."""
    entity = last[0]
    out: list[tuple[float, tuple[Evidence, ...]]] = []
    for year, quarter in _keys(last, span):
        cell = quarters.get((entity, year, quarter))
        if cell is not None:
            out.append((cell.value, (cell,)))
            continue
        whole = years.get((entity, year))
        rest = [quarters.get((entity, year, q)) for q in (1, 2, 3)]
        if quarter != 4 or whole is None or any(e is None for e in rest):
            return None
        parts = tuple(e for e in rest if e is not None)
        out.append((whole.value - sum(e.value for e in parts), (whole, *parts)))
    return out


def _last_quarters(ref: PeriodRef, quarters: dict[_Quarter, Evidence]) -> list[_Quarter]:
    """The quarters a half or nine months named by ``ref`` can end with: the fiscal quarter
    of the fiscal year named, the quarter ending in the month or on the day named, and for
    a bare year also the calendar half's; with no year, the latest fiscal year's."""
    out: list[_Quarter] = []
    if ref.year is None and ref.end is None and ref.quarter is not None:
        latest: dict[str, int] = {}
        for entity, year, quarter in quarters:
            if quarter == ref.quarter:
                latest[entity] = max(latest.get(entity, year), year)
        return [(entity, year, ref.quarter) for entity, year in latest.items()]
    if ref.quarter is not None and ref.year is not None and not ref.calendar:
        out.extend(key for key in quarters if key[1:] == (ref.year, ref.quarter))
    if ref.fiscal and ref.quarter is not None and not ref.calendar:
        return out
    month = ref.month or (3 * ref.quarter if ref.quarter is not None else None)
    for key, e in quarters.items():
        end = e.period.end if e.period is not None else None
        if end is None or key in out:
            continue
        if ref.end is not None:
            if abs((end - ref.end).days) <= TOLERANCE_DAYS:
                out.append(key)
        elif month is not None and month_of(end) == (ref.year, month):
            out.append(key)
    return out
