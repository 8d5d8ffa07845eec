"""The source of segment figures: which filings to read, reading one filing's XBRL, and the
records of several filings (see :mod:`dexter.data.segments` for the rules).

``xbrl_text`` (a filing's XBRL document) and ``fiscal_end_of`` (its cover page's fiscal
year end) are shared with ``EdgarSource.statements(accession=...)``.
"""

from __future__ import annotations

import re
from typing import Any

from dexter.data.base import Capability, DataError, DataResult, NotFoundError
from dexter.data.fiscal import FiscalCalendar
from dexter.data.sec import Company, FilingDocuments, SecSource, normalize_accession
from dexter.data.segments import (
    ANNUAL_FORMS,
    DEFAULT_METRICS,
    QUARTER,
    QUARTERLY_FORMS,
    YEAR,
    Slice,
    available_axes,
    build_records,
    days_of,
    metric_concepts,
    period_values,
    resolve_axes,
    slices,
)
from dexter.data.xbrl_facts import FilingFacts, is_inline, parse_filing, parse_labels


class SegmentsSource(SecSource):
    """Segment, geographic and product figures from 10-K / 10-Q XBRL (keyless)."""

    name = "sec_edgar_segments"
    label = "SEC EDGAR (filing XBRL)"
    capabilities = frozenset({Capability.SEGMENTS})

    async def segments(
        self, ticker: str, *, period: str = "annual", limit: int = 4, axis: str | None = None,
        member: str | None = None, metrics: tuple[str, ...] = (),
        accession: str | None = None,
    ) -> DataResult:
        """Records by axis member and fiscal period, newest first (see the module doc)."""
        if period not in ("annual", "quarterly"):
            period = "annual"
        company = await self.resolve_filer(ticker) if accession else await self.resolve(ticker)
        fields = [metric_concepts(m) for m in (metrics or DEFAULT_METRICS)]
        urls: list[str] = []
        notes: list[str] = []
        if accession:
            filings = [await self._filing_by_accession(company, normalize_accession(accession))]
            wanted = 1
        else:
            filings, wanted = await self._filings_for(company, period, limit, urls, notes)
        fiscal_end = await self.fiscal_year_end(company)
        found: list[Slice] = []
        all_labels: dict[str, str] = {}
        meta: dict[str, dict[str, Any]] = {}
        order: dict[str, int] = {}
        ends: list[str] = []
        axes_seen: list[str] = []
        for rank, filing in enumerate(filings):
            # a 10-K's comparatives are the years before it; a 10-Q's are a year back
            if len(meta) >= wanted or (period == "annual" and meta
                                       and _periods_found(found, period) >= limit):
                break
            try:
                parsed = await self._parsed_filing(company, filing, axis, fields)
            except NotFoundError as exc:
                if accession:
                    raise
                notes.append(f"{filing.get('filing_type')} {filing['accession_number']} could "
                             f"not be read: {str(exc).rstrip('.')}.")
                continue
            urls.extend(parsed["urls"])
            axes_seen.extend(parsed["axes"])
            if parsed.get("error"):
                notes.append(parsed["error"])
                continue
            accn = filing["accession_number"]
            order[accn] = rank
            meta[accn] = {"form": filing.get("filing_type"), "accession_number": accn,
                          "filed": filing.get("filing_date"), "url": parsed["document_url"]}
            all_labels.update(parsed["labels"])
            fiscal_end = fiscal_end or parsed.get("fiscal_year_end")
            ends.extend(parsed["annual_ends"])
            found.extend(Slice(**s) for s in parsed["slices"])
        if not found:
            if axes_seen and axis:
                resolve_axes(axis, axes_seen)  # raises with the filing's axes
            raise NotFoundError(
                f"No {axis or 'segment'} figures in the XBRL of "
                f"{company.name}'s {'filing ' + accession if accession else 'recent filings'}"
                f"{' (' + '; '.join(notes) + ')' if notes else ''}. Try another axis "
                f"(segment, geography, product) or metric.")
        calendar = FiscalCalendar.parse(fiscal_end) or FiscalCalendar.infer(ends)
        values = period_values(found, period, calendar, order)
        records, checks = build_records(values, ticker=company.ticker or company.name,
                                        period=period, labels=all_labels, filings=meta,
                                        member_filter=member, limit=max(1, limit))
        notes = [*checks, *notes,
                 f"From the XBRL of {len(meta)} filing(s); fiscal periods on {company.name}'s "
                 f"calendar ({calendar.describe()}). Values in US dollars."]
        return DataResult(records, self.label, tuple(dict.fromkeys(
            [m["url"] for m in meta.values()] + urls)), tuple(notes))

    async def _filings_for(self, company: Company, period: str, limit: int, urls: list[str],
                           notes: list[str]) -> tuple[list[dict[str, Any]], int]:
        """Candidate filings, newest first, and how many of them to read: a 10-K holds
        three years of segment figures (two when the oldest is dropped), a 10-Q one
        quarter (and the 10-K gives the fourth)."""
        forms = set(ANNUAL_FORMS) if period == "annual" else {*QUARTERLY_FORMS, *ANNUAL_FORMS}
        wanted = limit
        rows, got, more = await self._all_filings(company, forms, wanted + 2)
        urls.extend(got)
        notes.extend(more)
        if not rows:
            raise NotFoundError(f"{company.name} has no {'/'.join(sorted(forms))} filings in "
                                f"SEC EDGAR, so no segment figures.")
        return rows, wanted

    async def _filing_by_accession(self, company: Company, accession: str) -> dict[str, Any]:
        return {"accession_number": accession, "filing_type": "", "filing_date": None}

    async def _parsed_filing(self, company: Company, filing: dict[str, Any], axis: str | None,
                             fields: list[tuple[str, tuple[str, ...]]]) -> dict[str, Any]:
        accession = filing["accession_number"]
        key = {"accession": accession, "axis": axis or "", "fields": [f for f, _ in fields],
               "concepts": [list(c) for _, c in fields], "ticker": company.ticker}

        async def load() -> dict[str, Any]:
            return await self._read_filing(company, filing, axis, fields)

        parsed = await self._parsed("edgar/segments", key, load)
        if not filing.get("filing_type") and parsed.get("form"):
            filing["filing_type"] = parsed["form"]
        if not filing.get("filing_date") and parsed.get("filed"):
            filing["filing_date"] = parsed["filed"]
        return parsed

    async def _read_filing(self, company: Company, filing: dict[str, Any], axis: str | None,
                           fields: list[tuple[str, tuple[str, ...]]]) -> dict[str, Any]:
        accession = filing["accession_number"]
        try:
            text, document_url, docs = await xbrl_text(self, company, accession, filing)
        except NotFoundError as exc:
            if "no XBRL" not in str(exc):
                raise
            return {"urls": [], "axes": [], "slices": [], "labels": {}, "annual_ends": [],
                    "document_url": "", "error": str(exc)}
        urls: list[str] = list(docs.urls) if docs else []
        urls.append(document_url)
        facts = parse_filing(text)
        present = available_axes(facts)
        try:
            axes = resolve_axes(axis, present)
        except DataError as exc:
            return {"urls": urls, "axes": present, "slices": [], "labels": {},
                    "annual_ends": [], "document_url": document_url, "error": str(exc)}
        found = slices(facts, axes=axes, fields=fields, accession=accession)
        labels = await self._labels(company, accession, docs, {s.member for s in found
                                                               if s.member} | set(axes))
        annual_ends = [f.context.end for f in facts.facts if not f.dims
                       and (days_of(f.context.start, f.context.end) or 0) in YEAR]
        return {"urls": urls, "axes": present, "labels": labels,
                "slices": [_slice_dict(s) for s in found], "annual_ends": annual_ends,
                "document_url": document_url, "fiscal_year_end": fiscal_end_of(facts) or (
                    docs.header.get("fiscal_year_end") if docs else None),
                "form": facts.dei.get("DocumentType", "") or (docs.form if docs else ""),
                "filed": docs.filed if docs else None}

    async def _labels(self, company: Company, accession: str, docs: FilingDocuments | None,
                      wanted: set[str]) -> dict[str, str]:
        """The filing's labels of ``wanted`` concepts; {} when its label linkbase cannot be
        read (the members' names are used then). Only the folder's listing is asked for
        it: a full submission is not worth its size for labels."""
        try:
            docs = docs or await self.listing(company, accession)
            if docs is None:
                return {}
            lab = docs.named(r"_lab\.xml$")
            if not lab:
                return {}
            text, _ = await self.document_text(docs, lab[0])
            labels = parse_labels(text)
        except (DataError, ValueError):
            return {}
        return {k: v for k, v in labels.items() if k in wanted}


