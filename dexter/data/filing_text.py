"""SEC filing documents: HTML to plain text, and text split into items.

Text extraction uses BeautifulSoup (tables become ``a | b | c`` rows, inline-XBRL headers
are dropped). Splitting finds item headings at the start of a line (``Item 1A. Risk
Factors``, ``ITEM 7 -``, ``Item 2.02``). A heading appears twice in most filings: once in
the table of contents and once before the section. Table-of-contents rows (a table row or
a line that ends in a page number: ``Item 9. | Changes in ... | 51``) and cross-references
(``Item 7 of this report``) are never headings, whatever their length, so a short real
section ("None.") wins over its contents row. Page footers (``Apple Inc. | 2024 Form 10-K
| 18``, a lone page number, "Table of Contents") are dropped from item text.

Item keys follow the Financial Datasets names: ``Item-1A`` (10-K), ``Part-1,Item-2``
(10-Q), ``Item-2.02`` (8-K).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ITEMS_10K: dict[str, str] = {
    "Item-1": "Business",
    "Item-1A": "Risk Factors",
    "Item-1B": "Unresolved Staff Comments",
    "Item-1C": "Cybersecurity",
    "Item-2": "Properties",
    "Item-3": "Legal Proceedings",
    "Item-4": "Mine Safety Disclosures",
    "Item-5": "Market for Registrant's Common Equity and Related Stockholder Matters",
    "Item-6": "[Reserved]",
    "Item-7": "Management's Discussion and Analysis of Financial Condition and Results of "
              "Operations",
    "Item-7A": "Quantitative and Qualitative Disclosures About Market Risk",
    "Item-8": "Financial Statements and Supplementary Data",
    "Item-9": "Changes in and Disagreements with Accountants on Accounting and Financial "
              "Disclosure",
    "Item-9A": "Controls and Procedures",
    "Item-9B": "Other Information",
    "Item-9C": "Disclosure Regarding Foreign Jurisdictions that Prevent Inspections",
    "Item-10": "Directors, Executive Officers and Corporate Governance",
    "Item-11": "Executive Compensation",
    "Item-12": "Security Ownership of Certain Beneficial Owners and Management",
    "Item-13": "Certain Relationships and Related Transactions, and Director Independence",
    "Item-14": "Principal Accountant Fees and Services",
    "Item-15": "Exhibit and Financial Statement Schedules",
    "Item-16": "Form 10-K Summary",
}

ITEMS_10Q: dict[str, str] = {
    "Part-1,Item-1": "Financial Statements",
    "Part-1,Item-2": "Management's Discussion and Analysis of Financial Condition and "
                     "Results of Operations",
    "Part-1,Item-3": "Quantitative and Qualitative Disclosures About Market Risk",
    "Part-1,Item-4": "Controls and Procedures",
    "Part-2,Item-1": "Legal Proceedings",
    "Part-2,Item-1A": "Risk Factors",
    "Part-2,Item-2": "Unregistered Sales of Equity Securities and Use of Proceeds",
    "Part-2,Item-3": "Defaults Upon Senior Securities",
    "Part-2,Item-4": "Mine Safety Disclosures",
    "Part-2,Item-5": "Other Information",
    "Part-2,Item-6": "Exhibits",
}

ITEMS_8K: dict[str, str] = {
    "Item-1.01": "Entry into a Material Definitive Agreement",
    "Item-1.02": "Termination of a Material Definitive Agreement",
    "Item-1.05": "Material Cybersecurity Incidents",
    "Item-2.01": "Completion of Acquisition or Disposition of Assets",
    "Item-2.02": "Results of Operations and Financial Condition",
    "Item-2.03": "Creation of a Direct Financial Obligation",
    "Item-2.05": "Costs Associated with Exit or Disposal Activities",
    "Item-2.06": "Material Impairments",
    "Item-3.01": "Notice of Delisting or Failure to Satisfy a Listing Rule",
    "Item-4.01": "Changes in Registrant's Certifying Accountant",
    "Item-4.02": "Non-Reliance on Previously Issued Financial Statements",
    "Item-5.02": "Departure or Election of Directors or Officers; Compensatory Arrangements",
    "Item-5.03": "Amendments to Articles of Incorporation or Bylaws",
    "Item-5.07": "Submission of Matters to a Vote of Security Holders",
    "Item-7.01": "Regulation FD Disclosure",
    "Item-8.01": "Other Events",
    "Item-9.01": "Financial Statements and Exhibits",
}

ITEM_CATALOG: dict[str, dict[str, str]] = {"10-K": ITEMS_10K, "10-Q": ITEMS_10Q,
                                           "8-K": ITEMS_8K}

_ITEM_HEADING = re.compile(
    r"^[ \t]*item[ \t\u00a0]*(\d{1,2}(?:\.\d{2})?[A-Ca-c]?)\b[ \t\u00a0]*[.:\-\u2013\u2014]?",
    re.IGNORECASE | re.MULTILINE,
)
_PART_HEADING = re.compile(r"^[ \t]*part[ \t\u00a0]+(I{1,2}|1|2)\b", re.IGNORECASE | re.MULTILINE)


def base_form(filing_type: str) -> str:
    """``10-K/A`` -> ``10-K``; 10-K405 style variants -> ``10-K``."""
    upper = filing_type.upper().split("/")[0]
    for form in ("10-K", "10-Q", "8-K"):
        if upper.startswith(form):
            return form
    return upper


def html_to_text(html: str) -> str:
    """Readable plain text of an (inline-XBRL) HTML filing document."""
    from bs4 import BeautifulSoup, Tag  # on first use: start-up does not pay for the parser

    soup = BeautifulSoup(html, "html.parser")
    for tag in soup(["script", "style", "head", "ix:header"]):
        tag.decompose()
    for table in soup.find_all("table"):
        lines = []
        for tr in table.find_all("tr"):
            cells = _with_units([c.get_text(" ", strip=True) for c in tr.find_all(["td", "th"])])
            if cells:
                lines.append(" | ".join(cells))
        table.replace_with("\n" + "\n".join(lines) + "\n")
    for tag in soup.find_all(["p", "div", "br", "tr", "li", "h1", "h2", "h3", "h4", "h5", "h6"]):
        if isinstance(tag, Tag):
            tag.insert_after("\n")
    text = soup.get_text()
    text = text.replace("\u00a0", " ").replace("\u200b", "")
    text = re.sub(r"[ \t]+", " ", text)
    text = re.sub(r" *\n *", "\n", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


_NUMBER_CELL = re.compile(r"\(?[-−–]?\d[\d,]*(?:\.\d+)?\)?|[—–-]+")
"""A table cell that holds one number as a filing writes it (``391,035``, ``(4)``, ``—``)."""
_SPACED_PERCENT = re.compile(r"(?<=\d|\))\s+%$")


def _with_units(cells: list[str]) -> list[str]:
    """A table row's non-empty cells, each unit kept with its number: a filing puts the
    ``$`` before an amount, the ``%`` after a rate and the ``)`` of a negative in cells of
    their own (``$ | 391,035``, ``24.1 | %``, ``(1,234 | )``), which read as
    ``$391,035``, ``24.1%`` and ``(1,234)``. A unit cell beside no number (a header's ``$``
    and ``%`` over its columns) is left out."""
    out: list[str] = []
    number_before = False  # the cell right before (empty cells aside) is a number
    dollar = ""
    for cell in cells:
        if not cell:
            continue
        if cell in ("$", "US$"):
            dollar, number_before = cell, False
            continue
        if cell in ("%", ")"):
            if number_before and not out[-1].endswith(cell):
                out[-1] += cell
            number_before = False
            dollar = ""
            continue
        cell = _SPACED_PERCENT.sub("%", cell)  # "2 %": an inline tag's space
        number_before = bool(_NUMBER_CELL.fullmatch(cell))
        out.append(dollar + cell if dollar and number_before else cell)
        dollar = ""
    return out


@dataclass(frozen=True, slots=True)
class _Heading:
    key: str
    start: int


def _item_key(form: str, number: str, part: str | None) -> str:
    number = number.upper()
    if form == "10-Q":
        return f"Part-{part or '1'},Item-{number}"
    return f"Item-{number}"


def _part_number(raw: str) -> str:
    return "2" if raw.upper() in {"II", "2"} else "1"


# A contents row: the heading line is a table row, or ends in a page number.
_TOC_LINE = re.compile(r"\|.*\|\s*\d{1,3}\s*$|\|\s*\d{1,3}\s*$|[A-Za-z)\]][ .]{1,}\d{1,3}\s*$")
# A cross-reference at the start of a line: "Item 7 of this Form 10-K", "Item 1A (Risk ...)".
_CROSS_REFERENCE = re.compile(r"^\s*(of|in|and|to|under|above|below|herein)\b", re.IGNORECASE)
_FOOTER = re.compile(r"^(?:\d{1,3}|table of contents|.{0,80}\|\s*(?:q\d\s+)?(?:\d{4}\s+)?form\s+10-[kq]\s*\|\s*\d{1,3})$",
                     re.IGNORECASE)


def _is_reference(text: str, match: re.Match[str]) -> bool:
    """True when an ``Item N`` at the start of a line is a contents row or a cross-reference."""
    line_end = text.find("\n", match.start())
    line = text[match.start():line_end if line_end >= 0 else len(text)]
    return bool(_TOC_LINE.search(line) or _CROSS_REFERENCE.match(text, match.end()))


def _strip_footers(body: str) -> str:
    return "\n".join(line for line in body.split("\n") if not _FOOTER.match(line.strip())).strip()


def _headings(text: str, form: str) -> list[_Heading]:
    parts = [(m.start(), _part_number(m.group(1))) for m in _PART_HEADING.finditer(text)]
    heads: list[_Heading] = []
    for match in _ITEM_HEADING.finditer(text):
        number = match.group(1)
        if (form == "8-K") != ("." in number):
            continue
        if _is_reference(text, match):
            continue
        part = None
        for pos, num in parts:
            if pos < match.start():
                part = num
        heads.append(_Heading(_item_key(form, number, part), match.start()))
    # Part headings end the item before them but are not items themselves.
    return heads + [_Heading("", pos) for pos, _ in parts]


def split_items(text: str, filing_type: str) -> dict[str, str]:
    """Map item keys to their text. Contents rows and cross-references are skipped; of
    two real headings for one item (a repeated heading), the longer section wins."""
    form = base_form(filing_type)
    heads = sorted(_headings(text, form), key=lambda h: h.start)
    best: dict[str, tuple[int, str]] = {}
    for i, head in enumerate(heads):
        if not head.key:
            continue
        end = heads[i + 1].start if i + 1 < len(heads) else len(text)
        body = _strip_footers(text[head.start:end])
        if len(body) >= len(best.get(head.key, (0, ""))[1]):  # ties: the later one
            best[head.key] = (head.start, body)
    return {key: body for key, (_, body) in sorted(best.items(), key=lambda kv: kv[1][0])}


_ALIAS_CLEAN = re.compile(r"[^a-z0-9.]+")

# Common names for sections, per form: (words to look for, 10-K key, 10-Q key).
_TOPIC_ALIASES: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("md&a", "mda", "management's discussion", "management discussion"),
     "Item-7", "Part-1,Item-2"),
    (("risk factor", "risks"), "Item-1A", "Part-2,Item-1A"),
    (("market risk",), "Item-7A", "Part-1,Item-3"),
    (("financial statement",), "Item-8", "Part-1,Item-1"),
    (("legal",), "Item-3", "Part-2,Item-1"),
    (("controls",), "Item-9A", "Part-1,Item-4"),
    (("business", "overview"), "Item-1", ""),
    (("cyber",), "Item-1C", ""),
    (("properties",), "Item-2", ""),
    (("compensation",), "Item-11", ""),
)


def normalize_item(filing_type: str, item: str) -> str | None:
    """Map what a model or user wrote (``1A``, ``item 7``, ``Risk Factors``, ``MD&A``,
    ``Part II Item 1A``, ``2.02``) to a catalog key, or None when unknown."""
    form = base_form(filing_type)
    catalog = ITEM_CATALOG.get(form, {})
    raw = item.strip()
    if raw in catalog:
        return raw
    lowered = raw.lower().replace("\u2019", "'")
    for key, title in catalog.items():
        if lowered in (title.lower(), key.lower()):
            return key
    part = None
    part_match = re.search(r"part[\s\-_]*(ii|i|2|1)\b", lowered)
    if part_match:
        part = _part_number(part_match.group(1))
        lowered = lowered[:part_match.start()] + lowered[part_match.end():]
    number_match = re.search(r"(\d{1,2}(?:\.\d{2})?[a-c]?)\b", _ALIAS_CLEAN.sub(" ", lowered))
    if number_match:
        for candidate_part in ([part] if part else ["1", "2"]):
            key = _item_key(form, number_match.group(1), candidate_part)
            if key in catalog:
                return key
    for words, key_10k, key_10q in _TOPIC_ALIASES:
        key = key_10q if form == "10-Q" else key_10k
        if key in catalog and any(w in lowered for w in words):
            return key
    for key, title in catalog.items():
        if len(lowered) > 3 and lowered in title.lower():
            return key
    return None
