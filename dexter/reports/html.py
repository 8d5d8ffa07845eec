"""The report as one self-contained HTML file: the markdown report's content (question,
date and model, the answer, notes, sources, the verification line, the data tables) plus a
chart of every time series the run pulled, styled for reading on screen and on paper.

Opening it needs no network: the CSS is inline, the charts are inline SVG, there is no
script and no external font or image; a Content-Security-Policy meta tag tells the browser
to load nothing even if something slipped through. Every text is escaped; the answer's
markdown goes through :mod:`dexter.reports.answer_html` (raw HTML escaped, http(s) links
only).
"""

from __future__ import annotations

import re
from html import escape

from dexter.evidence.report import MARK
from dexter.reports.answer_html import answer_html, safe_link
from dexter.reports.layout import Grid, grid, table_caption
from dexter.reports.markdown import MAX_ROWS
from dexter.reports.model import Report, ReportSource
from dexter.reports.series import charts_of

_TAG = re.compile(r"(<[^>]*>)")

POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
"""Nothing is fetched when the file is opened; only the inline styles apply."""

STYLE = """
:root { color-scheme: light; --ink: #1d1d1f; --muted: #5f6368; --rule: #d9dce1;
        --accent: #1f5fa8; --band: #f5f7fa; }
* { box-sizing: border-box; }
body { margin: 0; background: #fff; color: var(--ink);
       font: 16px/1.55 -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial,
             "Noto Sans", "DejaVu Sans", sans-serif; }
main { max-width: 52rem; margin: 0 auto; padding: 2.5rem 1.5rem 4rem; }
h1 { font-size: 1.7rem; line-height: 1.25; margin: 0 0 .4rem; }
h2 { font-size: 1.25rem; margin: 2.4rem 0 .8rem; padding-bottom: .3rem;
     border-bottom: 1px solid var(--rule); }
h3 { font-size: 1.05rem; margin: 1.6rem 0 .5rem; }
.meta, .note, .verification, figcaption, .skipped { color: var(--muted); }
.meta { margin: 0 0 1.8rem; font-size: .95rem; }
.answer { font-size: 1.02rem; }
.note, .verification { font-style: italic; }
a { color: var(--accent); overflow-wrap: anywhere; }
code, pre { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, "DejaVu Sans Mono",
            monospace; font-size: .9em; }
pre { background: var(--band); padding: .8rem 1rem; overflow-x: auto; border-radius: 4px; }
blockquote { margin: 1rem 0; padding: .1rem 1rem; border-left: 3px solid var(--rule);
             color: var(--muted); }
.scroll { overflow-x: auto; margin: .6rem 0 1.2rem; }
table { border-collapse: collapse; font-size: .88rem; font-variant-numeric: tabular-nums; }
th, td { padding: .3rem .65rem; border-bottom: 1px solid var(--rule); text-align: left;
         vertical-align: top; }
thead th { border-bottom: 2px solid var(--ink); vertical-align: bottom; }
tbody tr:nth-child(even) { background: var(--band); }
td.num, th.num { text-align: right; }
td.num, .word { white-space: nowrap; }
.sources ol { list-style: none; padding: 0; margin: 0; }
.sources li { margin: .35rem 0; padding-left: 2.6rem; text-indent: -2.6rem; }
.sid { display: inline-block; min-width: 2.6rem; text-indent: 0; font-weight: 600; }
.sources li:target { background: #fff4cc; }
figure { margin: 1.2rem 0 2rem; }
figure.chart svg { display: block; width: 100%; height: auto; }
figcaption { font-size: .88rem; margin-top: .3rem; }
.mark { color: #b45309; }
@media print {
  @page { size: A4; margin: 16mm 14mm; }
  body { font-size: 10.5pt; }
  main { max-width: none; padding: 0; }
  h2 { break-after: avoid; }
  h3, figcaption { break-after: avoid; }
  figure.chart, tr { break-inside: avoid; }
  .scroll { overflow: visible; }
  table { font-size: 8pt; }
  tbody tr:nth-child(even) { background: none; }
  a { color: inherit; }
}
"""


def render(report: Report) -> bytes:
    """The whole page, UTF-8."""
    return document(report).encode("utf-8")


