"""Which time series a run pulled, and the charts a reader gets of them (pure functions).

A series is one numeric column of a time-series table with at least :data:`MIN_POINTS`
values, labelled for a reader (``Net income``; periods ``FY2024``, ``Q1 FY2025``).

Charts are curated per statement kind (:data:`CHART_SETS`): an income statement gets
revenue and net income, its margins, and diluted EPS; a cash flow statement operating cash
flow, capital expenditure and free cash flow; a balance sheet cash against debt, and
assets, liabilities and equity; prices their closing price. Each is titled with the
company, what it shows, the periods and the unit: ``Apple Inc. — Revenue and net income,
FY2021–FY2025 (USD bn)``. A table of no known kind (a CSV the run read, say) gets its
series grouped by unit, a few to a chart, so no chart mixes dollars with percentages.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from dexter import metrics
from dexter.evidence.tables import DataTable
from dexter.reports.presentation import (
    entity_of,
    period_kind,
    period_label,
    period_span,
    split_period,
    statement_kind,
    table_qualifier,
    table_title,
    value_kind,
)

MIN_POINTS = 3
MAX_PER_CHART = 4
"""Series per chart for tables of no known statement kind."""
SCALES = ((1e12, "tn"), (1e9, "bn"), (1e6, "m"), (1e3, "k"))


@dataclass(frozen=True, slots=True)
class ChartSpec:
    """One curated chart: what it shows and the fields it draws, in drawing order."""

    title: str
    fields: tuple[str, ...]


CHART_SETS: dict[str, tuple[ChartSpec, ...]] = {
    "income": (ChartSpec("Revenue and net income", ("revenue", "net_income")),
               ChartSpec("Margins", ("gross_margin", "operating_margin", "net_margin")),
               ChartSpec("Diluted EPS", ("earnings_per_share_diluted",))),
    "cash_flow": (ChartSpec("Free cash flow", ("net_cash_flow_from_operations",
                                               "capital_expenditure", "free_cash_flow")),),
    "balance": (ChartSpec("Cash and debt", ("cash_and_equivalents", "short_term_investments",
                                            "total_debt")),
                ChartSpec("Assets, liabilities and equity", ("total_assets",
                                                             "total_liabilities",
                                                             "shareholders_equity"))),
    "prices": (ChartSpec("Share price", ("close",)),),
}
"""The charts of each statement kind (``prices``: a table of daily prices)."""


@dataclass(frozen=True, slots=True)
class Series:
    """One field over time: a value (None: missing) per period, labelled for a reader."""

    name: str
    """The field (``net_income``)."""
    unit: str
    labels: tuple[str, ...]
    """The periods as a reader names them (``Q1 FY2025``) or the dates."""
    values: tuple[float | None, ...]
    table: str
    """The table's title for a reader (``Apple Inc. — Income statement, quarterly``)."""
    source_id: str
    label: str = ""
    """The field as a reader names it (``Net income``)."""
    period: str = ""
    """``annual``, ``quarterly``, ``ttm`` or '' (dates)."""

    @property
    def points(self) -> int:
        """How many periods have a value."""
        return sum(1 for v in self.values if v is not None)

    @property
    def shown_name(self) -> str:
        """The reader's label (the field in words when there is none)."""
        return self.label or metrics.label(self.name)


@dataclass(frozen=True, slots=True)
class Chart:
    """Series of one table and one unit, drawn together."""

    title: str
    unit: str
    series: tuple[Series, ...]
    source_id: str
    subject: str = ""
    """What it shows without the company and periods (``Margins``)."""

    @property
    def labels(self) -> tuple[str, ...]:
        """The periods along the x axis (the series share them)."""
        return self.series[0].labels if self.series else ()


def series_of(table: DataTable) -> list[Series]:
    """The chartable series of one table (none unless it is a time series)."""
    if not table.is_time_series:
        return []
    labels = _labels(table)
    title = table_title(table)
    period = period_kind(table) if table.index_name == "period" else ""
    found = []
    for column in table.numeric_columns():
        values = tuple(v if isinstance(v, float) else None for v in column.values)
        unit = "ratio" if value_kind(column) == "ratio" else column.unit
        series = Series(column.name, unit, labels, values, title, table.source_id,
                        metrics.label(column.name), period)
        if series.points >= MIN_POINTS:
            found.append(series)
    return found


def all_series(tables: Iterable[DataTable]) -> list[Series]:
    """Every chartable series of ``tables``, table by table."""
    return [s for table in tables for s in series_of(table)]


