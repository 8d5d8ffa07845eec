"""The report as PDF (fpdf2): the HTML report's content and order — question, date and
model, the answer, notes, sources with links, the verification line, the charts (PNG from
matplotlib) and the data tables.

fpdf2 is pure Python. Text is set in DejaVu Sans, the TTF matplotlib ships, so ✓, ⚠, —,
Greek and Cyrillic print without any system font (scripts DejaVu lacks, CJK for one, show
as empty boxes). A data table is measured before it is drawn: it goes on a portrait page
when it fits, on a landscape page in a smaller size when not, and is split into column
groups (the first column repeated) when even that is too narrow; long tables run across
pages with their header repeated. The document loads nothing: fpdf2's resource access
policy is set to none, so even a stray image tag could not read a file or a URL.
"""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dexter.reports.answer_html import answer_html, safe_link
from dexter.reports.layout import Grid, grid, table_caption
from dexter.reports.markdown import MAX_ROWS
from dexter.reports.model import Report, ReportSource
from dexter.reports.series import Chart, charts_of

if TYPE_CHECKING:
    from fpdf import FPDF

FONT = "DejaVu"
MONO = "DejaVuMono"
BODY_SIZE = 10.0
TABLE_SIZES = (8.0, 7.0, 6.0)
"""Font sizes a data table may shrink to before it moves to landscape or is split."""
CELL_PAD = 1.2
"""Horizontal padding inside a table cell, mm (each side)."""
MAX_LABEL_WIDTH = 62.0
"""The first column of a table wraps beyond this width, mm."""
CHART_DPI = 200
INK = (29, 29, 31)
MUTED = (95, 99, 104)
ACCENT = (31, 95, 168)


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
    _answer(pdf, report.answer)
    for note in report.notes:
        _muted_line(pdf, note, italic=True)
    if report.cited:
        _section(pdf, "Sources")
        _sources(pdf, report.cited)
    if report.verification:
        pdf.ln(2)
        _muted_line(pdf, report.verification, italic=True)
    charts = charts_of(report.tables)
    if charts:
        _section(pdf, "Charts")
        _charts(pdf, charts, report.sources)
    if report.tables:
        _section(pdf, "Data")
        for table in report.tables:
            draw_table(pdf, table_caption(table), grid(table, MAX_ROWS))
        others = [s for s in report.sources if not s.cited]
        if others:
            pdf.ln(2)
            _muted_line(pdf, "Also fetched (not cited):")
            _sources(pdf, others)
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
            self.set_font(FONT, size=7.5)
            self.set_text_color(*MUTED)
            short = question if len(question) <= 90 else question[:89] + "…"
            self.cell(0, 5, f"{short}  ·  page {self.page_no()}/{{nb}}", align="C")

    pdf = _Document(format="A4")
    pdf.resource_access_policy = ResourceAccessPolicy(0)
    pdf.set_margins(16, 16, 16)
    pdf.set_auto_page_break(True, margin=16)
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
    pdf.multi_cell(0, 7.5, " ".join(report.question.split()), new_x="LMARGIN", new_y="NEXT", align="L")
    pdf.ln(1)
    meta = " · ".join(p for p in (report.when, report.model) if p)
    _muted_line(pdf, meta)
    pdf.ln(3)


def _answer(pdf: FPDF, markdown: str) -> None:
    pdf.set_font(FONT, size=BODY_SIZE)
    pdf.set_text_color(*INK)
    pdf.write_html(for_fpdf(answer_html(markdown)), font_family=FONT,
                   warn_on_tags_not_matching=False, table_line_separators=True,
                   li_prefix_color=MUTED, tag_styles=_answer_styles())
    pdf.set_font(FONT, size=BODY_SIZE)


def _answer_styles() -> dict[str, Any]:
    """fpdf2's HTML styles for the answer: headings in the ink colour and modest sizes,
    code in DejaVu Sans Mono (fpdf2's default Courier has no ✓ or —)."""
    from fpdf.fonts import FontFace, TextStyle

    ink = "#1d1d1f"
    styles: dict[str, Any] = {
        f"h{n}": TextStyle(font_family=FONT, font_style="B", font_size_pt=size, color=ink,
                           t_margin=4, b_margin=1)
        for n, size in ((1, 14), (2, 13), (3, 12), (4, 11), (5, 10), (6, 10))}
    styles["code"] = FontFace(family=MONO)
    styles["pre"] = TextStyle(font_family=MONO, t_margin=3, b_margin=3)
    styles["a"] = FontFace(color="#1f5fa8", emphasis="UNDERLINE")
    styles["blockquote"] = TextStyle(color="#5f6368", t_margin=3, b_margin=3, l_margin=6)
    return styles


def for_fpdf(page: str) -> str:
    """The answer's HTML (markdown-it's, so its tags are known) in the attributes fpdf2
    reads: a table as wide as its columns need (not the whole page), left-aligned;
    column alignment as ``align``."""
    def table(match: re.Match[str]) -> str:
        block = match.group(0)
        head = block.split("</tr>", 1)[0]
        columns = max(1, head.count("<th") or head.count("<td"))
        width = min(100, 18 * columns)
        return block.replace("<table>", f'<table width="{width}%" align="left">', 1)

    page = re.sub(r"<table>.*?</table>", table, page, flags=re.DOTALL)
    return re.sub(r'style="text-align:(left|right|center)"', r'align="\1"', page)


def _section(pdf: FPDF, title: str) -> None:
    if pdf.will_page_break(30):
        pdf.add_page()
    pdf.ln(4)
    pdf.set_font(FONT, "B", 13)
    pdf.set_text_color(*INK)
    pdf.cell(0, 8, title, new_x="LMARGIN", new_y="NEXT", align="L")
    pdf.set_draw_color(217, 220, 225)
    pdf.line(pdf.l_margin, pdf.get_y(), pdf.w - pdf.r_margin, pdf.get_y())
    pdf.ln(2)


