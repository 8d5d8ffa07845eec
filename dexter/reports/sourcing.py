"""A report's sources as a reader cites them (pure).

Each source of the ledger becomes a :class:`~dexter.reports.model.ReportSource` that says
what it is in words and names the documents behind it:

- **statement data**: the company, statement and periods (``Apple Inc. — Income
  statement, annual, FY2021–FY2025``), then every filing its values came from (form, the
  period it reports on, filing date, accession number, a link to its primary document) and
  which periods each filing supplied;
- **filing text**: the filing itself (form, period, filing date, accession number, the
  items read, a link to ``aapl-20240928.htm``), not the API that listed it;
- **a calculation**: the expression and its result, what the answer says it measures, and
  each input with the table cell or source it came from;
- anything else (a web page, a file, a search): its title in words and its link.

Sources are listed by id (S1, S2, ...), the ids the answer cites. The same words make the
terminal's Sources list under an answer (:func:`answer_citations` fills ``done.citations``
with them; :func:`answer_with_sources` prints them), so the live view, plain lines, ``dexter
replay`` and the reports name a source alike.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dexter import metrics
from dexter.events import Done
from dexter.evidence.citations import cited_ids, find_citations
from dexter.evidence.documents import Document
from dexter.evidence.ledger import Source, SourceLedger
from dexter.evidence.report import marked_answer
from dexter.evidence.tables import DataTable, Filing
from dexter.reports.model import Reference, ReportSource
from dexter.reports.presentation import (
    date_text,
    number,
    period_label,
    period_span,
    periods_text,
    readable_title,
    split_period,
    table_title,
)

_EXPRESSION_NUMBER = re.compile(r"(?<![A-Za-z_])(?:\d[\d_]*(?:\.\d+)?|\.\d+)(?:[eE][+-]?\d+)?")
CONSTANTS = frozenset({100.0, 1_000.0, 1e6, 1e9, 1e12, 365.0, 360.0, 52.0, 12.0, 4.0})
"""Numbers a calculation uses that need no source (percent, scale, days, periods)."""
_SCALES = (1.0, 1e3, 1e6, 1e9, 1e12)
_ID = re.compile(r"^S(\d+)$")
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")
_CHANGE = re.compile(r"\b(?:grew|growth|grow|rose|increase[ds]?|fell|declined?|decrease[ds]?|"
                     r"changed?|up|down)\b")


def source_ids(cited: Sequence[str], run: Sequence[str], ledger: SourceLedger | None
               ) -> list[str]:
    """The ids a report lists: cited ones, the run's own, and the sources of cited
    calculations' inputs; by number (S1, S2, ...), each once, only those in the ledger."""
    wanted = dict.fromkeys([*cited, *run])
    if ledger is not None:
        for source_id in list(wanted):
            source = ledger.get(source_id)
            if source is not None and source.kind == "calculation":
                for _, found in _inputs(source, ledger):
                    if found is not None:
                        wanted.setdefault(found[0])
        wanted = {i: None for i in wanted if ledger.get(i) is not None}
    return sorted(wanted, key=_number)


def answer_citations(answer: str, ledger: SourceLedger) -> list[dict[str, str]]:
    """``done.citations``: each source ``answer`` cites that the ledger holds, by id, in
    words: ``title`` (what it is), ``detail`` (a calculation's arithmetic), ``provider``
    (who supplied it), ``url`` (the filing's own document where one is known) and ``tool``
    (for the record; no view shows it)."""
    out = []
    for source_id in sorted(cited_ids(answer), key=_number):
        source = ledger.get(source_id)
        if source is None:
            continue
        shown = describe(source, True, ledger, answer)
        out.append({"id": source_id, "tool": source.tool, "title": shown.title,
                    "detail": shown.detail, "provider": shown.provider, "url": shown.url})
    return out


def sources_markdown(citations: Sequence[Mapping[str, Any]]) -> str:
    """The markdown ``Sources`` list under an answer ('' when it cites none): one line per
    source, by id, ``[S1] Apple Inc.: income statement, annual · SEC EDGAR (XBRL company
    facts) · link``. A citation saved before sources were described in words (an older
    run's) has its key read into words."""
    usable = sorted((c for c in citations if isinstance(c, Mapping)),
                    key=lambda c: _number(str(c.get("id", "")))) \
        if isinstance(citations, Sequence) else []
    if not usable:
        return ""
    lines = ["**Sources**", ""]
    for c in usable:
        title = readable_title(str(c.get("title") or "")) if c.get("title") else "Source"
        parts = [title + (f": {c['detail']}" if c.get("detail") else "")]
        provider = str(c.get("provider") or "")
        if provider and provider != "calculator" and provider not in title:
            parts.append(provider)
        url = str(c.get("url") or "")
        if url and url not in title:
            parts.append(url)
        lines.append(f"- [{c.get('id', '')}] " + " · ".join(parts))
    return "\n".join(lines)


