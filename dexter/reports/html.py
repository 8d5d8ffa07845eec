"""The report as one self-contained HTML file, laid out like a research note: the question,
date and model, the verification banner, the answer, the figures (charts), the data tables
as a filing prints them, and the sources naming the documents behind every figure.

Opening it needs no network: the CSS is inline, the charts are inline SVG, there is no
script and no external font or image; a Content-Security-Policy meta tag tells the browser
to load nothing even if something slipped through. Every text is escaped; the answer's
markdown goes through :mod:`dexter.reports.answer_html` (raw HTML escaped, http(s) links
only). No table scrolls sideways: a statement shows its newest :data:`MAX_PERIODS` periods
and says which it left out.
"""

from __future__ import annotations

import re
from html import escape

from dexter.reports.answer_html import answer_html, marks, safe_link
from dexter.reports.markdown import MAX_ROWS
from dexter.reports.model import Report, ReportSource
from dexter.reports.presentation import TableView, fit_periods, view
from dexter.reports.series import charts_of

MARK_HTML = '<span class="mark">⚠</span>'
MAX_PERIODS = 8
"""Period columns a statement shows (the newest): what fits the page at 1280 px and on A4."""

POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
"""Nothing is fetched when the file is opened; only the inline styles apply."""

STYLE = """
:root { color-scheme: light; --ink: #1d1d1f; --muted: #5f6368; --rule: #dde1e6;
        --strong-rule: #9aa3ad; --accent: #1f5fa8; --band: #f6f8fa; --warn: #8a4b00;
        --warn-bg: #fff6e0; --warn-rule: #e0a526; --ok: #1e6b3a; --ok-bg: #eef7f0; }
* { box-sizing: border-box; }
body { margin: 0; background: #fff; color: var(--ink);
       font: 16px/1.6 -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial,
             "Noto Sans", "DejaVu Sans", sans-serif; }
main { max-width: 60rem; margin: 0 auto; padding: 2.5rem 1.5rem 4rem; }
header { border-bottom: 2px solid var(--ink); padding-bottom: .8rem; margin-bottom: 1.4rem; }
h1 { font-size: 1.65rem; line-height: 1.25; margin: 0 0 .4rem; }
h2 { font-size: 1.2rem; margin: 2.6rem 0 .9rem; padding-bottom: .3rem;
     border-bottom: 1px solid var(--rule); break-after: avoid; }
h3 { font-size: 1.02rem; margin: 1.8rem 0 .15rem; break-after: avoid; }
.meta { margin: 0; font-size: .92rem; color: var(--muted); }
.banner { margin: 0 0 1.6rem; padding: .7rem 1rem; border-left: 4px solid var(--ok);
          background: var(--ok-bg); color: var(--ok); font-size: .95rem; }
.banner.warn { border-left-color: var(--warn-rule); background: var(--warn-bg);
               color: var(--warn); }
.banner p { margin: 0; font-weight: 600; }
.banner ul { margin: .4rem 0 0; padding-left: 1.2rem; }
.banner li { margin: .15rem 0; }
.answer { font-size: 1.02rem; }
.answer table { margin: .8rem 0 1.2rem; }
.note, figcaption, .unit, .tnote, .provider, .covers { color: var(--muted); }
.note { font-style: italic; }
a { color: var(--accent); overflow-wrap: anywhere; }
code, pre { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, "DejaVu Sans Mono",
            monospace; font-size: .9em; }
pre { background: var(--band); padding: .8rem 1rem; overflow-x: auto; border-radius: 4px; }
blockquote { margin: 1rem 0; padding: .1rem 1rem; border-left: 3px solid var(--rule);
             color: var(--muted); }
table { border-collapse: collapse; font-size: .86rem; font-variant-numeric: tabular-nums; }
th, td { padding: .26rem .55rem; border-bottom: 1px solid var(--rule); text-align: left;
         vertical-align: top; }
thead th { border-bottom: 1px solid var(--strong-rule); vertical-align: bottom;
           font-weight: 600; }
td.num, th.num { text-align: right; white-space: nowrap; }
.data table { width: 100%; font-size: .82rem; }
.data th, .data td { padding: .26rem .45rem; }
.data td { border-bottom-color: #eceef1; }
.data th.label, .data td.label { min-width: 10.5rem; }
.data thead tr:first-child th.num { white-space: normal; min-width: 4.2rem; }
.data thead .end th { font-weight: 400; color: var(--muted); font-size: .74rem;
                      padding-top: 0; }
.data thead tr:first-child th { border-bottom: none; }
.data tr.total td { font-weight: 600; border-top: 1.5px solid var(--strong-rule); }
.data tr.gap td { border-top: 1.5px solid var(--strong-rule); }
.sources a.doc { white-space: nowrap; }
.unit { margin: 0 0 .4rem; font-size: .85rem; font-style: italic; }
.tnote { font-size: .82rem; margin: .3rem 0 0; font-style: italic; }
.skipped { color: var(--muted); text-align: center; }
.sources ol { list-style: none; padding: 0; margin: 0; }
.sources li { margin: .55rem 0; padding-left: 3rem; text-indent: -3rem; line-height: 1.45; }
.sources li ul { list-style: none; padding: 0; margin: .15rem 0 0; text-indent: 0;
                 font-size: .9rem; }
.sources li ul li { margin: .1rem 0; padding-left: 0; text-indent: 0; }
.sid { display: inline-block; min-width: 3rem; text-indent: 0; font-weight: 600; }
.sources li:target { background: #fff4cc; }
.provider { font-size: .92rem; }
figure { margin: 1.6rem 0 2.2rem; break-inside: avoid; }
figure.chart svg { display: block; width: 100%; max-width: 46rem; height: auto; }
.ftitle { font-weight: 600; margin: 0 0 .3rem; font-size: .98rem; }
.fno { color: var(--muted); font-weight: 600; }
figcaption { font-size: .82rem; margin-top: .1rem; }
.mark { color: #b45309; font-weight: 700; }
@media print {
  @page { size: A4; margin: 16mm 14mm; }
  body { font-size: 10.5pt; }
  main { max-width: none; padding: 0; }
  table { font-size: 8pt; }
  tr { break-inside: avoid; }
  .tblock { break-inside: avoid; }
  .tblock.long { break-inside: auto; }
  .unit { break-after: avoid; }
  a { color: inherit; }
}
"""


