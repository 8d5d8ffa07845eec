"""Institutional holdings from Form 13F-HR (keyless, SEC EDGAR).

A manager with discretion over $100 million or more of 13(f) securities files Form 13F-HR
within 45 days of each calendar quarter: a cover page (``primary_doc.xml``: the manager,
the quarter, the report type, and on the summary page the number of rows and their total
value) and an information table (one ``infoTable`` per position: issuer, title of class,
CUSIP, value, shares or principal amount, put/call, investment discretion, other managers,
voting authority).

**Value scale.** Until the SEC's Form 13F amendments (Release No. 34-95148, June 23, 2022,
87 FR 38943), column 4 was the market value *in thousands of dollars*; the amended form
asks for it *rounded to the nearest dollar*, and every Form 13F filed on or after
**January 3, 2023** is on the amended form, an amendment of an earlier quarter included.
So the rule keys on the **filing date**, not the quarter: MetLife's report for 2021-12-31,
filed 2023-03-23, is in dollars; ACTIAM's for 2020-12-31, filed 2021-02-12, is in
thousands. Values here are always in dollars (``value_as_filed`` keeps the filed number,
``value_unit`` says which scale it was); the cover page's total is scaled the same way and
checked against the rows. Filers sometimes get the unit wrong: when the values per share
contradict the rule (most positions under $1 a share after scaling, or above $100,000),
a note says so.

A quarter's report is the original 13F-HR, replaced by a later 13F-HR/A that restates it
and extended by any 13F-HR/A that adds new holdings. The change between two quarters is
computed per position (CUSIP, class and put/call): new, added, reduced, sold out,
unchanged.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from dexter.data.base import NO_DATES, Capability, DataError, DataResult, DateFilter, NotFoundError
from dexter.data.sec import (
    Company,
    FilingDocuments,
    SecSource,
    header_date,
    normalize_accession,
)
from dexter.data.xml import XmlError, child, children, parse_xml, text_of

DOLLARS_FROM = dt.date(2023, 1, 3)
"""Form 13F reports filed on or after this date state values in dollars (Release No.
34-95148); earlier ones in thousands of dollars."""
FORMS = ("13F-HR", "13F-HR/A")


def value_multiplier(filing_date: str | None) -> int:
    """1 for a report filed on or after 2023-01-03 (dollars), else 1,000 (thousands)."""
    try:
        filed = dt.date.fromisoformat(str(filing_date)[:10])
    except ValueError:
        return 1  # unknown: every report filed today is in dollars
    return 1 if filed >= DOLLARS_FROM else 1000


def _int(text: str) -> int | None:
    cleaned = text.replace(",", "").strip()
    try:
        return int(float(cleaned))
    except ValueError:
        return None


def _mdy(text: str) -> str:
    """``03-31-2024`` -> ``2024-03-31`` (13F dates are month-day-year)."""
    match = re.fullmatch(r"(\d{2})-(\d{2})-(\d{4})", text.strip())
    return f"{match.group(3)}-{match.group(1)}-{match.group(2)}" if match else text.strip()


def parse_cover(text: str | bytes) -> dict[str, Any]:
    """The cover and summary pages of a 13F (``primary_doc.xml``)."""
    try:
        root = parse_xml(text)
    except XmlError as exc:
        raise DataError(f"The 13F cover page could not be read: {exc}.") from None
    form = child(root, "formData")
    cover = child(form, "coverPage")
    summary = child(form, "summaryPage")
    amendment = child(cover, "amendmentInfo")
    return {
        "manager": text_of(cover, "filingManager", "name"),
        "report_period": _mdy(text_of(cover, "reportCalendarOrQuarter")
                              or text_of(root, "headerData", "filerInfo", "periodOfReport")),
        "report_type": text_of(cover, "reportType"),
        "is_amendment": text_of(cover, "isAmendment").lower() == "true",
        "amendment_type": text_of(amendment, "amendmentType") if amendment is not None else "",
        "submission_type": text_of(root, "headerData", "submissionType"),
        "schema_version": text_of(root, "schemaVersion"),
        "table_entry_total": _int(text_of(summary, "tableEntryTotal")),
        "table_value_total": _int(text_of(summary, "tableValueTotal")),
        "signature_date": _mdy(text_of(form, "signatureBlock", "signatureDate")),
    }


def parse_information_table(text: str | bytes) -> list[dict[str, Any]]:
    """The rows of a 13F information table, values as filed (see :func:`holdings`)."""
    try:
        root = parse_xml(text)
    except XmlError as exc:
        raise DataError(f"The 13F information table could not be read: {exc}.") from None
    rows = []
    for node in children(root, "infoTable"):
        amount = child(node, "shrsOrPrnAmt")
        voting = child(node, "votingAuthority")
        rows.append({
            "issuer": text_of(node, "nameOfIssuer"),
            "title_of_class": text_of(node, "titleOfClass"),
            "cusip": text_of(node, "cusip").upper(),
            "value_as_filed": _int(text_of(node, "value")),
            "shares": _int(text_of(amount, "sshPrnamt")),
            "share_type": text_of(amount, "sshPrnamtType") or None,
            "put_call": text_of(node, "putCall") or None,
            "investment_discretion": text_of(node, "investmentDiscretion") or None,
            "other_managers": text_of(node, "otherManager") or None,
            "voting_sole": _int(text_of(voting, "Sole")),
            "voting_shared": _int(text_of(voting, "Shared")),
            "voting_none": _int(text_of(voting, "None")),
        })
    return rows


def holdings(rows: list[dict[str, Any]], filing_date: str | None) -> list[dict[str, Any]]:
    """Rows with ``value`` in dollars by the scaling rule, ``value_unit`` saying how it was
    filed, largest first."""
    multiplier = value_multiplier(filing_date)
    out = []
    for row in rows:
        filed = row.get("value_as_filed")
        value = filed * multiplier if isinstance(filed, int) else None
        out.append({**row, "value": value,
                    "value_unit": "thousands" if multiplier == 1000 else "dollars"})
    out.sort(key=lambda r: r.get("value") or 0, reverse=True)
    return out


def unit_doubt(rows: list[dict[str, Any]]) -> str | None:
    """A note when the values per share contradict the scaling rule (a filer's mistake)."""
    prices = [r["value"] / r["shares"] for r in rows
              if r.get("share_type") == "SH" and not r.get("put_call")
              and isinstance(r.get("value"), int) and isinstance(r.get("shares"), int)
              and r["shares"] > 0 and r["value"] > 0]
    if len(prices) < 3:
        return None
    low = sum(1 for p in prices if p < 1) / len(prices)
    high = sum(1 for p in prices if p > 100_000) / len(prices)
    if low > 0.5:
        return (f"{low:.0%} of the positions come to under $1 a share after scaling: the "
                f"filer may have reported dollars where the form asked for thousands.")
    if high > 0.5:
        return (f"{high:.0%} of the positions come to over $100,000 a share after scaling: "
                f"the filer may have reported thousands where the form asked for dollars.")
    return None


def position_key(row: dict[str, Any]) -> tuple[str, str, str]:
    """What makes a position: CUSIP, title of class, put/call."""
    return (str(row.get("cusip", "")), str(row.get("title_of_class", "")).upper(),
            str(row.get("put_call") or ""))


def merge_positions(rows: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, Any]]:
    """Rows of one report added up per position (a manager lists a position once per
    other-manager arrangement)."""
    merged: dict[tuple[str, str, str], dict[str, Any]] = {}
    for row in rows:
        key = position_key(row)
        if key not in merged:
            merged[key] = {"issuer": row.get("issuer"), "cusip": row.get("cusip"),
                           "title_of_class": row.get("title_of_class"),
                           "put_call": row.get("put_call"), "shares": 0, "value": 0}
        merged[key]["shares"] += row.get("shares") or 0
        merged[key]["value"] += row.get("value") or 0
    return merged


