"""What a deliverable holds, whatever its format: the question, when and by which model it
was answered, what the figure check found, the checked answer, its sources (each naming
the documents its figures came from), and the data tables the run pulled.

:func:`build_report` assembles it from the run's ``Done`` event and the session's source
ledger; each writer (markdown, HTML, PDF, spreadsheet) only lays it out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from dexter.events import Done
from dexter.evidence.ledger import SourceLedger
from dexter.evidence.report import limit_line, marked_answer
from dexter.evidence.tables import DataTable


@dataclass(frozen=True, slots=True)
class Reference:
    """A document a source's figures or text came from, as a sources list cites it."""

    text: str
    """``Form 10-K for FY2024 · filed 1 Nov 2024 · accession 0000320193-24-000123``."""
    url: str = ""
    """The document itself (``.../aapl-20240928.htm``), when there is one to link."""
    name: str = ""
    """The link's text: the document's file name (``aapl-20240928.htm``), or ''."""
    covers: str = ""
    """Which figures came from it (``FY2023–FY2025``; ``Interest expense FY2022``)."""


@dataclass(frozen=True, slots=True)
class ReportSource:
    """A source as a report lists it; ``cited``: the answer cites it. ``tool`` is kept for
    the record only: no writer shows it."""

    id: str
    title: str
    url: str
    tool: str
    cited: bool
    provider: str = ""
    """Who supplied it, in words (``SEC EDGAR (XBRL company facts)``)."""
    references: tuple[Reference, ...] = ()
    """The filings or documents behind it, newest first."""
    detail: str = ""
    """A calculation's expression and result: ``180,683 ÷ 391,035 × 100 = 46.21``."""
    inputs: tuple[str, ...] = ()
    """A calculation's inputs and where each came from (``391,035: Revenue, FY2024 [S1]``)."""

    @property
    def shown_url(self) -> str:
        """The link to show beside the title: '' when the documents carry the links or the
        title already says it (a file's path)."""
        if self.references or not self.url or self.url in self.title:
            return ""
        return self.url


@dataclass(frozen=True, slots=True)
class Flag:
    """A figure of the answer the check did not accept."""

    text: str
    status: str
    """``unsupported``, ``misattributed`` or ``miscited`` (the figure check's statuses)."""
    reason: str


@dataclass(frozen=True, slots=True)
class Report:
    """One answered question, ready to be written in any format."""

    question: str
    when: str
    model: str
    answer: str
    """The answer's markdown, unsupported figures marked, without the Sources list."""
    sources: tuple[ReportSource, ...]
    """Every source the report refers to, by id (S1, S2, ...)."""
    verification: str
    """The check's headline (``⚠ 1 of 9 figures is not supported...``; '' when off)."""
    notes: tuple[str, ...]
    """Warnings that belong under the answer (stopped at the iteration limit)."""
    tables: tuple[DataTable, ...]
    flags: tuple[Flag, ...] = ()
    """Every figure the check did not accept, with its reason (the banner lists them)."""
    checked: bool = False
    """Whether the figure check ran (a banner is shown)."""

    @property
    def cited(self) -> tuple[ReportSource, ...]:
        """The sources the answer cites."""
        return tuple(s for s in self.sources if s.cited)

    @property
    def warning(self) -> bool:
        """Whether the banner warns (a figure flagged, a citation of nothing, no data)."""
        return bool(self.flags) or self.verification.startswith("⚠")


def build_report(done: Done, question: str, when: str,
                 ledger: SourceLedger | None = None) -> Report:
    """The report of one run. Its sources: those the answer cites, those the run added (its
    ``done.tool_calls``) and those a cited calculation took its inputs from, by id; its
    tables: every table of those sources, each once."""
    from dexter.reports.check import banner
    from dexter.reports.sourcing import describe_sources, source_ids

    answer = marked_answer(done)
    cited = [str(c.get("id", "")) for c in done.citations if isinstance(c, Mapping)]
    ids = source_ids(cited, _run_source_ids(done.tool_calls), ledger)
    tables: list[DataTable] = []
    seen: set[tuple[object, ...]] = set()
    for source_id in ids:
        source = ledger.get(source_id) if ledger is not None else None
        for table in source.tables if source is not None else ():
            key = (table.title, table.index, tuple(c.values for c in table.columns))
            if key not in seen:
                seen.add(key)
                tables.append(table)
    sources = describe_sources(ids, set(cited), ledger, done, answer, tables)
    headline, flags = banner(done.verification)
    limit = limit_line(done)
    return Report(question=question.strip(), when=when, model=done.model, answer=answer,
                  sources=tuple(sources), verification=headline,
                  notes=(limit,) if limit else (), tables=tuple(tables), flags=flags,
                  checked=bool(headline))


def _run_source_ids(tool_calls: Sequence[object]) -> list[str]:
    ids = []
    for call in tool_calls:
        if isinstance(call, Mapping) and isinstance(call.get("source_id"), str):
            ids.append(str(call["source_id"]))
    return ids
