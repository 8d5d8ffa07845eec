"""Every number the ledger's sources hold, as evidence a figure can be matched against.

Each :class:`Evidence` is one number of one source with what is known about it:

- ``table``: a cell of a :class:`~dexter.evidence.tables.DataTable` (a fetched record): its
  field (``revenue``), the row's period (``FY2024``) and company, its exact value;
- ``row``: a number in a table of the source's text (a filing's statement, a markdown
  table): its row's label (``Total net sales``), its column's period when the header says
  one (``2024``, ``Three Months Ended June 28, 2025``), the unit the table states;
- ``text``: a number in prose, with the scale written next to it;
- ``calc``: a calculator result (added only while checking, once its inputs are grounded).

Entries are kept sorted by magnitude, so the candidates for a figure are one range lookup.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Literal

from dexter import metrics
from dexter.evidence.periods import Calendar, RowPeriod, column_period, find_periods, row_period
from dexter.evidence.tables import DataTable

if TYPE_CHECKING:
    from dexter.evidence.ledger import Source

Where = Literal["table", "row", "text", "calc"]
EvidenceKind = Literal["money", "per_share", "shares", "percent", "multiple", "number"]
_MULTIPLE_FIELDS = re.compile(r"_ratio$|^debt_to_equity$|_coverage$|_turnover$")
_NEUTRAL_LABEL = re.compile(r"\b(?:total|net|consolidated|reported|gaap|\(\d+\)|\d\)|,|"
                            r"the|company|attributable to .*|in millions|in billions)\b",
                            re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Evidence:
    """One number of one source (see the module docstring)."""

    source: str
    value: float
    """Signed, in base units (percent points for a percentage)."""
    written: float
    """Unsigned, as written (before a stated scale)."""
    kind: EvidenceKind
    where: Where
    fields: tuple[str, ...] = ()
    """The lexicon fields it is a value of (empty: unknown, or a line the lexicon lacks)."""
    label: str = ""
    """The line it is on, as a reader says it (``revenue``, ``Total net sales``)."""
    period: RowPeriod | None = None
    entity: str = ""
    table: str = ""
    row: str = ""
    column: str = ""
    tolerance: float = 0.0
    scaled: bool = False
    """A stated scale was applied (``391,035`` in a table "in millions")."""

    @property
    def magnitude(self) -> float:
        """The absolute value."""
        return abs(self.value)

    def cell(self) -> dict[str, object]:
        """The ``cell`` of ``done.verification.figures``: where this number is."""
        return {"source": self.source, "table": self.table, "row": self.row,
                "column": self.column, "value": self.value}


def _kind_of(column: str, unit: str) -> EvidenceKind:
    if unit == "ratio":
        return "percent"
    if _MULTIPLE_FIELDS.search(column):
        return "multiple"
    if unit.endswith("/share") or unit == "per share":
        return "per_share"
    if unit == "shares":
        return "shares"
    if unit and unit.isupper() and len(unit) == 3:
        return "money"
    return "number"


def reader_label(text: str) -> str:
    """A metric's label as a reason says it mid-sentence: ``revenue``, ``EPS, diluted``."""
    if len(text) > 1 and text[0].isupper() and text[1].islower():
        return text[0].lower() + text[1:]
    return text


@lru_cache(maxsize=4096)
def fields_of_label(label: str) -> tuple[tuple[str, ...], str]:
    """The lexicon fields a row label names when the label is just that metric (``Total
    net sales`` is revenue; ``Products`` under "Gross margin" is not a line the lexicon
    has), and the label as a reader reads it."""
    section, _, text = label.rpartition(": ")
    text = text.strip().removesuffix(" (as filed)")
    if section and not _structural(section):
        return (), label  # "Greater China: Net sales" is a segment's line
    known = metrics.metric(text.replace(" ", "_").lower())
    if known is not None:
        return (known.field,), reader_label(known.label)
    found = metrics.metrics_at(text)
    if len(found) == 1:
        a, b, ms = found[0]
        rest = _NEUTRAL_LABEL.sub(" ", text[:a] + " " + text[b:])
        for mention in reversed(find_periods(rest)):  # "Revenue FY2024" is revenue
            rest = rest[:mention.start] + rest[mention.end:]
        if not rest.strip(" :*-–—()'’,"):
            return tuple(m.field for m in ms), text
    return (), text


