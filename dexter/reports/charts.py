"""A :class:`~dexter.reports.series.Chart` drawn with matplotlib: inline SVG for the HTML
report, PNG for the PDF.

matplotlib is imported inside the functions only: ``dexter ask`` without ``--output`` never
loads it. The object API (``Figure`` and a canvas) is used, never pyplot, so nothing depends
on a global figure or an interactive backend; the settings apply inside an
``rc_context`` that starts from matplotlib's defaults, so a user's matplotlibrc does not
change the report. The SVG is deterministic (a fixed hash salt, no date), has its text as
paths (no font needed to view it) and its ids prefixed, so several charts can sit in one
HTML page.

How a chart reads: amounts over at most :data:`MAX_BARS` periods are grouped bars, every
bar labelled with its value (a missing value is an empty slot marked "n/a"); ratios and
longer series are lines with a gap where a value is missing. Large amounts are scaled
(``USD bn``), ratios shown as percentages. Each metric has one colour in every chart
(:data:`METRIC_COLORS`: revenue always blue, net income always orange), so a reader
follows it from chart to chart.
"""

from __future__ import annotations

import io
import math
import re
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dexter.reports.model import ReportSource
from dexter.reports.series import Chart, Series, axis_label, axis_scale, display_value

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

MAX_BARS = 8
"""Amount series over at most this many periods are drawn as bars, longer ones as lines."""
TICK_CHARS = 90
"""Period labels are turned when together longer than this (they would touch)."""
MAX_TICKS = 10
"""Period labels shown along the x axis at most (every n-th label on a long series)."""
BLUE, ORANGE, GREEN, RED, PURPLE, SKY, GREY, TEAL = (
    "#1f5fa8", "#e08a1e", "#2a9d6f", "#c0392b", "#7d5ba6", "#6fa8dc", "#8c8c8c", "#17becf")
METRIC_COLORS: dict[str, str] = {
    "revenue": BLUE, "gross_profit": SKY, "operating_income": GREEN, "net_income": ORANGE,
    "gross_margin": SKY, "operating_margin": GREEN, "net_margin": ORANGE,
    "earnings_per_share_diluted": PURPLE, "earnings_per_share": PURPLE,
    "net_cash_flow_from_operations": BLUE, "capital_expenditure": RED,
    "free_cash_flow": GREEN, "cash_and_equivalents": GREEN, "short_term_investments": TEAL,
    "total_debt": RED, "total_assets": BLUE, "total_liabilities": RED,
    "shareholders_equity": GREEN, "close": BLUE, "price": BLUE, "volume": GREY,
}
"""The colour of each metric, the same in every chart; distinguishable in print."""
COLORS = (BLUE, ORANGE, GREEN, RED, PURPLE, TEAL, SKY, GREY)
"""Colours for fields the table above does not name (picked by the field's name)."""
MAX_LABELLED_POINTS = 12
"""A line carries its values at each point when it has at most this many."""
LEGEND_CHARS = 96
"""About how many characters of legend fit across the figure."""
SIZE = (7.2, 2.9)
"""Figure size in inches."""

_ID = re.compile(r'\bid="([^"]+)"')


@dataclass(frozen=True, slots=True)
class Look:
    """A chart's size and type sizes: :data:`WIDE` across a page, :data:`NARROW` two to a
    row (the PDF's figure grid)."""

    size: tuple[float, float]
    font: float
    values: float
    """Value labels' size."""
    tick_chars: int
    legend_chars: int
    left: float
    """The left margin, as a fraction of the width (room for the y axis)."""


WIDE = Look(SIZE, 9, 7, TICK_CHARS, LEGEND_CHARS, 0.09)
NARROW = Look((3.7, 2.55), 7, 6, 46, 52, 0.15)


def fits_narrow(chart: Chart) -> bool:
    """Whether a chart reads at half a page's width (few periods and bars)."""
    bars = len(chart.labels) * (len(chart.series) if use_bars(chart) else 1)
    return len(chart.labels) <= 6 and bars <= 10


