"""The report as one markdown file: question, date and model, the answer, its sources with
links, the verification line, then every data table the run pulled."""

from __future__ import annotations

from dexter.reports.layout import Grid, grid, table_caption
from dexter.reports.model import Report

MAX_ROWS = 60
"""Rows shown per record table (first and last halves); the spreadsheet has them all."""


def render(report: Report) -> bytes:
    """The whole document, UTF-8."""
    return document(report).encode("utf-8")


def document(report: Report) -> str:
    """The whole document as text."""
    parts = [f"# {_one_line(report.question)}",
             f"*{report.when} · {report.model}*" if report.model else f"*{report.when}*",
             report.answer]
    parts.extend(f"*{note}*" for note in report.notes)
    if report.cited:
        parts.append("## Sources\n\n" + "\n".join(_source_line(s.id, s.title, s.url)
                                                   for s in report.cited))
    if report.verification:
        parts.append(f"*{report.verification}*")
    if report.tables:
        parts.append("## Data")
        for table in report.tables:
            parts.append(f"### {_escape(table_caption(table))}\n\n"
                         f"{grid_markdown(grid(table, MAX_ROWS))}")
        others = [s for s in report.sources if not s.cited]
        if others:
            parts.append("Also fetched (not cited):\n\n" + "\n".join(
                _source_line(s.id, s.title, s.url) for s in others))
    return "\n\n".join(parts) + "\n"


def grid_markdown(table: Grid) -> str:
    """A pipe table; a row says how many rows were left out."""
    lines = ["| " + " | ".join(_escape(h) for h in table.header) + " |",
             "|" + "|".join("---:" if num else "---" for num in
                            (table.numeric or (False,) * len(table.header))) + "|"]
    for n, row in enumerate(table.rows):
        if table.skipped and n == table.skip_at:
            lines.append(f"| … {table.skipped:,} rows left out … |"
                         + " |" * (len(table.header) - 1))
        lines.append("| " + " | ".join(_escape(c) for c in row) + " |")
    return "\n".join(lines)


def _source_line(source_id: str, title: str, url: str) -> str:
    text = f"- [{source_id}] {_escape(title)}"
    return f"{text} · <{url}>" if url.startswith(("http://", "https://")) else \
        f"{text} · {url}" if url else text


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
