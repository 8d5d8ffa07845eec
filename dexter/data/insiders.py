"""Insider transactions and holdings from Forms 3, 4 and 5 (keyless, SEC EDGAR).

An officer, director or 10% owner reports each trade in the company's stock on Form 4
within two business days (amendments: 4/A); Form 3 states the holdings when someone
becomes an insider, Form 5 the year's exempt trades. All three are one XML schema
(``ownershipDocument``): the issuer, the reporting owners with their relationship
(director, officer and title, 10% owner, other), and two tables: non-derivative rows
(common stock) and derivative rows (options, restricted stock units), each a transaction
(date, code, shares, price per share, acquired or disposed, shares owned after, direct or
indirect ownership) or, on Form 3/5, a holding.

The filings are found in the company's submissions list (each Form 4 is filed under the
issuer's CIK as well as the owner's), or read directly by accession number. Each parsed
document is cached forever: a filing never changes.

Transaction codes and their meaning come from the SEC's Form 4 General Instructions
(section 8, "Transaction Codes").
"""

from __future__ import annotations

import re
from typing import Any

from dexter.data.base import NO_DATES, Capability, DataError, DataResult, DateFilter, NotFoundError
from dexter.data.sec import (
    Company,
    FilingDocuments,
    SecSource,
    header_date,
    normalize_accession,
    primary_xml,
)
from dexter.data.xml import XmlError, child, children, descendants, parse_xml, text_of

TRANSACTION_CODES: dict[str, str] = {
    "P": "open-market or private purchase",
    "S": "open-market or private sale",
    "V": "transaction voluntarily reported earlier than required",
    "A": "grant or award from the company",
    "D": "disposition to the company",
    "F": "payment of exercise price or tax withholding with shares",
    "I": "discretionary transaction",
    "M": "exercise or conversion of a derivative (exempt)",
    "C": "conversion of a derivative security",
    "E": "expiration of a short derivative position",
    "H": "expiration or cancellation of a long derivative position",
    "O": "exercise of an out-of-the-money derivative",
    "X": "exercise of an in-the-money or at-the-money derivative",
    "G": "gift",
    "L": "small acquisition",
    "W": "acquisition or disposition by will or the laws of descent",
    "Z": "deposit into or withdrawal from a voting trust",
    "J": "other acquisition or disposition",
    "K": "equity swap or similar instrument",
    "U": "disposition in a tender of shares in a change of control",
}
"""Form 4 transaction codes (General Instructions, 8) -> what they mean."""

CODE_WORDS: dict[str, str] = {
    "P": "purchase", "S": "sale", "V": "voluntary", "A": "grant", "D": "to company",
    "F": "tax withholding", "I": "discretionary", "M": "option exercise", "C": "conversion",
    "E": "short expiry", "H": "long expiry", "O": "exercise (OTM)", "X": "option exercise",
    "G": "gift", "L": "small acquisition", "W": "inheritance", "Z": "voting trust",
    "J": "other", "K": "equity swap", "U": "tender",
}
"""The codes in a word or two, for narrow tables."""

TRADE_FORMS = ("4", "4/A")
HOLDING_FORMS = ("3", "3/A", "5", "5/A")
SCAN_FACTOR = 5
"""With a name to find, at most this many times ``limit`` filings are read."""


def code_meaning(code: str) -> str:
    """What a transaction code means ('' when it is not one)."""
    return TRANSACTION_CODES.get(code.strip().upper(), "")


def _number(node: Any, *path: str) -> float | None:
    raw = text_of(node, *path, "value") if path else ""
    raw = raw.replace(",", "").replace("$", "").strip()
    try:
        return float(raw)
    except ValueError:
        return None


def _int_or_float(value: float | None) -> int | float | None:
    if value is None:
        return None
    return int(value) if float(value).is_integer() else value


def _flag(node: Any, name: str) -> bool:
    return text_of(node, name).strip().lower() in {"1", "true"}


