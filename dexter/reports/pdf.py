"""The report as PDF (fpdf2), laid out like a research note: the question, date and model,
the verification banner, the answer, the figures (PNG charts from matplotlib), the data
tables as a filing prints them and the sources, each naming the documents behind it.

fpdf2 is pure Python. Text is set in DejaVu Sans, the TTF matplotlib ships, so ✓, ⚠, —,
Greek and Cyrillic print without any system font (scripts DejaVu lacks, CJK for one, show
as empty boxes). Typography: body text at 1.45 line spacing, light grey rules (a firmer
one under a table's header and above its totals), headings kept with what follows them
(a heading that would end a page starts the next), a figure or a table's first rows kept
with their caption, links broken only after a slash. Every page is A4 portrait: a
statement shows the newest periods that fit and says which it left out; a table too wide
for the page even so is split into column groups (the labels repeated). Long tables run
across pages with their header repeated. The document loads nothing: fpdf2's resource
access policy is set to none, so even a stray image tag could not read a file or a URL.
"""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dexter.evidence.report import MARK
from dexter.reports.answer_html import answer_html, marks, safe_link
from dexter.reports.markdown import MAX_ROWS
from dexter.reports.model import Report, ReportSource
from dexter.reports.presentation import TableView, fit_periods, view
from dexter.reports.series import Chart, charts_of

if TYPE_CHECKING:
    from fpdf import FPDF

FONT = "DejaVu"
MONO = "DejaVuMono"
BODY_SIZE = 10.0
LINE = 1.45
"""Body line spacing, as a multiple of the font size."""
TABLE_SIZE = 7.5
SMALLER_SIZES = (7.0, 6.5)
"""Sizes a table too wide at :data:`TABLE_SIZE` may shrink to before it is split."""
CELL_PAD = 1.4
"""Horizontal padding inside a table cell, mm (each side)."""
MAX_LABEL_WIDTH = 64.0
MIN_PERIODS = 4
"""A statement keeps at least this many periods before its font shrinks."""
CHART_DPI = 200
INK = (29, 29, 31)
MUTED = (95, 99, 104)
ACCENT = (31, 95, 168)
RULE = (221, 225, 230)
STRONG_RULE = (154, 163, 173)
WARN = (138, 75, 0)
WARN_BG = (255, 246, 224)
WARN_BAR = (224, 165, 38)
OK = (30, 107, 58)
OK_BG = (238, 247, 240)
PT = 0.3528
"""Millimetres per point."""


def render(report: Report) -> bytes:
    """The whole document. fpdf2's warnings (a glyph DejaVu lacks) are not shown: the
    report is still written, with an empty box for that character."""
    logger = logging.getLogger("fpdf")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        return _render(report)
    finally:
        logger.setLevel(level)


def _render(report: Report) -> bytes:
    pdf = _new_pdf(report)
    pdf.add_page()
    _heading(pdf, report)
    if report.checked:
        _banner(pdf, report)
    _answer(pdf, report.answer, [s.id for s in report.sources])
    for note in report.notes:
        _muted_line(pdf, note, italic=True)
    charts = charts_of(report.tables)
    if charts:
        _section(pdf, "Figures", keep=_figures_height(pdf, charts))
        _charts(pdf, charts, report.sources)
    if report.tables:
        _section(pdf, "Data", keep=_table_height(pdf, view(report.tables[0], MAX_ROWS)))
        for table in report.tables:
            draw_table(pdf, view(table, MAX_ROWS), [s.id for s in report.sources])
    if report.sources:
        _section(pdf, "Sources", keep=24)
        _sources(pdf, report.sources)
    return bytes(pdf.output())


def font_path(name: str) -> Path:
    """A DejaVu TTF shipped with matplotlib (``DejaVuSans-Bold.ttf``)."""
    import matplotlib

    return Path(matplotlib.get_data_path()) / "fonts" / "ttf" / name