def answer_with_sources(done: Done) -> str:
    """The answer as every terminal view shows it: its figures marked as the check found
    them, then the Sources list."""
    body = marked_answer(done)
    sources = sources_markdown(done.citations)
    return f"{body}\n\n{sources}" if sources else body


def describe_sources(ids: Iterable[str], cited: set[str], ledger: SourceLedger | None,
                     done: Done, answer: str, tables: Sequence[DataTable]) -> list[ReportSource]:
    """Each source of ``ids`` as the report lists it (see the module docstring)."""
    names = company_names(tables)
    out = []
    citations = {str(c.get("id")): c for c in done.citations if isinstance(c, dict)}
    for source_id in ids:
        source = ledger.get(source_id) if ledger is not None else None
        if source is None:
            citation = citations.get(source_id, {})
            out.append(ReportSource(source_id, readable_title(str(citation.get("title") or "")),
                                    str(citation.get("url") or ""),
                                    str(citation.get("tool") or ""), source_id in cited))
            continue
        out.append(describe(source, source_id in cited, ledger, answer, names))
    return out


def describe(source: Source, cited: bool, ledger: SourceLedger | None, answer: str = "",
             names: dict[str, str] | None = None) -> ReportSource:
    """One source in words, with its documents."""
    names = names or {}
    if source.kind == "calculation":
        return _calculation(source, cited, ledger, answer)
    traced = [t for t in source.tables if t.filings]
    if traced:
        references = statement_references(traced)
        url = next((r.url for r in references if r.url), document_url(source.urls))
        return ReportSource(source.id, _tables_title(source.tables), url, source.tool, cited,
                            provider=_provider(source), references=tuple(references))
    if source.documents:
        references = [document_reference(d, names) for d in source.documents]
        return ReportSource(source.id, document_title(source.documents[0], names),
                            source.documents[0].url, source.tool, cited,
                            provider=_provider(source), references=tuple(references))
    title = _tables_title(source.tables) if source.tables else _plain_title(source)
    return ReportSource(source.id, title, document_url(source.urls), source.tool, cited,
                        provider=_provider(source) if source.tables else "")


def company_names(tables: Iterable[DataTable]) -> dict[str, str]:
    """Ticker -> company name, from tables that know both (``AAPL`` -> ``Apple Inc.``)."""
    found: dict[str, str] = {}
    for table in tables:
        match = re.match(r"^[A-Za-z0-9_]+\[([A-Z0-9.\-]{1,10})\b", table.title)
        if match and table.entity and table.entity != match.group(1):
            found.setdefault(match.group(1), table.entity)
    return found


def document_url(urls: Sequence[str]) -> str:
    """The link a reader wants: a filing's document before an API's JSON."""
    for url in urls:
        path = url.split("?")[0]
        if "/Archives/edgar/data/" in path and not path.endswith((".json", "/")):
            return url
    return next((u for u in urls if not u.split("?")[0].endswith(".json")),
                urls[0] if urls else "")


# -- statement data ----------------------------------------------------------------------


def statement_references(tables: Sequence[DataTable]) -> list[Reference]:
    """The filings behind statement tables, newest filed first, each saying which periods
    it supplied (a filing that gave only some values of a period names them)."""
    whole: dict[str, list[str]] = {}
    partial: dict[str, list[str]] = {}
    filings: dict[str, Filing] = {}
    order: list[str] = []
    for table in tables:
        for filing in table.filings:
            filings.setdefault(filing.accession, filing)
        for row, label in enumerate(table.index):
            if label not in order:
                order.append(label)
            used = [c.sources[row].split() for c in table.columns
                    if c.sources and c.sources[row]]
            main = _most_common(used)
            for accession in {a for cell in used for a in cell}:
                bucket = whole if accession == main else partial
                if label not in bucket.setdefault(accession, []):
                    bucket[accession].append(label)
    references = []
    for accession in sorted(set(whole) | set(partial),
                            key=lambda a: (filings[a].filed if a in filings else "", a),
                            reverse=True):
        filing = filings.get(accession, Filing(accession))
        covers = periods_text(whole.get(accession, []), order)
        some = [p for p in partial.get(accession, []) if p not in whole.get(accession, [])]
        if some:
            covers += ("; " if covers else "") + f"some values of {periods_text(some, order)}"
        references.append(Reference(filing_text(filing), filing.url, _file_name(filing.url),
                                    covers))
    return references


