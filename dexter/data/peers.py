"""Industry peers (keyless): the companies that share a company's SIC code, each with one
reported figure from SEC's XBRL frames.

- The company's SIC code (Standard Industrial Classification, four digits) is in its
  submissions feed (``sic``, ``sicDescription``).
- SEC's company browser lists every registrant with a code:
  ``{base_url}/cgi-bin/browse-edgar?action=getcompany&SIC=3571&owner=include&count=100``
  (an HTML table of CIK, name and state; 100 a page, ``start`` to page on).
- A frame (``/api/xbrl/frames/us-gaap/{concept}/USD/CY2024.json``) holds one concept for
  every company in one calendar period, each with the accession number of the filing it
  came from; the peers' rows are picked from it, the largest first.

Limits: SIC codes are coarse and self-assigned (Apple is 3571, Electronic Computers, with
Dell and HP but not Microsoft); the frame is a calendar period (a company with a
September year end is in CY2024 with its fiscal 2024 year); a peer that does not tag the
concept is listed without a value.
"""

from __future__ import annotations

import re
from typing import Any

from dexter.data.base import Capability, DataError, DataResult, NotFoundError
from dexter.data.cache import TTL_24H
from dexter.data.edgar import DERIVED_SCREEN_FIELDS, SCREEN_FIELDS
from dexter.data.fetching import CachePolicy
from dexter.data.sec import FrameValue, SecSource

PAGE = 100
MAX_PAGES = 5
_ROW = re.compile(r"<tr[^>]*>(.*?)</tr>", re.DOTALL | re.IGNORECASE)
_CELL = re.compile(r"<td[^>]*>(.*?)</td>", re.DOTALL | re.IGNORECASE)


def _text(cell: str) -> str:
    first = re.split(r"<br\s*/?>", cell, maxsplit=1, flags=re.IGNORECASE)[0]
    return " ".join(re.sub(r"<[^>]+>|&nbsp;", " ", first).replace("&amp;", "&").split())


def parse_company_list(html: str) -> list[dict[str, Any]]:
    """The rows of SEC's company browser: CIK, name and state or country."""
    out = []
    for row in _ROW.findall(html):
        cells = [_text(c) for c in _CELL.findall(row)]
        if len(cells) >= 2 and re.fullmatch(r"\d{1,10}", cells[0]):
            out.append({"cik": int(cells[0]), "name": cells[1],
                        "state": cells[2] if len(cells) > 2 else ""})
    return out


