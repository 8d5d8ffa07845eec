"""Which time series a run pulled, and how they group into charts (pure functions).

A series is one numeric column of a time-series table with at least :data:`MIN_POINTS`
values. Series of one table that share a unit go in one chart (revenue and net income
together, the margins together, the share count alone), at most :data:`MAX_PER_CHART` to a
chart, so every series lands in some chart and no chart mixes dollars with percentages.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from dexter.evidence.tables import DataTable

MIN_POINTS = 3
MAX_PER_CHART = 5


@dataclass(frozen=True, slots=True)
class Series:
    """One field over time: a label and a value (None: missing) per period."""

    name: str
    unit: str
    labels: tuple[str, ...]
    values: tuple[float | None, ...]
    table: str
    source_id: str

    @property
    def points(self) -> int:
        """How many periods have a value."""
        return sum(1 for v in self.values if v is not None)


@dataclass(frozen=True, slots=True)
class Chart:
    """Series of one table and one unit, drawn together."""

    title: str
    unit: str
    series: tuple[Series, ...]
    source_id: str

    @property
    def labels(self) -> tuple[str, ...]:
        """The periods along the x axis (the series share them)."""
        return self.series[0].labels if self.series else ()


def series_of(table: DataTable) -> list[Series]:
    """The chartable series of one table (none unless it is a time series)."""
    if not table.is_time_series:
        return []
    labels = _short_labels(table)
    found = []
    for column in table.numeric_columns():
        values = tuple(v if isinstance(v, float) else None for v in column.values)
        series = Series(column.name, column.unit, labels, values, table.title, table.source_id)
        if series.points >= MIN_POINTS:
            found.append(series)
    return found


def all_series(tables: Iterable[DataTable]) -> list[Series]:
    """Every chartable series of ``tables``, table by table."""
    return [s for table in tables for s in series_of(table)]


def charts_of(tables: Iterable[DataTable]) -> list[Chart]:
    """The charts of ``tables``: per table, its series grouped by unit, the largest first
    within a group, split into charts of at most :data:`MAX_PER_CHART`."""
    charts = []
    for table in tables:
        by_unit: dict[str, list[Series]] = {}
        for series in series_of(table):
            by_unit.setdefault(series.unit, []).append(series)
        for unit, group in by_unit.items():
            group.sort(key=_magnitude, reverse=True)
            parts = [group[i:i + MAX_PER_CHART] for i in range(0, len(group), MAX_PER_CHART)]
            for n, part in enumerate(parts, 1):
                suffix = f" ({n}/{len(parts)})" if len(parts) > 1 else ""
                what = unit_label(unit)
                charts.append(Chart(title=f"{table.title}{' · ' + what if what else ''}{suffix}",
                                    unit=unit, series=tuple(part), source_id=table.source_id))
    return charts


def find_series(series: Iterable[Series], name: str) -> list[Series]:
    """Series whose field or table name contains ``name`` (case-insensitive)."""
    wanted = name.strip().lower()
    return [s for s in series if wanted in s.name.lower() or wanted in s.table.lower()]


def unit_label(unit: str) -> str:
    """How a unit reads on an axis or in a header (``ratio`` is shown as a percentage)."""
    return "%" if unit == "ratio" else unit


def display_value(value: float, unit: str) -> float:
    """A value in the unit it is shown in (ratios as percentages)."""
    return value * 100 if unit == "ratio" else value


def _magnitude(series: Series) -> float:
    return max((abs(v) for v in series.values if v is not None), default=0.0)


def _short_labels(table: DataTable) -> tuple[str, ...]:
    """Period names without their dates (``Q1 2026``) when the table has them, else dates."""
    if table.index_name == "period":
        return tuple(label.split(" (")[0] if " (" in label else label for label in table.index)
    return table.dates