def chart_svg(chart: Chart, id_prefix: str = "chart", look: Look = WIDE) -> str:
    """The chart as one ``<svg>`` element (no XML declaration), ready to inline in HTML;
    its title is the page's text, the SVG's label. Every id in it starts with
    ``id_prefix`` followed by a dash."""
    with _style(svg=True):
        figure = draw(chart, look)
        buffer = io.StringIO()
        figure.savefig(buffer, format="svg", metadata=_NO_SVG_METADATA)
    text = buffer.getvalue()
    text = text[text.index("<svg"):]
    text = re.sub(r"<metadata>.*?</metadata>\s*|<!--.*?-->\s*", "", text, flags=re.DOTALL)
    ids = set(_ID.findall(text))
    for old in sorted(ids, key=len, reverse=True):
        new = f"{id_prefix}-{old}"
        text = text.replace(f'id="{old}"', f'id="{new}"')
        text = text.replace(f'"#{old}"', f'"#{new}"').replace(f"url(#{old})", f"url(#{new})")
    return text.replace("<svg ", f'<svg role="img" aria-label="{_attr(chart.title)}" ', 1)


def chart_png(chart: Chart, dpi: int = 150, look: Look = WIDE) -> bytes:
    """The chart as a PNG image at ``dpi`` dots per inch (for the PDF)."""
    with _style(svg=False):
        figure = draw(chart, look)
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=dpi, metadata={"Software": None})
    return buffer.getvalue()


def draw(chart: Chart, look: Look = WIDE, titled: bool = False) -> Figure:
    """The chart as a matplotlib Figure (not attached to pyplot); ``titled``: with its
    title drawn above the plot (the reports print it as text instead)."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=look.size)
    ax = figure.add_subplot()
    scale, suffix = axis_scale(chart.series)
    labels = chart.labels
    if use_bars(chart):
        _bars(ax, chart, scale, look)
    else:
        _lines(ax, chart, scale, look)
    step = max(1, math.ceil(len(labels) / MAX_TICKS))
    ticks = list(range(0, len(labels), step))
    shown = [labels[i] for i in ticks]
    turned = sum(len(label) + 2 for label in shown) > look.tick_chars
    ax.set_xticks(ticks, shown, rotation=30 if turned else 0, ha="right" if turned else "center",
                  fontsize=look.font)
    ax.tick_params(axis="y", labelsize=look.font)
    ax.set_xlim(-0.6, len(labels) - 0.4)
    ax.set_ylabel(axis_label(chart.unit, suffix), fontsize=look.font)
    if titled:
        ax.set_title(chart.title, loc="left", fontsize=look.font + 1, fontweight="bold", pad=10)
    ax.yaxis.set_major_formatter(_formatter(chart.unit))
    ax.grid(axis="y", color="#e3e3e3", linewidth=0.6)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    longest = max(len(s.shown_name) for s in chart.series) if chart.series else 1
    columns = max(1, min(len(chart.series), look.legend_chars // (longest + 6)))
    figure.legend(loc="lower center", bbox_to_anchor=(0.5, 0.0), ncols=columns, frameon=False,
                  fontsize=look.font - 0.5)
    # Fixed margins rather than a layout engine, which draws the figure twice to measure
    # it: the tick labels are short (scaled values), so the room they need is known.
    rows = math.ceil(len(chart.series) / columns)
    height = look.size[1]
    line = look.font / 72 / height  # one text line, as a fraction of the height
    figure.subplots_adjust(left=look.left, right=0.98, top=0.86 if titled else 0.97,
                           bottom=line * (3.2 + (2.5 if turned else 0) + 1.9 * rows))
    return figure


def color_of(series: Series) -> str:
    """The colour of a series' metric: :data:`METRIC_COLORS`, else one picked by the
    field's name (so it too is the same in every chart)."""
    known = METRIC_COLORS.get(series.name.lower())
    if known:
        return known
    return COLORS[sum(map(ord, series.name)) % len(COLORS)]


def use_bars(chart: Chart) -> bool:
    """Bars for amounts over few periods (each period's value reads off its bar); lines
    for ratios (a trend) and long series."""
    return chart.unit != "ratio" and len(chart.labels) <= MAX_BARS


