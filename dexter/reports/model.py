"""What a deliverable holds, whatever its format: the question, when and by which model it
was answered, the checked answer, its sources, and the data tables the run pulled.

:func:`build_report` assembles it from the run's ``Done`` event and the session's source
ledger; each writer (markdown, HTML, PDF, spreadsheet) only lays it out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from dexter.events import Done
from dexter.evidence.ledger import SourceLedger
from dexter.evidence.report import limit_line, marked_answer, verification_line
from dexter.evidence.tables import DataTable


@dataclass(frozen=True, slots=True)
class ReportSource:
    """A source as a report lists it; ``cited``: the answer cites it."""

    id: str
    title: str
    url: str
    tool: str
    cited: bool


@dataclass(frozen=True, slots=True)
class Report:
    """One answered question, ready to be written in any format."""

    question: str
    when: str
    model: str
    answer: str
    """The answer's markdown, unsupported figures marked, without the Sources list."""
    sources: tuple[ReportSource, ...]
    """Cited sources first (in citation order), then the run's other sources with tables."""
    verification: str
    """The verification line ('' when verification was off)."""
    notes: tuple[str, ...]
    """Warnings that belong under the answer (stopped at the iteration limit)."""
    tables: tuple[DataTable, ...]

    @property
    def cited(self) -> tuple[ReportSource, ...]:
        """The sources the answer cites."""
        return tuple(s for s in self.sources if s.cited)


def build_report(done: Done, question: str, when: str,
                 ledger: SourceLedger | None = None) -> Report:
    """The report of one run. Tables come from the sources the run added (its
    ``done.tool_calls``) and the sources its answer cites, each table once."""
    cited = [c for c in done.citations if isinstance(c, Mapping)]
    cited_ids = [str(c.get("id", "")) for c in cited]
    run_ids = _run_source_ids(done.tool_calls)
    tables: list[DataTable] = []
    with_tables: list[str] = []
    seen: set[tuple[object, ...]] = set()
    for source_id in dict.fromkeys([*cited_ids, *run_ids]):
        source = ledger.get(source_id) if ledger is not None else None
        if source is None:
            continue
        for table in source.tables:
            key = (table.title, table.index, tuple(c.values for c in table.columns))
            if key not in seen:
                seen.add(key)
                tables.append(table)
                if source_id not in with_tables:
                    with_tables.append(source_id)
    sources = [ReportSource(id=str(c.get("id", "")), title=str(c.get("title") or c.get("tool")
                                                               or ""),
                            url=str(c.get("url") or ""), tool=str(c.get("tool") or ""),
                            cited=True) for c in cited]
    for source_id in with_tables:
        if source_id in cited_ids or ledger is None:
            continue
        source = ledger.get(source_id)
        if source is not None:
            sources.append(ReportSource(source.id, source.title, source.url, source.tool,
                                        cited=False))
    limit = limit_line(done)
    return Report(question=question.strip(), when=when, model=done.model,
                  answer=marked_answer(done), sources=tuple(sources),
                  verification=verification_line(done.verification),
                  notes=(limit,) if limit else (), tables=tuple(tables))


def _run_source_ids(tool_calls: Sequence[object]) -> list[str]:
    ids = []
    for call in tool_calls:
        if isinstance(call, Mapping) and isinstance(call.get("source_id"), str):
            ids.append(str(call["source_id"]))
    return ids
