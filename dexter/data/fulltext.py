"""EDGAR full-text search (keyless): which filings say a word or phrase.

``GET {fts_url}/search-index`` (efts.sec.gov/LATEST) searches the text of every document
filed since 2001: ``q`` (words; a phrase in double quotes), ``forms`` (comma-separated form
types), ``dateRange=custom`` with ``startdt``/``enddt`` (filing dates), ``ciks`` (a
filer, ten digits) and ``from`` (the offset; 100 hits a page). Each hit is one document
of one filing: ``_id`` is ``<accession>:<file name>``; ``_source`` gives the form, the
filing date, the filers (``display_names``: ``APPLE INC.  (AAPL)  (CIK 0000320193)``),
their CIKs, the period, the 8-K items and the document's type (``EX-99.1``). The total
stops counting at 10,000 (``relation: gte``).
"""

from __future__ import annotations

import re
from typing import Any

from dexter.data.base import Capability, DataError, DataResult
from dexter.data.cache import TTL_1H
from dexter.data.sec import SecSource, accession_path

PAGE = 100
_DISPLAY = re.compile(r"^(?P<name>.*?)\s*(\((?P<tickers>[^()]*)\))?\s*\(CIK (?P<cik>\d+)\)\s*$")


def filer_of(display: str) -> dict[str, Any]:
    """``APPLE INC.  (AAPL)  (CIK 0000320193)`` -> name, tickers, CIK."""
    match = _DISPLAY.match(display.strip())
    if not match:
        return {"name": display.strip(), "tickers": [], "cik": None}
    tickers = [t.strip() for t in (match.group("tickers") or "").split(",") if t.strip()]
    return {"name": " ".join(match.group("name").split()), "tickers": tickers,
            "cik": int(match.group("cik"))}


def hits(data: Any, archive_base: str) -> tuple[list[dict[str, Any]], int, str]:
    """The hits of a search reply as records (form, filer, date, link), the total and
    whether it is exact (``eq``) or a floor (``gte``)."""
    block = (data.get("hits") or {}) if isinstance(data, dict) else {}
    total = block.get("total") or {}
    out: list[dict[str, Any]] = []
    for hit in block.get("hits") or []:
        source = hit.get("_source") or {}
        accession, _, document = str(hit.get("_id", "")).partition(":")
        accession = str(source.get("adsh") or accession)
        filers = [filer_of(str(d)) for d in source.get("display_names") or []]
        ciks = [str(c) for c in source.get("ciks") or []]
        cik = int(ciks[0]) if ciks and ciks[0].isdigit() else (filers[0]["cik"] if filers
                                                               else None)
        url = (f"{archive_base}/Archives/edgar/data/{cik}/{accession_path(accession)}/"
               f"{document}") if cik and document else ""
        first = filers[0] if filers else {"name": "", "tickers": []}
        record = {
            "form": source.get("form") or (source.get("root_forms") or [""])[0],
            "filer": first["name"],
            "ticker": ", ".join(first["tickers"]) or None,
            "cik": f"{cik:010d}" if cik else None,
            "filing_date": source.get("file_date"),
            "period_ending": source.get("period_ending") or None,
            "document": document or None,
            "document_type": source.get("file_type") or None,
            "description": source.get("file_description") or None,
            "items": ", ".join(source.get("items") or []) or None,
            "other_filers": "; ".join(f["name"] for f in filers[1:]) or None,
            "accession_number": accession,
            "url": url,
        }
        out.append({k: v for k, v in record.items() if v is not None})
    value = total.get("value") if isinstance(total, dict) else None
    relation = str(total.get("relation", "eq")) if isinstance(total, dict) else "eq"
    return out, int(value) if isinstance(value, int) else len(out), relation


class FullTextSearchSource(SecSource):
    """EDGAR full-text search: query, forms, date range, filer; hits with links."""

    name = "sec_edgar_fts"
    label = "SEC EDGAR (full-text search)"
    capabilities = frozenset({Capability.FULL_TEXT_SEARCH})

    async def search_filings(
        self, query: str, *, forms: tuple[str, ...] = (), start_date: str | None = None,
        end_date: str | None = None, entity: str | None = None, limit: int = 20,
        offset: int = 0,
    ) -> DataResult:
        """Documents matching ``query``, best first (EDGAR's own ranking)."""
        text = query.strip()
        if not text:
            raise DataError("Give words to search for, e.g. \"supply chain\" tariff (a phrase "
                            "in double quotes).")
        params: dict[str, Any] = {"q": text}
        wanted = [f.strip().upper() for f in forms if f.strip()]
        if wanted:
            params["forms"] = ",".join(wanted)
        if start_date or end_date:
            params.update({"dateRange": "custom", "startdt": start_date or "2001-01-01",
                           "enddt": end_date or self._date().isoformat()})
        filer = None
        if entity:
            filer = await self.resolve_filer(entity)
            params["ciks"] = filer.cik10
        records: list[dict[str, Any]] = []
        urls: list[str] = []
        total, relation = 0, "eq"
        start = max(0, offset)
        while len(records) < limit:
            data, url = await self._get(f"{self.fts_url}/search-index", namespace="edgar/fts",
                                        ttl=TTL_1H, what="full-text search service at this address",
                                        params={**params, "from": start})
            urls.append(url)
            page, total, relation = hits(data, self.base_url)
            records.extend(page)
            start += len(page)
            if len(page) < PAGE or start >= total:
                break
        shown = records[:limit]
        about = f"{total:,}{'+' if relation == 'gte' else ''}"
        notes = [f"{about} documents match; {len(shown)} are listed (from {offset + 1}), best "
                 f"match first. Each hit is one document of a filing (an exhibit counts on "
                 f"its own)."]
        if filer is not None:
            notes.append(f"Only filings of {filer.title or filer.name} (CIK {filer.cik}).")
        return DataResult(shown, self.label, tuple(urls), tuple(notes))