def _muted_line(pdf: FPDF, text: str, italic: bool = False) -> None:
    pdf.set_font(FONT, "I" if italic else "", 9.5)
    pdf.set_text_color(*MUTED)
    pdf.multi_cell(0, 5, text, new_x="LMARGIN", new_y="NEXT", align="L")
    pdf.set_text_color(*INK)


def _sources(pdf: FPDF, sources: Sequence[ReportSource]) -> None:
    for source in sources:
        pdf.set_x(pdf.l_margin)
        pdf.set_font(FONT, "B", 9.5)
        pdf.write(5, f"[{source.id}] ")
        pdf.set_font(FONT, "", 9.5)
        pdf.write(5, source.title)
        if source.url:
            pdf.write(5, " · ")
            if safe_link(source.url) and not source.url.startswith("#"):
                pdf.set_text_color(*ACCENT)
                pdf.write(5, source.url, link=source.url)
                pdf.set_text_color(*INK)
            else:
                pdf.write(5, source.url)
        pdf.ln(6.5)


def _charts(pdf: FPDF, charts: Sequence[Chart], sources: Sequence[ReportSource]) -> None:
    from dexter.reports.charts import SIZE, chart_caption, chart_png

    width = pdf.epw * 0.9
    height = width * SIZE[1] / SIZE[0]
    for chart in charts:
        if pdf.will_page_break(height + 8):
            pdf.add_page()
        pdf.image(io.BytesIO(chart_png(chart, CHART_DPI)), x=pdf.l_margin, w=width, h=height,
                  alt_text=chart.title)
        pdf.set_font(FONT, "", 8)
        pdf.set_text_color(*MUTED)
        pdf.multi_cell(0, 4, chart_caption(chart, sources), new_x="LMARGIN", new_y="NEXT", align="L")
        pdf.set_text_color(*INK)
        pdf.ln(4)


def column_widths(pdf: FPDF, table: Grid, size: float) -> list[float]:
    """The width each column needs at font ``size``, mm (the first one capped; headers
    may wrap at spaces)."""
    pdf.set_font(FONT, "", size)
    widths = []
    for n, header in enumerate(table.header):
        pdf.set_font(FONT, "B", size)
        head = max((pdf.get_string_width(word) for word in header.split()), default=0.0)
        pdf.set_font(FONT, "", size)
        body = max((pdf.get_string_width(row[n]) for row in table.rows if n < len(row)),
                   default=0.0)
        width = max(head, body) + 2 * CELL_PAD + 0.5
        widths.append(min(width, MAX_LABEL_WIDTH) if n == 0 else width)
    return widths


def draw_table(pdf: FPDF, caption: str, table: Grid) -> None:
    """One data table under its caption, fitted to the page (see the module docstring)."""
    from fpdf.enums import PageOrientation

    size, landscape, groups = _fit(pdf, table)
    turned = pdf.cur_orientation is PageOrientation.LANDSCAPE
    if landscape and not turned:
        pdf.add_page(orientation="L")
    elif pdf.will_page_break(24):
        pdf.add_page(orientation="L" if turned else "P")
    pdf.set_font(FONT, "B", 9.5)
    pdf.multi_cell(0, 5, caption, new_x="LMARGIN", new_y="NEXT", align="L")
    pdf.ln(1)
    widths = column_widths(pdf, table, size)
    for columns in groups:
        _draw_group(pdf, table, columns, [widths[c] for c in columns], size)
        pdf.ln(3)


def _fit(pdf: FPDF, table: Grid) -> tuple[float, bool, list[list[int]]]:
    """(font size, needs landscape, column groups) for ``table``."""
    short, long = sorted((pdf.w, pdf.h))
    portrait = short - pdf.l_margin - pdf.r_margin
    landscape = long - pdf.l_margin - pdf.r_margin
    everything = list(range(len(table.header)))
    for size in TABLE_SIZES[:2]:
        if sum(column_widths(pdf, table, size)) <= portrait:
            return size, False, [everything]
    for size in TABLE_SIZES:
        if sum(column_widths(pdf, table, size)) <= landscape:
            return size, True, [everything]
    size = TABLE_SIZES[-1]
    widths = column_widths(pdf, table, size)
    return size, True, column_groups(widths, landscape)


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


def _draw_group(pdf: FPDF, table: Grid, columns: list[int], widths: list[float],
                size: float) -> None:
    from fpdf.fonts import FontFace

    numeric = table.numeric or (False,) * len(table.header)
    align = tuple("RIGHT" if numeric[c] else "LEFT" for c in columns)
    pdf.set_font(FONT, "", size)
    pdf.set_draw_color(217, 220, 225)
    with pdf.table(width=sum(widths), col_widths=tuple(widths), text_align=align,
                   align="LEFT", line_height=size * 0.5, padding=(0.8, CELL_PAD),
                   borders_layout="HORIZONTAL_LINES", first_row_as_headings=True,
                   headings_style=FontFace(emphasis="BOLD", fill_color=(236, 239, 243)),
                   cell_fill_color=(247, 248, 250), cell_fill_mode="ROWS",
                   repeat_headings=1) as drawn:
        head = drawn.row()
        for c in columns:
            head.cell(table.header[c])
        for n, row in enumerate(table.rows):
            if table.skipped and n == table.skip_at:
                note = drawn.row()
                note.cell(f"… {table.skipped:,} rows left out (the .xlsx report has them "
                          f"all) …", colspan=len(columns), align="CENTER")
            cells = drawn.row()
            for c in columns:
                cells.cell(row[c] if c < len(row) else "")
    pdf.set_font(FONT, "", BODY_SIZE)
