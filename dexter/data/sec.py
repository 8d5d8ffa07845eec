"""What every SEC EDGAR source shares: the hosts, the fair-access rules, companies, filing
lists and the documents of one filing.

SEC's fair-access rules bind every source here: each request carries a User-Agent that
names the client and a contact (``SEC_EDGAR_USER_AGENT``), and the whole process stays at
or under 10 requests a second across all SEC hosts (the shared ``SEC_RATE_LIMITER``).

Hosts (settings, so tests and mirrors can move them): ``base_url`` (www.sec.gov: the ticker
list, the archives, company browsing), ``data_url`` (data.sec.gov: submissions, company
facts, frames) and ``fts_url`` (efts.sec.gov/LATEST: full-text search).

A filing is read either from the company's submissions list, or directly by accession
number (``documents``): the folder's ``index.json`` names its files; when the folder
cannot be listed, the full submission (``<accession>.txt``, every document in one SGML
file) is read instead.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from dexter.data.base import DataError, NotFoundError
from dexter.data.cache import NEVER_EXPIRES, TTL_1H, TTL_24H
from dexter.data.fetching import CachePolicy
from dexter.data.http import ServiceInfo
from dexter.data.http_source import HttpSource, SourceConnection
from dexter.data.ratelimit import SEC_RATE_LIMITER

SERVICE = ServiceInfo(
    name="SEC EDGAR",
    forbidden_hint=(
        "SEC blocks clients without a User-Agent that names them and gives a contact "
        "e-mail, and clients above 10 requests a second. Set SEC_EDGAR_USER_AGENT "
        "(e.g. 'Jane Doe jane@example.com') or tools.sec_user_agent in the config file."
    ),
)
DEFAULT_FTS_URL = "https://efts.sec.gov/LATEST"
PARSED_VERSION = 1
"""Bump to drop every cached parse (segments, Form 4, 13F, releases) after a parser fix."""


@dataclass(frozen=True, slots=True)
class Company:
    """A resolved company (or filer: a fund manager, a person)."""

    cik: int
    ticker: str
    title: str

    @property
    def cik10(self) -> str:
        """The CIK zero-padded to 10 digits, as SEC URLs need it."""
        return f"{self.cik:010d}"

    @property
    def name(self) -> str:
        """The ticker, else the title, else ``CIK 1045810``."""
        return self.ticker or self.title or f"CIK {self.cik}"


@dataclass(frozen=True, slots=True)
class FrameValue:
    """One company's value in an XBRL frame, and the filing the frame took it from."""

    value: float
    name: str
    end: str
    accession: str


@dataclass(frozen=True, slots=True)
class Document:
    """One document of a filing: its file name, SEC document type (``EX-99.1``, ``4``,
    ``INFORMATION TABLE``; '' when the listing does not say) and, from a full submission,
    its text."""

    name: str
    type: str = ""
    description: str = ""
    text: str | None = None


@dataclass(frozen=True, slots=True)
class FilingDocuments:
    """The documents of one filing, where its folder is, and what the SGML header said."""

    folder: str
    documents: tuple[Document, ...]
    urls: tuple[str, ...]
    header: dict[str, str] = field(default_factory=dict)

    def url(self, name: str) -> str:
        """The URL of one of its documents."""
        return self.folder + name

    @property
    def filed(self) -> str | None:
        """The filing date, when the full submission's header or the index page gave it."""
        return header_date(self.header, "FILED AS OF DATE") or self.header.get("filing_date")

    @property
    def form(self) -> str:
        """The form type, when the header or the index page gave it ('' otherwise)."""
        return self.header.get("CONFORMED SUBMISSION TYPE") or self.header.get("form", "")

    def named(self, pattern: str) -> list[Document]:
        """Documents whose name matches the regular expression (case-insensitive)."""
        rx = re.compile(pattern, re.IGNORECASE)
        return [d for d in self.documents if rx.search(d.name)]

    def typed(self, *types: str) -> list[Document]:
        """Documents of these SEC types (upper case, exact)."""
        wanted = {t.upper() for t in types}
        return [d for d in self.documents if d.type.upper() in wanted]


def normalize_ticker(ticker: str) -> str:
    """Upper-case; SEC writes class shares with a dash (``BRK.B`` -> ``BRK-B``)."""
    cleaned = ticker.strip().upper().replace(".", "-").replace("/", "-")
    if not cleaned:
        raise DataError("A ticker is required (e.g. AAPL). Give the company's stock symbol.")
    return cleaned


