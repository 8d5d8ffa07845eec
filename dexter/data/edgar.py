"""SEC EDGAR: a keyless source for fundamentals, filings and simple screens.

Endpoints (hosts configurable for mirrors and tests):

- ``{sec_edgar_base_url}/files/company_tickers.json``: ticker -> CIK (24h cache)
- ``{sec_edgar_data_url}/submissions/CIK##########.json``: company profile and filings,
  newest first in ``filings.recent`` (parallel arrays); older pages in ``filings.files``
- ``{sec_edgar_data_url}/api/xbrl/companyfacts/CIK##########.json``: every XBRL fact
- ``{sec_edgar_data_url}/api/xbrl/frames/us-gaap/{concept}/{unit}/{period}.json``: one
  concept for every company (screens)
- ``{sec_edgar_base_url}/Archives/edgar/data/{cik}/{accession}/{document}``: filings

SEC's fair-access rules: a User-Agent naming the client and a contact, and at most 10
requests a second for the whole process (a shared limiter).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dexter import metrics
from dexter.data.base import (
    NO_DATES,
    Capability,
    DataError,
    DataResult,
    DateFilter,
    NotFoundError,
    Period,
    ScreenFilter,
    StatementKind,
)
from dexter.data.cache import NEVER_EXPIRES, TTL_6H
from dexter.data.filing_text import (
    ITEM_CATALOG,
    base_form,
    html_to_text,
    normalize_item,
    split_items,
)
from dexter.data.sec import Company, SecSource, normalize_accession
from dexter.data.xbrl import (
    BALANCE_ITEMS,
    CASH_FLOW_ITEMS,
    INCOME_ITEMS,
    PAYMENT_FIELDS,
    LineItem,
    build_statement,
    latest_dei_value,
    statements_from_filing,
)
from dexter.data.xbrl_facts import parse_filing

STATEMENT_KEYS = {"income": "income_statements", "balance": "balance_sheets",
                  "cash_flow": "cash_flow_statements"}

# Without a key, the whole text of a 10-K would flood the context: list the items instead.
LIST_ITEMS_ONLY_FORMS = frozenset({"10-K", "10-Q"})
FULL_TEXT_CAP = 200_000


@dataclass(frozen=True, slots=True)
class ScreenField:
    """A field the EDGAR screen can filter on: XBRL concepts in fallback order."""

    concepts: tuple[str, ...]
    unit: str = "USD"
    instant: bool = False


def _screen_fields() -> dict[str, ScreenField]:
    wanted = {"revenue", "net_income", "operating_income", "gross_profit",
              "earnings_per_share_diluted", "total_assets", "total_liabilities",
              "shareholders_equity", "cash_and_equivalents", "long_term_debt",
              "net_cash_flow_from_operations"}
    items: list[LineItem] = [*INCOME_ITEMS, *BALANCE_ITEMS, *CASH_FLOW_ITEMS]
    return {i.field: ScreenField(i.concepts, i.unit, i.instant) for i in items
            if i.field in wanted}


SCREEN_FIELDS = _screen_fields()
DERIVED_SCREEN_FIELDS = {
    "net_margin": ("net_income", "revenue"),
    "operating_margin": ("operating_income", "revenue"),
    "gross_margin": ("gross_profit", "revenue"),
}


def primary_documents(submissions: dict[str, Any]) -> dict[str, str]:
    """Accession number -> the filing's primary document (``aapl-20240928.htm``), from the
    ``recent`` block of a submissions index."""
    recent = (submissions.get("filings") or {}).get("recent") or {}
    accessions = recent.get("accessionNumber") or []
    documents = recent.get("primaryDocument") or []
    return {str(a): str(d) for a, d in zip(accessions, documents, strict=False)
            if a and d and "/" not in str(d)}


class EdgarSource(SecSource):
    """SEC EDGAR: statements from XBRL facts, filings and their items, frame screens.

    ``connection.base_url`` serves the ticker list and the archives; ``data_url`` the
    submissions, company facts and frames. The rate limiter defaults to the process-wide
    SEC limiter.
    """

    name = "sec_edgar"
    label = "SEC EDGAR"
    capabilities = frozenset({Capability.STATEMENTS, Capability.COMPANY_FACTS,
                              Capability.FILINGS, Capability.FILING_SECTIONS,
                              Capability.SCREENER})

    async def _companyfacts(self, company: Company) -> tuple[dict[str, Any], str]:
        data, url = await self._get(
            f"{self.data_url}/api/xbrl/companyfacts/CIK{company.cik10}.json",
            namespace="edgar/companyfacts", ttl=TTL_6H,
            what=f"XBRL financial data of {company.ticker}", ticker=company.ticker,
        )
        if not isinstance(data, dict):
            raise DataError(f"SEC EDGAR sent unexpected XBRL data for {company.ticker}.", url=url)
        return data, url

    # Statements -------------------------------------------------------------------------

    async def statements(
        self, kind: StatementKind, ticker: str, *, period: Period = "annual", limit: int = 4,
        filters: DateFilter = NO_DATES, accession: str | None = None,
    ) -> DataResult:
        """Statements built from XBRL company facts, newest first (see ``dexter.data.xbrl``);
        with ``accession``, the statements as that one filing reported them."""
        if accession:
            return await self._filing_statements(kind, ticker, accession)
        company = await self.resolve(ticker)
        facts, url = await self._companyfacts(company)
        try:
            subs, _ = await self._submissions(company)
        except DataError:
            subs = {}  # the calendar is then read from the facts themselves
        fiscal_year_end = subs.get("fiscalYearEnd")
        documents = primary_documents(subs)
        name_of_company = str(subs.get("name") or company.title)

        def filing_url(accession: str) -> str:
            # the filing's own document (a 10-K's .htm) when the filings index names it
            return self.filing_index_url(company.cik, accession) + documents.get(accession, "")

        kinds = ["income", "balance", "cash_flow"] if kind == "all" else [kind]
        out: dict[str, list[dict[str, Any]]] = {}
        for name in kinds:
            records = build_statement(
                facts, name, period, ticker=company.ticker, filing_url=filing_url,
                fiscal_year_end=fiscal_year_end if isinstance(fiscal_year_end, str) else None,
            )
            records = [{**r, "company_name": name_of_company} if name_of_company else r
                       for r in records if filters.matches(r["report_period"])][:limit]
            out[STATEMENT_KEYS[name]] = records
        notes: tuple[str, ...] = (
            "From SEC XBRL company facts: each value as most recently filed in a 10-K or 10-Q "
            "(restated values win; 'restated' says what was first reported); source_filing "
            "names the filing, 'derived' says which values were computed (quarters from "
            "year-to-date values, margins, totals). Fiscal periods follow the company's "
            "fiscal calendar. Per-share values and share counts are on the latest split's "
            "basis ('split_adjusted' names the split and the value as filed).",)
        reader: tuple[str, ...] = (
            "Each value is the one most recently filed in a 10-K or 10-Q (a restatement "
            "replaces what was first reported). Quarters computed from year-to-date values, "
            "margins and totals are derived from filed values. Fiscal periods follow the "
            "company's fiscal calendar; per-share values and share counts are on the basis "
            "of the latest stock split.",)
        if kind in ("cash_flow", "all"):
            notes += (f"Payments ({', '.join(PAYMENT_FIELDS)}) are shown as negative numbers "
                      f"(outflows); filings report them as positive amounts.",)
            payments = ", ".join(metrics.label(f).lower() for f in PAYMENT_FIELDS)
            reader += (f"Payments ({payments}) are shown as negative numbers (outflows); "
                       f"filings report them as positive amounts.",)
        data: Any = out if kind == "all" else out[STATEMENT_KEYS[kind]]
        return DataResult(data, "SEC EDGAR (XBRL company facts)", (url,), notes, reader)

    async def _filing_statements(self, kind: StatementKind, ticker: str,
                                 accession: str) -> DataResult:
        """One 10-K / 10-Q's statements from its own XBRL (its periods and comparatives)."""
        from dexter.data.fiscal import FiscalCalendar
        from dexter.data.segments_source import fiscal_end_of, xbrl_text

        company = await self.resolve_filer(ticker)
        accn = normalize_accession(accession)
        text, url, docs = await xbrl_text(self, company, accn)
        facts = parse_filing(text)
        consolidated = [(f.concept, f.value, f.context.start, f.context.end) for f in facts.facts
                        if not f.dims and f.unit.upper() in ("USD", "USD/SHARES", "SHARES")]
        fiscal = await self.fiscal_year_end(company) or fiscal_end_of(facts) or \
            (docs.header.get("fiscal_year_end") if docs else None)
        ends = [e for _, _, s, e in consolidated if s and 350 <= (
            dt.date.fromisoformat(e) - dt.date.fromisoformat(s)).days <= 380]
        calendar = FiscalCalendar.parse(fiscal) or FiscalCalendar.infer(ends)
        source = {"form": facts.dei.get("DocumentType") or (docs.form if docs else ""),
                  "accession_number": accn, "filed": docs.filed if docs else None, "url": url}
        kinds = ["income", "balance", "cash_flow"] if kind == "all" else [kind]
        name = company.ticker or company.name
        out = {STATEMENT_KEYS[k]: statements_from_filing(consolidated, k, calendar,
                                                         ticker=name, source_filing=source)
               for k in kinds}
        data: Any = out if kind == "all" else out[STATEMENT_KEYS[kind]]
        return DataResult(data, "SEC EDGAR (filing XBRL)", (url,), (
            f"As reported in {source['form']} {accn}: its own periods and comparatives, "
            f"not later restatements.",))

    async def company_facts(self, ticker: str) -> DataResult:
        """Profile from the submissions feed plus cover-page share count and public float."""
        company = await self.resolve(ticker)
        subs, subs_url = await self._submissions(company)
        facts, facts_url = await self._companyfacts(company)
        shares = latest_dei_value(facts, "EntityCommonStockSharesOutstanding", "shares")
        float_ = latest_dei_value(facts, "EntityPublicFloat", "USD")
        data: dict[str, Any] = {
            "ticker": company.ticker,
            "name": subs.get("name") or company.title,
            "cik": company.cik10,
            "sic": subs.get("sic"),
            "sic_description": subs.get("sicDescription"),
            "exchanges": subs.get("exchanges"),
            "tickers": subs.get("tickers"),
            "fiscal_year_end": subs.get("fiscalYearEnd"),
            "state_of_incorporation": subs.get("stateOfIncorporation"),
            "category": subs.get("category"),
            "website": subs.get("website") or None,
        }
        if shares is not None:
            data["outstanding_shares"] = int(shares.value)
            data["outstanding_shares_as_of"] = shares.end
            data["outstanding_shares_source"] = f"{shares.form} {shares.accn} filed {shares.filed}"
        if float_ is not None:
            data["public_float"] = int(float_.value)
            data["public_float_as_of"] = float_.end
        return DataResult({k: v for k, v in data.items() if v not in (None, "", [])},
                          "SEC EDGAR (submissions, XBRL cover page)", (subs_url, facts_url))

    # Filings ----------------------------------------------------------------------------

    async def filings(
        self, ticker: str, *, filing_types: tuple[str, ...] = (), limit: int = 10,
        until: Callable[[dict[str, Any]], bool] | None = None, items: tuple[str, ...] = (),
    ) -> DataResult:
        """Filings of the given forms (exact match, e.g. ``10-K``), newest first; with
        ``until``, older pages are read only until a filing satisfies it; with ``items``,
        only 8-Ks reporting one of those items (``2.02``)."""
        company = await self.resolve(ticker)
        wanted = {t.strip().upper() for t in filing_types if t.strip()}
        numbers = {i.replace("Item", "").replace("-", "").strip() for i in items if i.strip()}

        def keep(row: dict[str, Any]) -> bool:
            listed = {x.strip() for x in str(row.get("items", "")).split(",")}
            return not numbers or bool(numbers & listed)

        rows, urls, notes = await self._all_filings(company, wanted, max(1, limit), until=until,
                                                    keep=keep)
        return DataResult(rows, "SEC EDGAR (submissions)", tuple(urls), tuple(notes))

    async def _find_filing(self, company: Company, accession: str) -> dict[str, Any]:
        rows, _, _ = await self._all_filings(
            company, set(), 10_000, until=lambda row: row["accession_number"] == accession)
        for row in rows:
            if row["accession_number"] == accession:
                return row
        raise NotFoundError(f"No filing {accession} for {company.ticker} in SEC EDGAR. List "
                            f"the company's filings to get a valid accession number.")

    async def _sections(
        self, company: Company, filing: dict[str, Any]
    ) -> tuple[dict[str, str], list[str]]:
        """The filing's items (cached forever by accession number) and the URLs read."""
        accession = filing["accession_number"]
        key = {"accession": accession, "ticker": company.ticker, "v": 1}
        urls = [filing["url"]]
        if self._cache is not None:
            hit = self._cache.get("edgar/filing-items", key)
            value = hit.value if hit is not None else None
            if (isinstance(value, dict) and isinstance(value.get("items"), dict)
                    and isinstance(value.get("urls"), list)):
                return ({str(k): str(v) for k, v in value["items"].items()},
                        [str(u) for u in value["urls"]])
        form = base_form(str(filing.get("filing_type", "")))
        response = await self.client.get_text(filing["url"], what=f"{form} {accession}")
        text = html_to_text(str(response.data))
        sections = split_items(text, form)
        if not sections:
            sections = {"Document": text[:FULL_TEXT_CAP]}
        if form == "8-K":
            exhibits, exhibit_urls = await self._exhibits(company, accession)
            sections.update(exhibits)
            urls.extend(exhibit_urls)
        if self._cache is not None:
            self._cache.set("edgar/filing-items", key, {"items": sections, "urls": urls},
                            url=filing["url"], ttl=NEVER_EXPIRES)
        return sections, urls

    async def _exhibits(self, company: Company, accession: str) -> tuple[dict[str, str], list[str]]:
        """Press-release exhibits (EX-99.x) of an 8-K, where earnings numbers usually are."""
        folder = self.filing_index_url(company.cik, accession)
        try:
            index, index_url = await self._get(folder + "index.json", namespace="edgar/index",
                                               ttl=NEVER_EXPIRES, what=f"the index of {accession}")
        except DataError:
            return {}, []
        items = (index.get("directory") or {}).get("item") or [] if isinstance(index, dict) else []
        out: dict[str, str] = {}
        urls = [index_url]
        for entry in items:
            name = str(entry.get("name", "")) if isinstance(entry, dict) else ""
            match = re.search(r"ex-?99[._-]?(\d*)", name, re.IGNORECASE)
            if not match or not name.lower().endswith((".htm", ".html", ".txt")):
                continue
            response = await self.client.get_text(folder + name, what=f"exhibit {name}")
            out[f"Exhibit-99.{match.group(1) or '1'}"] = html_to_text(str(response.data))
            urls.append(response.url)
            if len(out) >= 2:
                break
        return out, urls

    async def filing_items(
        self, ticker: str, *, filing_type: str, accession_number: str,
        items: tuple[str, ...] = (),
    ) -> DataResult:
        """Items of one filing as text. With no items asked for a 10-K/10-Q, only the list
        of items and their sizes is returned (the full text would be hundreds of pages)."""
        company = await self.resolve(ticker)
        filing = await self._find_filing(company, accession_number.strip())
        form = base_form(str(filing.get("filing_type") or filing_type))
        sections, urls = await self._sections(company, filing)
        catalog = ITEM_CATALOG.get(form, {})
        data: dict[str, Any] = {
            "ticker": company.ticker, "accession_number": filing["accession_number"],
            "filing_type": filing.get("filing_type"), "filing_date": filing.get("filing_date"),
            "report_date": filing.get("report_date"), "url": filing["url"],
        }
        if not items and form in LIST_ITEMS_ONLY_FORMS:
            data["available_items"] = [
                {"name": k, "title": catalog.get(k, ""), "chars": len(v)}
                for k, v in sections.items()
            ]
            data["note"] = "Ask for specific items (e.g. Item-1A, Item-7) to read their text."
            return DataResult(data, "SEC EDGAR (filing document)", tuple(urls))
        wanted: list[str] = []
        unknown: list[str] = []
        for raw in items:
            key = normalize_item(form, raw) or (raw if raw in sections else None)
            (wanted if key else unknown).append(key or raw)
        chosen = list(dict.fromkeys(wanted)) or list(sections)
        data["items"] = [{"name": k, "title": catalog.get(k, ""), "text": sections[k]}
                         for k in chosen if k in sections]
        missing = [k for k in chosen if k not in sections] + unknown
        if missing:
            data["missing_items"] = missing
            data["available_items"] = list(sections)
        return DataResult(data, "SEC EDGAR (filing document)", tuple(urls))

    # Screening --------------------------------------------------------------------------

    async def screener_filters(self) -> DataResult:
        """The fields this screen understands (XBRL frames have no sector or price data)."""
        fields = {name: ("instant (balance sheet)" if f.instant else "period total")
                  for name, f in SCREEN_FIELDS.items()}
        fields.update({name: f"derived: {a} / {b} (decimal, 0.2 = 20%)"
                       for name, (a, b) in DERIVED_SCREEN_FIELDS.items()})
        return DataResult({"fields": fields, "period_format": "CY2024 (calendar year) or "
                           "CY2024Q3 (calendar quarter)"}, "SEC EDGAR (XBRL frames)")

    def default_screen_period(self) -> str:
        """The last complete calendar year."""
        return f"CY{self._date().year - 1}"

    async def _frame_values(
        self, field: str, period: str
    ) -> tuple[dict[int, tuple[float, str, str]], list[str]]:
        """cik -> (value, entity name, period end) for one field, concepts merged in order."""
        spec = SCREEN_FIELDS[field]
        values, urls = await self.frame_values(spec.concepts, spec.unit, spec.instant, period)
        return {cik: (v.value, v.name, v.end) for cik, v in values.items()}, urls

    async def screen(
        self, filters: tuple[ScreenFilter, ...], *, currency: str = "USD", limit: int = 25,
        period: str | None = None,
    ) -> DataResult:
        """Companies passing every filter in one calendar period, from XBRL frames."""
        if not filters:
            raise DataError("Give at least one filter (e.g. revenue gt 100000000000).")
        known = set(SCREEN_FIELDS) | set(DERIVED_SCREEN_FIELDS)
        bad = [f.field for f in filters if f.field not in known]
        if bad:
            raise DataError(
                f"SEC EDGAR cannot screen on {', '.join(bad)}. It can screen on: "
                f"{', '.join(sorted(known))}. Sector, industry, price and valuation screens "
                f"need FINANCIAL_DATASETS_API_KEY.")
        if currency.upper() != "USD":
            raise DataError("SEC EDGAR frames are in USD only.")
        period = (period or self.default_screen_period()).upper()
        if not re.fullmatch(r"CY\d{4}(Q[1-4])?I?", period):
            raise DataError(f"Period '{period}' is not valid; use CY2024 or CY2024Q3.")
        needed: list[str] = []
        for f in filters:
            needed.extend(DERIVED_SCREEN_FIELDS.get(f.field, (f.field,)))
        columns: dict[str, dict[int, tuple[float, str, str]]] = {}
        urls: list[str] = []
        for name in dict.fromkeys(needed):
            columns[name], got = await self._frame_values(name, period)
            urls.extend(got)
        companies, tickers_url = await self._ticker_table()
        by_cik: dict[int, str] = {}
        for company in companies:
            by_cik.setdefault(company.cik, company.ticker)
        rows = self._screen_rows(filters, columns, by_cik, period)
        sort_field = filters[0].field
        rows.sort(key=lambda r: r.get(sort_field) or 0, reverse=True)
        return DataResult(rows[:limit], "SEC EDGAR (XBRL frames)", (*urls, tickers_url),
                          (f"{len(rows)} companies matched in {period}; sorted by "
                           f"{sort_field}, highest first.",))

    @staticmethod
    def _screen_rows(
        filters: tuple[ScreenFilter, ...], columns: dict[str, dict[int, tuple[float, str, str]]],
        by_cik: dict[int, str], period: str,
    ) -> list[dict[str, Any]]:
        ciks = set.intersection(*(set(col) for col in columns.values())) if columns else set()
        rows = []
        for cik in ciks:
            values: dict[str, float] = {name: col[cik][0] for name, col in columns.items()}
            for name, (num, den) in DERIVED_SCREEN_FIELDS.items():
                if num in values and values.get(den):
                    values[name] = round(values[num] / values[den], 4)
            if not all(_passes(values.get(f.field), f) for f in filters):
                continue
            first = next(iter(columns.values()))[cik]
            row: dict[str, Any] = {"ticker": by_cik.get(cik), "name": first[1],
                                   "cik": f"{cik:010d}", "period": period, "period_end": first[2]}
            row.update({k: int(v) if float(v).is_integer() else v for k, v in values.items()})
            rows.append(row)
        return rows


def _passes(value: float | None, f: ScreenFilter) -> bool:
    """Whether ``value`` meets one numeric filter."""
    if value is None:
        return False
    target = f.value
    if f.operator == "in":
        if not isinstance(target, list):
            return False
        return any(isinstance(t, int | float) and value == t for t in target)
    if not isinstance(target, int | float):
        return False
    return {
        "gt": value > target, "gte": value >= target, "lt": value < target,
        "lte": value <= target, "eq": value == target,
    }[f.operator]