_STRUCTURE = re.compile(r"^(?:assets|liabilities|current|non-current|noncurrent|total|"
                        r"operating|other|cash flows?|investing|financing|earnings per share|"
                        r"shares used|net income|net sales|revenues?|cost of|denominator|"
                        r"numerator|adjustments|changes in|supplemental|income taxes|"
                        r"shareholders|stockholders|equity|liabilities and|basic|diluted|"
                        r"years? ended|three months|six months|nine months)", re.IGNORECASE)


def _structural(section: str) -> bool:
    """Whether a table section is a part of a statement (``Operating expenses``,
    ``Current assets``, ``Earnings per share``) rather than a segment or a product."""
    return bool(_STRUCTURE.match(section.strip())) or bool(metrics.metrics_at(section))


def table_evidence(source_id: str, table: DataTable, source_entity: str = ""
                   ) -> Iterator[Evidence]:
    """The cells of one data table."""
    periods: list[RowPeriod | None] = []
    entities: list[str] = []
    by_period = table.index_name in ("period", "date")
    for i, label in enumerate(table.index):
        date = table.dates[i] if table.dates else ""
        periods.append(row_period(label, date, table.title) if by_period else None)
        entities.append(table.ticker or source_entity if by_period or table.index_name
                        not in ("ticker", "symbol") else label)
    for column in table.columns:
        if not column.numeric:
            continue
        known = metrics.metric(column.name)
        fields = (known.field,) if known is not None else fields_of_label(
            metrics.label(column.name))[0]
        label = reader_label(known.label if known is not None else metrics.label(column.name))
        kind = _kind_of(column.name, column.unit)
        for i, value in enumerate(column.values):
            if not isinstance(value, float):
                continue
            shown = value * 100 if kind == "percent" else value
            yield Evidence(source_id, shown, abs(shown), kind, "table", fields, label,
                           periods[i], entities[i], table.title, table.index[i],
                           metrics.label(column.name))
            if kind == "percent" and abs(value) > 1.5:
                # a "ratio" already written in percent points
                yield Evidence(source_id, value, abs(value), kind, "table", fields, label,
                               periods[i], entities[i], table.title, table.index[i],
                               metrics.label(column.name))


def source_evidence(source: Source) -> list[Evidence]:
    """Every number of ``source`` as evidence."""
    out: list[Evidence] = []
    for table in source.tables:
        out.extend(table_evidence(source.id, table, source.entity))
    calendar = Calendar.parse(source.fiscal_year_end)
    for q in source.quantities:
        if q.row:
            fields, label = fields_of_label(q.row)
            period = column_period(q.column, calendar) if q.column else None
            if period is None:
                period = column_period(q.row.rpartition(": ")[2], calendar)
            kind: EvidenceKind = "percent" if q.percent else "number"
            out.append(Evidence(source.id, q.value, q.written, kind, "row", fields, label,
                                period, source.entity, "", q.row, q.column, q.tolerance,
                                q.scale != 1.0))
        else:
            out.append(Evidence(source.id, q.value, q.written,
                                "percent" if q.percent else "number", "text",
                                tolerance=q.tolerance, entity=source.entity,
                                scaled=q.scale != 1.0))
    return out


def _merged(entries: list[Evidence], keys: list[float], new: list[Evidence],
            key: Callable[[Evidence], float]) -> tuple[list[Evidence], list[float]]:
    """``entries`` (sorted by ``key``, whose values are ``keys``) with ``new`` (sorted by
    it) merged in, each new entry after the ones of an equal key, as a stable sort of the
    two after one another would place it. A few new numbers (a source joining a long
    session's ledger) are inserted where they go; many are sorted in with the rest."""
    if len(new) * 32 < len(entries):
        entries, keys = entries[:], keys[:]
        for e in new:
            value = key(e)
            at = bisect.bisect_right(keys, value)
            keys.insert(at, value)
            entries.insert(at, e)
        return entries, keys
    merged = sorted([*entries, *new], key=key)
    return merged, [key(e) for e in merged]