def _new_pdf(report: Report) -> FPDF:
    from fpdf import FPDF
    from fpdf.enums import ResourceAccessPolicy

    question = " ".join(report.question.split())

    class _Document(FPDF):
        def footer(self) -> None:
            self.set_y(-11)
            self.set_draw_color(*RULE)
            self.line(self.l_margin, self.get_y() - 1, self.w - self.r_margin, self.get_y() - 1)
            self.set_font(FONT, size=7.5)
            self.set_text_color(*MUTED)
            short = question if len(question) <= 100 else question[:99] + "…"
            self.cell(self.epw - 20, 5, short, align="L")
            self.cell(20, 5, f"{self.page_no()}/{{nb}}", align="R")

    pdf = _Document(format="A4")
    pdf.resource_access_policy = ResourceAccessPolicy(0)
    pdf.set_margins(18, 16, 18)
    pdf.c_margin = CELL_PAD
    pdf.set_auto_page_break(True, margin=18)
    for style, name in (("", "DejaVuSans.ttf"), ("B", "DejaVuSans-Bold.ttf"),
                        ("I", "DejaVuSans-Oblique.ttf"), ("BI", "DejaVuSans-BoldOblique.ttf")):
        pdf.add_font(FONT, style, str(font_path(name)))
    pdf.add_font(MONO, "", str(font_path("DejaVuSansMono.ttf")))
    pdf.add_font(MONO, "B", str(font_path("DejaVuSansMono-Bold.ttf")))
    pdf.set_title(question)
    pdf.set_author(f"dexter · {report.model}" if report.model else "dexter")
    pdf.set_creator("dexter")
    pdf.set_text_color(*INK)
    return pdf


def _heading(pdf: FPDF, report: Report) -> None:
    pdf.set_font(FONT, "B", 16)
    pdf.multi_cell(0, 7.4, " ".join(report.question.split()), new_x="LMARGIN", new_y="NEXT",
                   align="L")
    pdf.ln(1.5)
    meta = " · ".join(p for p in (report.when, report.model) if p)
    _muted_line(pdf, meta)
    pdf.ln(1.5)
    pdf.set_draw_color(*INK)
    pdf.set_line_width(0.5)
    pdf.line(pdf.l_margin, pdf.get_y(), pdf.w - pdf.r_margin, pdf.get_y())
    pdf.set_line_width(0.2)
    pdf.ln(5)


def _banner(pdf: FPDF, report: Report) -> None:
    """The verification banner: a tinted box with a bar on its left, the headline in bold
    and each flagged figure with its reason; ⚠ in the warning colour."""
    warn = report.warning
    colour, fill, bar = (WARN, WARN_BG, WARN_BAR) if warn else (OK, OK_BG, OK)
    lines: list[tuple[str, str]] = [("B", report.verification)]
    lines += [("", f"⚠ “{f.text}”: {f.reason}") for f in report.flags]
    width = pdf.epw - 8
    height = 4.0
    for style, text in lines:
        pdf.set_font(FONT, style, 9.5)
        wrapped = pdf.multi_cell(width, 5, text, dry_run=True, output="LINES")
        height += len(wrapped if isinstance(wrapped, list) else [text]) * 5
    if pdf.will_page_break(height):
        pdf.add_page()
    top = pdf.get_y()
    pdf.set_fill_color(*fill)
    pdf.rect(pdf.l_margin, top, pdf.epw, height, style="F")
    pdf.set_fill_color(*bar)
    pdf.rect(pdf.l_margin, top, 1.2, height, style="F")
    pdf.set_text_color(*colour)
    pdf.set_y(top + 2)
    for style, text in lines:
        pdf.set_x(pdf.l_margin + 5)
        pdf.set_font(FONT, style, 9.5)
        pdf.multi_cell(width, 5, text, new_x="LMARGIN", new_y="NEXT", align="L")
    pdf.set_y(top + height)
    pdf.set_text_color(*INK)
    pdf.ln(5)


def _answer(pdf: FPDF, markdown: str, ids: list[str]) -> None:
    """The answer's HTML; each ``[S#]`` links to the named destination ``source-S#`` that
    the sources list sets."""
    pdf.set_font(FONT, size=BODY_SIZE)
    pdf.set_text_color(*INK)
    pdf.set_draw_color(*RULE)
    pdf.set_fill_color(255, 255, 255)
    page = for_fpdf(answer_html(markdown, ids))
    pdf.write_html(page, font_family=FONT, warn_on_tags_not_matching=False,
                   table_line_separators=True, li_prefix_color=MUTED,
                   tag_styles=_answer_styles())
    pdf.set_font(FONT, size=BODY_SIZE)