def owners(root: Any) -> list[dict[str, Any]]:
    """The reporting owners: name, CIK, and their relationship to the company."""
    out = []
    for owner in children(root, "reportingOwner"):
        rel = child(owner, "reportingOwnerRelationship")
        roles = []
        if _flag(rel, "isDirector"):
            roles.append("Director")
        if _flag(rel, "isOfficer"):
            roles.append(text_of(rel, "officerTitle") or "Officer")
        if _flag(rel, "isTenPercentOwner"):
            roles.append("10% owner")
        if _flag(rel, "isOther"):
            roles.append(text_of(rel, "otherText") or "Other")
        out.append({"name": text_of(owner, "reportingOwnerId", "rptOwnerName"),
                    "cik": text_of(owner, "reportingOwnerId", "rptOwnerCik"),
                    "role": ", ".join(roles)})
    return out


def _footnotes(root: Any) -> dict[str, str]:
    out = {}
    notes = child(root, "footnotes")
    for note in children(notes, "footnote") if notes is not None else ():
        out[note.get("id", "")] = text_of(note)
    return out


def _notes_of(node: Any, footnotes: dict[str, str]) -> list[str]:
    ids = [n.get("id", "") for n in descendants(node, "footnoteId")]
    return [footnotes[i] for i in dict.fromkeys(ids) if i in footnotes]


def parse_ownership(text: str | bytes) -> dict[str, Any]:
    """A Form 3, 4 or 5 XML document: issuer, period, owners and every table row, each
    row with its code's meaning, direction and whether it is a derivative."""
    try:
        root = parse_xml(text)
    except XmlError as exc:
        raise DataError(f"The ownership document could not be read: {exc}.") from None
    if root.tag.rsplit("}", 1)[-1] != "ownershipDocument":
        raise DataError("The document is not a Form 3/4/5 ownership document.")
    footnotes = _footnotes(root)
    rows: list[dict[str, Any]] = []
    for table, derivative in (("nonDerivativeTable", False), ("derivativeTable", True)):
        block = child(root, table)
        if block is None:
            continue
        for node in block:
            tag = str(node.tag).rsplit("}", 1)[-1]
            if tag not in ("nonDerivativeTransaction", "derivativeTransaction",
                           "nonDerivativeHolding", "derivativeHolding"):
                continue
            rows.append(_row(node, derivative, tag.endswith("Holding"), footnotes))
    plan = _flag(root, "aff10b5One")
    for row in rows:
        if plan or any("10b5-1" in note for note in row.get("footnotes", [])):
            row["rule_10b5_1_plan"] = True
    return {"document_type": text_of(root, "documentType"),
            "period_of_report": text_of(root, "periodOfReport"),
            "issuer": {"cik": text_of(root, "issuer", "issuerCik"),
                       "name": text_of(root, "issuer", "issuerName"),
                       "ticker": text_of(root, "issuer", "issuerTradingSymbol")},
            "owners": owners(root), "rows": rows,
            "signature_date": text_of(root, "ownerSignature", "signatureDate")}


def _row(node: Any, derivative: bool, holding: bool, footnotes: dict[str, str]) -> dict[str, Any]:
    code = text_of(node, "transactionCoding", "transactionCode")
    direction = text_of(node, "transactionAmounts", "transactionAcquiredDisposedCode", "value")
    shares = _number(node, "transactionAmounts", "transactionShares")
    price = _number(node, "transactionAmounts", "transactionPricePerShare")
    after = _number(node, "postTransactionAmounts", "sharesOwnedFollowingTransaction")
    ownership = text_of(node, "ownershipNature", "directOrIndirectOwnership", "value")
    row: dict[str, Any] = {
        "security": text_of(node, "securityTitle", "value"),
        "transaction_date": text_of(node, "transactionDate", "value") or None,
        "transaction_code": code or None,
        "transaction_type": code_meaning(code) or ("holding" if holding else None),
        "acquired_disposed": {"A": "acquired", "D": "disposed"}.get(direction.upper()),
        "transaction_shares": _int_or_float(shares),
        "transaction_price_per_share": _int_or_float(price),
        "transaction_value": round(shares * price, 2) if shares is not None and price else None,
        "shares_owned_after": _int_or_float(after),
        "direct_or_indirect": {"D": "direct", "I": "indirect"}.get(ownership.upper()),
        "ownership_nature": text_of(node, "ownershipNature", "natureOfOwnership", "value") or None,
        "is_derivative": derivative,
    }
    if derivative:
        row["exercise_price"] = _int_or_float(_number(node, "conversionOrExercisePrice"))
        row["underlying_security"] = text_of(node, "underlyingSecurity",
                                             "underlyingSecurityTitle", "value") or None
        row["underlying_shares"] = _int_or_float(
            _number(node, "underlyingSecurity", "underlyingSecurityShares"))
        row["expiration_date"] = text_of(node, "expirationDate", "value") or None
    notes = _notes_of(node, footnotes)
    if notes:
        row["footnotes"] = notes
    return row