def compare(previous: list[dict[str, Any]], current: list[dict[str, Any]], *,
            previous_period: str, current_period: str) -> list[dict[str, Any]]:
    """The change of every position between two quarters, largest value change first."""
    before, after = merge_positions(previous), merge_positions(current)
    out = []
    for key in dict.fromkeys([*after, *before]):
        old, new = before.get(key), after.get(key)
        base = new or old or {}
        shares_before = old["shares"] if old else 0
        shares_after = new["shares"] if new else 0
        if old is None:
            status = "new"
        elif new is None:
            status = "sold out"
        elif shares_after > shares_before:
            status = "added"
        elif shares_after < shares_before:
            status = "reduced"
        else:
            status = "unchanged"
        value_before = old["value"] if old else 0
        value_after = new["value"] if new else 0
        out.append({
            "issuer": base.get("issuer"), "cusip": base.get("cusip"),
            "title_of_class": base.get("title_of_class"), "put_call": base.get("put_call"),
            "status": status, "previous_period": previous_period,
            "report_period": current_period,
            "shares_before": shares_before, "shares_after": shares_after,
            "shares_change": shares_after - shares_before,
            "shares_change_pct": round((shares_after - shares_before) / shares_before, 4)
            if shares_before else None,
            "value_before": value_before, "value_after": value_after,
            "value_change": value_after - value_before,
        })
    out.sort(key=lambda r: abs(float(r["value_change"] or 0)), reverse=True)
    return out


