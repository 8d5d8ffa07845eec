"""Deliverables: the answer of a run as a report file (markdown, HTML, PDF or spreadsheet).

``build_report`` (model.py) gathers what a report holds; ``write_report`` picks the writer
by the file's extension. Writers are imported only when used: the plotting, PDF and
spreadsheet libraries cost start-up time that ``dexter ask`` without ``--output`` should
not pay. See docs/reports.md.
"""

from __future__ import annotations

import dataclasses
import importlib
from pathlib import Path

from dexter.filelock import write_atomic
from dexter.reports.model import Flag, Reference, Report, ReportSource, build_report
from dexter.secrets import scrub, secret_values

FORMATS: dict[str, str] = {
    ".md": "markdown", ".markdown": "markdown", ".txt": "markdown",
    ".xlsx": "xlsx",
    ".html": "html", ".htm": "html", ".pdf": "pdf",
}
"""File extension -> format."""
WRITERS: dict[str, str] = {
    "markdown": "dexter.reports.markdown",
    "xlsx": "dexter.reports.xlsx",
    "html": "dexter.reports.html",
    "pdf": "dexter.reports.pdf",
}
"""Format -> the module that writes it."""
PACKAGES: dict[str, str] = {"fpdf": "fpdf2", "PIL": "pillow"}
"""Module -> the package that installs it, where the names differ."""

__all__ = [
    "FORMATS",
    "WRITERS",
    "Report",
    "ReportError",
    "ReportSource",
    "build_report",
    "encode_report",
    "format_problem",
    "render_bytes",
    "write_report",
]


class ReportError(Exception):
    """A report could not be written; the message says why and what to do."""


def format_problem(path: Path) -> str | None:
    """Why dexter cannot write a report to ``path`` by its extension, or None."""
    if path.suffix.lower() in FORMATS:
        return None
    shown = path.suffix or "no extension"
    known = ", ".join(sorted(FORMATS))
    return (f"{path}: dexter writes reports as {known}, not {shown}; "
            f"name the file with one of those, e.g. {path.with_suffix('.md').name}.")


def render_bytes(report: Report, fmt: str) -> bytes:
    """The report in format ``fmt`` (a value of :data:`FORMATS`), secrets scrubbed. Each
    writer module has ``render(report) -> bytes``."""
    module = importlib.import_module(WRITERS[fmt])
    data = module.render(scrubbed(report))
    if not isinstance(data, bytes):
        raise TypeError(f"the {fmt} writer returned {type(data).__name__}, not bytes")
    return data


def encode_report(report: Report, path: Path) -> bytes:
    """``report`` as the bytes of the format ``path``'s extension names. ``ReportError``
    for an unknown extension or a missing writer package."""
    problem = format_problem(path)
    if problem is not None:
        raise ReportError(problem)
    try:
        return render_bytes(report, FORMATS[path.suffix.lower()])
    except ImportError as exc:
        package = PACKAGES.get(str(exc.name).split(".")[0], exc.name)
        raise ReportError(f"Writing {path.suffix} needs the Python package {package!r}, "
                          f"which is not installed: reinstall dexter (make run) or "
                          f"pip install {package}.") from None


def write_report(report: Report, path: Path) -> None:
    """Write ``report`` to ``path`` in the format its extension names, whole or not at all
    (a temporary file renamed into place). ``ReportError`` says what went wrong."""
    data = encode_report(report, path)
    try:
        write_atomic(path, data)
        path.chmod(0o644)  # a document to share, not the temporary file's private 0600
    except OSError as exc:
        raise ReportError(f"Could not write {path}: {exc.strerror or exc}.") from None


def scrubbed(report: Report) -> Report:
    """``report`` with every known secret value removed from its text."""
    found = secret_values()  # once: a table has thousands of text cells

    def clean(text: str) -> str:
        return scrub(text, found)

    sources = tuple(dataclasses.replace(
        s, title=clean(s.title), url=clean(s.url), provider=clean(s.provider),
        detail=clean(s.detail), inputs=tuple(clean(i) for i in s.inputs),
        references=tuple(Reference(clean(r.text), clean(r.url), clean(r.name), clean(r.covers))
                         for r in s.references))
        for s in report.sources)
    return dataclasses.replace(
        report, question=clean(report.question), answer=clean(report.answer), sources=sources,
        verification=clean(report.verification), notes=tuple(clean(n) for n in report.notes),
        tables=tuple(t.map_text(clean) for t in report.tables),
        flags=tuple(Flag(clean(f.text), f.status, clean(f.reason)) for f in report.flags))
