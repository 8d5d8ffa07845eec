"""The numeric facts of one filing, with their dimensions (pure functions, no I/O).

Company facts (``companyfacts``) hold only a company's consolidated values; the filing
itself also holds every dimensional fact: revenue of the Americas segment, of iPhone, of
China. Two forms carry them and both are read here:

- **inline XBRL** (the 10-K / 10-Q HTML since 2019): each number is an ``ix:nonFraction``
  with ``contextRef``, ``unitRef``, ``decimals``, ``scale`` (the displayed ``391,035`` with
  ``scale="6"`` is 391,035,000,000), ``sign="-"`` (a displayed positive that is negative)
  and ``format`` (``ixt:num-dot-decimal``, ``ixt:fixed-zero`` for a dash, the comma-decimal
  formats); the contexts and units sit in ``ix:resources``.
- an **XBRL instance** (``*_htm.xml`` or an older ``.xml``): facts are top-level elements
  with ``contextRef``; values are already in units.

A context gives the period (``startDate``/``endDate`` or ``instant``) and, in its
``segment``, the explicit members: ``us-gaap:StatementBusinessSegmentsAxis =
aapl:AmericasSegmentMember``. The same fact often appears several times in an inline
document (the statement and a note); duplicates are kept once.

:func:`parse_labels` reads a label linkbase (``*_lab.xml``), which names each member as
the filing does ("Wearables, Home and Accessories").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dexter.data.xml import XmlError, attr, child, descendants, local, parse_xml, text_of

if TYPE_CHECKING:
    from lxml import etree

Dimension = tuple[str, str]
"""``(axis, member)`` QNames, e.g. ``("srt:StatementGeographicalAxis", "country:US")``."""


@dataclass(frozen=True, slots=True)
class Context:
    """A context's period and explicit members (sorted by axis)."""

    start: str | None
    end: str
    instant: bool
    dims: tuple[Dimension, ...]


@dataclass(frozen=True, slots=True)
class XbrlFact:
    """One numeric fact: concept QName, value in units (scale and sign applied), unit."""

    concept: str
    value: float
    unit: str
    context: Context
    decimals: str = ""

    @property
    def dims(self) -> tuple[Dimension, ...]:
        """The explicit members of its context."""
        return self.context.dims


@dataclass(frozen=True, slots=True)
class FilingFacts:
    """Every numeric fact of a filing, and its cover-page (``dei``) values."""

    facts: tuple[XbrlFact, ...]
    dei: dict[str, str]

    @property
    def fiscal_year_end(self) -> str | None:
        """``--09-28`` -> ``0928`` from ``dei:CurrentFiscalYearEndDate``, if tagged."""
        raw = self.dei.get("CurrentFiscalYearEndDate", "")
        match = re.fullmatch(r"--(\d{2})-(\d{2})", raw.strip())
        return match.group(1) + match.group(2) if match else None


# --------------------------------------------------------------------------------------------
# Numbers as inline XBRL displays them
# --------------------------------------------------------------------------------------------

_ZERO_FORMATS = ("fixed-zero", "zerodash", "numdotdecimal-zero")
_COMMA_DECIMAL = ("num-comma-decimal", "numcommadecimal", "numdotcomma")


def display_number(text: str, fmt: str) -> float | None:
    """The number an inline fact shows (before scale and sign), or None when it is not
    one (a number written in words, an empty cell)."""
    fmt = fmt.lower().rsplit(":", 1)[-1]
    cleaned = text.strip().replace("\u00a0", " ")
    if any(z in fmt for z in _ZERO_FORMATS) or cleaned in {"-", "—", "–"}:
        return 0.0
    if not cleaned or "words" in fmt:
        return None
    if any(c in fmt for c in _COMMA_DECIMAL):
        cleaned = cleaned.replace(".", "").replace(" ", "").replace(",", ".")
    else:
        cleaned = cleaned.replace(",", "").replace(" ", "")
    cleaned = cleaned.strip("()$€£¥%")
    try:
        return float(cleaned)
    except ValueError:
        return None


# --------------------------------------------------------------------------------------------
# Contexts and units
# --------------------------------------------------------------------------------------------


def _contexts(root: etree._Element) -> dict[str, Context]:
    out: dict[str, Context] = {}
    for node in descendants(root, "context"):
        context_id = attr(node, "id")
        period = child(node, "period")
        if not context_id or period is None:
            continue
        instant = text_of(period, "instant")
        start, end = text_of(period, "startdate"), text_of(period, "enddate")
        dims = sorted((attr(m, "dimension"), text_of(m)) for m in descendants(node, "explicitmember"))
        if instant:
            out[context_id] = Context(None, instant[:10], True, tuple(dims))
        elif end:
            out[context_id] = Context(start[:10] or None, end[:10], False, tuple(dims))
    return out


def _units(root: etree._Element) -> dict[str, str]:
    out: dict[str, str] = {}
    for node in descendants(root, "unit"):
        unit_id = attr(node, "id")
        measures = [text_of(m).rsplit(":", 1)[-1] for m in descendants(node, "measure")]
        divide = child(node, "divide")
        if divide is not None and len(measures) == 2:
            out[unit_id] = f"{measures[0]}/{measures[1]}"
        elif measures:
            out[unit_id] = measures[0]
    return out


# --------------------------------------------------------------------------------------------
# Documents
# --------------------------------------------------------------------------------------------


def is_inline(text: str) -> bool:
    """Whether a document is inline XBRL (HTML with ``ix:`` facts)."""
    head = text[:20_000].lower()
    return "inlinexbrl" in head or "<ix:" in text[:400_000].lower()