def _periods_found(found: list[Slice], period: str) -> int:
    """Distinct period ends among the values of the chosen duration."""
    wanted = YEAR if period == "annual" else QUARTER
    return len({s.end for s in found if (days_of(s.start, s.end) or 0) in wanted})


def _slice_dict(s: Slice) -> dict[str, Any]:
    return {"axis": s.axis, "member": s.member, "field": s.field, "concept": s.concept,
            "value": s.value, "start": s.start, "end": s.end, "accession": s.accession,
            "total_kind": s.total_kind}


def _xbrl_document(docs: FilingDocuments) -> Any:
    """The XBRL of a filing: the instance extracted from inline XBRL (``*_htm.xml``), an
    instance of its own, else the inline document."""
    for pattern in (r"_htm\.xml$", r"^(?!.*(_cal|_def|_lab|_pre|FilingSummary|primary_doc))"
                                   r"[\w-]+-\d{8}\.xml$", r"^[\w-]+-\d{8}\.htm$"):
        found = docs.named(pattern)
        if found:
            return found[0]
    return None


_MONTHS = {m: i for i, m in enumerate(("january", "february", "march", "april", "may", "june",
                                       "july", "august", "september", "october", "november",
                                       "december"), 1)}


async def xbrl_text(source: SecSource, company: Company, accession: str,
                    filing: dict[str, Any] | None = None) -> tuple[str, str, FilingDocuments | None]:
    """A filing's XBRL (inline document or instance), its URL, and its document list when
    one was read: the submissions list's primary document when it is inline XBRL, else the
    document the filing's listing names. ``NotFoundError`` when the filing has none."""
    primary = (filing or {}).get("primary_document")
    if primary and str(primary).lower().endswith((".htm", ".html")):
        url = str((filing or {})["url"])
        try:
            text = await source._text(url, what=f"{(filing or {}).get('filing_type')} "
                                                f"{accession}")
        except NotFoundError:
            text = ""  # the listing may still name an XBRL instance
        if is_inline(text):
            return text, url, None
    docs = await source.documents(company, accession)
    doc = _xbrl_document(docs)
    if doc is None:
        raise NotFoundError(f"Filing {accession} has no XBRL document (no inline XBRL, no "
                            f"instance): it may predate XBRL (2009-2011) or not be a 10-K / "
                            f"10-Q.")
    text, url = await source.document_text(docs, doc)
    return text, url, docs


def fiscal_end_of(facts: FilingFacts) -> str | None:
    """``0928`` from the cover page's fiscal year end (``--09-28`` or ``September 28``)."""
    if facts.fiscal_year_end:
        return facts.fiscal_year_end
    raw = facts.dei.get("CurrentFiscalYearEndDate", "").strip().lower()
    match = re.fullmatch(r"([a-z]+)\s+(\d{1,2})", raw)
    if match and match.group(1) in _MONTHS:
        return f"{_MONTHS[match.group(1)]:02d}{int(match.group(2)):02d}"
    return None