def document(report: Report) -> str:
    """The whole page as text."""
    meta = " · ".join(p for p in (report.when, report.model) if p)
    body = [f"<header><h1>{escape(_one_line(report.question))}</h1>",
            f'<p class="meta">{escape(meta)}</p></header>',
            f'<section class="answer">\n{_marks(answer_html(report.answer, [c.id for c in report.cited]))}</section>']
    body.extend(f'<p class="note">{escape(note)}</p>' for note in report.notes)
    if report.cited:
        body.append('<section class="sources"><h2>Sources</h2>\n<ol>\n'
                    + "\n".join(source_item(s) for s in report.cited) + "\n</ol></section>")
    if report.verification:
        body.append(f'<p class="verification">{escape(report.verification)}</p>')
    charts = charts_of(report.tables)
    if charts:
        from dexter.reports.charts import chart_caption, chart_svg

        figures = [f'<figure class="chart">\n{chart_svg(chart, f"chart{n}")}\n'
                   f"<figcaption>{escape(chart_caption(chart, report.sources))}"
                   f"</figcaption></figure>"
                   for n, chart in enumerate(charts, 1)]
        body.append('<section class="charts"><h2>Charts</h2>\n' + "\n".join(figures)
                    + "</section>")
    if report.tables:
        parts = ['<section class="data"><h2>Data</h2>']
        for table in report.tables:
            parts.append(f"<h3>{escape(table_caption(table))}</h3>\n"
                         f'<div class="scroll">{grid_html(grid(table, MAX_ROWS))}</div>')
        others = [s for s in report.sources if not s.cited]
        if others:
            parts.append('<div class="sources"><p>Also fetched (not cited):</p>\n<ol>\n'
                         + "\n".join(source_item(s) for s in others) + "\n</ol></div>")
        body.append("\n".join(parts) + "</section>")
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            '<meta name="generator" content="dexter">\n'
            f"<title>{escape(_one_line(report.question))}</title>\n"
            f"<style>{STYLE}</style>\n</head>\n<body>\n<main>\n"
            + "\n".join(body) + "\n</main>\n</body>\n</html>\n")


def source_item(source: ReportSource) -> str:
    """One entry of a sources list; the URL is a link when it is http(s)."""
    text = f'<span class="sid">[{escape(source.id)}]</span> {escape(source.title)}'
    if source.url and safe_link(source.url) and not source.url.startswith("#"):
        text += f' · <a href="{escape(source.url, quote=True)}">{escape(source.url)}</a>'
    elif source.url:
        text += f" · {escape(source.url)}"
    return f'<li id="source-{escape(source.id, quote=True)}">{text}</li>'


def grid_html(table: Grid) -> str:
    """A table; number columns right-aligned, a row says how many rows were left out."""
    numeric = table.numeric or (False,) * len(table.header)
    head = "".join(f'<th{_num(n)} scope="col">{_unbroken_words(h)}</th>'
                   for h, n in zip(table.header, numeric, strict=False))
    rows = []
    for n, row in enumerate(table.rows):
        if table.skipped and n == table.skip_at:
            rows.append(f'<tr><td class="skipped" colspan="{len(table.header)}">'
                        f"… {table.skipped:,} rows left out (the .xlsx report has them all) …"
                        "</td></tr>")
        cells = "".join(f"<td{_num(num)}>{escape(c)}</td>"
                        for c, num in zip(row, numeric, strict=False))
        rows.append(f"<tr>{cells}</tr>")
    return (f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n" + "\n".join(rows)
            + "\n</tbody>\n</table>")


def _unbroken_words(text: str) -> str:
    """A header that may wrap between words but not inside one (not at a date's dashes)."""
    return " ".join(f'<span class="word">{escape(w)}</span>' for w in text.split())


def _marks(page: str) -> str:
    """The ⚠ after an unsupported figure, highlighted (in text only, never in a tag)."""
    parts = _TAG.split(page)
    return "".join(part if part.startswith("<") else
                   part.replace(MARK, f'<span class="mark">{MARK}</span>') for part in parts)


def _num(numeric: bool) -> str:
    return ' class="num"' if numeric else ""


def _one_line(text: str) -> str:
    return " ".join(text.split())