def _answer_styles() -> dict[str, Any]:
    """fpdf2's HTML styles for the answer: headings in the ink colour and modest sizes,
    kept a little apart from the text, code in DejaVu Sans Mono (Courier lacks ✓ and —)."""
    from fpdf.fonts import FontFace, TextStyle

    ink = "#1d1d1f"
    styles: dict[str, Any] = {
        f"h{n}": TextStyle(font_family=FONT, font_style="B", font_size_pt=size, color=ink,
                           t_margin=5, b_margin=0.5)
        for n, size in ((1, 14), (2, 12.5), (3, 11.5), (4, 10.5), (5, 10), (6, 10))}
    styles["code"] = FontFace(family=MONO)
    styles["pre"] = TextStyle(font_family=MONO, t_margin=3, b_margin=3)
    styles["a"] = FontFace(color="#1f5fa8")
    styles["blockquote"] = TextStyle(color="#5f6368", t_margin=3, b_margin=3, l_margin=6)
    styles["p"] = TextStyle(t_margin=0, b_margin=2.2)
    return styles


def for_fpdf(page: str) -> str:
    """The answer's HTML (markdown-it's, so its tags are known) in the attributes fpdf2
    reads: paragraphs and lists at the body's line spacing; a table as wide as its columns
    need (not the whole page), left-aligned; column alignment as ``align``."""
    def table(match: re.Match[str]) -> str:
        block = match.group(0)
        head = block.split("</tr>", 1)[0]
        columns = max(1, head.count("<th") or head.count("<td"))
        width = min(100, 18 * columns)
        return block.replace("<table>", f'<table width="{width}%" align="left">', 1)

    page = re.sub(r"<table>.*?</table>", table, page, flags=re.DOTALL)
    page = re.sub(r"<(p|ul|ol)>", rf'<\1 line-height="{LINE}">', page)
    page = re.sub(r'style="text-align:(left|right|center)"', r'align="\1"', page)
    page = page.replace("<th>", '<th align="left">')
    return marks(page, f'<font color="#b45309"><b>{MARK.strip()}</b></font>')


def _section(pdf: FPDF, title: str, keep: float = 30) -> None:
    """A section heading, on the next page when what must follow it (``keep`` mm) would
    not fit under it."""
    if pdf.will_page_break(keep + 14):
        pdf.add_page()
    else:
        pdf.ln(5)
    pdf.set_font(FONT, "B", 12.5)
    pdf.set_text_color(*INK)
    pdf.cell(0, 7, title, new_x="LMARGIN", new_y="NEXT", align="L")
    pdf.set_draw_color(*STRONG_RULE)
    pdf.line(pdf.l_margin, pdf.get_y(), pdf.w - pdf.r_margin, pdf.get_y())
    pdf.ln(3)


def _muted_line(pdf: FPDF, text: str, italic: bool = False, size: float = 9.0) -> None:
    pdf.set_font(FONT, "I" if italic else "", size)
    pdf.set_text_color(*MUTED)
    pdf.multi_cell(0, size * PT * LINE, text, new_x="LMARGIN", new_y="NEXT", align="L")
    pdf.set_text_color(*INK)


# -- sources --------------------------------------------------------------------------------


def _sources(pdf: FPDF, sources: Sequence[ReportSource]) -> None:
    for source in sources:
        lines = 1 + len(source.references) + len(source.inputs) + bool(source.detail)
        if pdf.will_page_break(min(lines, 4) * 4.6 + 3):
            pdf.add_page()
        pdf.set_link(name=f"source-{source.id}", y=pdf.get_y())
        pdf.set_x(pdf.l_margin)
        pdf.set_font(FONT, "B", 9)
        pdf.cell(11, 4.6, f"[{source.id}]")
        pdf.set_left_margin(pdf.l_margin + 11)
        pdf.set_font(FONT, "", 9)
        pdf.write(4.6, source.title)
        if source.provider and source.provider != "calculator":
            pdf.set_text_color(*MUTED)
            pdf.write(4.6, f" · {source.provider}")
            pdf.set_text_color(*INK)
        if source.shown_url:
            pdf.write(4.6, " · ")
            write_url(pdf, source.url, source.url, 4.6)
        pdf.ln(4.8)
        pdf.set_font(FONT, "", 8)
        for text in ([source.detail] if source.detail else []) + list(source.inputs):
            pdf.multi_cell(0, 4.0, text, new_x="LMARGIN", new_y="NEXT", align="L")
        for reference in source.references:
            if reference.covers:
                pdf.set_text_color(*MUTED)
                pdf.write(4.0, f"{reference.covers}: ")
                pdf.set_text_color(*INK)
            pdf.write(4.0, reference.text)
            if reference.url:
                pdf.write(4.0, " · ")
                write_url(pdf, reference.name or reference.url, reference.url, 4.0)
            pdf.ln(4.2)
        pdf.set_left_margin(pdf.l_margin - 11)
        pdf.set_x(pdf.l_margin)
        pdf.ln(1.6)


