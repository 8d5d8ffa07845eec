"""The source ledger: every successful tool result of a session, with a short id.

The executor adds each successful result (``S1``, ``S2``, ... in the order they finish);
the id heads the result the model sees, is shown in the tool row and written to the
scratchpad. The ledger lives outside the model's view (in the session's
:class:`~dexter.agent.conversation.Conversation`), so an id stays valid after microcompact,
truncation or compaction removed the result itself, and sub-agents add to their parent's
ledger. It keeps what a source *is* (tool, arguments, title, links, when) and the numbers
its text holds, not the text: that is what citations and number verification need.
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
from dexter.evidence.numbers import Claim, Kind, extract_claims, source_numbers
from dexter.evidence.tables import DataTable, table_from_dict, table_to_dict

SourceKind = Literal["data", "calculation", "user"]
ID_PREFIX = "S"
_ACCESSION = re.compile(r"/Archives/edgar/data/\d+/(\d{10})(\d{2})(\d{6})(?:/|$)")
_ACCESSION_DASHED = re.compile(r"\b(\d{10}-\d{2}-\d{6})\b")


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
    """The numbers its text holds, sorted."""
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
        self._pairs: list[tuple[float, str]] = []
        """Every number of every source with its id, sorted. New sources' pairs wait in
        ``_pending`` and are merged at the next lookup (two sorted runs: the merge is
        linear), so adding a result during a run does not re-sort every earlier number."""
        self._pending: list[tuple[float, str]] = []

    @classmethod
    def restore(cls, sources: Iterable[Source]) -> SourceLedger:
        """A ledger holding ``sources`` as they were saved (a resumed session's): their ids
        are kept, and the next :meth:`add` continues the numbering."""
        ledger = cls()
        for number, source in enumerate(sources, 1):
            if source.id != f"{ID_PREFIX}{number}":
                raise ValueError(f"source ids must run S1, S2, ...; found {source.id!r}")
            ledger._sources[source.id] = source
        ledger._pairs = sorted((n, s.id) for s in ledger._sources.values() for n in s.numbers)
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
        source = Source(
            id=source_id, tool=tool, args=dict(args), title=title or default_title(tool, args),
            urls=links, kind=kind,
            fetched_at=datetime.now(UTC).isoformat(timespec="seconds"),
            accession=accession_of(links, content),
            numbers=tuple(sorted(source_numbers(content))),
            inputs=tuple(extract_claims(expression)) if expression else (),
            tables=tuple(t.with_source_id(source_id) for t in tables),
            documents=tuple(documents),
        )
        self._sources[source_id] = source
        self._pending.extend((n, source_id) for n in source.numbers)
        return source

    def find(self, low: float, high: float, kinds: Iterable[SourceKind] = ("data", "user")
             ) -> str | None:
        """The id of a source of one of ``kinds`` holding a number in ``[low, high]``."""
        if self._pending:
            self._pairs = sorted(self._pairs + sorted(self._pending))
            self._pending = []
        pairs = self._pairs
        wanted = set(kinds)
        i = bisect.bisect_left(pairs, (low, ""))
        while i < len(pairs) and pairs[i][0] <= high:
            source = self._sources[pairs[i][1]]
            if source.kind in wanted:
                return source.id
            i += 1
        return None


def source_to_dict(source: Source) -> dict[str, Any]:
    """A JSON-ready form of a source: what it is and its numbers, not its text."""
    return {
        "id": source.id, "tool": source.tool, "args": source.args, "title": source.title,
        "urls": list(source.urls), "kind": source.kind, "fetched_at": source.fetched_at,
        "accession": source.accession, "numbers": list(source.numbers),
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
        if any(c.get("kind") not in get_args(Kind) for c in data.get("inputs", [])):
            raise ValueError("a calculation input has an unknown kind")
        inputs = tuple(Claim(text=str(c["text"]), start=int(c["start"]), end=int(c["end"]),
                             value=float(c["value"]), tolerance=float(c["tolerance"]),
                             kind=c["kind"], negative=bool(c.get("negative", False)),
                             scaled=bool(c.get("scaled", False)))
                       for c in data.get("inputs", []))
        tables = data.get("tables", [])
        documents = data.get("documents", [])
        if not isinstance(tables, list) or not isinstance(documents, list):
            raise ValueError("a source's tables and documents must be lists")
        return Source(id=str(data["id"]), tool=str(data["tool"]), args=args,
                      title=str(data.get("title", "")), urls=tuple(str(u) for u in urls),
                      kind=kind, fetched_at=str(data.get("fetched_at", "")),
                      accession=str(data.get("accession", "")), numbers=tuple(numbers),
                      inputs=inputs, tables=tuple(table_from_dict(t) for t in tables),
                      documents=tuple(document_from_dict(d) for d in documents))
    except (KeyError, TypeError) as exc:
        raise ValueError(f"a source is missing or has a wrong field ({exc})") from None


def default_title(tool: str, args: Mapping[str, Any]) -> str:
    """A short description from the tool and its main argument."""
    for key in ("query", "path", "url", "expression", "ticker", "question", "name"):
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            text = " ".join(value.split())
            return f"{tool}: {text[:120]}{'…' if len(text) > 120 else ''}"
    return tool


def accession_of(urls: Iterable[str], content: str = "") -> str:
    """The SEC accession number (``0000320193-24-000123``) in a filing URL or the text."""
    for url in urls:
        match = _ACCESSION.search(url)
        if match:
            return "-".join(match.groups())
    match = _ACCESSION_DASHED.search(content[:20_000])
    return match.group(1) if match else ""