def filing_text(filing: Filing) -> str:
    """``Form 10-K for FY2024 · filed 1 Nov 2024 · accession 0000320193-24-000123``."""
    form = f"Form {filing.form}" if filing.form else "Filing"
    if filing.period:
        form += f" for {period_label(filing.period)}"
    parts = [form]
    if filing.filed:
        parts.append(f"filed {date_text(filing.filed)}")
    parts.append(f"accession {filing.accession}")
    return " · ".join(parts)


def _tables_title(tables: Sequence[DataTable]) -> str:
    """``Apple Inc. — Income statement, annual, FY2021–FY2025; Cash flow statement, ...``;
    many tables of one kind (a table per segment) once, with their count."""
    parts: list[str] = []
    entity = ""
    bases = [table_title(t).split(" · ")[0] for t in tables]
    if len(tables) > 3 and len(set(bases)) == 1:
        span = _span(tables[0])
        return f"{bases[0]}{', ' + span if span else ''} ({len(tables)} tables)"
    for table in tables:
        title = table_title(table)
        span = _span(table)
        if span:
            title += f", {span}"
        if entity and title.startswith(f"{entity} — "):
            title = title[len(entity) + 3:]
        elif not entity and " — " in title:
            entity = title.split(" — ")[0]
        if title not in parts:
            parts.append(title)
    return "; ".join(parts)


def _span(table: DataTable) -> str:
    """The periods a table covers (``FY2021–FY2025``), or its dates (``2 Oct 2023 to 9 Oct
    2023``); '' when it has neither."""
    if table.index_name == "period":
        return period_span(table.index)
    if table.index_name == "date":
        dates = sorted(d for d in table.index if _ISO_DATE.match(d))
        if dates:
            first, last = date_text(dates[0]), date_text(dates[-1])
            return first if first == last else f"{first} to {last}"
    return ""


def _most_common(cells: list[list[str]]) -> str:
    counts: dict[str, int] = {}
    for cell in cells:
        for accession in cell:
            counts[accession] = counts.get(accession, 0) + 1
    return max(counts, key=lambda a: counts[a]) if counts else ""


# -- filing text -------------------------------------------------------------------------


def document_title(document: Document, names: dict[str, str]) -> str:
    """``Apple Inc. Form 10-K, fiscal year ended 28 Sep 2024: Item 7 · Management's ...``."""
    company = names.get(document.company, document.company)
    what = f"Form {document.form}" if document.form else "Filing"
    if document.period_end:
        ended = "fiscal year ended" if document.form.startswith(("10-K", "20-F")) else \
            "period ended"
        what += f", {ended} {date_text(document.period_end)}"
    title = f"{company} {what}" if company else what
    return f"{title}: {'; '.join(document.sections)}" if document.sections else title


def document_reference(document: Document, names: dict[str, str]) -> Reference:
    """The filing a text came from: form, filing date, accession number, its document."""
    parts = [f"Form {document.form}" if document.form else "Filing"]
    if document.filed:
        parts.append(f"filed {date_text(document.filed)}")
    if document.accession:
        parts.append(f"accession {document.accession}")
    return Reference(" · ".join(parts), document.url, document.name)


# -- calculations ------------------------------------------------------------------------


def _calculation(source: Source, cited: bool, ledger: SourceLedger | None,
                 answer: str) -> ReportSource:
    expression = " ".join(str(source.args.get("expression") or "").split())
    shown = _EXPRESSION_NUMBER.sub(lambda m: _grouped(m.group(0)), expression)
    shown = shown.replace("**", "^").replace("*", "×").replace("/", "÷")
    result = result_text(source.numbers)
    detail = f"{shown} = {result}" if shown and result else shown or result
    inputs = []
    for item, found in (_inputs(source, ledger) if ledger is not None else []):
        shown_value = number(item.value)
        if found is None:
            inputs.append(f"{shown_value}: not found in a source")
        else:
            source_id, what = found
            inputs.append(f"{shown_value}: {what} [{source_id}]" if what
                          else f"{shown_value}: [{source_id}]")
    measure = measured(answer, source.id)
    title = f"Calculation: {measure}" if measure else "Calculation"
    return ReportSource(source.id, title, "", source.tool, cited, provider="calculator",
                        detail=detail, inputs=tuple(inputs))


def _grouped(written: str) -> str:
    """``180683`` -> ``180,683`` (decimals and exponents as written)."""
    whole, dot, rest = written.replace("_", "").partition(".")
    if not whole.isdigit() or "e" in written.lower():
        return written
    return f"{int(whole):,}{dot}{rest}"


def result_text(numbers: Sequence[float]) -> str:
    """A calculation's result as a reader reads it (``46.21``, ``7,750``)."""
    if not numbers:
        return ""
    value = max(numbers, key=lambda n: len(repr(n)))
    size = abs(value)
    if size >= 1000:
        text = f"{size:,.0f}" if size.is_integer() else f"{size:,.2f}"
    elif size.is_integer():
        text = f"{int(size)}"
    else:
        text = f"{size:.4g}" if size < 1 else f"{size:,.2f}"
    return f"-{text}" if value < 0 else text