def _magnitude(e: Evidence) -> float:
    return e.magnitude


def _written(e: Evidence) -> float:
    return e.written


class EvidenceIndex:
    """The evidence of a ledger's sources, sorted by magnitude (and, for numbers a stated
    scale was applied to, by the number as written)."""

    def __init__(self) -> None:
        self._entries: list[Evidence] = []
        self._keys: list[float] = []
        self._written: list[Evidence] = []
        self._written_keys: list[float] = []
        self._pending: list[Evidence] = []
        self.by_source: dict[str, list[Evidence]] = {}
        self.by_field: dict[str, list[Evidence]] = {}
        """The structured entries of each lexicon field."""
        self.entities: set[str] = set()
        self._by_source_field: dict[tuple[str, str], list[Evidence]] = {}
        self._by_period: dict[str, dict[RowPeriod, dict[str, list[Evidence]]]] = {}

    def add(self, entries: Iterable[Evidence]) -> None:
        """Take new sources' evidence (merged in order at the next lookup; each field's
        entries grouped by period as they arrive, so a check after a source joins finds
        them grouped)."""
        by_period = self._by_period
        for e in entries:
            self._pending.append(e)
            self.by_source.setdefault(e.source, []).append(e)
            for name in e.fields:
                self.by_field.setdefault(name, []).append(e)
                if e.where in ("table", "row"):
                    self._by_source_field.setdefault((e.source, name), []).append(e)
                if e.period is not None:
                    by_period.setdefault(name, {}).setdefault(e.period, {}).setdefault(
                        e.entity, []).append(e)
            if e.entity:
                self.entities.add(e.entity)

    def _merge(self) -> None:
        if not self._pending:
            return
        pending = sorted(self._pending, key=_magnitude)
        self._entries, self._keys = _merged(self._entries, self._keys, pending, _magnitude)
        scaled = sorted((e for e in pending if e.scaled), key=_written)
        if scaled:
            self._written, self._written_keys = _merged(self._written, self._written_keys,
                                                        scaled, _written)
        self._pending = []

    def around(self, low: float, high: float, limit: int = 400) -> list[Evidence]:
        """Entries whose magnitude lies in ``[low, high]`` (at most ``limit``)."""
        if self._pending:
            self._merge()
        i = bisect.bisect_left(self._keys, low)
        j = bisect.bisect_right(self._keys, high, lo=i)
        return self._entries[i:min(j, i + limit)]

    def written_around(self, low: float, high: float, limit: int = 200) -> list[Evidence]:
        """Entries a stated scale was applied to whose number as written lies in
        ``[low, high]``."""
        self._merge()
        i = bisect.bisect_left(self._written_keys, low)
        j = bisect.bisect_right(self._written_keys, high, lo=i)
        return self._written[i:min(j, i + limit)]

    def periods_of(self, field: str) -> dict[RowPeriod, dict[str, list[Evidence]]]:
        """The structured entries of one field grouped by their period, then by company
        (entries without a period left out), so a period named in prose is compared once
        per period and a company's cells are found without reading every company's."""
        return self._by_period.get(field, {})

    def field_cells(self, field: str, sources: Iterable[str] | None = None) -> list[Evidence]:
        """The structured entries of one field, of some sources (all when None)."""
        if sources is None:
            return list(self.by_field.get(field, ()))
        return [e for sid in sources for e in self._by_source_field.get((sid, field), ())]

    def __len__(self) -> int:
        return len(self._entries) + len(self._pending)

    def cells(self, source_ids: Iterable[str] | None = None) -> Iterator[Evidence]:
        """The structured entries (table cells and text-table rows), of some sources."""
        ids = self.by_source.keys() if source_ids is None else source_ids
        for sid in ids:
            for e in self.by_source.get(sid, ()):
                if e.where in ("table", "row"):
                    yield e