def quarter_end(text: str) -> str:
    """``2024Q1``, ``2024-Q1``, ``Q1 2024`` or a date in the quarter -> its end
    (``2024-03-31``)."""
    raw = text.strip().upper().replace(" ", "")
    match = re.fullmatch(r"(\d{4})-?Q([1-4])|Q([1-4])-?(\d{4})", raw)
    if match:
        year = int(match.group(1) or match.group(4))
        quarter = int(match.group(2) or match.group(3))
    else:
        try:
            date = dt.date.fromisoformat(text.strip()[:10])
        except ValueError:
            raise DataError(f"'{text}' is not a quarter; write 2024Q1, Q1 2024 or a date in "
                            f"the quarter (2024-03-31).") from None
        year, quarter = date.year, (date.month - 1) // 3 + 1
    month = quarter * 3
    day = 31 if month in (3, 12) else 30
    return f"{year}-{month:02d}-{day:02d}"


def previous_quarter(end: str) -> str:
    """The quarter end before ``end``."""
    date = dt.date.fromisoformat(end)
    return quarter_end(f"{date.year - (date.month == 3)}Q{(date.month // 3 - 2) % 4 + 1}")


class HoldingsSource(SecSource):
    """A manager's 13F-HR holdings by quarter, and their change (keyless)."""

    name = "sec_edgar_13f"
    label = "SEC EDGAR (Form 13F)"
    capabilities = frozenset({Capability.INSTITUTIONAL})

    async def institutional_holdings(
        self, *, ticker: str | None = None, filer_name: str | None = None,
        filer_cik: str | None = None, limit: int = 10, filters: DateFilter = NO_DATES,
        quarter: str | None = None, compare_to: str | None = None,
        accession: str | None = None,
    ) -> DataResult:
        """A manager's holdings for one quarter (the latest when none is given), largest
        first, at most ``limit`` rows (0: all); with ``compare_to`` (a quarter, or
        ``previous``) the change of each position since then instead."""
        if ticker and not (filer_name or filer_cik):
            raise DataError(
                f"SEC EDGAR's 13F reports are per manager: it cannot list who holds "
                f"{ticker.upper()} without reading every manager's report. Name a manager "
                f"(e.g. Berkshire Hathaway, or a CIK), or set FINANCIAL_DATASETS_API_KEY "
                f"for holders by company.")
        manager = await self.manager(filer_cik or filer_name or "")
        wanted = quarter_end(quarter) if quarter else (filters.eq or None)
        if accession:
            report = await self.read_report(manager, normalize_accession(accession))
        else:
            report = await self._quarter_report(manager, wanted)
        rows = report["holdings"]
        notes = list(report["notes"])
        urls = list(report["urls"])
        data: list[dict[str, Any]]
        if compare_to:
            earlier = previous_quarter(report["report_period"]) \
                if compare_to.strip().lower() in ("previous", "prior", "last") else \
                quarter_end(compare_to)
            before = await self._quarter_report(manager, earlier)
            urls.extend(before["urls"])
            notes.extend(before["notes"])
            data = compare(before["holdings"], rows, previous_period=before["report_period"],
                           current_period=report["report_period"])
            moved = [r for r in data if r["status"] != "unchanged"]
            notes.insert(0, f"{manager.title or manager.name}: {len(moved)} of {len(data)} "
                            f"positions changed between {before['report_period']} and "
                            f"{report['report_period']}.")
        else:
            data = rows
        shown = data[:limit] if limit and limit > 0 else data
        if len(shown) < len(data):
            notes.append(f"The {len(shown)} largest of {len(data)} rows are listed "
                         f"(ask for more with a higher limit).")
        source = report["source_filing"]
        for row in shown:
            row.setdefault("manager", report["manager"])
            row.setdefault("report_period", report["report_period"])
            row["source_filing"] = source
        return DataResult(shown, self.label, tuple(dict.fromkeys(urls)), tuple(notes))

    async def manager(self, who: str) -> Company:
        """A manager by CIK, ticker (a listed company) or name (SEC's company list, then
        EDGAR full-text search of 13F filings)."""
        raw = who.strip()
        if not raw:
            raise DataError("Name the manager (e.g. Berkshire Hathaway) or give its CIK.")
        digits = raw.upper().removeprefix("CIK").strip()
        if digits.isdigit():
            return await self.resolve_filer(digits)
        if re.fullmatch(r"[A-Za-z.\-]{1,6}", raw):
            try:
                return await self.resolve(raw)
            except NotFoundError:
                pass
        found = await self.search_companies(raw, limit=5)
        if found:
            return found[0]
        hit = await self._manager_by_search(raw)
        if hit is not None:
            return hit
        raise NotFoundError(f"No 13F manager named '{raw}' in SEC EDGAR. Give its CIK (find it "
                            f"with dexter data search \"{raw}\" --form 13F-HR).")

    async def _manager_by_search(self, name: str) -> Company | None:
        params = {"q": f'"{name}"', "forms": "13F-HR", "from": 0}
        try:
            data, _ = await self._get(f"{self.fts_url}/search-index", namespace="edgar/fts",
                                      ttl=3600.0, what="EDGAR full-text search",
                                      params=params)
        except DataError:
            return None
        hits = ((data.get("hits") or {}).get("hits") or []) if isinstance(data, dict) else []
        for hit in hits:
            source = hit.get("_source") or {}
            ciks, names = source.get("ciks") or [], source.get("display_names") or []
            if ciks:
                title = re.sub(r"\s*\(CIK \d+\)\s*$", "", str(names[0])) if names else ""
                return Company(int(ciks[0]), "", title)
        return None

    async def _quarter_report(self, manager: Company, quarter: str | None) -> dict[str, Any]:
        """The report of a quarter (the latest when None): the original 13F-HR, a later
        restatement instead, plus the holdings any new-holdings amendment adds."""
        if not manager.title:  # a manager known by its CIK alone: its name from the feed
            subs, _ = await self._submissions(manager)
            manager = Company(manager.cik, manager.ticker, str(subs.get("name") or ""))
        # the latest quarter is among the newest filings; an older one may need older pages
        rows, urls, notes = await self._all_filings(
            manager, set(FORMS), 200 if quarter else 8,
            until=(lambda r: str(r.get("report_date", "")) < quarter) if quarter else None)
        if not rows:
            raise NotFoundError(f"{manager.title or manager.name} (CIK {manager.cik}) has no "
                                f"13F-HR filings in SEC EDGAR.")
        period = quarter or max(str(r.get("report_date") or "") for r in rows)
        chosen = [r for r in rows if str(r.get("report_date") or "") == period]
        if not chosen:
            have = sorted({str(r.get("report_date")) for r in rows}, reverse=True)[:8]
            raise NotFoundError(f"No 13F-HR of {manager.title or manager.name} for the quarter "
                                f"ending {period}. Quarters filed: {', '.join(have)}.")
        chosen.sort(key=lambda r: (str(r.get("filing_date")), r["accession_number"]))
        reports = [await self.read_report(manager, r["accession_number"], r) for r in chosen]
        base = reports[0]
        extra: list[dict[str, Any]] = []
        for later in reports[1:]:
            kind = later["amendment_type"].upper()
            if "RESTATEMENT" in kind:
                base, extra = later, []
            elif "NEW HOLDINGS" in kind:
                extra.extend(later["holdings"])
        merged = dict(base)
        merged["holdings"] = sorted([*base["holdings"], *extra],
                                    key=lambda r: r.get("value") or 0, reverse=True)
        merged["urls"] = [*urls, *(u for r in reports for u in r["urls"])]
        merged["notes"] = [*notes, *base["notes"]]
        if len(reports) > 1:
            merged["notes"].append(f"{len(reports) - 1} amendment(s) of this quarter were "
                                   f"applied (restatements replace, new holdings add).")
        return merged

    async def read_report(self, manager: Company, accession: str,
                          listed: dict[str, Any] | None = None) -> dict[str, Any]:
        """One 13F filing: cover, holdings in dollars, the check of the cover's total."""
        async def load() -> dict[str, Any]:
            docs = await self.full_submission(manager, accession)
            return await self._parse_report(docs, listed)

        report = await self._parsed("edgar/13f", {"accession": accession, "cik": manager.cik},
                                    load)
        return {**report, "holdings": [dict(r) for r in report["holdings"]]}

    async def _parse_report(self, docs: FilingDocuments,
                            listed: dict[str, Any] | None) -> dict[str, Any]:
        cover_doc = next((d for d in docs.documents if d.type.upper().startswith("13F")), None)
        table_doc = next((d for d in docs.documents
                          if d.type.upper() == "INFORMATION TABLE"), None)
        if cover_doc is None or cover_doc.text is None:
            raise NotFoundError("The filing is not a Form 13F (no 13F cover page in it).")
        cover = parse_cover(cover_doc.text)
        filed = header_date(docs.header, "FILED AS OF DATE") or (listed or {}).get("filing_date")
        rows = parse_information_table(table_doc.text) if table_doc and table_doc.text else []
        held = holdings(rows, filed)
        multiplier = value_multiplier(filed)
        notes = []
        total_filed = cover.get("table_value_total")
        total = sum(r["value"] or 0 for r in held)
        if isinstance(total_filed, int):
            stated = total_filed * multiplier
            if stated == total:
                notes.append(f"The {len(held)} rows add up to the cover page's total, "
                             f"${total:,} (filed in {'thousands' if multiplier == 1000 else 'dollars'}"
                             f": {total_filed:,}).")
            else:
                notes.append(f"The rows add up to ${total:,}; the cover page states "
                             f"${stated:,} (filed as {total_filed:,}).")
        if cover.get("table_entry_total") not in (None, len(held)):
            notes.append(f"The cover page counts {cover['table_entry_total']} rows; "
                         f"{len(held)} were read.")
        doubt = unit_doubt(held)
        if doubt:
            notes.append(doubt)
        notes.append("Values in US dollars: 13F reports filed before 2023-01-03 state them "
                     "in thousands and are scaled here; later ones state dollars (SEC Release "
                     "No. 34-95148).")
        form = cover.get("submission_type") or docs.header.get("CONFORMED SUBMISSION TYPE", "")
        url = docs.url(table_doc.name) if table_doc else docs.urls[0]
        return {
            "manager": cover.get("manager"), "report_period": cover.get("report_period"),
            "amendment_type": cover.get("amendment_type") or "",
            "holdings": held, "notes": notes, "urls": list(docs.urls),
            "total_value": total, "cover_total_value": (total_filed or 0) * multiplier,
            "source_filing": {"form": form, "accession_number": docs.header.get(
                "ACCESSION NUMBER", (listed or {}).get("accession_number", "")),
                "filed": filed, "url": url},
        }
