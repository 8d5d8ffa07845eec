"""Earnings releases: 8-K Item 2.02 and its press release, Exhibit 99.1 (keyless).

A company publishes its quarter first in a press release furnished on Form 8-K under Item
2.02 ("Results of Operations and Financial Condition"), as Exhibit 99.1, weeks before the
10-Q. This module finds those 8-Ks (the submissions list names each filing's items), reads
the exhibit and gives:

- its text, tables as ``a | b | c`` rows (as for filing items);
- its **tables as figures**: each table's column periods ("Three Months Ended" / "March 3,
  2023"), its scale ("In millions, except per share data": amounts and share counts in
  millions, per-share values as shown), and every row whose label is a metric of the
  lexicon (``Total revenue`` -> revenue, ``Diluted net income per share`` -> diluted EPS),
  so "revenue was $4.66 billion" can be checked against the release's own 4,655;
- its **outlook**: the paragraphs under an Outlook / Guidance / Targets heading, and
  sentences elsewhere that state an expectation with a figure (the safe-harbour
  boilerplate is left out).
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from dexter import metrics
from dexter.data.base import NO_DATES, Capability, DataError, DataResult, DateFilter, NotFoundError
from dexter.data.filing_text import html_to_text
from dexter.data.fiscal import FiscalCalendar
from dexter.data.sec import (
    Company,
    Document,
    FilingDocuments,
    SecSource,
    normalize_accession,
)

TEXT_CAP = 60_000
FORMS = ("8-K", "8-K/A")
_DATE = re.compile(r"^(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d{1,2},?\s+\d{4}$",
                   re.IGNORECASE)
_DURATION = re.compile(r"(three|six|nine|twelve)\s+months|(fiscal\s+)?years?\s+ended|"
                       r"quarter\s+ended|(13|26|39|52|53)\s+weeks", re.IGNORECASE)
_SCALE = re.compile(r"in\s+(thousands|millions|billions)", re.IGNORECASE)
_SCALES = {"thousands": 1e3, "millions": 1e6, "billions": 1e9}
_HEADING = re.compile(r"^(business\s+)?(outlook|guidance|financial\s+targets|targets|"
                      r"forecast|financial\s+outlook|(fiscal|full[- ]year|quarterly)\s+.*"
                      r"(outlook|guidance|targets))\b", re.IGNORECASE)
_EXPECT = re.compile(r"\b(expects?|anticipates?|guidance|outlook|forecasts?|targets?|projects?)\b",
                     re.IGNORECASE)
_FIGURE = re.compile(r"\$\s?\d|\d(\.\d+)?\s?(%|percent|billion|million|basis points)",
                     re.IGNORECASE)
_BOILERPLATE = re.compile(r"forward-looking statements|safe harbor|private securities "
                          r"litigation reform act", re.IGNORECASE)
# A ratio's dollar counterpart: Apple's release calls gross profit "Gross margin".
_AMOUNT_OF_RATIO = {"gross_margin": "gross_profit", "operating_margin": "operating_income"}


def parse_number(cell: str) -> float | None:
    """``4,655`` -> 4655, ``(32)`` -> -32, ``—`` -> 0, ``2.71`` -> 2.71; None otherwise."""
    text = cell.strip().replace("$", "").replace("\u00a0", "").replace(" ", "")
    if text in {"—", "–", "-", "—%"}:
        return 0.0
    negative = text.startswith("(") and text.endswith(")")
    text = text.strip("()%")
    if not re.fullmatch(r"-?\d{1,3}(,\d{3})*(\.\d+)?|-?\d+(\.\d+)?", text):
        return None
    value = float(text.replace(",", ""))
    return -value if negative else value


def _date(text: str) -> str | None:
    cleaned = re.sub(r"\s+", " ", text.strip().rstrip(",")).replace("Sept.", "Sep")
    if not _DATE.match(cleaned):
        return None
    for fmt in ("%B %d, %Y", "%b %d, %Y", "%B %d %Y", "%b %d %Y", "%b. %d, %Y"):
        try:
            return dt.datetime.strptime(cleaned, fmt).date().isoformat()
        except ValueError:
            continue
    return None


def _cells(row: Any) -> list[str]:
    cells = [c.get_text(" ", strip=True) for c in row.find_all(["td", "th"])]
    return [c for c in cells if c and c not in {"$", ")", "%", "(", "$ (", "%)"}]


def _caption(table: Any) -> list[str]:
    texts: list[str] = []
    for text in table.find_all_previous(string=True, limit=60):
        value = " ".join(str(text).split())
        if value:
            texts.append(value)
        if len(texts) >= 3:
            break
    return texts[::-1]


def release_tables(html: str) -> list[dict[str, Any]]:
    """Every table of a press release that has period columns: its title, scale, column
    periods and rows (label, the metric field it names or None, one value per column, in
    units: scaled by the table's unit unless per share)."""
    from bs4 import BeautifulSoup  # on first use

    soup = BeautifulSoup(html, "html.parser")
    out = []
    for table in soup.find_all("table"):
        rows = [r for r in (_cells(tr) for tr in table.find_all("tr")) if r]
        parsed = _table(rows, _caption(table))
        if parsed is not None:
            out.append(parsed)
    return out


def _table(rows: list[list[str]], caption: list[str]) -> dict[str, Any] | None:
    dates: list[str] = []
    durations: list[str] = []
    body_start = 0
    for i, row in enumerate(rows[:6]):
        found = [d for d in (_date(c) for c in row) if d]
        if found and len(found) == len([c for c in row if not _DURATION.search(c)
                                        and not c.lower().startswith("(in")]):
            dates = found
            body_start = i + 1
            break
        durations.extend(c for c in row if _DURATION.search(c))
    if not dates:
        return None
    text = " ".join(caption) + " " + " ".join(" ".join(r) for r in rows[:body_start])
    scale_match = _SCALE.search(text)
    scale_word = scale_match.group(1).lower() if scale_match else ""
    scale = _SCALES.get(scale_word, 1.0)
    per_share_exempt = "except per share" in text.lower() or bool(scale_word)
    labels = _column_labels(dates, durations)
    title = next((c for c in caption if not c.lower().startswith("(in") and
                  not c.isdigit() and len(c) < 120), "")
    body = []
    section = ""
    for row in rows[body_start:]:
        label, values = row[0], [parse_number(c) for c in row[1:]]
        numbers = [v for v in values if v is not None]
        if not numbers:
            if len(row) == 1:
                section = label.rstrip(":")
            continue
        if len(numbers) != len(dates):
            continue
        field = metrics.field_for_label(label)
        known = metrics.metric(field) if field else None
        if known is not None and known.kind == "ratio" and "%" not in " ".join(row[1:]):
            field = _AMOUNT_OF_RATIO.get(known.field)
            known = metrics.metric(field) if field else None
        per_share = known.kind == "per_share" if known is not None else (
            "per share" in label.lower() and not label.lower().startswith("shares"))
        factor = 1.0 if (per_share and per_share_exempt) or "%" in " ".join(row[1:]) else scale
        body.append({"label": label, "section": section, "field": field,
                     "values": [_whole(v * factor) for v in numbers]})
    if not body:
        return None
    return {"title": title, "scale": scale_word or "units", "periods": labels,
            "dates": dates, "rows": body}


def _whole(value: float) -> int | float:
    rounded = round(value, 6)
    return int(rounded) if float(rounded).is_integer() else rounded


def _column_labels(dates: list[str], durations: list[str]) -> list[str]:
    """``Three Months Ended March 3, 2023`` per column: durations spread over the dates."""
    if not durations:
        return [f"as of {d}" for d in dates]
    per = max(1, len(dates) // len(durations))
    out = []
    for i, date in enumerate(dates):
        duration = durations[min(i // per, len(durations) - 1)]
        out.append(f"{duration} {date}")
    return out


def _period_kind(label: str) -> str | None:
    lowered = label.lower()
    if re.search(r"three months|quarter ended|13 weeks", lowered):
        return "quarterly"
    if re.search(r"twelve months|years? ended|52 weeks|53 weeks", lowered):
        return "annual"
    return None


def figures(tables: list[dict[str, Any]], calendar: FiscalCalendar | None) -> list[dict[str, Any]]:
    """One record per table and column of the rows that name a metric (the first table
    wins for a metric and period): ``report_period``, the column's label, its fiscal
    period when the company's calendar is known, then the fields."""
    records: dict[tuple[str, str], dict[str, Any]] = {}
    seen: set[tuple[str, str, str]] = set()
    for table in tables:
        for i, (date, label) in enumerate(zip(table["dates"], table["periods"], strict=True)):
            kind = _period_kind(label)
            key = (date, kind or "instant")
            for row in table["rows"]:
                field = row["field"]
                if not field or (date, kind or "", field) in seen:
                    continue
                seen.add((date, kind or "", field))
                record = records.get(key)
                if record is None:
                    record = {"report_period": date, "period_label": label}
                    if calendar is not None and kind is not None:
                        record["fiscal_period"] = calendar.label(date, annual=kind == "annual")
                        record["period"] = kind
                    records[key] = record
                record[field] = row["values"][i]
    return sorted(records.values(), key=lambda r: (r["report_period"], r.get("period", "")),
                  reverse=True)


def outlook(text: str) -> list[str]:
    """The release's outlook: the lines under an Outlook / Guidance / Targets heading (up
    to the next heading), and sentences elsewhere that state an expectation with a figure;
    forward-looking-statement boilerplate excluded."""
    lines = [line.strip() for line in text.splitlines()]
    found: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if _HEADING.match(line) and len(line) < 80 and not line.endswith("."):
            block = [line]
            j = i + 1
            while j < len(lines) and len("\n".join(block)) < 3_000:
                nxt = lines[j]
                if nxt and _is_heading(nxt) and not _HEADING.match(nxt) and len(block) > 1:
                    break
                if nxt and not _BOILERPLATE.search(nxt) and not re.fullmatch(r"\d{1,3}", nxt):
                    block.append(nxt)
                j += 1
            found.append("\n".join(block))
            i = j
            continue
        i += 1
    claimed = "\n".join(found)
    for line in lines:
        if not line or line in claimed or _BOILERPLATE.search(line):
            continue
        for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z“\"])", line):
            if _EXPECT.search(sentence) and _FIGURE.search(sentence) and len(sentence) < 600:
                found.append(sentence.strip())
    return list(dict.fromkeys(found))


def _is_heading(line: str) -> bool:
    """A short title line: no final period, most words capitalised."""
    if len(line) > 70 or line.endswith((".", ":", ";", ",")) or "|" in line:
        return False
    words = [w for w in re.findall(r"[A-Za-z][\w’'-]*", line)]
    if not words:
        return False
    capital = sum(1 for w in words if w[0].isupper() or w.lower() in {"and", "of", "the", "to",
                                                                      "for", "in", "on"})
    return capital == len(words)


def title_of(text: str) -> str:
    """The release's headline: the first line that reads like one."""
    for line in text.splitlines()[:40]:
        clean = line.strip()
        if 20 <= len(clean) <= 160 and re.search(r"(report|announce|result|quarter|fiscal|"
                                                 r"revenue|earnings)", clean, re.IGNORECASE):
            return clean
    return ""


def exhibit_documents(docs: FilingDocuments) -> list[Document]:
    """The filing's press-release exhibits (EX-99.x), 99.1 first."""
    typed = [d for d in docs.typed(*(f"EX-99.{n}" for n in range(1, 10)), "EX-99")]
    named = typed or [d for d in docs.documents
                      if re.search(r"ex-?99", d.name, re.IGNORECASE)
                      and d.name.lower().endswith((".htm", ".html", ".txt"))]

    def rank(doc: Document) -> tuple[int, str]:
        first = bool(re.search(r"99[._-]?0?1\b|991|99-1|99_1", doc.name + " " + doc.type))
        return (0 if first else 1, doc.name)

    return sorted(named, key=rank)


class EarningsReleaseSource(SecSource):
    """8-K Item 2.02 earnings releases (Exhibit 99.1): text, figures and outlook."""

    name = "sec_edgar_releases"
    label = "SEC EDGAR (8-K earnings releases)"
    capabilities = frozenset({Capability.EARNINGS_RELEASES})

    async def earnings_releases(
        self, ticker: str, *, limit: int = 1, accession: str | None = None,
        filters: DateFilter = NO_DATES, with_text: bool = True,
    ) -> DataResult:
        """The latest ``limit`` earnings releases (or the one 8-K ``accession``)."""
        notes: list[str] = []
        urls: list[str] = []
        if accession:
            company = await self.resolve_filer(ticker)
            filings = [{"accession_number": normalize_accession(accession),
                        "filing_type": "8-K", "filing_date": None}]
        else:
            company = await self.resolve(ticker)
            filings, got, more = await self._all_filings(
                company, set(FORMS), max(1, limit),
                keep=lambda r: "2.02" in str(r.get("items", "")).split(",")
                and filters.matches(str(r.get("filing_date") or "")),
                since=filters.gte or filters.gt)
            urls.extend(got)
            notes.extend(more)
            if not filings:
                raise NotFoundError(f"No 8-K with Item 2.02 (results of operations) for "
                                    f"{company.name} in SEC EDGAR"
                                    f"{'' if filters.is_empty() else ' in those dates'}.")
        fiscal_end = await self.fiscal_year_end(company)
        if fiscal_end is None and accession:
            fiscal_end = (await self.filing_facts(company, str(filings[0]["accession_number"]))
                          ).get("fiscal_year_end")
        fiscal = FiscalCalendar.parse(fiscal_end)
        releases = []
        for filing in filings[: max(1, limit)]:
            release = await self._release(company, filing)
            urls.extend(release.pop("urls"))
            if release.get("error"):
                if accession:
                    raise NotFoundError(release["error"])
                notes.append(release["error"])
                continue
            release["figures"] = figures(release["tables"], fiscal)
            if not with_text:
                release.pop("text", None)
            releases.append(release)
        if not releases:
            raise NotFoundError(" ".join(notes) or f"No earnings release of {company.name} "
                                                   f"could be read.")
        notes.append("Figures come from the release's own tables, scaled by their stated unit "
                     "(per-share values as shown); the release is unaudited and may differ "
                     "from the later 10-Q.")
        return DataResult(releases, self.label, tuple(dict.fromkeys(urls)), tuple(notes))

    async def _release(self, company: Company, filing: dict[str, Any]) -> dict[str, Any]:
        accession = filing["accession_number"]

        async def load() -> dict[str, Any]:
            docs = await self.documents(company, accession)
            exhibits = exhibit_documents(docs)
            if not exhibits:
                return {"urls": list(docs.urls),
                        "error": f"8-K {accession} has no Exhibit 99 press release."}
            html, url = await self.document_text(docs, exhibits[0])
            text = html_to_text(html)
            filed = docs.filed or filing.get("filing_date")
            if not filed:
                filed = (await self.filing_facts(company, str(accession))).get("filing_date")
            return {"ticker": company.ticker or company.name, "accession_number": accession,
                    "filing_date": filed, "report_date": filing.get("report_date"),
                    "items": filing.get("items"), "exhibit": exhibits[0].name,
                    "title": title_of(text), "text": text[:TEXT_CAP],
                    "text_truncated": len(text) > TEXT_CAP,
                    "outlook": outlook(text), "tables": release_tables(html),
                    "source_filing": {"form": filing.get("filing_type") or "8-K",
                                      "accession_number": accession, "filed": filed,
                                      "url": url},
                    "urls": [*docs.urls, url]}

        try:
            release = await self._parsed("edgar/releases", {"accession": accession,
                                                            "cik": company.cik}, load)
        except DataError as exc:
            return {"urls": [], "error": f"8-K {accession} could not be read: "
                                         f"{str(exc).rstrip('.')}."}
        return {**release, "urls": list(release.get("urls", []))}