def write_url(pdf: FPDF, text: str, url: str, height: float) -> None:
    """Write a link's text, breaking it only after a slash (never inside a host or a
    port) when it does not fit on the line."""
    live = safe_link(url) and not url.startswith("#")
    if live:
        pdf.set_text_color(*ACCENT)
    for piece in re.findall(r"[^/]*/+|[^/]+$", text):
        width = pdf.get_string_width(piece)
        # fpdf2 keeps a cell margin on each side of what it writes
        if pdf.get_x() + width + 2 * pdf.c_margin > pdf.w - pdf.r_margin and \
                pdf.get_x() > pdf.l_margin + 1:
            pdf.ln(height)
        pdf.write(height, piece, link=url if live else "")
    pdf.set_text_color(*INK)


# -- figures --------------------------------------------------------------------------------


FIGURE_GAP = 6.0
"""Between two figures side by side, mm."""


def figure_rows(charts: Sequence[Chart]) -> list[list[Chart]]:
    """The figure grid: two charts of few periods side by side, others across the page."""
    from dexter.reports.charts import fits_narrow

    rows: list[list[Chart]] = []
    i = 0
    while i < len(charts):
        if i + 1 < len(charts) and fits_narrow(charts[i]) and fits_narrow(charts[i + 1]):
            rows.append([charts[i], charts[i + 1]])
            i += 2
        else:
            rows.append([charts[i]])
            i += 1
    return rows


def _row_layout(pdf: FPDF, row: Sequence[Chart]) -> tuple[float, Any, float, float]:
    """(column width, look, title height, image height) of one row of the figure grid."""
    from dexter.reports.charts import NARROW, WIDE

    look = NARROW if len(row) == 2 else WIDE
    width = (pdf.epw - FIGURE_GAP) / 2 if len(row) == 2 else pdf.epw
    pdf.set_font(FONT, "B", 8.5)
    lines = 1
    for n, chart in enumerate(row):
        wrapped = pdf.multi_cell(width, 4.2, f"Figure {n + 1}. {chart.title}", dry_run=True,
                                 output="LINES")
        lines = max(lines, len(wrapped) if isinstance(wrapped, list) else 1)
    return width, look, lines * 4.2 + 1, width * look.size[1] / look.size[0]


def _figures_height(pdf: FPDF, charts: Sequence[Chart]) -> float:
    """The height of the first row of figures (what the section heading keeps with)."""
    rows = figure_rows(charts)
    if not rows:
        return 0.0
    _, _, title, image = _row_layout(pdf, rows[0])
    return title + image + 8


def _charts(pdf: FPDF, charts: Sequence[Chart], sources: Sequence[ReportSource]) -> None:
    """Each chart under its title (``Figure 3. Apple Inc. — Margins, ...``) with its
    source beneath, two to a row where they read at half width."""
    from dexter.reports.charts import chart_caption, chart_png

    number = 0
    for row in figure_rows(charts):
        width, look, title_height, image_height = _row_layout(pdf, row)
        if pdf.will_page_break(title_height + image_height + 8):
            pdf.add_page()
        top = pdf.get_y()
        bottom = top
        for n, chart in enumerate(row):
            number += 1
            x = pdf.l_margin + n * (width + FIGURE_GAP)
            pdf.set_xy(x, top)
            pdf.set_font(FONT, "B", 8.5)
            pdf.set_text_color(*INK)
            pdf.multi_cell(width, 4.2, f"Figure {number}. {chart.title}", align="L")
            pdf.image(io.BytesIO(chart_png(chart, CHART_DPI, look)), x=x, y=top + title_height,
                      w=width, h=image_height, alt_text=chart.title)
            pdf.set_xy(x, top + title_height + image_height + 0.5)
            pdf.set_font(FONT, "", 7)
            pdf.set_text_color(*MUTED)
            known = any(s.id == chart.source_id for s in sources)
            pdf.multi_cell(width, 3.4, chart_caption(chart, sources), align="L",
                           link=f"#source-{chart.source_id}" if known else "")
            bottom = max(bottom, pdf.get_y())
        pdf.set_text_color(*INK)
        pdf.set_xy(pdf.l_margin, bottom + 5)


