"""A :class:`~dexter.reports.series.Chart` drawn with matplotlib: inline SVG for the HTML
report, PNG for the PDF.

matplotlib is imported inside the functions only: ``dexter ask`` without ``--output`` never
loads it. The object API (``Figure`` and a canvas) is used, never pyplot, so nothing depends
on a global figure or an interactive backend; the settings apply inside an
``rc_context`` that starts from matplotlib's defaults, so a user's matplotlibrc does not
change the report. The SVG is deterministic (a fixed hash salt, no date), has its text as
paths (no font needed to view it) and its ids prefixed, so several charts can sit in one
HTML page.

How a chart reads: amounts over at most :data:`MAX_BARS` periods are grouped bars (a
missing value is an empty slot marked "n/a"); ratios and longer series are lines with a gap
where a value is missing. Large amounts are scaled (``USD bn``), ratios shown as
percentages.
"""

from __future__ import annotations

import io
import math
import re
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from dexter.reports.model import ReportSource
from dexter.reports.series import Chart, display_value, unit_label

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

MAX_BARS = 8
"""Amount series over at most this many periods are drawn as bars, longer ones as lines."""
TICK_CHARS = 90
"""Period labels are turned when together longer than this (they would touch)."""
MAX_TICKS = 10
"""Period labels shown along the x axis at most (every n-th label on a long series)."""
COLORS = ("#1f5fa8", "#e08a1e", "#2a9d6f", "#c0392b", "#7d5ba6")
"""One colour per series (at most five to a chart), distinguishable in print."""
MAX_BAR_LABELS = 16
"""Bars carry their value when a chart has at most this many."""
LEGEND_CHARS = 96
"""About how many characters of legend fit across the figure."""
SIZE = (7.2, 3.4)
"""Figure size in inches."""
SCALES = ((1e12, "tn"), (1e9, "bn"), (1e6, "m"), (1e3, "k"))

_ID = re.compile(r'\bid="([^"]+)"')


def chart_svg(chart: Chart, id_prefix: str = "chart") -> str:
    """The chart as one ``<svg>`` element (no XML declaration), ready to inline in HTML.
    Every id in it starts with ``id_prefix`` followed by a dash."""
    with _style(svg=True):
        figure = draw(chart)
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


def chart_png(chart: Chart, dpi: int = 150) -> bytes:
    """The chart as a PNG image at ``dpi`` dots per inch (for the PDF)."""
    with _style(svg=False):
        figure = draw(chart)
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=dpi, metadata={"Software": None})
    return buffer.getvalue()


def draw(chart: Chart) -> Figure:
    """The chart as a matplotlib Figure (not attached to pyplot)."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=SIZE)
    ax = figure.add_subplot()
    scale, suffix = axis_scale(chart)
    labels = chart.labels
    if use_bars(chart):
        _bars(ax, chart, scale)
    else:
        _lines(ax, chart, scale)
    step = max(1, math.ceil(len(labels) / MAX_TICKS))
    ticks = list(range(0, len(labels), step))
    shown = [labels[i] for i in ticks]
    turned = sum(len(label) + 2 for label in shown) > TICK_CHARS
    ax.set_xticks(ticks, shown, rotation=30 if turned else 0, ha="right" if turned else "center")
    ax.set_xlim(-0.6, len(labels) - 0.4)
    ax.set_ylabel(axis_label(chart.unit, suffix))
    ax.set_title(chart.title, loc="left", fontsize=10, fontweight="bold")
    ax.yaxis.set_major_formatter(_formatter(chart.unit))
    ax.grid(axis="y", color="#d9d9d9", linewidth=0.6)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    longest = max(len(legend_name(s.name)) for s in chart.series) if chart.series else 1
    columns = max(1, min(len(chart.series), LEGEND_CHARS // (longest + 6)))
    figure.legend(loc="lower center", bbox_to_anchor=(0.5, 0.0), ncols=columns, frameon=False,
                  fontsize=8)
    # Fixed margins rather than a layout engine, which draws the figure twice to measure
    # it: the tick labels are short (scaled values), so the room they need is known.
    rows = math.ceil(len(chart.series) / columns)
    figure.subplots_adjust(left=0.1, right=0.98, top=0.89,
                           bottom=0.11 + (0.12 if turned else 0.0) + 0.065 * rows)
    return figure


def use_bars(chart: Chart) -> bool:
    """Bars for amounts over few periods (each period's value reads off its bar); lines
    for ratios (a trend) and long series."""
    return chart.unit != "ratio" and len(chart.labels) <= MAX_BARS


def axis_scale(chart: Chart) -> tuple[float, str]:
    """The divisor and its name for the y axis: ``(1e9, "bn")`` when the largest amount is
    in the billions; ``(1, "")`` for ratios, per-share values and small numbers."""
    if chart.unit == "ratio" or "/" in chart.unit or chart.unit == "per share":
        return 1.0, ""
    largest = max((abs(v) for s in chart.series for v in s.values if v is not None),
                  default=0.0)
    for divisor, name in SCALES:
        if largest >= divisor:
            return divisor, name
    return 1.0, ""


def axis_label(unit: str, suffix: str) -> str:
    """``USD bn``, ``shares m``, ``%``, ``USD/share``, or ``bn`` for a unitless count."""
    return " ".join(p for p in (unit_label(unit), suffix) if p)


def chart_caption(chart: Chart, sources: Sequence[ReportSource] = ()) -> str:
    """What a chart shows and where it came from: ``revenue, net income · from [S1]
    income_statements[AAPL, quarterly] · SEC EDGAR``."""
    fields = ", ".join(legend_name(s.name) for s in chart.series)
    if not chart.source_id:
        return fields
    title = next((s.title for s in sources if s.id == chart.source_id), "")
    return f"{fields} · from [{chart.source_id}]{' ' + title if title else ''}"


def legend_name(name: str) -> str:
    """A field name as a legend reads it: ``net_income`` -> ``net income``."""
    return name.replace("_", " ")


def _bars(ax: Axes, chart: Chart, scale: float) -> None:
    count = len(chart.series)
    width = 0.8 / count
    for n, series in enumerate(chart.series):
        offset = (n - (count - 1) / 2) * width
        xs = [i + offset for i, v in enumerate(series.values) if v is not None]
        ys = [display_value(v, chart.unit) / scale for v in series.values if v is not None]
        bars = ax.bar(xs, ys, width=width * 0.92, color=COLORS[n % len(COLORS)],
                      label=legend_name(series.name))
        if count * len(chart.labels) <= MAX_BAR_LABELS:
            ax.bar_label(bars, labels=[_short(y) for y in ys], fontsize=7, padding=2,
                         color="#333333")
        for i, v in enumerate(series.values):
            if v is None:
                ax.annotate("n/a", (i + offset, 0), xytext=(0, 2), textcoords="offset points",
                            ha="center", va="bottom", fontsize=7, color="#777777")
    ax.axhline(0, color="#888888", linewidth=0.8)
    ax.margins(y=0.12)  # room above the tallest bar for its label


def _lines(ax: Axes, chart: Chart, scale: float) -> None:
    many = len(chart.labels) > 40
    for n, series in enumerate(chart.series):
        ys = [math.nan if v is None else display_value(v, chart.unit) / scale
              for v in series.values]
        ax.plot(range(len(ys)), ys, color=COLORS[n % len(COLORS)], linewidth=1.6 if many else 2,
                marker=None if many else "o", markersize=4, label=legend_name(series.name))


def _short(value: float) -> str:
    return f"{value:,.1f}" if abs(value) >= 10 else f"{value:,.2f}"


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