def accession_path(accession: str) -> str:
    """``0000320193-24-000123`` -> ``000032019324000123`` (the archive folder name)."""
    return accession.replace("-", "")


_ACCESSION = re.compile(r"^\d{10}-\d{2}-\d{6}$")


def normalize_accession(accession: str) -> str:
    """An accession number in SEC's dashed form; ``DataError`` when it is not one."""
    raw = accession.strip()
    if re.fullmatch(r"\d{18}", raw):
        raw = f"{raw[:10]}-{raw[10:12]}-{raw[12:]}"
    if not _ACCESSION.fullmatch(raw):
        raise DataError(f"'{accession.strip()}' is not an SEC accession number; it looks "
                        f"like 0000320193-24-000123 (10 digits, 2, 6).")
    return raw


def primary_xml(document: str) -> str:
    """A Form 3/4/5 or 13F primary document without its XSL rendering folder:
    ``xslF345X05/wk-form4_1.xml`` -> ``wk-form4_1.xml`` (the XML itself)."""
    return document.rsplit("/", 1)[-1] if document.lower().startswith("xsl") else document


def split_submission(text: str) -> tuple[dict[str, str], list[Document]]:
    """A full submission (``<accession>.txt``): its SEC header fields and its documents,
    each with its type, file name, description and text (the ``<XML>`` wrapper removed)."""
    header: dict[str, str] = {}
    head_end = text.find("</SEC-HEADER>")
    for line in text[: head_end if head_end > 0 else 4_000].splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() and value.strip():
            header.setdefault(key.strip().upper(), value.strip())
    documents: list[Document] = []
    for block in re.findall(r"<DOCUMENT>(.*?)</DOCUMENT>", text, re.DOTALL):
        def tag(name: str, block: str = block) -> str:
            match = re.search(rf"^<{name}>([^\n<]*)", block, re.MULTILINE)
            return match.group(1).strip() if match else ""

        body_match = re.search(r"<TEXT>(.*?)</TEXT>", block, re.DOTALL)
        body = body_match.group(1) if body_match else ""
        xml = re.search(r"<XML>(.*?)</XML>", body, re.DOTALL)
        documents.append(Document(tag("FILENAME"), tag("TYPE"), tag("DESCRIPTION"),
                                  (xml.group(1) if xml else body).strip()))
    return header, documents


def parse_index_page(html: str) -> tuple[dict[str, str], list[Document]]:
    """A filing's index page (``<accession>-index.html``): its facts (``filing_date``,
    ``period_of_report``, ``form``, ``fiscal_year_end``, ``sic``) and its documents with
    their SEC types."""
    info: dict[str, str] = {}
    for head, value in re.findall(r'class="infoHead">([^<]+)</div>\s*<div class="info">([^<]+)<',
                                  html):
        key = head.strip().lower().replace(" ", "_")
        info.setdefault({"filing_date": "filing_date", "period_of_report": "period_of_report",
                         "accepted": "accepted"}.get(key, key), value.strip())
    form = re.search(r'id="formName">\s*<strong>\s*Form\s+([^<]+?)\s*</strong>', html)
    if form:
        info["form"] = form.group(1).strip()
    fye = re.search(r"Fiscal Year End:\s*<strong>(\d{4})</strong>", html)
    if fye:
        info["fiscal_year_end"] = fye.group(1)
    sic = re.search(r"SIC=(\d{3,4})", html)
    if sic:
        info["sic"] = sic.group(1)
    documents: list[Document] = []
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", html, re.DOTALL | re.IGNORECASE):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.DOTALL | re.IGNORECASE)
        link = re.search(r'href="[^"]*/([^/"]+)"', row)
        if len(cells) >= 4 and link:
            def clean(cell: str) -> str:
                return " ".join(re.sub(r"<[^>]+>|&nbsp;", " ", cell).split())

            documents.append(Document(link.group(1), clean(cells[3]), clean(cells[1])))
    return info, documents


def header_date(header: dict[str, str], key: str) -> str | None:
    """``FILED AS OF DATE: 20240515`` -> ``2024-05-15``."""
    raw = header.get(key, "")
    return f"{raw[:4]}-{raw[4:6]}-{raw[6:8]}" if re.fullmatch(r"\d{8}", raw) else None


