"""The documents a source read: a filing's text, named the way a reader cites it.

A filing tool hands the model the text of a 10-K's items; a report must cite the filing
itself (form, accession number, filing date, the period it covers, its primary document
``aapl-20240928.htm``), not the API that listed it. So when a result holds filing text,
:func:`documents_from_data` keeps what names the document, and the source ledger keeps it
beside the source (``Source.documents``), like the tables. Pure functions; nothing here
formats for a reader.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

MAX_DOCUMENTS = 20
"""Documents kept per source."""


@dataclass(frozen=True, slots=True)
class Document:
    """One document whose text a source holds."""

    url: str
    form: str = ""
    accession: str = ""
    filed: str = ""
    period_end: str = ""
    """The date of the period it reports on (``2024-09-28``), when it says."""
    company: str = ""
    """The company's name or ticker."""
    sections: tuple[str, ...] = ()
    """The parts read, as the filing names them (``Item 7 · Management's Discussion...``)."""

    def map_text(self, fn: Callable[[str], str]) -> Document:
        """This document with ``fn`` applied to its texts (the executor's secret scrubber)."""
        return Document(fn(self.url), fn(self.form), self.accession, self.filed,
                        self.period_end, fn(self.company), tuple(fn(s) for s in self.sections))

    @property
    def name(self) -> str:
        """The document's file name (``aapl-20240928.htm``), or '' for a folder."""
        tail = self.url.rstrip("/").rsplit("/", 1)[-1] if self.url else ""
        return tail if "." in tail and not self.url.endswith("/") else ""


def documents_from_data(data: Any, depth: int = 0) -> list[Document]:
    """The filings in ``data`` whose text was read: an object with an accession number, a
    form, a URL and ``items`` (``[{name, title, text}]``), or a list or ``filings`` of them."""
    found: list[Document] = []
    if depth > 3:
        return found
    if isinstance(data, list):
        for item in data[:MAX_DOCUMENTS]:
            found.extend(documents_from_data(item, depth + 1))
    elif isinstance(data, Mapping):
        document = _document(data)
        if document is not None:
            found.append(document)
        elif isinstance(data.get("filings"), list):
            found.extend(documents_from_data(data["filings"], depth + 1))
    return found[:MAX_DOCUMENTS]


def _document(data: Mapping[str, Any]) -> Document | None:
    url, accession = data.get("url"), data.get("accession_number")
    items = data.get("items")
    if not (isinstance(url, str) and url and isinstance(accession, str)
            and isinstance(items, list)):
        return None
    sections = []
    for item in items:
        if isinstance(item, Mapping) and item.get("name"):
            name = str(item["name"]).replace("Item-", "Item ").replace("-", " ")
            title = str(item.get("title") or "")
            sections.append(f"{name} · {title}" if title else name)
    return Document(url=url, form=_text(data.get("filing_type") or data.get("form")),
                    accession=accession, filed=_text(data.get("filing_date")),
                    period_end=_text(data.get("report_date")),
                    company=_text(data.get("company_name") or data.get("ticker")),
                    sections=tuple(sections))


def document_to_dict(document: Document) -> dict[str, Any]:
    """A JSON-ready form (saved sessions keep their sources' documents)."""
    return {k: list(v) if isinstance(v, tuple) else v
            for k, v in dataclasses.asdict(document).items()}


def document_from_dict(data: Any) -> Document:
    """The document :func:`document_to_dict` wrote; ``ValueError`` when it is not one."""
    if not isinstance(data, Mapping) or not isinstance(data.get("url"), str):
        raise ValueError("a document must be a JSON object with a url")
    sections = data.get("sections", [])
    if not isinstance(sections, list):
        raise ValueError("a document's sections must be a list")
    return Document(url=str(data["url"]), form=_text(data.get("form")),
                    accession=_text(data.get("accession")), filed=_text(data.get("filed")),
                    period_end=_text(data.get("period_end")), company=_text(data.get("company")),
                    sections=tuple(str(s) for s in sections))


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""
