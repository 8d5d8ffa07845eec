"""Stock splits in XBRL company facts, and per-share series put on one basis (pure functions).

After a split, later filings restate the comparatives they carry (NVIDIA's FY2022 EPS of
3.85 becomes 0.385 after the 10-for-1 split), but periods only older filings reported keep
the old basis, so a series read as "latest filed value per period" jumps by the split ratio
(3.85 then 0.17). dexter detects each split and **adjusts** every per-share value and share
count reported before it to the latest basis, saying so per value.

A split is found from the disclosed ratio (``StockholdersEquityNoteStockSplitConversionRatio1``)
or, failing that, from restatements: at least two periods whose EPS was re-reported divided
by the same common ratio (2, 3, 4, 5, 7, 10...) by filings of about the same date. Its
*effective filing date* is the first filing that reports on the new basis; a value filed
before it is on the old basis.
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

SPLIT_RATIOS = (1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 10.0, 15.0, 20.0, 25.0, 50.0, 100.0)
RATIO_TOLERANCE = 0.02
SAME_EVENT_DAYS = 200
SAME_SPLIT_CHAIN_DAYS = 400
_EPS = ("EarningsPerShareDiluted", "EarningsPerShareBasic", "EarningsPerShareBasicAndDiluted")


@dataclass(frozen=True, slots=True)
class Split:
    """A forward split of ``ratio`` for 1, first reflected in filings of ``effective_filed``."""

    ratio: float
    effective_filed: str
    evidence: str
    tagged_on: str = ""  # the date a disclosed ratio was tagged with (often the split date)

    def describe(self) -> str:
        """``4-for-1 split (filings from 2020-10-30 on)``."""
        ratio = int(self.ratio) if self.ratio.is_integer() else self.ratio
        return f"{ratio}-for-1 split (filings from {self.effective_filed} on)"


def _near_ratio(value: float) -> float | None:
    for ratio in SPLIT_RATIOS:
        if abs(value / ratio - 1) <= RATIO_TOLERANCE:
            return ratio
    return None


def _rows(companyfacts: Mapping[str, Any], concept: str, unit: str) -> list[dict[str, Any]]:
    units = companyfacts.get("facts", {}).get("us-gaap", {}).get(concept, {}).get("units", {})
    rows = units.get(unit, [])
    return [r for r in rows if isinstance(r, dict) and isinstance(r.get("val"), int | float)
            and isinstance(r.get("filed"), str)]


def _disclosed(companyfacts: Mapping[str, Any]) -> list[Split]:
    found: list[Split] = []
    for row in sorted(_rows(companyfacts, "StockholdersEquityNoteStockSplitConversionRatio1", "pure"),
                      key=lambda r: r["filed"]):
        ratio = _near_ratio(float(row["val"]))
        if ratio is None or ratio <= 1:
            continue
        found.append(Split(ratio, row["filed"], f"disclosed ratio in {row.get('form')} "
                                                f"{row.get('accn')}", str(row.get("end") or "")))
    return found


def _restated(companyfacts: Mapping[str, Any]) -> list[Split]:
    """Splits seen as EPS restated by a split ratio (two periods or more agreeing)."""
    candidates: list[tuple[float, str]] = []
    for concept in _EPS:
        by_period: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
        for row in _rows(companyfacts, concept, "USD/shares"):
            by_period.setdefault((row.get("start"), row.get("end")), []).append(row)
        for group in by_period.values():
            group.sort(key=lambda r: r["filed"])
            for before, after in itertools.pairwise(group):
                if not after["val"] or not before["val"] or after["filed"] == before["filed"]:
                    continue
                ratio = _near_ratio(float(before["val"]) / float(after["val"]))
                if ratio is not None and ratio > 1:
                    candidates.append((ratio, after["filed"]))
    found: list[Split] = []
    for ratio, filed in sorted(candidates, key=lambda c: c[1]):
        agreeing = [f for r, f in candidates if r == ratio and _days(f, filed) <= SAME_EVENT_DAYS]
        if len(agreeing) >= 2:
            found.append(Split(ratio, min(agreeing), "EPS restated by the split ratio"))
    return found


def _days(a: str, b: str) -> int:
    return abs((dt.date.fromisoformat(a) - dt.date.fromisoformat(b)).days)


def detect_splits(companyfacts: Mapping[str, Any]) -> list[Split]:
    """Every split, oldest first. Filings keep disclosing a split's ratio for years, so
    sightings of one ratio form one event while each comes within
    :data:`SAME_SPLIT_CHAIN_DAYS` of the previous sighting or carries a date an earlier
    sighting was tagged with; the first sighting dates it."""
    events: list[Split] = []
    last_seen: list[str] = []
    tags: list[set[str]] = []
    for split in sorted([*_disclosed(companyfacts), *_restated(companyfacts)],
                        key=lambda s: s.effective_filed):
        same = next((i for i, e in enumerate(events) if e.ratio == split.ratio and (
            _days(last_seen[i], split.effective_filed) <= SAME_SPLIT_CHAIN_DAYS
            or (split.tagged_on and split.tagged_on in tags[i]))), None)
        if same is None:
            events.append(split)
            last_seen.append(split.effective_filed)
            tags.append({split.tagged_on} - {""})
        else:
            last_seen[same] = split.effective_filed
            tags[same].add(split.tagged_on)
    return events


def adjustment(splits: Iterable[Split], filed: str) -> tuple[float, list[Split]]:
    """The factor a value filed on ``filed`` needs to reach the latest basis, and the
    splits behind it (per-share values divide by the factor, share counts multiply)."""
    later = [s for s in splits if s.effective_filed > filed]
    factor = 1.0
    for split in later:
        factor *= split.ratio
    return factor, later