class PeersSource(SecSource):
    """Companies of one SIC code and a frame's figure for each (keyless)."""

    name = "sec_edgar_peers"
    label = "SEC EDGAR (SIC peers, XBRL frames)"
    capabilities = frozenset({Capability.PEERS})

    async def peers(
        self, ticker: str, *, metric: str = "revenue", period: str | None = None,
        limit: int = 10, sic: str | None = None,
    ) -> DataResult:
        """The company and its SIC peers with ``metric`` for ``period`` (a calendar year
        ``CY2024`` or quarter ``CY2024Q3``; default the last complete year), largest
        first; ``limit`` peers besides the company."""
        company = await self.resolve(ticker)
        subs, subs_url = await self._submissions(company)
        code = (sic or str(subs.get("sic") or "")).strip()
        if not code.isdigit():
            raise NotFoundError(f"SEC EDGAR names no SIC code for {company.ticker}; give one "
                                f"(e.g. --sic 3571).")
        label = str(subs.get("sicDescription") or "") if not sic else ""
        field = metric.strip().lower()
        if field not in SCREEN_FIELDS and field not in DERIVED_SCREEN_FIELDS:
            known = ", ".join(sorted({*SCREEN_FIELDS, *DERIVED_SCREEN_FIELDS}))
            raise DataError(f"Peers can be compared on {known}; not on '{metric}'.")
        members, list_urls = await self._sic_members(code)
        members.setdefault(company.cik, {"cik": company.cik, "name": company.title})
        frame_period = (period or f"CY{self._date().year - 1}").upper()
        if not re.fullmatch(r"CY\d{4}(Q[1-4])?I?", frame_period):
            raise DataError(f"Period '{period}' is not valid; use CY2024 or CY2024Q3.")
        values, frame_urls = await self._values(field, frame_period)
        tickers = await self._tickers()
        rows = []
        for cik, member in members.items():
            value = values.get(cik)
            row: dict[str, Any] = {
                "ticker": tickers.get(cik), "name": value["name"] if value else member["name"],
                "cik": f"{cik:010d}", "sic": code, "is_subject": cik == company.cik,
                "period": frame_period, field: value["value"] if value else None,
            }
            if value:
                row["period_end"] = value["end"]
                if value.get("accession"):
                    row["source_filing"] = {"accession_number": value["accession"],
                                            "url": self.filing_index_url(cik, value["accession"])}
            rows.append(row)
        reported = [r for r in rows if r[field] is not None]
        reported.sort(key=lambda r: r[field], reverse=True)
        for rank, row in enumerate(reported, 1):
            row["rank"] = rank
        shown = [r for r in reported if not r["is_subject"]][:max(1, limit)]
        subject = next((r for r in rows if r["is_subject"]), None)
        if subject is not None:
            shown = sorted([*shown, subject], key=lambda r: (r.get(field) is None,
                                                             -(r.get(field) or 0)))
        notes = [f"SIC {code}{' ' + label if label else ''}: {len(members)} companies in SEC's "
                 f"list, {len(reported)} reported {field.replace('_', ' ')} for {frame_period} "
                 f"in the XBRL frame; the {len(shown)} listed include {company.ticker}"
                 f"{' (rank ' + str(subject['rank']) + ')' if subject and subject.get('rank') else ''}.",
                 "SIC codes are coarse and chosen by the companies; frames are calendar periods "
                 "(a company's fiscal year falls in the calendar year it ends in)."]
        return DataResult(shown, self.label, (subs_url, *list_urls, *frame_urls), tuple(notes))

    async def _sic_members(self, code: str) -> tuple[dict[int, dict[str, Any]], list[str]]:
        members: dict[int, dict[str, Any]] = {}
        urls: list[str] = []
        for page in range(MAX_PAGES):
            params = {"action": "getcompany", "SIC": code, "owner": "include",
                      "count": PAGE, "start": page * PAGE}
            data, url = await self._fetch(
                f"{self.base_url}/cgi-bin/browse-edgar", namespace="edgar/sic",
                policy=CachePolicy(ttl=TTL_24H), what=f"the companies of SIC {code}",
                params=params, as_json=False)
            urls.append(url)
            rows = parse_company_list(str(data))
            for row in rows:
                members.setdefault(row["cik"], row)
            if len(rows) < PAGE:
                break
        return members, urls

    async def _values(self, field: str, period: str) -> tuple[dict[int, dict[str, Any]], list[str]]:
        needed = DERIVED_SCREEN_FIELDS.get(field, (field,))
        columns: dict[str, dict[int, FrameValue]] = {}
        urls: list[str] = []
        for name in needed:
            spec = SCREEN_FIELDS[name]
            columns[name], got = await self.frame_values(spec.concepts, spec.unit, spec.instant,
                                                         period)
            urls.extend(got)

        def row(v: FrameValue, value: float) -> dict[str, Any]:
            return {"value": _whole(value), "end": v.end, "name": v.name,
                    "accession": v.accession}

        if field in SCREEN_FIELDS:
            return {cik: row(v, v.value) for cik, v in columns[field].items()}, urls
        num, den = DERIVED_SCREEN_FIELDS[field]
        out = {}
        for cik, top in columns[num].items():
            bottom = columns[den].get(cik)
            if bottom is not None and bottom.value:
                out[cik] = row(top, round(top.value / bottom.value, 4))
        return out, urls

    async def _tickers(self) -> dict[int, str]:
        try:
            companies, _ = await self._ticker_table()
        except DataError:
            return {}
        out: dict[int, str] = {}
        for c in companies:
            out.setdefault(c.cik, c.ticker)
        return out


def _whole(value: float) -> int | float:
    return int(value) if value.is_integer() else value