def chart_caption(chart: Chart, sources: Sequence[ReportSource] = ()) -> str:
    """Where a chart's figures came from: ``Source: [S1] SEC EDGAR (XBRL company facts)``
    (the source's title when it names no supplier)."""
    if not chart.source_id:
        return ""
    source = next((s for s in sources if s.id == chart.source_id), None)
    if source is None:
        return f"Source: [{chart.source_id}]"
    return f"Source: [{chart.source_id}] {source.provider or source.title}"


def _bars(ax: Axes, chart: Chart, scale: float, look: Look) -> None:
    count = len(chart.series)
    width = 0.8 / count
    crowded = count * len(chart.labels) > (16 if look is WIDE else 10)
    for n, series in enumerate(chart.series):
        offset = (n - (count - 1) / 2) * width
        xs = [i + offset for i, v in enumerate(series.values) if v is not None]
        ys = [display_value(v, chart.unit) / scale for v in series.values if v is not None]
        bars = ax.bar(xs, ys, width=width * 0.92, color=color_of(series),
                      label=series.shown_name)
        # every bar carries its value; many bars take smaller, upright labels
        ax.bar_label(bars, labels=[_short(y, chart.unit) for y in ys],
                     fontsize=look.values - (1 if crowded else 0), padding=2, color="#333333",
                     rotation=90 if crowded else 0)
        for i, v in enumerate(series.values):
            if v is None:
                ax.annotate("n/a", (i + offset, 0), xytext=(0, 2), textcoords="offset points",
                            ha="center", va="bottom", fontsize=look.values, color="#777777")
    ax.axhline(0, color="#888888", linewidth=0.8)
    ax.margins(y=0.2 if crowded else 0.12)  # room above the tallest bar for its label


def _lines(ax: Axes, chart: Chart, scale: float, look: Look) -> None:
    many = len(chart.labels) > 40
    labelled = len(chart.labels) <= MAX_LABELLED_POINTS
    for series in chart.series:
        ys = [math.nan if v is None else display_value(v, chart.unit) / scale
              for v in series.values]
        ax.plot(range(len(ys)), ys, color=color_of(series), linewidth=1.6 if many else 2,
                marker=None if many else "o", markersize=4, label=series.shown_name)
        if labelled:  # a short line carries its values too
            for x, y in enumerate(ys):
                if not math.isnan(y):
                    ax.annotate(_short(y, chart.unit) + ("%" if chart.unit == "ratio" else ""),
                                (x, y), xytext=(0, 4), textcoords="offset points",
                                ha="center", fontsize=look.values - 0.5, color="#333333")
    ax.margins(y=0.15)


def _short(value: float, unit: str = "") -> str:
    """A bar's value as the tables show it: per-share values with two decimals, others
    with one (two below 1), negatives in parentheses."""
    size = abs(value)
    places = 2 if unit.endswith("/share") or unit == "per share" or size < 1 else 1
    text = f"{size:,.{places}f}"
    return f"({text})" if value < 0 else text


def _formatter(unit: str) -> Any:
    from matplotlib.ticker import FuncFormatter

    def fmt(value: float, _pos: object) -> str:
        text = f"{value:,.2f}".rstrip("0").rstrip(".")
        if text == "-0":
            text = "0"
        return f"{text}%" if unit == "ratio" else text

    return FuncFormatter(fmt)


_NO_SVG_METADATA: dict[str, Any] = {"Date": None, "Creator": None, "Format": None,
                                    "Type": None}


@contextmanager
def _style(svg: bool) -> Iterator[None]:
    import matplotlib
    import matplotlib.style

    settings: Any = {
        "font.family": "DejaVu Sans", "font.size": 9, "axes.titlesize": 10,
        "svg.hashsalt": "dexter-report", "svg.fonttype": "path",
        "axes.edgecolor": "#888888", "xtick.color": "#333333", "ytick.color": "#333333",
        "axes.labelcolor": "#333333", "figure.facecolor": "white",
    }
    with matplotlib.style.context("default"), matplotlib.rc_context(settings), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a glyph DejaVu lacks: drawn as a box, not reported
        yield


def _attr(text: str) -> str:
    import html

    return html.escape(" ".join(text.split()), quote=True)