def charts_of(tables: Iterable[DataTable]) -> list[Chart]:
    """The charts of ``tables``: each table's curated set (see the module docstring), or
    its series grouped by unit when it is of no known kind."""
    charts: list[Chart] = []
    for table in tables:
        found = {s.name: s for s in series_of(table)}
        if not found:
            continue
        kind = statement_kind(table) or ("prices" if _prices(table) else "")
        specs = CHART_SETS.get(kind)
        if specs:
            for spec in specs:
                chosen = tuple(found[f] for f in spec.fields if f in found)
                if chosen:  # the title names what is drawn when some of the set is missing
                    whole = len(chosen) == len(spec.fields) or \
                        (len(spec.fields) > 2 and len(chosen) >= 2)
                    subject = spec.title if whole else _and(s.shown_name for s in chosen)
                    charts.append(_chart(table, subject, chosen))
            continue
        by_unit: dict[str, list[Series]] = {}
        for series in found.values():
            by_unit.setdefault(series.unit, []).append(series)
        for group in by_unit.values():
            group.sort(key=_magnitude, reverse=True)
            for i in range(0, len(group), MAX_PER_CHART):
                part = tuple(group[i:i + MAX_PER_CHART])
                charts.append(_chart(table, _and(s.shown_name for s in part), part))
    return charts


def chart_title(table: DataTable, subject: str, series: tuple[Series, ...]) -> str:
    """``Apple Inc. — Revenue and net income, FY2021–FY2025 (USD bn)``; a table narrowed
    down says so (``AAPL — Revenue, Product or service: Services, FY2022–FY2024``)."""
    entity = entity_of(table)
    qualifier = table_qualifier(table)
    if qualifier:
        subject = f"{subject}, {qualifier}"
    span = period_span(series[0].labels) if series and table.index_name == "period" else \
        _date_span(series[0].labels) if series else ""
    unit = axis_label(series[0].unit, axis_scale(series)[1]) if series else ""
    text = f"{entity} — {subject}" if entity else subject
    if span:
        text += f", {span}"
    return f"{text} ({unit})" if unit else text


def _chart(table: DataTable, subject: str, series: tuple[Series, ...]) -> Chart:
    return Chart(chart_title(table, subject, series), series[0].unit, series, table.source_id,
                 subject)


def axis_scale(series: Iterable[Series]) -> tuple[float, str]:
    """The divisor and its name for amounts (``(1e9, "bn")``); ``(1, "")`` for ratios,
    per-share values and small numbers."""
    chosen = list(series)
    unit = chosen[0].unit if chosen else ""
    known = metrics.metric(chosen[0].name) if chosen else None
    if unit == "ratio" or "/" in unit or unit == "per share" or \
            (known is not None and known.kind == "price"):
        return 1.0, ""
    largest = max((abs(v) for s in chosen for v in s.values if v is not None), default=0.0)
    for divisor, name in SCALES:
        if largest >= divisor:
            return divisor, name
    return 1.0, ""


def axis_label(unit: str, suffix: str) -> str:
    """``USD bn``, ``shares m``, ``%``, ``USD per share``; ``bn`` for a unitless amount."""
    if unit == "ratio":
        return "%"
    if unit.endswith("/share"):
        return f"{unit.split('/')[0]} per share"
    return " ".join(p for p in (unit, suffix) if p)


def find_series(series: Iterable[Series], name: str) -> list[Series]:
    """Series whose field, label or table contains ``name`` (case-insensitive)."""
    wanted = name.strip().lower()
    return [s for s in series if wanted in s.name.lower() or wanted in s.shown_name.lower()
            or wanted in s.table.lower()]


def unit_label(unit: str) -> str:
    """How a unit reads on an axis or in a header (``ratio`` is shown as a percentage)."""
    return "%" if unit == "ratio" else unit


def display_value(value: float, unit: str) -> float:
    """A value in the unit it is shown in (ratios as percentages)."""
    return value * 100 if unit == "ratio" else value


def _magnitude(series: Series) -> float:
    return max((abs(v) for v in series.values if v is not None), default=0.0)


def _labels(table: DataTable) -> tuple[str, ...]:
    """Period names as a reader reads them (``Q1 FY2026``), else the dates."""
    if table.index_name == "period":
        return tuple(period_label(split_period(label)[0]) for label in table.index)
    return table.dates


def _prices(table: DataTable) -> bool:
    return any(c.name == "close" for c in table.numeric_columns()) and table.is_time_series


def _date_span(labels: tuple[str, ...]) -> str:
    return f"{labels[0]} to {labels[-1]}" if len(labels) > 1 else ""


def _and(names: Iterable[str]) -> str:
    items = list(names)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1].lower()