def render(report: Report) -> bytes:
    """The whole page, UTF-8."""
    return document(report).encode("utf-8")


def document(report: Report) -> str:
    """The whole page as text."""
    meta = " · ".join(p for p in (report.when, report.model) if p)
    cited = [s.id for s in report.cited]
    body = [f"<header><h1>{escape(_one_line(report.question))}</h1>",
            f'<p class="meta">{escape(meta)}</p></header>']
    if report.checked:
        body.append(banner_html(report))
    body.append(f'<section class="answer">\n{marks(answer_html(report.answer, cited), MARK_HTML)}'
                "</section>")
    body.extend(f'<p class="note">{escape(note)}</p>' for note in report.notes)
    charts = charts_of(report.tables)
    if charts:
        from dexter.reports.charts import chart_caption, chart_svg

        figures = [f'<figure class="chart" id="figure-{n}">\n'
                   f'<p class="ftitle"><span class="fno">Figure {n}.</span> '
                   f"{escape(chart.title)}</p>\n{chart_svg(chart, f'chart{n}')}\n"
                   f"<figcaption>{_source_links(escape(chart_caption(chart, report.sources)))}"
                   "</figcaption></figure>"
                   for n, chart in enumerate(charts, 1)]
        body.append('<section class="charts"><h2>Figures</h2>\n' + "\n".join(figures)
                    + "</section>")
    if report.tables:
        parts = ['<section class="data"><h2>Data</h2>']
        for table in report.tables:
            parts.append(table_html(fit_periods(view(table, MAX_ROWS), MAX_PERIODS)))
        body.append("\n".join(parts) + "</section>")
    if report.sources:
        body.append('<section class="sources"><h2>Sources</h2>\n<ol>\n'
                    + "\n".join(source_item(s) for s in report.sources) + "\n</ol></section>")
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            '<meta name="generator" content="dexter">\n'
            f"<title>{escape(_one_line(report.question))}</title>\n"
            f"<style>{STYLE}</style>\n</head>\n<body>\n<main>\n"
            + "\n".join(body) + "\n</main>\n</body>\n</html>\n")