def name_matches(name: str, wanted: str) -> bool:
    """Whether an SEC spelling (``COOK TIMOTHY D``, ``Adams Katherine L.``) is the person
    the user named (``Tim Cook``): every word of ``wanted`` starts a word of ``name``."""
    have = re.findall(r"[a-z0-9]+", name.lower())
    return bool(have) and all(any(h.startswith(w) for h in have)
                              for w in re.findall(r"[a-z0-9]+", wanted.lower()))


class InsiderSource(SecSource):
    """Forms 3, 4 and 5 of a company, read from SEC EDGAR (keyless)."""

    name = "sec_edgar_insiders"
    label = "SEC EDGAR (Forms 3, 4, 5)"
    capabilities = frozenset({Capability.INSIDER})

    async def insider_trades(
        self, ticker: str, *, limit: int = 10, name: str | None = None,
        filters: DateFilter = NO_DATES, accession: str | None = None,
    ) -> DataResult:
        """Form 4 and 4/A transactions, newest filing first: one record per table row
        (``limit``: how many filings are read)."""
        return await self._read(ticker, TRADE_FORMS, limit=limit, name=name, filters=filters,
                                accession=accession, what="Form 4")

    async def insider_ownership(
        self, ticker: str, *, limit: int = 10, name: str | None = None,
        form_type: str | None = None, filters: DateFilter = NO_DATES,
    ) -> DataResult:
        """Holdings reported on Forms 3 and 5 (or one of them, ``form_type``)."""
        forms = (form_type,) if form_type else HOLDING_FORMS
        return await self._read(ticker, forms, limit=limit, name=name, filters=filters,
                                accession=None, what="Form 3/5")

    async def insider_names(self, ticker: str) -> DataResult:
        """The insiders of the latest 20 ownership filings, as SEC spells them."""
        result = await self._read(ticker, (*TRADE_FORMS, *HOLDING_FORMS), limit=20, name=None,
                                  filters=NO_DATES, accession=None, what="Form 3/4/5")
        seen: dict[str, dict[str, Any]] = {}
        for row in result.data:
            seen.setdefault(row["owner"], {"name": row["owner"], "role": row.get("role"),
                                           "latest_filing": row.get("filing_date")})
        return DataResult(list(seen.values()), result.source, result.urls, result.notes)

    async def _read(self, ticker: str, forms: tuple[str, ...], *, limit: int, name: str | None,
                    filters: DateFilter, accession: str | None, what: str) -> DataResult:
        notes: list[str] = []
        urls: list[str] = []
        if accession:
            company = await self.resolve_filer(ticker)
            accn = normalize_accession(accession)
            filings = [{"accession_number": accn, "filing_type": "", "filing_date": None}]
        else:
            company = await self.resolve(ticker)
            scan = max(1, limit) * (SCAN_FACTOR if name else 1)
            filings, got, more = await self._all_filings(
                company, set(forms), scan,
                keep=lambda r: filters.matches(str(r.get("filing_date") or "")),
                since=filters.gte or filters.gt or filters.eq)
            urls.extend(got)
            notes.extend(more)
            if not filings:
                raise NotFoundError(
                    f"No {what} filings for {company.name} in SEC EDGAR"
                    f"{'' if filters.is_empty() else ' in those dates'}.")
        records: list[dict[str, Any]] = []
        read = failed = 0
        first_error = ""
        for filing in filings:
            if name and read >= max(1, limit) and records:
                break
            try:
                doc = await self._document(company, filing)
            except DataError as exc:
                if accession:
                    raise
                failed += 1
                first_error = first_error or str(exc)
                notes.append(f"{filing.get('filing_type')} {filing['accession_number']} could "
                             f"not be read: {str(exc).rstrip('.')}.")
                continue
            urls.append(doc["url"])
            read += 1
            rows = _records(doc, filing, company)
            if name:
                rows = [r for r in rows if name_matches(r["owner"], name)]
            records.extend(rows)
        if not read and failed:
            raise NotFoundError(f"None of the {failed} latest {what} filings of {company.name} "
                                f"could be read ({first_error.rstrip('.')}). Try an earlier date "
                                f"range (--since/--until) or one filing (--accession).")
        if name and not records:
            raise NotFoundError(f"No {what} of {company.name} by anyone named '{name}' in the "
                                f"{read} latest filings. Check the name (SEC writes it last "
                                f"name first, e.g. COOK TIMOTHY D).")
        if failed:
            notes.append(f"{failed} of {len(filings)} filings could not be read.")
        notes.append("Shares are as reported; price is per share (a weighted average when "
                     "the filing says so in a footnote); transaction_value = shares x price. "
                     "Codes follow the SEC's Form 4 instructions (S sale, P purchase, A grant, "
                     "M/X option exercise, F tax withholding, G gift).")
        return DataResult(records, self.label, tuple(dict.fromkeys(urls)), tuple(notes))

    async def _document(self, company: Company, filing: dict[str, Any]) -> dict[str, Any]:
        accession = filing["accession_number"]

        async def load() -> dict[str, Any]:
            primary = filing.get("primary_document")
            if primary and str(primary).lower().endswith(".xml"):
                url = self.filing_index_url(company.cik, accession) + primary_xml(primary)
                text = await self._text(url, what=f"Form {filing.get('filing_type')} {accession}")
                header: dict[str, str] = {}
            else:
                docs = await self.documents(company, accession)
                text, url = await self._ownership_xml(docs)
                header = docs.header
            parsed = parse_ownership(text)
            return {**parsed, "url": url,
                    "filed": header_date(header, "FILED AS OF DATE") or filing.get("filing_date")}

        doc = await self._parsed("edgar/ownership", {"accession": accession,
                                                     "cik": company.cik}, load)
        if not filing.get("filing_type"):
            filing["filing_type"] = doc.get("document_type")
        if not filing.get("filing_date"):
            filing["filing_date"] = doc.get("filed") or doc.get("signature_date")
        return doc

    async def _ownership_xml(self, docs: FilingDocuments) -> tuple[str, str]:
        typed = docs.typed("3", "3/A", "4", "4/A", "5", "5/A")
        candidates = typed or [d for d in docs.documents
                               if d.name.lower().endswith(".xml") and not re.search(
                                   r"(_htm|_cal|_def|_lab|_pre|filingsummary)", d.name.lower())]
        for document in candidates:
            text, url = await self.document_text(docs, document)
            if "<ownershipDocument" in text[:5000]:
                return text, url
        raise NotFoundError("The filing holds no Form 3/4/5 XML document.")


def _records(doc: dict[str, Any], filing: dict[str, Any], company: Company) -> list[dict[str, Any]]:
    """One record per table row, each naming its owner and its filing."""
    owners_ = doc.get("owners") or [{"name": "", "role": ""}]
    owner = "; ".join(o["name"] for o in owners_ if o.get("name"))
    role = "; ".join(o["role"] for o in owners_ if o.get("role"))
    source = {"form": filing.get("filing_type") or doc.get("document_type"),
              "accession_number": filing["accession_number"],
              "filed": filing.get("filing_date"), "url": doc["url"]}
    out = []
    for row in doc.get("rows") or []:
        record = {"ticker": doc.get("issuer", {}).get("ticker") or company.ticker,
                  "owner": owner, "role": role,
                  "filing_date": filing.get("filing_date"), **row,
                  "source_filing": source}
        out.append({k: v for k, v in record.items() if v is not None})
    return out
