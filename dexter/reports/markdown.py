"""The report as one markdown file: the question, date and model, the verification banner,
the answer, then every data table the run pulled (as a filing prints it) and the sources,
each naming the documents its figures came from."""

from __future__ import annotations

from dexter.reports.model import Report, ReportSource
from dexter.reports.presentation import TableView, fit_periods, view

MAX_ROWS = 60
"""Rows shown per record table (first and last halves); the spreadsheet has them all."""
MAX_PERIODS = 12
"""Period columns shown per statement (the newest); the spreadsheet has them all."""


def render(report: Report) -> bytes:
    """The whole document, UTF-8."""
    return document(report).encode("utf-8")


def document(report: Report) -> str:
    """The whole document as text."""
    parts = [f"# {_one_line(report.question)}",
             f"*{report.when} · {report.model}*" if report.model else f"*{report.when}*"]
    if report.checked:
        parts.append(banner(report))
    parts.append(report.answer)
    parts.extend(f"*{note}*" for note in report.notes)
    if report.tables:
        parts.append("## Data")
        for table in report.tables:
            shown = fit_periods(view(table, MAX_ROWS), MAX_PERIODS)
            parts.append(table_markdown(shown))
    if report.sources:
        parts.append("## Sources\n\n" + "\n".join(source_lines(s) for s in report.sources))
    return "\n\n".join(parts) + "\n"


def banner(report: Report) -> str:
    """The verification banner as a quote block: the headline, then each flagged figure."""
    lines = [f"> **{_escape(report.verification)}**"]
    for flag in report.flags:
        lines.append(f"> - ⚠ “{_escape(flag.text)}”: {_escape(flag.reason)}")
    return "\n".join(lines)


def table_markdown(table: TableView) -> str:
    """A caption, the unit, a pipe table (totals in bold) and its notes."""
    sid = f" [{table.source_id}]" if table.source_id else ""
    lines = [f"### {_escape(table.title)}{sid}"]
    if table.unit:
        lines += ["", f"*{_escape(table.unit)}*"]
    lines += ["", "| " + " | ".join(_escape(h) for h in (table.corner, *table.header)) + " |",
              "|---|" + "|".join("---:" if num else "---" for num in table.numeric) + "|"]
    if table.subheader and any(table.subheader):
        lines.append("| *Period end* | " + " | ".join(f"*{d}*" if d else ""
                                                      for d in table.subheader) + " |")
    for n, row in enumerate(table.rows):
        if table.skipped and n == table.skip_at:
            lines.append(f"| … {table.skipped:,} rows left out … |"
                         + " |" * len(table.header))
        cells = [_escape(row.label), *(_escape(c) for c in row.cells)]
        if row.total:
            cells = [f"**{c}**" for c in cells]
        lines.append("| " + " | ".join(cells) + " |")
    lines.extend(["", *(f"*{_escape(note)}*" for note in table.notes)] if table.notes else [])
    return "\n".join(lines)


def source_lines(source: ReportSource) -> str:
    """One source: its id and what it is, then the documents behind it."""
    head = f"- **[{source.id}]** {_escape(source.title)}"
    if source.provider and source.provider != "calculator":
        head += f" · {_escape(source.provider)}"
    if source.shown_url:
        head += f" · {_link(source.url, source.url)}"
    lines = [head]
    if source.detail:
        lines.append(f"  - {_escape(source.detail)}")
    lines.extend(f"  - {_escape(i)}" for i in source.inputs)
    for reference in source.references:
        text = f"{_escape(reference.covers)}: " if reference.covers else ""
        text += _escape(reference.text)
        if reference.url:
            text += f" · {_link(reference.name or reference.url, reference.url)}"
        lines.append(f"  - {text}")
    return "\n".join(lines)


def _link(text: str, url: str) -> str:
    if url.startswith(("http://", "https://")):
        return f"[{_escape(text)}](<{url}>)"
    return _escape(url)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