def banner_html(report: Report) -> str:
    """The verification banner: the headline, and each flagged figure with its reason."""
    kind = "banner warn" if report.warning else "banner"
    items = "".join(f'<li><span class="mark">⚠</span> “<strong>{escape(f.text)}</strong>”: '
                    f"{_source_links(escape(f.reason))}</li>" for f in report.flags)
    headline = escape(report.verification).replace("⚠", '<span class="mark">⚠</span>')
    return (f'<aside class="{kind}" role="note"><p>{_source_links(headline)}</p>'
            + (f"<ul>{items}</ul>" if items else "") + "</aside>")


def source_item(source: ReportSource) -> str:
    """One entry of the sources list: what it is, who supplied it, the documents behind it
    (each a link), a calculation's expression and inputs."""
    text = f'<span class="sid">[{escape(source.id)}]</span> {escape(source.title)}'
    if source.provider and source.provider != "calculator":
        text += f' <span class="provider">· {escape(source.provider)}</span>'
    if source.shown_url:
        text += f" · {_link(source.url, source.url)}"
    details = []
    if source.detail:
        details.append(f"<li>{escape(source.detail)}</li>")
    details.extend(f"<li>{_source_links(escape(i))}</li>" for i in source.inputs)
    for reference in source.references:
        covers = f'<span class="covers">{escape(reference.covers)}:</span> ' \
            if reference.covers else ""
        link = f" · {_link(reference.name or reference.url, reference.url, 'doc')}" \
            if reference.url else ""
        details.append(f"<li>{covers}{escape(reference.text)}{link}</li>")
    if details:
        text += "<ul>" + "".join(details) + "</ul>"
    return f'<li id="source-{escape(source.id, quote=True)}">{text}</li>'


def table_html(table: TableView) -> str:
    """A caption (title, source id), the unit line, the table and its notes."""
    sid = f' <a href="#source-{escape(table.source_id, quote=True)}">[{escape(table.source_id)}]</a>' \
        if table.source_id else ""
    parts = [f"<h3>{escape(table.title)}{sid}</h3>"]
    if table.unit:
        parts.append(f'<p class="unit">{escape(table.unit)}</p>')
    parts.append(grid_html(table))
    parts.extend(f'<p class="tnote">{escape(note)}</p>' for note in table.notes)
    # printed, a table that fits on a page is kept whole with its caption
    kind = "tblock" if len(table.rows) <= 40 else "tblock long"
    return f'<div class="{kind}">' + "\n".join(parts) + "</div>"


def grid_html(table: TableView) -> str:
    """The table: numbers right-aligned, totals on a rule in bold, a row saying how many
    rows were left out."""
    head = f'<th class="label" scope="col">{escape(table.corner)}</th>' + "".join(
        f'<th{_num(n)} scope="col">{escape(h)}</th>'
        for h, n in zip(table.header, table.numeric, strict=False))
    thead = f"<tr>{head}</tr>"
    if table.subheader and any(table.subheader):
        thead += '<tr class="end"><th></th>' + "".join(
            f'<th class="num">{escape(d)}</th>' for d in table.subheader) + "</tr>"
    rows = []
    group = ""
    for n, row in enumerate(table.rows):
        if table.skipped and n == table.skip_at:
            rows.append(f'<tr><td class="skipped" colspan="{len(table.header) + 1}">'
                        f"… {table.skipped:,} rows left out (the .xlsx report has them all) …"
                        "</td></tr>")
        cells = f'<td class="label">{escape(row.label)}</td>' + "".join(
            f"<td{_num(num)}>{escape(c)}</td>"
            for c, num in zip(row.cells, table.numeric, strict=False))
        kind = "total" if row.total else "gap" if group and row.group != group else ""
        group = row.group
        rows.append(f'<tr class="{kind}">{cells}</tr>' if kind else f"<tr>{cells}</tr>")
    return (f"<table>\n<thead>{thead}</thead>\n<tbody>\n" + "\n".join(rows)
            + "\n</tbody>\n</table>")


def _link(text: str, url: str, kind: str = "") -> str:
    if url and safe_link(url) and not url.startswith("#"):
        attr = f' class="{kind}"' if kind else ""
        return f'<a{attr} href="{escape(url, quote=True)}">{escape(text)}</a>'
    return escape(url)


def _source_links(text: str) -> str:
    """``[S3]`` in escaped text as a link to that source in the list."""
    return re.sub(r"\[(S\d+)\]", r'<a href="#source-\1">[\1]</a>', text)


def _num(numeric: bool) -> str:
    return ' class="num"' if numeric else ""


def _one_line(text: str) -> str:
    return " ".join(text.split())