class SecSource(HttpSource):
    """Base of the SEC EDGAR sources: the hosts, the User-Agent, the shared limiter, the
    ticker list, submissions, filing lists and the documents of a filing."""

    default_rate_limiter = SEC_RATE_LIMITER

    def __init__(self, connection: SourceConnection, *, data_url: str, user_agent: str,
                 fts_url: str = DEFAULT_FTS_URL) -> None:
        if not user_agent.strip():
            raise ValueError("SEC EDGAR needs a User-Agent with a contact; set "
                             "SEC_EDGAR_USER_AGENT or tools.sec_user_agent.")
        super().__init__(connection, SERVICE,
                         headers={"User-Agent": user_agent, "Accept-Encoding": "gzip, deflate"})
        self.data_url = data_url.rstrip("/")
        self.fts_url = fts_url.rstrip("/")

    async def _get(
        self, url: str, *, namespace: str, ttl: float | None, what: str,
        ticker: str | None = None, params: dict[str, Any] | None = None,
    ) -> tuple[Any, str]:
        # The ticker only names the cache file: it was resolved already, so a 404 here
        # means missing data, not an unknown ticker.
        return await self._fetch(url, namespace=namespace, policy=CachePolicy(ttl=ttl),
                                 what=what, params=params,
                                 key_extra={"ticker": ticker} if ticker else None)

    async def _text(self, url: str, *, what: str) -> str:
        """A document's text, uncached (callers cache what they parse from it)."""
        response = await self.client.get_text(url, what=what)
        return str(response.data)

    async def _parsed(self, namespace: str, key: dict[str, Any],
                      load: Callable[[], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
        """What ``load`` parsed from a filing, cached forever by ``key`` (a filing under
        an accession number never changes)."""
        key = {**key, "v": PARSED_VERSION}
        if self._cache is not None:
            hit = self._cache.get(namespace, key)
            if hit is not None and isinstance(hit.value, dict):
                return hit.value
        value = await load()
        if self._cache is not None:
            self._cache.set(namespace, key, value, url=str(key.get("url", "")),
                            ttl=NEVER_EXPIRES)
        return value

    # Companies --------------------------------------------------------------------------

    async def _ticker_table(self) -> tuple[list[Company], str]:
        data, url = await self._get(f"{self.base_url}/files/company_tickers.json",
                                    namespace="edgar/tickers", ttl=TTL_24H,
                                    what="the SEC ticker list")
        rows = data.values() if isinstance(data, dict) else data
        companies = []
        for row in rows:
            try:
                companies.append(Company(int(row["cik_str"]), str(row["ticker"]).upper(),
                                         str(row.get("title", ""))))
            except (KeyError, TypeError, ValueError):
                continue
        return companies, url

    async def resolve(self, ticker: str) -> Company:
        """Ticker (or CIK digits) to company; unknown tickers get close suggestions."""
        wanted = normalize_ticker(ticker)
        companies, _ = await self._ticker_table()
        for company in companies:
            if company.ticker == wanted or (wanted.isdigit() and company.cik == int(wanted)):
                return company
        raise NotFoundError(f"Unknown ticker '{ticker.strip()}' in SEC EDGAR's company list."
                            f"{self._suggest(wanted, companies)} Check the symbol, or search "
                            f"for the company name to find its ticker.")

    async def resolve_filer(self, who: str) -> Company:
        """A filer by ticker or CIK. A CIK needs no list: managers, people and private
        companies file under a CIK but have no ticker (the list only names it when known)."""
        raw = who.strip()
        digits = raw.upper().removeprefix("CIK").strip()
        if digits.isdigit():
            cik = int(digits)
            try:
                companies, _ = await self._ticker_table()
            except DataError:
                companies = []
            known = next((c for c in companies if c.cik == cik), None)
            return known or Company(cik, "", "")
        return await self.resolve(raw)

    @staticmethod
    def _suggest(wanted: str, companies: list[Company]) -> str:
        by_ticker = difflib.get_close_matches(wanted, [c.ticker for c in companies], n=3,
                                              cutoff=0.75)
        by_name = [c.ticker for c in companies if wanted.lower() in c.title.lower()][:3]
        picks = list(dict.fromkeys(by_name + by_ticker))[:4]
        if not picks:
            return ""
        names = {c.ticker: c.title for c in companies}
        return " Did you mean " + ", ".join(f"{t} ({names[t]})" for t in picks) + "?"

    async def search_companies(self, text: str, limit: int = 10) -> list[Company]:
        """Companies whose name or ticker contains ``text`` (case-insensitive)."""
        needle = text.strip().lower()
        companies, _ = await self._ticker_table()
        return [c for c in companies
                if needle and (needle in c.title.lower() or needle == c.ticker.lower())][:limit]

    async def _submissions(self, company: Company) -> tuple[dict[str, Any], str]:
        data, url = await self._get(
            f"{self.data_url}/submissions/CIK{company.cik10}.json",
            namespace="edgar/submissions", ttl=TTL_1H,
            what=f"the filings index of {company.name}", ticker=company.ticker or None,
        )
        if not isinstance(data, dict):
            raise DataError(f"SEC EDGAR sent an unexpected filings index for {company.name}.",
                            url=url)
        return data, url

    async def fiscal_year_end(self, company: Company) -> str | None:
        """Submissions' ``fiscalYearEnd`` (``"0928"``), or None when it cannot be read."""
        try:
            subs, _ = await self._submissions(company)
        except DataError:
            return None
        value = subs.get("fiscalYearEnd")
        return value if isinstance(value, str) else None

    def filing_index_url(self, cik: int, accession: str) -> str:
        """The archive folder of a filing."""
        return f"{self.base_url}/Archives/edgar/data/{cik}/{accession_path(accession)}/"

    async def frame_values(self, concepts: tuple[str, ...], unit: str, instant: bool,
                           period: str) -> tuple[dict[int, FrameValue], list[str]]:
        """CIK -> value of one figure for every company in a calendar period (``CY2024``,
        ``CY2024Q3``; an instant is read at the period's end), from the XBRL frames of
        ``concepts`` merged in order (the first concept a company reports wins)."""
        frame_period = period
        if instant and not period.endswith("I"):
            frame_period = period + ("Q4I" if "Q" not in period else "I")
        values: dict[int, FrameValue] = {}
        urls: list[str] = []
        for concept in concepts:
            url = (f"{self.data_url}/api/xbrl/frames/us-gaap/{concept}/"
                   f"{unit.replace('/', '-per-')}/{frame_period}.json")
            try:
                data, got = await self._get(url, namespace="edgar/frames", ttl=TTL_24H,
                                            what=f"the {concept} frame for {frame_period}")
            except NotFoundError:
                continue
            urls.append(got)
            for row in (data.get("data") or []) if isinstance(data, dict) else []:
                try:
                    values.setdefault(int(row["cik"]), FrameValue(
                        float(row["val"]), str(row.get("entityName", "")),
                        str(row.get("end", "")), str(row.get("accn", ""))))
                except (KeyError, TypeError, ValueError):
                    continue
        return values, urls

    # Filing lists -----------------------------------------------------------------------

    def _rows(self, block: dict[str, Any], company: Company) -> list[dict[str, Any]]:
        """Parallel arrays of a submissions block -> one dict per filing."""
        accessions = block.get("accessionNumber") or []
        rows = []
        for i, accession in enumerate(accessions):
            def col(name: str, i: int = i) -> Any:
                values = block.get(name) or []
                return values[i] if i < len(values) else None

            doc = col("primaryDocument") or ""
            folder = self.filing_index_url(company.cik, accession)
            row = {
                "accession_number": accession,
                "filing_type": col("form"),
                "filing_date": col("filingDate"),
                "report_date": col("reportDate") or None,
                "primary_document": doc or None,
                "description": col("primaryDocDescription") or None,
                "items": col("items") or None,
                "url": folder + doc if doc else folder,
            }
            rows.append({k: v for k, v in row.items() if v is not None})
        return rows

    async def _all_filings(
        self, company: Company, wanted: set[str], limit: int, *,
        until: Callable[[dict[str, Any]], bool] | None = None,
        keep: Callable[[dict[str, Any]], bool] | None = None,
        since: str | None = None,
    ) -> tuple[list[dict[str, Any]], list[str], list[str]]:
        """Filings of the wanted forms (and passing ``keep``), newest first: the ``recent``
        block, then older pages only while more are needed (with ``until``, only until a
        row satisfies it; with ``since``, an ISO date, only while the filings read so far
        reach back no further than it).

        A failed older page ends the search with what was found and a note, unless nothing
        was found at all. Returns (rows, urls read, notes).
        """
        subs, url = await self._submissions(company)
        urls = [url]
        notes: list[str] = []
        filings_block = subs.get("filings") or {}

        def chosen(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return [r for r in rows if (not wanted or r.get("filing_type") in wanted)
                    and (keep is None or keep(r))]

        recent = self._rows(filings_block.get("recent") or {}, company)
        found = chosen(recent)
        oldest = min((str(r.get("filing_date") or "9999") for r in recent), default="9999")
        for page in filings_block.get("files") or []:
            if len(found) >= limit or not isinstance(page, dict) or not page.get("name"):
                break
            if until is not None and any(until(r) for r in found):
                break
            if since is not None and oldest < since:
                break
            try:
                data, page_url = await self._get(
                    f"{self.data_url}/submissions/{page['name']}", namespace="edgar/submissions",
                    ttl=TTL_24H, what=f"older filings of {company.name}",
                    ticker=company.ticker or None,
                )
            except DataError as exc:
                if not found:
                    raise
                notes.append(f"Older filings of {company.name} could not be read "
                             f"({str(exc).rstrip('.')}); the {len(found)} most recent are listed.")
                break
            urls.append(page_url)
            if isinstance(data, dict):
                older = self._rows(data, company)
                found.extend(chosen(older))
                oldest = min([oldest, *(str(r.get("filing_date") or "9999") for r in older)])
        return found[:limit], urls, notes

    # The documents of one filing ---------------------------------------------------------

    async def listing(self, company: Company, accession: str) -> FilingDocuments | None:
        """The file names of a filing's folder (``index.json``), or None when SEC has no
        listing for it."""
        folder = self.filing_index_url(company.cik, accession)
        try:
            index, index_url = await self._get(folder + "index.json", namespace="edgar/index",
                                               ttl=NEVER_EXPIRES,
                                               what=f"the file list of filing {accession}")
        except NotFoundError:
            return None
        items = (index.get("directory") or {}).get("item") or [] if isinstance(index, dict) else []
        names = [str(i.get("name", "")) for i in items if isinstance(i, dict)]
        docs = tuple(Document(n) for n in names if n)
        return FilingDocuments(folder, docs, (index_url,)) if docs else None

    async def index_page(self, company: Company, accession: str) -> FilingDocuments | None:
        """A filing's index page: its documents with their SEC types, and in ``header``
        its filing date, form, fiscal year end and SIC code. None when there is none."""
        url = f"{self.base_url}/Archives/edgar/data/{company.cik}/{accession}-index.html"
        try:
            html = await self._text(url, what=f"the index page of filing {accession}")
        except NotFoundError:
            return None
        info, docs = parse_index_page(html)
        if not docs:
            return None
        return FilingDocuments(self.filing_index_url(company.cik, accession), tuple(docs),
                               (url,), info)

    async def documents(self, company: Company, accession: str) -> FilingDocuments:
        """The documents of a filing, by accession number alone: its index page (names
        with SEC types, the filing date), else the folder's listing (``index.json``), else
        the full submission (``<accession>.txt``)."""
        page = await self.index_page(company, accession)
        if page is not None:
            return page
        listed = await self.listing(company, accession)
        return listed if listed is not None else await self.full_submission(company, accession)

    async def filing_facts(self, company: Company, accession: str) -> dict[str, str]:
        """What a filing's index page says of it (``filing_date``, ``form``,
        ``fiscal_year_end``, ``sic``); {} when it cannot be read."""
        try:
            page = await self.index_page(company, accession)
        except DataError:
            return {}
        return dict(page.header) if page is not None else {}

    async def full_submission(self, company: Company, accession: str) -> FilingDocuments:
        """Every document of a filing from its full submission ``.txt`` (SEC keeps it in the
        filing's folder and, for most filings, beside it)."""
        folder = self.filing_index_url(company.cik, accession)
        candidates = (folder + f"{accession}.txt",
                      f"{self.base_url}/Archives/edgar/data/{company.cik}/{accession}.txt")
        for url in candidates:
            try:
                text = await self._text(url, what=f"filing {accession}")
            except NotFoundError:
                continue
            header, docs = split_submission(text)
            if docs:
                return FilingDocuments(folder, tuple(docs), (url,), header)
        raise NotFoundError(
            f"SEC EDGAR has no filing {accession} for {company.name} (CIK {company.cik}). "
            f"Check the accession number and the filer: a filing lives under the CIK of each "
            f"company or person it was filed for.")

    async def document_text(self, filing: FilingDocuments, document: Document) -> tuple[str, str]:
        """A document's text (from the full submission when it was read, else fetched)
        and its URL."""
        url = filing.url(document.name)
        if document.text is not None:
            return document.text, url
        return await self._text(url, what=f"document {document.name}"), url