def measured(answer: str, source_id: str) -> str:
    """What the answer says a calculation measures: the metric it names just before
    citing it on the same line (``gross margin of 46.2% [S4]`` -> ``Gross margin``)."""
    at = next((c.start for c in find_citations(answer) if c.id == source_id), -1)
    if at < 0:
        return ""
    line = answer[answer.rfind("\n", 0, at) + 1:at]
    named = metrics.metrics_named(line)
    if not named:
        return ""
    _, end, metric = named[-1]
    between = line[end:].lower()
    if metric.statement != "ratio" and _CHANGE.search(between):
        return f"{metric.label} growth"
    return metric.label


@dataclass(frozen=True, slots=True)
class _Input:
    """A number an expression uses, with the rounding its written digits allow."""

    text: str
    value: float
    tolerance: float


def expression_inputs(expression: str) -> list[_Input]:
    """The numbers an expression uses (each once); constants (100, 1,000, 365) and small
    counts (``/ 2``, ``* 4``) left out."""
    found: dict[float, _Input] = {}
    for match in _EXPRESSION_NUMBER.finditer(expression):
        written = match.group(0).replace("_", "")
        try:
            value = float(written)
        except ValueError:
            continue
        if value in CONSTANTS or value in found or (value.is_integer() and value <= 12):
            continue  # a constant, or a count (halve, average over 4 quarters)
        decimals = len(written.split(".")[1]) if "." in written and "e" not in written.lower() \
            else 0
        found[value] = _Input(written, value, 0.5 * 10 ** -decimals)
    return list(found.values())


def _inputs(source: Source, ledger: SourceLedger) -> list[tuple[_Input, tuple[str, str] | None]]:
    """Each input of a calculation with (source id, what it is), or None when no source
    holds it."""
    expression = str(source.args.get("expression") or "")
    return [(item, _find(item, ledger, before=source.id))
            for item in expression_inputs(expression)]


def _find(item: _Input, ledger: SourceLedger, before: str) -> tuple[str, str] | None:
    """The source (and the table cell, when a table holds it) an input came from: table
    cells first, then any source's numbers; only sources older than the calculation."""
    limit = _number(before)
    earlier = [s for s in ledger.sources if _number(s.id) < limit and s.kind != "calculation"]
    for source in earlier:
        for table in source.tables:
            cell = _cell_of(item, table)
            if cell:
                return source.id, cell
    for source in earlier:
        for scale in _SCALES:
            low, high = _bounds(item, scale)
            if source.has_number(low, high):
                return source.id, ""
    return None


def _cell_of(item: _Input, table: DataTable) -> str:
    """``Revenue, FY2024`` when a cell of ``table`` holds the input's value."""
    for column in table.numeric_columns():
        for row, value in enumerate(column.values):
            if not isinstance(value, float):
                continue
            candidates = [abs(value)] + ([abs(value) * 100] if column.unit == "ratio" else [])
            for scale in _SCALES:
                low, high = _bounds(item, scale)
                if any(low <= c <= high for c in candidates):
                    label = split_period(table.index[row])[0] if table.index_name == "period" \
                        else table.index[row]
                    return f"{metrics.label(column.name)}, {period_label(label)}"
    return ""


def _bounds(item: _Input, scale: float) -> tuple[float, float]:
    tolerance = item.tolerance + abs(item.value) * 1e-9
    return ((abs(item.value) - tolerance) * scale, (abs(item.value) + tolerance) * scale)


# -- anything else -----------------------------------------------------------------------


def _plain_title(source: Source) -> str:
    """A web page's or file's title in words, never a tool's name."""
    title = source.title
    prefix = f"{source.tool}: "
    if title.startswith(prefix):
        rest = title[len(prefix):]
        what = {"web_search": "Web search", "read_file": "File", "web_fetch": "Web page",
                "calculator": "Calculation"}.get(source.tool, metrics.label(source.tool))
        return f"{what}: {rest}"
    return readable_title(title) if title and title != source.tool else \
        metrics.label(source.tool)


def _provider(source: Source) -> str:
    """Who supplied the data: ``SEC EDGAR (XBRL company facts)``."""
    labels = [t.source for t in source.tables if t.source]
    text = labels[0] if labels else (source.title.split(" · ")[-1] if " · " in source.title
                                     else "")
    return text


def _file_name(url: str) -> str:
    tail = url.rstrip("/").rsplit("/", 1)[-1] if url else ""
    return tail if "." in tail and not url.endswith("/") else ""


def _number(source_id: str) -> int:
    match = _ID.match(source_id)
    return int(match.group(1)) if match else 10**9
