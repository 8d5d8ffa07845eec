"""The source ledger: every successful tool result of a session, with a short id.

The executor adds each successful result (``S1``, ``S2``, ... in the order they finish);
the id heads the result the model sees, is shown in the tool row and written to the
scratchpad. The ledger lives outside the model's view (in the session's
:class:`~dexter.agent.conversation.Conversation`), so an id stays valid after microcompact,
truncation or compaction removed the result itself, and sub-agents add to their parent's
ledger. It keeps what a source *is* (tool, arguments, title, links, when, which company)
and the numbers its text holds (:mod:`dexter.evidence.sourcetext`: the data, not the
framing), not the text: that is what citations and number verification need. The ledger's
:class:`~dexter.evidence.index.EvidenceIndex` holds every number of every source, sorted,
for the check.
"""

from __future__ import annotations

import bisect
import dataclasses
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, get_args

from dexter.evidence.documents import Document, document_from_dict, document_to_dict
from dexter.evidence.index import EvidenceIndex, source_evidence
from dexter.evidence.numbers import Claim, Kind, extract_claims
from dexter.evidence.periods import calendar_in
from dexter.evidence.sourcetext import Quantity, source_quantities
from dexter.evidence.tables import DataTable, table_from_dict, table_to_dict

SourceKind = Literal["data", "calculation", "user"]
ID_PREFIX = "S"
_ACCESSION = re.compile(r"/Archives/edgar/data/\d+/(\d{10})(\d{2})(\d{6})(?:/|$)")
_ACCESSION_DASHED = re.compile(r"\b(\d{10}-\d{2}-\d{6})\b")
_TICKER_IN_TEXT = re.compile(r'"(?:ticker|symbol)"\s*:\s*"([A-Z][A-Z.\-]{0,9})"|'
                             r"^-\s*(?:ticker|symbol):\s*([A-Z][A-Z.\-]{0,9})\s*$|"
                             r"\w\[([A-Z][A-Z.\-]{0,9})[,\]]", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Source:
    """One successful tool result, as the answer can cite it."""

    id: str
    tool: str
    args: dict[str, Any]
    title: str
    urls: tuple[str, ...] = ()
    kind: SourceKind = "data"
    fetched_at: str = ""
    accession: str = ""
    numbers: tuple[float, ...] = field(default=(), repr=False)
    """The magnitudes of the numbers its text holds, sorted."""
    quantities: tuple[Quantity, ...] = field(default=(), repr=False)
    """The numbers its text holds, with sign, stated scale and table row."""
    entity: str = ""
    """The company it is about (a ticker), when it is about one."""
    fiscal_year_end: str = ""
    """``MMDD``: the fiscal year end its text or its tables state ('' when none)."""
    inputs: tuple[Claim, ...] = field(default=(), repr=False)
    """For a calculation: the figures its expression used."""
    tables: tuple[DataTable, ...] = field(default=(), repr=False)
    """The records it fetched, as numbers (for reports, spreadsheets and charts)."""
    documents: tuple[Document, ...] = field(default=(), repr=False)
    """The filings whose text it read (what a report cites)."""

    @property
    def url(self) -> str:
        """The first link (SEC filing, web page, file path), or ''."""
        return self.urls[0] if self.urls else ""

    def citation(self) -> dict[str, str]:
        """What ``done.citations`` lists for this source."""
        return {"id": self.id, "tool": self.tool, "title": self.title, "url": self.url}

    def has_number(self, low: float, high: float) -> bool:
        """Whether some number of this source lies in ``[low, high]``."""
        i = bisect.bisect_left(self.numbers, low)
        return i < len(self.numbers) and self.numbers[i] <= high


class SourceLedger:
    """The sources of one session, by id. Changed only through :meth:`add` (a saved
    session's is rebuilt with :meth:`restore`)."""

    def __init__(self) -> None:
        self._sources: dict[str, Source] = {}
        self.evidence = EvidenceIndex()
        """Every number of every source, sorted by magnitude. New sources' numbers are
        merged at the next lookup (sorted runs: the merge is linear), so adding a result
        during a run does not re-sort every earlier number."""

    @classmethod
    def restore(cls, sources: Iterable[Source]) -> SourceLedger:
        """A ledger holding ``sources`` as they were saved (a resumed session's): their ids
        are kept, and the next :meth:`add` continues the numbering."""
        ledger = cls()
        for number, source in enumerate(sources, 1):
            if source.id != f"{ID_PREFIX}{number}":
                raise ValueError(f"source ids must run S1, S2, ...; found {source.id!r}")
            ledger._sources[source.id] = source
            if source.kind != "calculation":
                ledger.evidence.add(source_evidence(source))
        return ledger

    def __len__(self) -> int:
        return len(self._sources)

    def __iter__(self) -> Iterator[Source]:
        return iter(self._sources.values())

    def get(self, source_id: str) -> Source | None:
        """The source with this id (``S3``), or None."""
        return self._sources.get(source_id.upper())

    @property
    def sources(self) -> list[Source]:
        """Every source, oldest first."""
        return list(self._sources.values())

    def evidence_count(self) -> int:
        """Sources of fetched data (not calculations or the user's answers)."""
        return sum(1 for s in self._sources.values() if s.kind == "data")

    def add(self, tool: str, args: Mapping[str, Any], content: str, *,
            title: str = "", urls: Iterable[str] = (), kind: SourceKind = "data",
            expression: str = "", tables: Iterable[DataTable] = (),
            documents: Iterable[Document] = ()) -> Source:
        """Register one successful result and return it with its new id."""
        source_id = f"{ID_PREFIX}{len(self._sources) + 1}"
        links = tuple(dict.fromkeys(u for u in urls if u))
        held = tuple(t.with_source_id(source_id) for t in tables)
        quantities = tuple(source_quantities(content)) if kind != "calculation" else \
            tuple(Quantity(v, abs(v)) for v in _result_numbers(content))
        source = Source(
            id=source_id, tool=tool, args=dict(args), title=title or default_title(tool, args),
            urls=links, kind=kind,
            fetched_at=datetime.now(UTC).isoformat(timespec="seconds"),
            accession=accession_of(links, content),
            numbers=tuple(sorted(abs(q.value) for q in quantities)),
            quantities=quantities, entity=entity_of(args, held, content),
            fiscal_year_end=fiscal_year_end_of(held, content) if kind == "data" else "",
            inputs=tuple(extract_claims(expression)) if expression else (),
            tables=held,
            documents=tuple(documents),
        )
        self._sources[source_id] = source
        if kind != "calculation":
            self.evidence.add(source_evidence(source))
        return source

    def find(self, low: float, high: float) -> str | None:
        """The id of a source of fetched data (or of the user's words) holding a number
        whose magnitude lies in ``[low, high]``, in base units."""
        for entry in self.evidence.around(low, high):
            source = self._sources.get(entry.source)
            if source is not None and source.kind in ("data", "user"):
                return source.id
        return None


def source_to_dict(source: Source) -> dict[str, Any]:
    """A JSON-ready form of a source: what it is and its numbers, not its text."""
    return {
        "id": source.id, "tool": source.tool, "args": source.args, "title": source.title,
        "urls": list(source.urls), "kind": source.kind, "fetched_at": source.fetched_at,
        "accession": source.accession, "numbers": list(source.numbers),
        "quantities": [[q.value, q.written, q.scale, q.tolerance, q.percent, q.row, q.column]
                       for q in source.quantities],
        **({"entity": source.entity} if source.entity else {}),
        **({"fiscal_year_end": source.fiscal_year_end} if source.fiscal_year_end else {}),
        "inputs": [dataclasses.asdict(claim) for claim in source.inputs],
        **({"tables": [table_to_dict(t) for t in source.tables]} if source.tables else {}),
        **({"documents": [document_to_dict(d) for d in source.documents]}
           if source.documents else {}),
    }


def source_from_dict(data: Any) -> Source:
    """The source :func:`source_to_dict` wrote; ``ValueError`` when ``data`` is not one."""
    if not isinstance(data, dict):
        raise ValueError("a source must be a JSON object")
    try:
        kind = data.get("kind", "data")
        if kind not in ("data", "calculation", "user"):
            raise ValueError(f"unknown source kind {kind!r}")
        args = data.get("args", {})
        urls = data.get("urls", [])
        if not isinstance(args, dict) or not isinstance(urls, list):
            raise ValueError("a source's args must be an object and its urls a list")
        numbers = sorted(float(n) for n in data.get("numbers", []))
        listed = data.get("quantities")
        if listed is None:  # saved before quantities were kept: the numbers as written
            quantities = tuple(Quantity(n, abs(n)) for n in numbers)
        elif isinstance(listed, list):
            quantities = tuple(Quantity(float(q[0]), float(q[1]), float(q[2]), float(q[3]),
                                        bool(q[4]), str(q[5]), str(q[6])) for q in listed)
        else:
            raise ValueError("a source's quantities must be a list")
        if any(c.get("kind") not in get_args(Kind) for c in data.get("inputs", [])):
            raise ValueError("a calculation input has an unknown kind")
        inputs = tuple(Claim(text=str(c["text"]), start=int(c["start"]), end=int(c["end"]),
                             value=float(c["value"]), tolerance=float(c["tolerance"]),
                             kind=c["kind"], negative=bool(c.get("negative", False)),
                             scaled=bool(c.get("scaled", False)),
                             written=float(c.get("written", c["value"])),
                             digits=int(c.get("digits", 0)), parens=bool(c.get("parens", False)))
                       for c in data.get("inputs", []))
        tables = data.get("tables", [])
        documents = data.get("documents", [])
        if not isinstance(tables, list) or not isinstance(documents, list):
            raise ValueError("a source's tables and documents must be lists")
        return Source(id=str(data["id"]), tool=str(data["tool"]), args=args,
                      title=str(data.get("title", "")), urls=tuple(str(u) for u in urls),
                      kind=kind, fetched_at=str(data.get("fetched_at", "")),
                      accession=str(data.get("accession", "")), numbers=tuple(numbers),
                      quantities=quantities, entity=str(data.get("entity", "") or ""),
                      fiscal_year_end=str(data.get("fiscal_year_end", "") or ""),
                      inputs=inputs, tables=tuple(table_from_dict(t) for t in tables),
                      documents=tuple(document_from_dict(d) for d in documents))
    except (KeyError, TypeError, IndexError) as exc:
        raise ValueError(f"a source is missing or has a wrong field ({exc})") from None


def default_title(tool: str, args: Mapping[str, Any]) -> str:
    """A short description from the tool and its main argument."""
    for key in ("query", "path", "url", "expression", "ticker", "question", "name"):
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            text = " ".join(value.split())
            return f"{tool}: {text[:120]}{'…' if len(text) > 120 else ''}"
    return tool


def entity_of(args: Mapping[str, Any], tables: Iterable[DataTable], content: str) -> str:
    """The company a source is about: its call's ticker, its tables' company, or the one
    ticker its text names in a data key or field; '' when none or several."""
    for key in ("ticker", "symbol"):
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip().upper()
    named = {t.ticker for t in tables if t.ticker}
    if len(named) == 1:
        return named.pop()
    if named:
        return ""
    found = {next(g for g in m.groups() if g) for m in _TICKER_IN_TEXT.finditer(content[:200_000])}
    return found.pop() if len(found) == 1 else ""


def fiscal_year_end_of(tables: Iterable[DataTable], content: str) -> str:
    """``MMDD`` of the fiscal year end a source states: its annual rows' end date, or the
    "fiscal year ended ..." its text names; '' when neither."""
    for table in tables:
        for label, date in zip(table.index, table.dates, strict=False):
            if label.startswith("FY") and len(date) == 10:
                return f"{date[5:7]}{date[8:10]}"
    found = calendar_in(content)
    return found.text() if found is not None else ""


def _result_numbers(content: str) -> list[float]:
    """A calculation's result numbers (its evidence text is the result, as is)."""
    out = []
    for token in content.split():
        try:
            value = float(token.replace(",", "").rstrip("%"))
        except ValueError:
            continue
        if value == value and abs(value) != float("inf"):
            out.append(value)
    return out


def accession_of(urls: Iterable[str], content: str = "") -> str:
    """The SEC accession number (``0000320193-24-000123``) in a filing URL or the text."""
    for url in urls:
        match = _ACCESSION.search(url)
        if match:
            return "-".join(match.groups())
    match = _ACCESSION_DASHED.search(content[:20_000])
    return match.group(1) if match else ""