# -- tables ---------------------------------------------------------------------------------


def _table_height(pdf: FPDF, table: TableView) -> float:
    """About how tall a table is drawn (at most a page: what a heading keeps with it)."""
    rows = len(table.rows) + 2 + (1 if table.unit else 0)
    return min(rows * TABLE_SIZE * PT * 1.75 + 8, (pdf.h - pdf.t_margin - pdf.b_margin) * 0.5)


def column_widths(pdf: FPDF, table: TableView, size: float) -> list[float]:
    """The width each column needs at font ``size``, mm (the label column capped)."""
    pdf.set_font(FONT, "", size)
    widths = []
    header = (table.corner, *table.header)
    for n, head in enumerate(header):
        pdf.set_font(FONT, "B", size)
        needed = pdf.get_string_width(head)
        cells = [row.label if n == 0 else row.cells[n - 1] for row in table.rows]
        for row, cell in zip(table.rows, cells, strict=True):
            pdf.set_font(FONT, "B" if row.total else "", size)
            needed = max(needed, pdf.get_string_width(cell))
        if n and table.subheader:
            pdf.set_font(FONT, "", size - 1)
            needed = max(needed, pdf.get_string_width(table.subheader[n - 1]))
        width = needed + 2 * CELL_PAD + 0.5
        widths.append(min(width, MAX_LABEL_WIDTH) if n == 0 else width)
    return widths


