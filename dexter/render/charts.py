"""Compact charts of a run's time series for the terminal (pure: Series in, rich out).

``dexter ask --charts`` prints :func:`chart_view` per chart (the report's curated charts:
a sparkline row per series, with its first and last values and the change: year on year
for fiscal periods, against the same quarter a year earlier for quarters, so a holiday
quarter is never compared with a spring one); ``/chart NAME`` in the REPL prints
:func:`bars_view` (a labelled horizontal bar per period). Labels are the reader's
(``Net income``, ``Q1 FY2025``); values read the way the reports show them: ratios as
percentages, money and share counts shortened (``$119.6B``), negatives in parentheses.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from dexter.reports.series import Chart, Series, display_value

SPARKS = "▁▂▃▄▅▆▇█"
"""Sparkline levels, lowest first."""
EIGHTHS = " ▏▎▍▌▋▊▉"
"""Partial blocks for a bar's last cell, by eighths."""
FULL = "█"
MISSING = "·"
"""A period without a value, in a sparkline."""
POSITIVE, NEGATIVE, MUTED = "#258bff", "#ff5f5f", "#a6a6a6"
DEFAULT_BAR_WIDTH = 40
SCALES = ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K"))


def sparkline(values: Sequence[float | None]) -> str:
    """One character per value, scaled from the smallest (``▁``) to the largest (``█``);
    ``·`` where a value is missing; the middle level when all values are equal."""
    present = [v for v in values if v is not None]
    if not present:
        return MISSING * len(values)
    low, high = min(present), max(present)
    span = high - low
    out = []
    for value in values:
        if value is None:
            out.append(MISSING)
        elif span == 0:
            out.append(SPARKS[(len(SPARKS) - 1) // 2])
        else:
            out.append(SPARKS[round((value - low) / span * (len(SPARKS) - 1))])
    return "".join(out)


def short_value(value: float | None, unit: str) -> str:
    """A value in a few characters: ``28.4%``, ``$119.6B``, ``15.4B``, ``$2.18``; ``—``
    when missing. The series label names the unit, so only dollars get a sign."""
    if value is None:
        return "—"
    if unit == "ratio":
        return f"{display_value(value, unit):.1f}%"
    size = abs(value)
    scaled = next((f"{size / scale:.1f}{letter}" for scale, letter in SCALES if size >= scale),
                  None)
    number = scaled or (f"{int(size)}" if size.is_integer() else f"{size:.2f}")
    shown = f"{'$' if unit.startswith('USD') else ''}{number}"
    return f"({shown})" if value < 0 else shown


def change_text(first: float, last: float, unit: str) -> str:
    """How a series moved from ``first`` to ``last``: percentage points for a ratio, else
    the relative change (the difference when it started at zero). Two negative values (an
    outflow such as capital expenditure, stored as a negative number) change by their
    size: spending 12.7 after 9.4 is +34.6%."""
    if unit == "ratio":
        points = (last - first) * 100
        return f"{points:+.1f} pp"
    if first == 0:
        return f"{'+' if last >= 0 else '-'}{short_value(abs(last), unit)}"
    if first < 0 and last < 0:
        return f"{(abs(last) - abs(first)) / abs(first) * 100:+.1f}%"
    return f"{(last - first) / abs(first) * 100:+.1f}%"


def year_earlier(labels: Sequence[str], n: int) -> int | None:
    """The index of the same period one fiscal year before ``labels[n]`` (``Q1 FY2025`` for
    ``Q1 FY2026``, ``FY2024`` for ``FY2025``), when the series has it."""
    match = re.match(r"^(Q[1-4] )?FY(\d{4})$", labels[n])
    if not match:
        return None
    wanted = f"{match.group(1) or ''}FY{int(match.group(2)) - 1}"
    return next((i for i, label in enumerate(labels) if label == wanted), None)


def change_of(series: Series) -> tuple[str, str]:
    """(the change, what it compares): the latest value year on year when the periods are
    fiscal ones and the year-earlier value is there (``+15.7%``, ``YoY vs Q1 FY2025``),
    else from the first value to the last (``since FY2021``)."""
    present = [i for i, v in enumerate(series.values) if v is not None]
    last = present[-1]
    latest = series.values[last]
    assert latest is not None
    before = year_earlier(series.labels, last)
    if before is not None and series.values[before] is not None:
        earlier = series.values[before]
        assert earlier is not None
        return change_text(earlier, latest, series.unit), f"YoY vs {series.labels[before]}"
    first = series.values[present[0]]
    assert first is not None
    return change_text(first, latest, series.unit), f"since {series.labels[present[0]]}"


def series_label(series: Series) -> str:
    """The series as a reader names it: ``Revenue``, ``Net margin``."""
    return series.shown_name


def chart_view(chart: Chart) -> RenderableType:
    """A chart's series as sparkline rows: label, sparkline, first and last value (with
    their periods), the change (year on year where the periods allow) and what it
    compares."""
    table = Table(show_header=False, box=None, pad_edge=False, padding=(0, 1))
    for column in ("name", "spark", "first", "arrow", "last", "change", "basis"):
        table.add_column(column, no_wrap=True,
                         justify="right" if column in ("first", "last", "change") else "left")
    for series in chart.series:
        present = [(label, v) for label, v in zip(series.labels, series.values, strict=True)
                   if v is not None]
        (first_label, first), (last_label, last) = present[0], present[-1]
        change, basis = change_of(series)
        table.add_row(Text(series_label(series)), Text(sparkline(series.values), style=POSITIVE),
                      Text(f"{short_value(first, series.unit)} {first_label}"), Text("→"),
                      Text(f"{short_value(last, series.unit)} {last_label}"),
                      Text(change, style=NEGATIVE if change.startswith("-") else ""),
                      Text(basis, style=MUTED))
    return Group(Text(chart.title, style="bold"), table)


def bar_cells(values: Sequence[float | None], width: int = DEFAULT_BAR_WIDTH) -> list[str]:
    """One bar per value, its length proportional to the value's size (the largest fills
    ``width`` cells, with eighth-cell precision); '' for a missing value. With negative
    values, bars grow left of a ``│`` axis and positive ones right of it."""
    present = [abs(v) for v in values if v is not None]
    biggest = max(present, default=0.0)
    negatives = any(v is not None and v < 0 for v in values)
    positives = any(v is not None and v > 0 for v in values)
    if negatives and positives:
        half = max(1, width // 2)
        left = [_bar(-v if v is not None and v < 0 else 0.0, biggest, half, whole=True)
                for v in values]
        right = [_bar(v if v is not None and v > 0 else 0.0, biggest, half) for v in values]
        return ["" if v is None else f"{lt:>{half}}│{rt}"
                for v, lt, rt in zip(values, left, right, strict=True)]
    return ["" if v is None else _bar(abs(v), biggest, width, whole=negatives)
            for v in values]


def bars_view(series: Series, width: int = DEFAULT_BAR_WIDTH, bars: bool = True) -> RenderableType:
    """One series as labelled horizontal bars, a row per period with its value
    (``bars=False``: the labels and values alone, for a terminal without block glyphs)."""
    table = Table(show_header=False, box=None, pad_edge=False, padding=(0, 1))
    table.add_column("period", no_wrap=True)
    if bars:
        table.add_column("bar", no_wrap=True)
    table.add_column("value", no_wrap=True, justify="right")
    drawn = bar_cells(series.values, width)
    for label, value, bar in zip(series.labels, series.values, drawn, strict=True):
        shown = Text(short_value(value, series.unit),
                     style=MUTED if value is None else "")
        cells = [Text(label)]
        if bars:
            cells.append(Text(bar, style=NEGATIVE if value is not None and value < 0
                              else POSITIVE))
        table.add_row(*cells, shown)
    title = Text(series_label(series), style="bold")
    title.append(f"  {series.table}" + (f" [{series.source_id}]" if series.source_id else ""),
                 style=MUTED)
    if series.points >= 2:
        change, basis = change_of(series)
        title.append(f"  {change} {basis}", style=MUTED)
    return Group(title, table)


def series_list_view(series: Sequence[Series]) -> RenderableType:
    """The series, numbered (``/chart`` without a name): number, name, sparkline, table."""
    table = Table(show_header=False, box=None, pad_edge=False, padding=(0, 1))
    for column in ("n", "name", "spark", "table"):
        table.add_column(column, no_wrap=column != "table", justify="right" if column == "n"
                         else "left")
    for n, item in enumerate(series, 1):
        table.add_row(Text(str(n)), Text(series_label(item)),
                      Text(sparkline(item.values), style=POSITIVE),
                      Text(item.table + (f" [{item.source_id}]" if item.source_id else ""),
                           style=MUTED))
    return table


def _bar(size: float, biggest: float, width: int, whole: bool = False) -> str:
    """``size`` as a bar out of ``width`` cells for ``biggest``; at least a sliver for any
    non-zero value. ``whole``: full cells only (a bar growing leftwards)."""
    if biggest <= 0 or size <= 0 or not math.isfinite(size):
        return ""
    eighths = max(1, round(size / biggest * width * 8))
    if whole:
        return FULL * max(1, round(eighths / 8))
    full, rest = divmod(eighths, 8)
    return FULL * full + (EIGHTHS[rest] if rest else "")