def parse_filing(text: str | bytes) -> FilingFacts:
    """The numeric facts of an inline XBRL document or an XBRL instance."""
    raw = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    try:
        root = parse_xml(raw, html_fallback=True)
    except XmlError as exc:
        raise XmlError(f"the filing's XBRL could not be read: {exc}") from None
    contexts, units = _contexts(root), _units(root)
    inline = any(True for _ in descendants(root, "nonfraction"))
    facts = _inline_facts(root, contexts, units) if inline else \
        _instance_facts(root, contexts, units)
    return FilingFacts(tuple(facts), _dei(root, inline))


class _Facts:
    """Facts as they are found, each (concept, context, unit) once."""

    def __init__(self, contexts: dict[str, Context], units: dict[str, str]) -> None:
        self.contexts, self.units = contexts, units
        self.found: list[XbrlFact] = []
        self._seen: set[tuple[str, str, str]] = set()

    def add(self, concept: str, value: float, context_id: str, unit_id: str,
            decimals: str) -> None:
        context = self.contexts.get(context_id)
        key = (concept, context_id, unit_id)
        if context is None or not concept or key in self._seen:
            return
        self._seen.add(key)
        self.found.append(XbrlFact(concept, value, self.units.get(unit_id, unit_id), context,
                                   decimals))


def _inline_facts(root: etree._Element, contexts: dict[str, Context],
                  units: dict[str, str]) -> list[XbrlFact]:
    facts = _Facts(contexts, units)
    for node in descendants(root, "nonfraction"):
        if attr(node, "nil").lower() == "true":
            continue
        shown = display_number("".join(str(t) for t in node.itertext()), attr(node, "format"))
        if shown is None:
            continue
        try:
            scale = int(attr(node, "scale") or 0)
        except ValueError:
            scale = 0
        value = shown * (10 ** scale)
        facts.add(attr(node, "name"), -value if attr(node, "sign") == "-" else value,
                  attr(node, "contextref"), attr(node, "unitref"), attr(node, "decimals"))
    return facts.found


_NOT_FACTS = frozenset({"context", "unit", "schemaref", "linkbaseref", "roleref", "arcroleref",
                        "footnotelink"})


def _instance_facts(root: etree._Element, contexts: dict[str, Context],
                    units: dict[str, str]) -> list[XbrlFact]:
    facts = _Facts(contexts, units)
    for node in root:
        if not isinstance(node.tag, str) or local(node.tag) in _NOT_FACTS:
            continue
        unit_id = attr(node, "unitref")
        if not unit_id:
            continue
        try:
            value = float((node.text or "").strip())
        except ValueError:
            continue
        facts.add(_qname(node), value, attr(node, "contextref"), unit_id, attr(node, "decimals"))
    return facts.found


def _qname(node: etree._Element) -> str:
    """``us-gaap:Revenues`` from ``{http://fasb.org/us-gaap/2024}Revenues``."""
    tag = str(node.tag)
    if "}" not in tag:
        return tag
    namespace, name = tag[1:].split("}", 1)
    prefix = next((p for p, uri in (node.nsmap or {}).items() if uri == namespace and p), "")
    return f"{prefix}:{name}" if prefix else name


def _dei(root: etree._Element, inline: bool) -> dict[str, str]:
    wanted = {"DocumentType", "DocumentPeriodEndDate", "CurrentFiscalYearEndDate",
              "DocumentFiscalYearFocus", "DocumentFiscalPeriodFocus", "EntityRegistrantName",
              "EntityCentralIndexKey", "TradingSymbol"}
    out: dict[str, str] = {}
    nodes = descendants(root, "nonnumeric") if inline else iter(root)
    for node in nodes:
        if not isinstance(node.tag, str):
            continue
        name = attr(node, "name") if inline else _qname(node)
        if not name.startswith("dei:"):
            continue
        key = name[4:]
        if key in wanted and key not in out:
            out[key] = text_of(node)
    return out


# --------------------------------------------------------------------------------------------
# Labels
# --------------------------------------------------------------------------------------------

_STANDARD_LABEL = "http://www.xbrl.org/2003/role/label"
_TERSE_LABEL = "http://www.xbrl.org/2003/role/terseLabel"
_KIND_SUFFIX = re.compile(r"\s*\[(member|axis|domain|line items|table|abstract)\]\s*$", re.I)


def parse_labels(text: str | bytes) -> dict[str, str]:
    """Concept QName (``aapl:WearablesHomeandAccessoriesMember``) -> the label the filing
    shows for it, from a label linkbase: the terse label ("Services"), else the standard one
    without its ``[Member]`` suffix."""
    root = parse_xml(text)
    locators: dict[str, str] = {}
    for loc in descendants(root, "loc"):
        fragment = attr(loc, "href").rsplit("#", 1)[-1]
        prefix, _, name = fragment.partition("_")
        if name:
            locators[attr(loc, "label")] = f"{prefix}:{name}"
    resources: dict[str, dict[str, str]] = {}
    for node in descendants(root, "label"):
        key = attr(node, "label")
        if key:
            resources.setdefault(key, {}).setdefault(attr(node, "role"), text_of(node))
    out: dict[str, str] = {}
    for arc in descendants(root, "labelarc"):
        concept = locators.get(attr(arc, "from"))
        roles = resources.get(attr(arc, "to"), {})
        chosen = roles.get(_TERSE_LABEL) or roles.get(_STANDARD_LABEL)
        if concept is not None and chosen:
            out.setdefault(concept, _KIND_SUFFIX.sub("", chosen).strip())
    return out