def fit(pdf: FPDF, table: TableView) -> tuple[TableView, float, list[list[int]]]:
    """(the view to draw, its font size, its column groups): a statement keeps its newest
    periods that fit at :data:`TABLE_SIZE`; a table that still does not fit shrinks, then is
    split into column groups with the labels repeated."""
    room = pdf.epw
    everything = [list(range(len(table.header) + 1))]
    if table.periods:
        for size in (TABLE_SIZE, SMALLER_SIZES[0]):  # every period, if a point less will do
            if sum(column_widths(pdf, table, size)) <= room:
                return table, size, everything
        widths = column_widths(pdf, table, TABLE_SIZE)
        widest = max(widths[1:], default=0.0)
        fitting = int((room - widths[0]) // widest) if widest else len(table.header)
        if fitting >= MIN_PERIODS or fitting >= len(table.header):
            table = fit_periods(table, max(1, fitting))
            everything = [list(range(len(table.header) + 1))]
    for size in (TABLE_SIZE, *SMALLER_SIZES):
        if sum(column_widths(pdf, table, size)) <= room:
            return table, size, everything
    size = SMALLER_SIZES[-1]
    return table, size, column_groups(column_widths(pdf, table, size), room)


def column_groups(widths: Sequence[float], room: float) -> list[list[int]]:
    """Column indexes in groups that each fit ``room`` with the first column repeated,
    as even in size as the widths allow."""
    rest = list(range(1, len(widths)))
    for count in range(1, len(rest) + 1):
        per = -(-len(rest) // count)
        groups = [[0, *rest[i:i + per]] for i in range(0, len(rest), per)]
        if all(sum(widths[c] for c in group) <= room for group in groups):
            return groups
    return [[0, c] for c in rest]


def draw_table(pdf: FPDF, table: TableView, sources: Sequence[str] = ()) -> None:
    """One data table under its caption, fitted to the page (see the module docstring)."""
    table, size, groups = fit(pdf, table)
    widths = column_widths(pdf, table, size)
    if table.periods and len(groups) == 1 and sum(widths) < pdf.epw:
        # a statement spans the page: the periods widen (up to 24 mm each), the labels
        # take the rest
        extra = min((pdf.epw - sum(widths)) / max(1, len(widths) - 1),
                    max(0.0, 24 - max(widths[1:], default=0)))
        periods = [w + extra for w in widths[1:]]
        widths = [pdf.epw - sum(periods), *periods]
    row_height = size * PT * 1.75
    head_height = row_height * (2 if table.subheader and any(table.subheader) else 1)
    caption_height = 6 + (4 if table.unit else 0)
    whole = caption_height + head_height + row_height * (len(table.rows) + 1) + \
        4 * len(table.notes)
    body = pdf.h - pdf.t_margin - pdf.b_margin
    # a table that fits on a page starts on the next one rather than split; a longer one
    # keeps at least its caption, header and first rows together
    keep = whole if whole <= body * 0.9 else \
        caption_height + head_height + row_height * min(4, len(table.rows))
    if pdf.will_page_break(keep):
        pdf.add_page()
    else:
        pdf.ln(2)
    pdf.set_font(FONT, "B", 9.5)
    pdf.multi_cell(0, 5, table.title + (f"  [{table.source_id}]" if table.source_id else ""),
                   new_x="LMARGIN", new_y="NEXT", align="L",
                   link=f"#source-{table.source_id}" if table.source_id in sources else "")
    if table.unit:
        _muted_line(pdf, table.unit, italic=True, size=7.5)
    pdf.ln(1)
    for columns in groups:
        _draw_group(pdf, table, columns, widths, size, row_height)
        pdf.ln(1.5)
    for note in table.notes:
        _muted_line(pdf, note, italic=True, size=7)
    pdf.ln(3)


def _draw_group(pdf: FPDF, table: TableView, columns: list[int], widths: list[float],
                size: float, row_height: float) -> None:
    def header() -> None:
        pdf.set_font(FONT, "B", size)
        pdf.set_text_color(*INK)
        labels = (table.corner, *table.header)
        for c in columns:
            pdf.cell(widths[c], row_height, labels[c], align="R" if c else "L")
        pdf.ln(row_height)
        if table.subheader and any(table.subheader):
            pdf.set_font(FONT, "", size - 1)
            pdf.set_text_color(*MUTED)
            for c in columns:
                pdf.cell(widths[c], row_height * 0.85, table.subheader[c - 1] if c else "",
                         align="R")
            pdf.ln(row_height * 0.85)
            pdf.set_text_color(*INK)
        _rule(pdf, columns, widths, STRONG_RULE, 0.3)

    header()
    group = ""
    for n, row in enumerate(table.rows):
        if pdf.will_page_break(row_height):
            pdf.add_page()
            header()
        if table.skipped and n == table.skip_at:
            pdf.set_font(FONT, "I", size)
            pdf.set_text_color(*MUTED)
            pdf.cell(sum(widths[c] for c in columns), row_height,
                     f"… {table.skipped:,} rows left out (the .xlsx report has them all) …",
                     align="C")
            pdf.ln(row_height)
            pdf.set_text_color(*INK)
        if row.total or (group and row.group != group):
            _rule(pdf, columns, widths, STRONG_RULE, 0.25)
        group = row.group
        pdf.set_font(FONT, "B" if row.total else "", size)
        values = (row.label, *row.cells)
        for c in columns:
            text = values[c]
            if c == 0:
                text = _clip(pdf, text, widths[0] - 2 * CELL_PAD)
            numeric = c > 0 and table.numeric[c - 1]
            pdf.cell(widths[c], row_height, text, align="R" if numeric else "L")
        pdf.ln(row_height)
        _rule(pdf, columns, widths, RULE, 0.12)


def _rule(pdf: FPDF, columns: list[int], widths: list[float], colour: tuple[int, int, int],
          weight: float) -> None:
    pdf.set_draw_color(*colour)
    pdf.set_line_width(weight)
    y = pdf.get_y()
    pdf.line(pdf.l_margin, y, pdf.l_margin + sum(widths[c] for c in columns), y)
    pdf.set_line_width(0.2)


def _clip(pdf: FPDF, text: str, room: float) -> str:
    """A label that fits ``room``, cut at a word with an ellipsis when it is longer."""
    if pdf.get_string_width(text) <= room:
        return text
    words = text.split()
    while len(words) > 1 and pdf.get_string_width(" ".join(words) + "…") > room:
        words.pop()
    return " ".join(words) + "…"
