"""What the words around each figure of an answer say it is.

The check needs, for every figure, what it claims to be: which metric (``revenue``), which
period (``FY2024``), which company, which sign (a loss, an outflow), whether it is a level,
a growth rate, a share or a change, and which sources it cites. This module reads that
from the answer's structure, with no model call:

- **Units of reading.** The answer is cut into sentences (a bullet, a heading and a table
  row each start one) and each sentence into clauses (at commas, semicolons, "and",
  "while", "compared with", ...; never inside a metric's name). A table row of the
  answer's own table is one unit whose cells read their row label and column header.
- **Metric.** The metric phrase (:func:`dexter.metrics.metrics_at`) before the figure in
  its clause ("revenue was $X"), or right after it ("$X of net income"), else the last one
  earlier in the sentence. A phrase qualified by a segment, product or region ("iPhone
  revenue", "revenue from Services", "automotive gross margin") names no line of a
  statement: the figure is then bound to no metric (occurrence is enough).
- **Period.** A period right after the figure ("$X in FY2024"), right before its metric
  ("FY2024 revenue"), between the two ("revenue in fiscal 2024 was $X"), leading the
  sentence ("In fiscal 2024, ..."), else the clause's own; a figure after "from", "than",
  "versus" is the comparison base (the prior period). "respectively" pairs figures and
  periods in order.
- **Company.** The company named nearest before the figure in its sentence, else the last
  one named earlier in the paragraph (names and tickers the ledger's sources know).
- **Unit.** A bare number in the answer's table takes the unit its column header, row
  label or caption states (``Revenue ($B)``, ``USD millions``, ``(%)``).
- **Citations.** The first citation after the figure in its sentence (adjacent brackets
  together), else the sentence's; in a table, the row's, else the caption's.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

from dexter import metrics
from dexter.evidence import carry as _carry
from dexter.evidence.citations import Citation, find_citations, mask_citations
from dexter.evidence.numbers import Claim, Kind, words
from dexter.evidence.periods import Mention, PeriodRef, find_periods, prior

Role = Literal["level", "growth", "share", "difference", "cagr"]
Resolver = Callable[[str], str | None]
"""A company's name or ticker as written -> its ticker in the ledger, or None."""


@dataclass(slots=True)
class Reading:
    """What the words around one figure say it is."""

    claim: Claim
    """The figure, with the unit of the answer's table applied."""
    index: int
    """Its position among the answer's figures."""
    cited: tuple[str, ...] = ()
    fields: tuple[str, ...] = ()
    """The metric fields its words name (empty: none, or a qualified one)."""
    metric: str = ""
    """The metric phrase as written (``net sales``)."""
    qualified: bool = False
    """The phrase is qualified (``iPhone revenue``): no line of a statement."""
    qualifier: str = ""
    """The words that qualify it (``iPhone``, ``Greater China``, ``automotive``)."""
    periods: tuple[PeriodRef, ...] = ()
    period_text: str = ""
    base: tuple[PeriodRef, ...] = ()
    """For a change: the periods it is measured from."""
    companies: tuple[str, ...] = ()
    """Tickers its words name (resolved)."""
    company_text: str = ""
    company_inherited: bool = False
    """The company is the paragraph's, named in an earlier sentence (its citation's company
    wins over it)."""
    polarity: int = 0
    """-1: the words say loss, outflow, negative; +1: profit, inflow; 0: neither."""
    direction: int = 0
    """For a change: -1 fell, +1 rose, 0 not said."""
    role: Role = "level"
    denominator: tuple[str, ...] = ()
    """For a share: the metric it is a share of (``of revenue``)."""
    unit: tuple[int, int] = (0, 0)
    """The reading unit's span (its sentence or table row)."""
    siblings: tuple[int, ...] = field(default=())
    """Indexes of the other figures of the same unit."""
    in_table: bool = False
    is_base: bool = False
    """A level figure that is a comparison's base ("up from $383.3 billion")."""
    basis: str = ""
    """What a change compares with: ``year`` (y/y), ``quarter`` (q/q) or '' (not said)."""
    relative: str = ""
    """A level figure of the year (``year``) or quarter before its sentence's period ("$1.40
    a year earlier")."""
    period_inherited: bool = False
    """The period is the paragraph's, named in an earlier sentence (kept only where the
    sources hold it for the figure's line)."""


# -- phrases ---------------------------------------------------------------------------------

_NEUTRAL = words("""
negative positive reported underlying headline organic up down totaling reaching
representing represents represented marking marks which increase decrease decline rise
gain drop jump change growth surge fall nearly just over more less than roughly around
approximately about some or respectively still again once
the a an its their his her our total overall consolidated reported gaap net annual
quarterly yearly full-year full year fiscal record combined aggregate company company's
group firm firm's trailing ttm ltm quarter quarter's year's same comparable latest last
prior previous current this that these those such first-quarter second-quarter third-
quarter fourth-quarter twelve-month 12-month q1 q2 q3 q4 h1 h2 fy cy calendar higher lower
strong solid weak stronger weaker robust healthy cumulative average basic diluted and or
of in for with to from at by on was were is are had has have reached posted generated
delivered recorded booked grew rose fell increased decreased declined jumped dropped
climbed totaled totalled came hit achieved produced earned saw see sees expects while but
as than versus vs vs. compared over under about around nearly approximately roughly almost
some both each all also just only still even yet however whose which where when what who
whom into onto across per year-over-year yoy sequential sequentially
""")
_BREAK = re.compile(  # read in lower case: ", " or "; ", or a space before a break word
    # (one character class first, so a scan skips to the commas and spaces; a break word
    # only where a space is followed by one's first letter)
    r"[,;\s](?:(?<=[,;])\s|(?<=\s)(?=[—–awbvctypudf])(?:[—–]\s|(?:a(?:nd|gainst|lthough|"
    r"fter|s\s+well\s+as)|w(?:hile|hereas|ith|hich)|b(?:ut|efore)|v(?:ersus|s\.?)|compared"
    r"\s+(?:with|to)|though|yet|plus|up\s+from|down\s+from|from)\s))")
_NOT_A_BREAK = re.compile(  # in lower case: the comma of a legal name ("tesla, inc."), and
    # of a month's day before its year ("december 31, 2020"; not "in 2023, 2024"); one
    # literal first, so a scan skips to the commas of prose (not those inside numbers)
    r", (?:(?=(?:inc|corp|co|ltd|llc|plc|lp|l\.p|n\.v|s\.a|ag|se|limited|incorporated)"
    r"(?:\.|\b(?![-'’])))|(?<=[a-z.]\s\d, )(?=\d{4}(?!\d))|(?<=[a-z.]\s\d\d, )(?=\d{4}(?!\d)))")
_OWN_AFTER = re.compile(
    r"^[\s,]*(?:\(\s*)?(?:(?:year[\s-]over[\s-]year|year[\s-]on[\s-]year|yoy|y/y|"
    r"sequentially|from\s+a\s+year\s+earlier)\s+)?(?:in|for|during|at|as\s+of|of|through|ending|ended|on|by\s+the\s+end"
    r"\s+of|at\s+the\s+end\s+of|in\s+the|for\s+the|during\s+the)?\s*(?:the\s+)?"
    r"(?:(?:full|whole|entire|fiscal)[\s-]+)?(?:year\s+)?$", re.IGNORECASE)
_BASE_AFTER = re.compile(
    r"^[\s,]*(?:year[\s-]over[\s-]year\s+|yoy\s+|y/y\s+)?(?:from|than|versus|vs\.?|compared\s+"
    r"(?:with|to)|against|over|relative\s+to|since)\s+(?:the\s+|a\s+)?(?:fiscal\s+)?(?:year\s+)?$",
    re.IGNORECASE)
_LEADING = re.compile(r"^\s*(?:[-*•#]+\s*)?(?:in|for|during|over|throughout|as\s+of|"
                      r"at\s+the\s+end\s+of|by\s+the\s+end\s+of|through)\s+(?:the\s+)?$",
                      re.IGNORECASE)
# the same words as sets, for the hot path: a word lookup is much cheaper than a regex over
# a case-insensitive alternation
_UP_WORDS = words("""
rose rise rises rising grew grow grows growing growth increase increased increases increasing
up climbed climb jumped jump gained gain expanded expand expansion improved improvement higher
surged soared accelerated advanced added boosted widened widen widens widening expanding
expands
""")
_DOWN_WORDS = words("""
fell fall falls falling decline declined declines declining decrease decreased decreases
decreasing down dropped drop drops slipped slid contracted contraction shrank shrink lower
slumped plunged plummeted tumbled compressed compression eroded narrowed reduced reduction lost
narrows narrowing contracting contracts compressing
""")
_TURN_WORDS = _UP_WORDS | _DOWN_WORDS
_LOSS_WORDS = words("""
loss losses deficit negative outflow outflows burn burned burnt burns burning used shortfall
lost lose
""")
_GAIN_WORDS = words("profit profits profitable positive inflow inflows generated generating "
                    "earned gain gains provided")
_CHANGE_SET = words("growth change changed yoy y/y sequential sequentially q/q qoq")
_CAGR_SET = words("cagr annualized annualised annually")
_WORDS_OF = re.compile(r"[a-z/]+")


_APPROXIMATE = frozenset(("about", "roughly", "nearly", "approximately", "some", "around",
                          "almost", "just", "over", "under", "~", "a", "an", "the"))
_BASE_WORDS = frozenset(("from", "than", "versus", "vs", "vs.", "against", "over", "since"))
_BASE_PAIRS = frozenset(("compared with", "compared to", "relative to", "in the prior",
                         "a year earlier", "year-ago", "prior-year", "prior year"))
_BASE_PAIR_LAST = frozenset(pair.split()[-1] for pair in _BASE_PAIRS)
_DIFF_VERBS = frozenset(("up", "down", "added", "lost", "rose", "fell", "grew", "increased",
                         "decreased", "declined", "jumped", "dropped", "climbed"))
_DIFF_NOUNS = frozenset(("increase", "decrease", "decline", "gain", "drop", "rise",
                         "improvement"))
_SHARE_PAIRS = frozenset(("accounted for", "made up", "equal to", "share of"))
_SHARE_WORDS = frozenset(("represented", "comprised", "contributed"))


def _last_words(text: str, count: int = 4) -> list[str]:
    """The last words before a figure, lower case, approximations dropped ("up about" ->
    ["up"])."""
    return _approximations_dropped(text.lower().split()[-count:])


def _approximations_dropped(found: list[str]) -> list[str]:
    while found and found[-1] in _APPROXIMATE and found[-1] not in _BASE_WORDS:
        found.pop()
    return found


def _after_base(text: str) -> bool:
    """Whether a comparison's base follows ("from", "than", "compared with", ...)."""
    return _base_last(_last_words(text))


def _base_last(found: list[str]) -> bool:
    if not found:
        return False
    if found[-1] in _BASE_WORDS or found[-1] in ("year-ago", "prior-year"):
        return True
    if found[-1] not in _BASE_PAIR_LAST:
        return False  # no pair ends with the last word
    return (len(found) >= 2 and " ".join(found[-2:]) in _BASE_PAIRS) or \
        (len(found) >= 3 and " ".join(found[-3:]) in _BASE_PAIRS)


def _to_last(found: list[str]) -> bool:
    return bool(found) and found[-1] == "to"


def _change_last(found: list[str]) -> bool:
    if not found:
        return False
    if found[-1] == "by" or found[-1] in _DIFF_VERBS:
        return True
    return len(found) >= 2 and found[-1] == "of" and found[-2] in _DIFF_NOUNS


def _share_last(found: list[str]) -> bool:
    if not found:
        return False
    return found[-1] in _SHARE_WORDS or (len(found) >= 2 and " ".join(found[-2:])
                                         in _SHARE_PAIRS)


def _direction_of(found: list[str]) -> int:
    if _TURN_WORDS.isdisjoint(found):
        return 0
    for word in found:
        if word in _DOWN_WORDS:
            return -1
        if word in _UP_WORDS:
            return 1
    return 0


def _nearest_direction(behind: list[str], following: list[str]) -> int:
    """The way the direction word nearest a figure goes: the last one before it, else the
    first one after it (0: none)."""
    for word in reversed(behind):
        if word in _DOWN_WORDS:
            return -1
        if word in _UP_WORDS:
            return 1
    return _direction_of(following)


def _change_said(lowered: str, found: list[str]) -> bool:
    return any(w in _CHANGE_SET for w in found) or \
        "over-year" in lowered or "over year" in lowered or "on-year" in lowered or \
        "on year" in lowered or "over-quarter" in lowered or "over quarter" in lowered


def _says_compound(lowered: str) -> bool:
    """Whether words in lower case say a compound rate ("compounded", "a year", "CAGR")."""
    if "compound" in lowered or (" a year" in lowered and "a year earlier" not in lowered):
        return True
    return "per year" in lowered or "each year" in lowered or "yearly average" in lowered or \
        (("cagr" in lowered or "annual" in lowered) and
         any(w in _CAGR_SET for w in _WORDS_OF.findall(lowered)))
_FILLER_AFTER = re.compile(r"\s*(?:in|of|worth\s+of|for|from)?\s*(?:the\s+|its\s+)?"
                           r"(?:total\s+|annual\s+|quarterly\s+|full-year\s+)?", re.IGNORECASE)
_PERIOD_TOKEN = re.compile(r"(?:fy|cy|q[1-4]|h[12]|[1-4]q)\S*")
_PERIOD_WORD = re.compile(r"(?:fy|cy|q[1-4]|h[12]|[1-4]q)?['’]?\d{2,4}(?:e|a)?|q[1-4]|fy\d{2,4}|"
                          r"\d{1,2}m")
_AMOUNT_START = re.compile(r"(?:US|C|A|HK)?[$€£¥]|\b(?:USD|EUR|GBP)\s?(?=\d)|(?<![A-Za-z])\d")
_QUALIFIER_AFTER = re.compile(r"\s+(?:from|in|of|for|at|within)\s+(?:the\s+|its\s+|our\s+)?"
                              r"(?P<word>[A-Za-z][\w&'-]*(?:\s+[A-Z][\w&'-]*)?)")
_DIFF_FIRST = frozenset("[mlhabidrjgMLHABIDRJG\u0130\u0131")
"""What :data:`_DIFF_AFTER` can start with after spaces ("more than", "[S1] higher than")."""
_IMMEDIATE = re.compile(r"(?:['’]s)?\s*[:=]?\s*(?:of\s+)?")
_BEFORE_METRIC = re.compile(r"[\s'’s]*(?:[A-Z][\w&.-]*(?:'s|’s)?\s+)?(?:the\s+|its\s+|"
                            r"total\s+|net\s+|reported\s+|gaap\s+)?\s*", re.IGNORECASE)
_DIFF_AFTER = re.compile(r"^\s*(?:\[[^\]]*\]\s*)?(?:more|less|higher|lower|above|below)\s+than\b|"
                         r"^\s*(?:\[[^\]]*\]\s*)?(?:increase|decrease|decline|rise|drop|jump|"
                         r"gain|improvement)\b",
                         re.IGNORECASE)
_SHARE_AFTER = re.compile(r"\s*(?:\[[^\]]*\]\s*)?of\s+(?:the\s+|its\s+|total\s+|all\s+|"
                          r"apple's\s+|the\s+company's\s+)*(?P<what>[a-z&][\w&\s,'-]{0,60})",
                          re.IGNORECASE)
_RESPECTIVELY = re.compile(r"\brespectively\b", re.IGNORECASE)
_BRACKETED = re.compile(r"\[[^\]]*\]")
_CLAUSE_WORD = re.compile(r"[A-Za-z][\w&'’-]*")
# a percentage compared with another as levels: "to 24.1% from 14.7%", "from 14.7% to 24.1%"
_LEVEL_PAIR = re.compile(r"\bto\s+[-+]?\d[\d,.]*\s*%\s+from\s+[-+]?\d[\d,.]*\s*%"
                         r"|\bfrom\s+[-+]?\d[\d,.]*\s*%\s+to\s+[-+]?\d[\d,.]*\s*%")
_GROWTH_HEADER = re.compile(r"growth|change|yoy|y/y|vs\.?|increase|decrease|chg|\bδ")
_CHANGE_HEADER = re.compile(r"\bchange\b|\bdiff|\bδ|\bchg\b|increase|decrease")
# a full stop before the next sentence's start, or line breaks (one first character, so a
# scan skips to the places one can be)
_SENTENCE_END = re.compile(r"[.!?\n](?:(?<=[.!?])\s+(?=[A-Z(\[*\"'“$0-9-])|(?<=\n)\n*)")
_ABBREVIATIONS = re.compile(r"(?:\b(?:inc|corp|co|ltd|plc|llc|vs|e\.g|i\.e|approx|est|no|"
                            r"mr|ms|dr|st|u\.s|u\.k|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|"
                            r"nov|dec|fig|ref|etc|al)\.|\b[A-Z]\.)$", re.IGNORECASE)
_TICKER_WORD = re.compile(r"[A-Z][A-Z]{0,4}(?:\.[A-Z])?(?![\w])")  # found fast; "$" checked after
_TABLE_LINE = re.compile(r"^\s*\|.*\|\s*$")
_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$")


# -- units ----------------------------------------------------------------------------------

_UNIT = re.compile(
    r"(?:\(|\b|(?<=\$))(?:in\s+)?(?:(?P<cur>usd|us\$|\$|€|£|eur|gbp)\s*)?(?P<scale>"
    r"thousands|thousand|millions|million|billions|billion|trillions|trillion|mm|mn|mln|m|bn|"
    r"bln|b|k|tn|t)\b(?:\s+(?:of\s+)?(?:usd|dollars|us\$|\$))?"
    r"|(?P<pct>\(%\)|%|\bper\s?cent\b|\bpct\b)|(?P<times>\(x\)|\btimes\b)|(?P<dollar>\(\$\)|\(usd\))",
    re.IGNORECASE)
_UNIT_SCALES = {"thousands": 1e3, "thousand": 1e3, "millions": 1e6, "million": 1e6,
                "billions": 1e9, "billion": 1e9, "trillions": 1e12, "trillion": 1e12, "mm": 1e6,
                "mn": 1e6, "mln": 1e6, "m": 1e6, "bn": 1e9, "bln": 1e9, "b": 1e9, "k": 1e3,
                "tn": 1e12, "t": 1e12}


@dataclass(frozen=True, slots=True)
class _Unit:
    scale: float = 1.0
    kind: str = ""
    """``money``, ``percent``, ``multiple``, ``number`` or '' (nothing stated)."""


@lru_cache(maxsize=4096)
def unit_of_label(text: str) -> _Unit:
    """The unit a table header, row label or caption states (``Revenue ($B)``, ``USD
    millions``, ``Margin (%)``), or an empty unit (headers repeat: remembered)."""
    lowered = text.lower()
    for match in _UNIT.finditer(text):
        if match.group("pct"):
            return _Unit(1.0, "percent")
        if match.group("times"):
            return _Unit(1.0, "multiple")
        if match.group("dollar"):
            return _Unit(1.0, "money")
        word = match.group("scale").lower()
        short = word in ("m", "b", "k", "t", "mm", "mn", "bn", "bln", "mln", "tn")
        if short and not (match.group("cur") or "(" in text[max(0, match.start() - 2):
                                                         match.start() + 1]
                          or lowered.strip().endswith(word)):
            continue  # a lone letter is a unit only in a header's brackets or after a $
        money = bool(match.group("cur")) or "$" in text or "usd" in lowered or \
            "dollar" in lowered
        return _Unit(_UNIT_SCALES[word], "money" if money else "number")
    return _Unit()


def apply_unit(claim: Claim, unit: _Unit) -> Claim:
    """``claim`` as the unit of its table cell states it (only a bare number, or an amount
    written without a scale, takes a unit)."""
    if not unit.kind or claim.scaled or claim.kind in ("percent", "multiple"):
        return claim
    if unit.kind == "percent":
        return dataclasses.replace(claim, kind="percent") if claim.kind == "number" else claim
    if unit.kind == "multiple":
        return dataclasses.replace(claim, kind="multiple") if claim.kind == "number" else claim
    if claim.kind not in ("number", "money"):
        return claim
    kind: Kind = "money" if unit.kind == "money" or claim.kind == "money" else "number"
    if unit.scale == 1.0:
        return dataclasses.replace(claim, kind=kind)
    return dataclasses.replace(claim, kind=kind, value=claim.value * unit.scale,
                               tolerance=claim.tolerance * unit.scale, scaled=True)


def _in_cell(claim: Claim) -> Claim:
    """A figure in a table cell: parentheses are the accounting negative."""
    return dataclasses.replace(claim, negative=True) if claim.parens else claim


# -- the answer's structure -------------------------------------------------------------------

@dataclass(slots=True)
class _Cell:
    row: str
    header: str
    unit: _Unit
    cited: tuple[str, ...]
    caption: str
    span: tuple[int, int]


@dataclass(slots=True)
class _Structure:
    units: list[tuple[int, int]]
    """Sentence and table-row spans, in order."""
    paragraphs: list[tuple[int, int]]
    cells: list[_Cell]
    cell_starts: list[int]
    paragraph_starts: list[int] = field(default_factory=list)


def _structure(answer: str, citations: Sequence[Citation]) -> _Structure:
    units: list[tuple[int, int]] = []
    paragraphs: list[tuple[int, int]] = []
    cells: list[_Cell] = []
    lines = answer.split("\n")
    offsets = []
    position = 0
    for line in lines:
        offsets.append(position)
        position += len(line) + 1
    i = 0
    paragraph_start = 0
    while i < len(lines):
        line = lines[i]
        if _TABLE_LINE.match(line) and i + 1 < len(lines) and _SEPARATOR.match(lines[i + 1]):
            stop = i + 2
            while stop < len(lines) and _TABLE_LINE.match(lines[stop]):
                stop += 1
            caption = _caption(lines, i, stop)
            cells.extend(_table_cells(lines, offsets, i, stop, caption, citations))
            for row in range(i, stop):
                units.append((offsets[row], offsets[row] + len(lines[row])))
            paragraphs.append((offsets[max(0, i - 1)], offsets[stop - 1] + len(lines[stop - 1])))
            paragraph_start = offsets[stop - 1] + len(lines[stop - 1]) + 1
            i = stop
            continue
        start = offsets[i]
        if not line.strip():
            if start > paragraph_start:
                paragraphs.append((paragraph_start, start))
            paragraph_start = start + 1
            i += 1
            continue
        if line.lstrip().startswith(("#", "-", "*", "•")) or re.match(r"\s*\d+[.)]\s", line):
            if start > paragraph_start:
                paragraphs.append((paragraph_start, start))
            paragraph_start = start
        units.extend(_sentences(answer, start, start + len(line)))
        i += 1
    if paragraph_start < len(answer):
        paragraphs.append((paragraph_start, len(answer)))
    paragraphs.sort()
    return _Structure(units, paragraphs, cells, [c.span[0] for c in cells],
                      [p[0] for p in paragraphs])


def _sentences(answer: str, start: int, end: int) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    begin = start
    for match in _SENTENCE_END.finditer(answer, start, end):
        stop = match.start() + (answer[match.start()] in ".!?")
        if stop > match.start() and _ABBREVIATIONS.search(answer, max(begin, stop - 8), stop):
            continue
        # a citation right after the full stop (blanked by now) belongs to the sentence
        # before it: the cut is at the next sentence's first word
        cut = match.end()
        if cut > begin:
            out.append((begin, cut))
        begin = cut
    if begin < end:
        out.append((begin, end))
    return out


def _caption(lines: list[str], first: int, stop: int) -> str:
    parts = []
    for j in (first - 1, first - 2):
        if j >= 0 and lines[j].strip() and not _TABLE_LINE.match(lines[j]):
            if len(lines[j]) <= 200:  # a caption is a short line, not a paragraph
                parts.append(lines[j])
            break
    if stop < len(lines) and lines[stop].strip() and len(lines[stop]) < 200:
        parts.append(lines[stop])
    return " ".join(parts)


def _split_row(line: str, base: int) -> list[tuple[str, int, int]]:
    bars = [i for i, ch in enumerate(line) if ch == "|"]
    out = []
    for a, b in itertools.pairwise(bars):
        out.append((line[a + 1:b].strip(), base + a + 1, base + b))
    return out


def _ids_in(citations: Sequence[Citation], start: int, end: int) -> tuple[str, ...]:
    starts = [c.start for c in citations] if not isinstance(citations, _Cited) else \
        citations.starts
    first, last = bisect.bisect_left(starts, start), bisect.bisect_left(starts, end)
    return tuple(dict.fromkeys(c.id for c in citations[first:last]))


class _Cited(list[Citation]):
    """Citations with their start offsets, for lookups by position."""

    def __init__(self, citations: Sequence[Citation]) -> None:
        super().__init__(citations)
        self.starts = [c.start for c in citations]


def _table_cells(lines: list[str], offsets: list[int], first: int, stop: int, caption: str,
                 citations: Sequence[Citation]) -> list[_Cell]:
    header = _split_row(lines[first], offsets[first])
    caption_unit = unit_of_label(caption)
    if not caption_unit.kind and header:
        caption_unit = unit_of_label(header[0][0])  # "Metric ($B)" states the table's unit
    caption_cites = _ids_in(citations, offsets[max(0, first - 2)], offsets[first]) + (
        _ids_in(citations, offsets[stop], offsets[stop] + len(lines[stop]))
        if stop < len(lines) else ())
    out: list[_Cell] = []
    for row_index in range(first + 2, stop):
        row = _split_row(lines[row_index], offsets[row_index])
        if not row:
            continue
        label = row[0][0]
        cited = _ids_in(citations, offsets[row_index], offsets[row_index] + len(lines[row_index]))
        label_unit = unit_of_label(label)
        for column, (_text, a, b) in enumerate(row):
            head = header[column][0] if column < len(header) else ""
            unit = label_unit if label_unit.kind else unit_of_label(head)
            if not unit.kind and caption_unit.kind and (
                    caption_unit.kind in ("percent", "multiple")
                    or not _ratio_like(f"{label} {head}")):
                # a caption's scale is not a margin's or a share count's; its "%" or "x"
                # is every bare cell's ("Margin (%)" over "Gross margin | 46.2")
                unit = caption_unit
            out.append(_Cell(label if column else "", head, unit, cited or caption_cites,
                             caption, (a, b)))
    return out


_RATIO_WORDS = re.compile(  # whole words: "operations" holds no ratio, "accounts" no count
    r"%|percent|per share|\b(?:margins?|eps|ratios?|growth|yields?|rates?|multiples?|p/e|"
    r"shares|share count|counts?|employees|headcount)\b")


@lru_cache(maxsize=4096)
def _ratio_like(text: str) -> bool:
    lowered = text.lower()
    if _RATIO_WORDS.search(lowered):
        return True
    return any(m.kind in ("per_share", "ratio", "shares", "count")
               for _, _, found in metrics.metrics_at(text) for m in found[:1])


# -- reading ----------------------------------------------------------------------------------

@dataclass(slots=True)
class _MetricMention:
    start: int
    end: int
    fields: tuple[str, ...]
    text: str
    loss: bool


def read_answer(answer: str, claims: Sequence[Claim], resolve: Resolver,
                citations: Sequence[Citation] | None = None, masked: str | None = None
                ) -> list[Reading]:
    """A :class:`Reading` for each of ``claims`` (figures of ``answer``, in order);
    ``citations``: the answer's, and ``masked``: the answer with its citations blanked,
    when the caller has them already."""
    citations = _Cited(find_citations(answer) if citations is None else citations)
    citation_starts = citations.starts
    # ids are not words: [S1] qualifies no metric
    answer = mask_citations(answer) if masked is None else masked
    structure = _structure(answer, citations)
    unit_starts = [u[0] for u in structure.units]
    lowered = answer.lower()
    plain = len(lowered) == len(answer)
    if not plain:  # "İ" lowers to two characters: keep offsets aligned
        lowered = "".join(c if len(c.lower()) != 1 else c.lower() for c in answer)
        phrases = metrics.metrics_at(answer)
        periods = find_periods(answer)
    else:
        # the answer's words, found once for the metric phrases and the periods
        phrases, words_in = metrics.scan(lowered)
        periods = find_periods(answer, _plain_words(words_in))
    mentions = [_MetricMention(a, b, tuple(m.field for m in found), answer[a:b],
                               "loss" in lowered[a:b] or "deficit" in lowered[a:b])
                for a, b, found in phrases]
    mention_starts = [m.start for m in mentions]
    period_starts = [p.start for p in periods]
    companies = _company_mentions(answer, resolve)
    company_starts = [c[0] for c in companies]

    by_unit: dict[int, list[int]] = {}
    placed: list[tuple[Claim, int, _Cell | None]] = []
    for index, claim in enumerate(claims):
        cell = _cell_at(structure, claim.start)
        if cell is not None:
            claim = apply_unit(_in_cell(claim), cell.unit)
        u = max(0, bisect.bisect_right(unit_starts, claim.start) - 1)
        by_unit.setdefault(u, []).append(index)
        placed.append((claim, u, cell))

    readings: list[Reading] = []
    in_unit: dict[int, _InUnit] = {}
    kept = _kept_commas(lowered)
    known: dict[str, list[tuple[int, int, str]]] = {}

    def named(text: str) -> list[tuple[int, int, str]]:
        """The companies a table's row label, header or caption names (each read once)."""
        if text not in known:
            known[text] = _company_mentions(text, resolve)
        return known[text]

    for index, (claim, u, cell) in enumerate(placed):
        start, end = structure.units[u] if structure.units else (0, len(answer))
        siblings = tuple(i for i in by_unit[u] if i != index)
        if cell is not None:
            readings.append(_read_cell(answer, claim, index, cell, (start, end), siblings,
                                       named, structure, companies, company_starts))
            continue
        context = in_unit.get(u)
        if context is None:
            # what the unit holds, found once for all its figures
            unit_mentions = mentions[bisect.bisect_left(mention_starts, start):
                                     bisect.bisect_left(mention_starts, end)]
            context = in_unit[u] = _InUnit(
                unit_mentions,
                periods[bisect.bisect_left(period_starts, start):
                        bisect.bisect_left(period_starts, end)],
                [placed[i][0] for i in by_unit[u]],
                _breaks(lowered, start, end, [(m.start, m.end) for m in unit_mentions], kept))
        readings.append(_read_prose(
            answer, claim, index, (start, end), siblings, context, companies,
            company_starts, citations, citation_starts, structure, lowered, plain))
    _pair_respectively(answer, readings, placed, structure, periods, mentions)
    _inherit_periods(readings)
    _carry.carry_periods(readings, answer, structure.units, structure.paragraph_starts, periods)
    return readings


def _plain_words(words: set[str]) -> set[str]:
    """The letter-and-digit words of a text from its metric tokens (which keep ``&``:
    ``r&d`` is the words ``r`` and ``d``)."""
    joined = [w for w in words if "&" in w]
    if joined:
        words = words - set(joined)
        words.update(part for w in joined for part in w.split("&") if part)
    return words


def _cell_at(structure: _Structure, offset: int) -> _Cell | None:
    i = bisect.bisect_right(structure.cell_starts, offset) - 1
    if i >= 0 and structure.cells[i].span[0] <= offset <= structure.cells[i].span[1]:
        return structure.cells[i]
    return None


@dataclass(slots=True)
class _Breaks:
    """A unit's clause breaks, found once for all its figures: (where a clause starts
    after the break, where the break starts)."""

    starts: list[int]
    cuts: list[int]


def _breaks(lowered: str, start: int, end: int, protected: Sequence[tuple[int, int]],
            kept: frozenset[int] = frozenset()) -> _Breaks:
    """The clause breaks of the unit ``start``-``end`` (``lowered``: the answer in lower
    case; ``protected``: the metric phrases' spans, in order and apart; ``kept``: the
    offsets of the commas that break no clause, :func:`_kept_commas`)."""
    starts: list[int] = []
    cuts: list[int] = []
    firsts = [a for a, _ in protected]
    for match in _BREAK.finditer(lowered, start, end):
        a = match.start()
        if firsts:
            k = bisect.bisect_right(firsts, a) - 1  # the spans are in order
            if k >= 0 and a < protected[k][1]:
                continue  # never inside a metric's name ("selling, general and administrative")
        if kept and a in kept:
            continue  # "Tesla, Inc.", "September 27, 2025": a name's or a date's comma
        cuts.append(a)
        starts.append(a + (1 if lowered[a] in ",;:" else 0))
    return _Breaks(starts, cuts)


def _clause(breaks: _Breaks, start: int, end: int, claim: Claim) -> tuple[int, int]:
    """The clause of the unit ``start``-``end`` that holds the figure."""
    i = bisect.bisect_right(breaks.cuts, claim.start) - 1
    left = start
    # the last break that ends before the figure
    while i >= 0:
        if breaks.cuts[i] < claim.start and breaks.starts[i] <= claim.start:
            left = breaks.starts[i]
            break
        i -= 1
    j = bisect.bisect_left(breaks.cuts, claim.start)
    right = breaks.cuts[j] if j < len(breaks.cuts) else end
    return left, right


def _kept_commas(lowered: str) -> frozenset[int]:
    """The commas of a text in lower case that end no clause: a legal name's and a date's
    (one scan of the whole answer, which skips to its commas)."""
    if ", " not in lowered:
        return frozenset()
    return frozenset(m.start() for m in _NOT_A_BREAK.finditer(lowered))


@dataclass(slots=True)
class _InUnit:
    """What one reading unit holds (found once for all its figures)."""

    mentions: list[_MetricMention]
    periods: list[Mention]
    claims: list[Claim]
    breaks: _Breaks


def _read_prose(answer: str, claim: Claim, index: int, unit: tuple[int, int],
                siblings: tuple[int, ...], context: _InUnit,
                companies: list[tuple[int, int, str]], company_starts: list[int],
                citations: Sequence[Citation], citation_starts: list[int],
                structure: _Structure, lowered: str, plain: bool) -> Reading:
    """``plain``: ``lowered`` is the answer's ``lower()`` (no character's length changed)."""
    start, end = unit
    unit_mentions = context.mentions
    unit_claims = context.claims
    c_start, c_end = _clause(context.breaks, start, end, claim)

    # the last words before the figure in its unit (lower case), read once for all
    window_start = max(start, claim.start - 40)
    before = lowered[window_start:claim.start].split()[-4:]
    dropped = _approximations_dropped(before[:])
    # the clause's last words, from the answer in lower case when lowering changed no
    # character's length (so the words are the same): the unit's when the clause starts
    # before that window
    tail_start = max(c_start, claim.start - 40)
    last = None if not plain else dropped if tail_start == window_start else \
        _approximations_dropped(lowered[tail_start:claim.start].split()[-4:])
    # the words after the figure are its own up to the next figure, or the bracket that
    # opens before it ("46.2% (+0.7pp y/y)", "46.2% (up 0.7 points)": the change's words)
    # (and what a change compares with, from the words up to the figures around it)
    role_end = c_end
    prev_end = start
    next_start = end
    for other in unit_claims:
        if other.start >= claim.end:
            next_start = other.start
            if next_start < c_end:
                bracket = answer.find("(", claim.end, next_start)
                role_end = next_start if bracket < 0 else bracket
            break
        if other.end <= claim.start:
            prev_end = other.end
    after_text = lowered[claim.end:min(next_start, claim.end + 48)]
    basis_start = max(c_start, prev_end, claim.start - 40)
    # what a change compares with is read only where it is used: by the role of a
    # percentage in points, and by a change, a comparison's base or a relative level
    basis: str | None = None
    if claim.kind == "percent" and _in_points(claim):
        basis = _carry.basis_of(lowered[basis_start:claim.start], after_text)
    role, direction = _role(answer, lowered, claim, start, c_start, role_end, before, last,
                            basis or "")
    # a share's "of revenue" names what it is a share of, not what it is
    mention = _bind_metric(answer, claim, unit_mentions if role != "share" else
                           [m for m in unit_mentions if m.start < claim.start],
                           c_start, c_end, start, unit_claims)
    fields: tuple[str, ...] = ()
    metric_text = ""
    qualified = False
    qualifier = ""
    loss = False
    denominator: tuple[str, ...] = ()
    if mention is not None:
        metric_text = mention.text
        loss = mention.loss
        qualifier = _qualifier(answer, mention, claim, start, companies)
        qualified = bool(qualifier)
        if not qualified:
            fields = _fields_for(mention.fields, claim, role)
    if role == "share":
        after = _SHARE_AFTER.match(answer, claim.end)
        if after is not None:
            found = metrics.metrics_at(after.group("what"))
            if found and found[0][0] <= 12:
                denominator = tuple(m.field for m in found[0][2])
        if not denominator:
            role = "level"

    own, base, period_text, is_base = _bind_periods(answer, claim, context.periods,
                                                    mention, c_start, c_end, start, role,
                                                    unit_claims, dropped)
    company, company_text, inherited = _bind_company(answer, claim, companies, company_starts,
                                                     start, c_end, structure)
    polarity = _polarity(lowered, claim, mention, loss, c_start, c_end)
    cited = _cited(answer, claim, citations, citation_starts, start, end)
    # a level of the period before ("$1.40 a year earlier")
    relative = ""
    if role == "level" and not own:
        relative = _carry.relative_after(after_text) or \
            _carry.relative_lead(lowered[start:min(claim.start, start + 48)])
    if basis is None:
        basis = _carry.basis_of(lowered[basis_start:claim.start], after_text) \
            if role in ("growth", "difference") or is_base or relative else ""
    # (in the order of the fields: a call by keyword costs five times as much)
    return Reading(claim, index, cited, fields, metric_text, qualified, qualifier, own,
                   period_text, base, company, company_text, inherited, polarity, direction,
                   role, denominator, unit, siblings, False, is_base, basis, relative)


def _fields_for(found: tuple[str, ...], claim: Claim, role: Role) -> tuple[str, ...]:
    """The fields a metric phrase names for a figure of this kind: an amount named by a
    margin is the margin's numerator ("gross margin of $180.7 billion" is gross profit), a
    percentage named by an amount is that amount's margin or its growth."""
    return _fields_of_kind(found, claim.kind, role)


@lru_cache(maxsize=2048)
def _fields_of_kind(found: tuple[str, ...], kind: str, role: Role) -> tuple[str, ...]:
    out: list[str] = []
    for name in found:
        m = metrics.metric(name)
        if m is None:
            continue
        if kind == "percent" and role == "level" and m.kind == "amount":
            ratio = [r.field for r in metrics.METRICS
                     if r.parts is not None and r.parts[0] == name and r.parts[1] == "revenue"]
            out.extend(ratio or [name])
        elif kind == "money" and m.kind == "ratio" and m.parts is not None:
            out.append(m.parts[0])
        elif kind == "money" and m.kind in ("shares", "count"):
            continue  # "sold 8,706 shares at $225.00": an amount of money is no share count
        else:
            out.append(name)
    return tuple(dict.fromkeys(out))


def _role(answer: str, lowered: str, claim: Claim, unit_start: int, c_start: int, c_end: int,
          before: list[str], last: list[str] | None = None, basis: str = "") -> tuple[Role, int]:
    """``lowered``: the answer in lower case; ``before``: the last words before the figure
    in its unit, in lower case; ``last``: the clause's (approximations dropped), when the
    caller has them; ``basis``: what the words say a change compares with."""
    after = answer[claim.end:min(c_end, claim.end + 40)]
    # the words right before the figure (in its clause), and around it (in its unit)
    if last is None:
        tail = answer[max(c_start, claim.start - 40):claim.start].split()[-4:]
        last = _approximations_dropped([word.lower() for word in tail])
    ahead = ' '.join(lowered[claim.end:claim.end + len(after)].split()[:4])
    window = f"{' '.join(before)} {ahead}"
    found = _WORDS_OF.findall(window)
    # the direction word nearest the figure ("rising 9.6% y/y, down 1.4% q/q": down); no
    # word spans the space between the two halves, so the words before are ``found``'s first
    direction = 0
    if not _TURN_WORDS.isdisjoint(found):
        behind = _WORDS_OF.findall(window, 0, len(window) - len(ahead) - 1)
        direction = _nearest_direction(behind, found[len(behind):])
    if claim.kind == "percent":
        if _says_compound(lowered[max(unit_start, claim.start - 80):claim.start]) or \
                _says_compound(lowered[claim.end:claim.end + 24]):
            return "cagr", direction
        if _share_last(last) or (not direction and _SHARE_AFTER.match(answer, claim.end)):
            return "share", direction
        if direction or _change_said(window, found):
            if _to_last(last):
                return "level", direction  # "rose to 46.2%"
            if _base_last(last) and _LEVEL_PAIR.search(
                    f"{' '.join(before)} {claim.text}"
                    f"{answer[claim.end:claim.end + 24]}".lower()):
                return "level", direction  # "rose to 24.1% from 14.7%", "from 14.7% to 24.1%"
            return ("difference" if _in_points(claim) else "growth"), direction
        if _in_points(claim) and _POINTS_TO.match(answer, claim.end):
            return "difference", direction  # "169bp to 29.8%": a change, then the level
        if _in_points(claim) and (basis or claim.text[:1] in "+-−–" or
                                  answer[claim.start - 1:claim.start] in ("+", "-", "−", "–")):
            return "difference", direction  # "+0.2pp", "0.2pp vs. the prior year"
        return "level", direction
    if claim.kind in ("money", "number") and not _to_last(last):
        if (direction or "by" in answer[max(c_start, claim.start - 40):claim.start].split()[-4:]) \
                and _change_last(last):
            return "difference", direction
        if after.lstrip()[:1] in _DIFF_FIRST and _DIFF_AFTER.match(after):
            return "difference", direction
    return "level", direction


def _in_points(claim: Claim) -> bool:
    """Whether a percentage is written in points or basis points (``45 bps``, ``1.2pp``)."""
    lowered = claim.text.lower()
    return "point" in lowered or "bp" in lowered or "pp" in lowered or "pt" in lowered


_POINTS_TO = re.compile(r"\s*(?:\[[^\]]*\]\s*)?to\s+[-+(]?(?:US)?\$?\d")


def _between(claims: Sequence[Claim], start: int, end: int, own: Claim) -> bool:
    """Whether another figure lies between offsets ``start`` and ``end`` (``claims`` are in
    order)."""
    if end <= start:
        return False
    for c in claims:
        if c.start >= end:
            return False
        if c is not own and start <= c.start and c.end <= end:
            return True
    return False


def _bind_metric(answer: str, claim: Claim, unit_mentions: list[_MetricMention],
                 c_start: int, c_end: int, unit_start: int, unit_claims: list[Claim]
                 ) -> _MetricMention | None:
    before = [m for m in unit_mentions if c_start <= m.start and m.end <= claim.start]
    after = [m for m in unit_mentions if claim.end <= m.start < c_end
             and not _between(unit_claims, claim.end, m.start, claim)]
    if after:
        gap = answer[claim.end:after[0].start]
        gap = _BRACKETED.sub(" ", gap)
        if _FILLER_AFTER.fullmatch(gap):
            return after[0]
    if before:
        return before[-1]
    if after and len(answer[claim.end:after[0].start].split()) <= 4:
        return after[0]
    earlier = [m for m in unit_mentions if m.end <= claim.start]
    if earlier and _bare_clause(answer[c_start:claim.start]):
        # "..., and $383.3B in FY2023": the sentence's last metric, unless the clause names
        # something of its own ("with a tax rate of 21.5%")
        return earlier[-1]
    return None


def _bare_clause(text: str) -> bool:
    """Whether a clause's words before its figure name nothing of their own."""
    for word in _CLAUSE_WORD.findall(text):
        lowered = word.lower().removesuffix("'s").removesuffix("’s")
        if lowered in _NEUTRAL or _PERIOD_TOKEN.fullmatch(lowered) or \
                lowered in _MONTHS or lowered in _UP_WORDS or lowered in _DOWN_WORDS:
            continue
        return False
    return True


def _at_company(companies: Sequence[tuple[int, int, str]], offset: int) -> bool:
    """Whether a company name covers ``offset`` (``companies`` in order)."""
    i = bisect.bisect_right(companies, (offset, 10**12, "")) - 1
    return i >= 0 and companies[i][0] <= offset < companies[i][1]


def _qualifier(answer: str, mention: _MetricMention, claim: Claim, unit_start: int,
               companies: list[tuple[int, int, str]]) -> str:
    """The words that narrow the metric phrase to a segment, product or region ("iPhone
    revenue", "revenue from Services", "automotive gross margin"), or ''."""
    before = answer[max(unit_start, mention.start - 48):mention.start]
    taken: list[str] = []
    stripped = before.rstrip()
    for raw in reversed(before.split()):
        word = raw.strip("\"“”()[]{},;:")
        if not (word[:1].isalpha() or _HAS_LETTER.search(word)):
            continue  # "$", "--", "2024": no word
        if len(taken) >= 3 or "$" in word or word.endswith(("'s", "’s", "'", "’")):
            break  # a possessive names a company, not a segment
        if not taken and not stripped.endswith(word):
            break
        bare = word.lower().rstrip(".,")
        if bare in _NEUTRAL or bare in _NO_QUALIFIER or _PERIOD_WORD.fullmatch(bare) or \
                _at_company(companies, mention.start - len(before) + before.rfind(word)):
            break
        taken.insert(0, word.rstrip(".,"))
    if taken:
        return " ".join(taken)
    antecedent = _WHOSE.search(before) if stripped.endswith(("whose", "of which")) else None
    if antecedent is not None and not _at_company(
            companies, mention.start - len(before) + antecedent.start("word")):
        word = antecedent.group("word")  # "net sales of Services, whose net sales": Services
        if word.lower() not in _NEUTRAL and not _PERIOD_WORD.fullmatch(word.lower()):
            return word
    tail_end = claim.start if claim.start > mention.end else min(len(answer), mention.end + 40)
    tail = answer[mention.end:tail_end]
    found = _QUALIFIER_AFTER.match(tail)
    if found is not None:  # (no match in the whole tail: none in a part of it either)
        stop = _AMOUNT_START.search(tail)
        if stop is not None:  # a qualifier comes before the amount
            found = _QUALIFIER_AFTER.match(tail[:stop.start()])
    if found is not None:
        word = found.group("word")
        lowered = word.lower()
        if lowered.split()[0] in ("segment", "segments", "products", "product", "services",
                                  "division", "business", "region", "category"):
            return word
        if word[0].isupper() and not _PERIOD_TOKEN.fullmatch(word.split()[0].lower()) and \
                lowered.split()[0].rstrip("-–") not in metrics_months() and not any(
                    [_at_company(companies, mention.end + found.start("word"))]) and \
                lowered.split()[0] not in ("fiscal", "the", "calendar", "first", "second",
                                           "third", "fourth", "full", "trailing"):
            return word
    return ""


# the words before a metric phrase that join it to what came before ("covered share
# repurchases", "after capital expenditure", "$5.0 million after capex"), not qualify it
_NO_QUALIFIER = words("""
after before via despite beyond covered covering covers funded funding funds offset
offsetting exceeded exceeding outpaced spent spending returned returning paid paying plus
minus excluding including thousand million billion trillion mn bn mm
""")


def metrics_months() -> frozenset[str]:
    """Month names and abbreviations (lower case)."""
    return _MONTHS


_MONTHS = words("""
january february march april may june july august september october november december jan
feb mar apr jun jul aug sep sept oct nov dec
""")


def _bind_periods(answer: str, claim: Claim, unit_periods: list[Mention],
                  mention: _MetricMention | None, c_start: int, c_end: int, unit_start: int,
                  role: Role, unit_claims: Sequence[Claim], before_words: list[str]
                  ) -> tuple[tuple[PeriodRef, ...], tuple[PeriodRef, ...], str, bool]:
    """``before_words``: the last words before the figure in its unit, in lower case,
    approximations dropped."""
    own: list[Mention] = []
    base: list[Mention] = []
    clean = answer  # citations are blanked already
    for p in unit_periods:
        if p.start >= claim.end and p.start - claim.end <= 48 and \
                not _between(unit_claims, claim.end, p.start, claim):
            gap = clean[claim.end:p.start]
            if _OWN_AFTER.match(gap):
                own.append(p)
                break
            if _BASE_AFTER.match(gap):
                base.append(p)
    if not own:
        for p in unit_periods:
            if p.end <= claim.start and claim.start - p.end <= 8 and \
                    _IMMEDIATE.fullmatch(clean, p.end, claim.start):
                own.append(p)
    if not own and mention is not None:
        for p in unit_periods:
            if p.end <= mention.start and mention.start - p.end <= 24:
                if _BEFORE_METRIC.fullmatch(clean, p.end, mention.start):
                    own.append(p)
            elif mention.end <= p.start and p.end <= claim.start and \
                    not _after_base(clean[mention.end:p.start]) and \
                    not _between(unit_claims, mention.end, claim.start, claim):
                own.append(p)
    if not own:
        # a period leading the sentence ("In fiscal 2024, ...", "FY2024 revenue ...")
        for p in unit_periods:
            if p.end > claim.start or p.start - unit_start > 40:
                continue
            lead = clean[unit_start:p.start]
            if not lead.strip(" -*•#\n") or _LEADING.match(lead):
                own.append(p)
    if not own:
        in_clause = [p for p in unit_periods if c_start <= p.start and p.end <= c_end
                     and (role == "cagr" or not _after_base(
                         clean[max(c_start, p.start - 30):p.start]))]
        own = in_clause
    if role == "cagr":
        # "from FY2021 to FY2025": a compound rate spans every period its sentence names
        own = [p for p in unit_periods if p not in own] + own
    if not base and role in ("growth", "difference", "cagr"):
        for p in unit_periods:
            if p.start >= claim.end and _after_base(clean[max(claim.end, p.start - 40):
                                                                  p.start]):
                base.append(p)
    is_base = role == "level" and _base_last(before_words)
    if is_base:
        # "up from $383.3 billion in FY2023": only a period right after it is its own
        own = [p for p in own if p.start >= claim.end]
    if len(own) == 1:  # the common case
        p = own[0]
        refs, text = p.refs, answer[p.start:p.end]
    else:
        refs = tuple(r for p in own for r in p.refs)
        text = ", ".join(answer[p.start:p.end] for p in own)
    base_refs = tuple(r for p in base for r in p.refs) if base else ()
    return refs, base_refs, text, is_base


_CAPITALISED = re.compile(r"[A-Z][A-Za-z&.-]+")
_HAS_LETTER = re.compile(r"[^\W\d_]")
_WHOSE = re.compile(r"\b(?P<word>[A-Z][\w&-]*(?: [A-Z][\w&-]*){0,2}),?\s+(?:whose|of which)\s+$")


def _company_mentions(answer: str, resolve: Resolver) -> list[tuple[int, int, str]]:
    """Companies the answer names: ``(start, end, ticker)``, in order."""
    found: dict[int, tuple[int, int, str]] = {}
    for match in _TICKER_WORD.finditer(answer):
        at = match.start()
        if at and answer[at - 1] == "$":
            at -= 1  # $TSLA
        if at and (answer[at - 1].isalnum() or answer[at - 1] in "_$"):
            continue
        ticker = resolve(match.group())
        if ticker is not None:
            found[at] = (at, match.end(), ticker)
    names = [m for m in _CAPITALISED.finditer(answer)
             if not (m.start() and (answer[m.start() - 1].isalnum() or answer[m.start() - 1] == "_"))]
    for i, match in enumerate(names):
        if match.start() in found:
            continue
        # "Tesla", "Advanced Micro Devices": up to three capitalised words in a row
        end = match.end()
        for n in range(1, 4):
            if n > 1:
                if i + n - 1 >= len(names) or names[i + n - 1].start() != end + 1 or \
                        answer[end] != " ":
                    break
                end = names[i + n - 1].end()
            ticker = resolve(answer[match.start():end])
            if ticker is not None:
                found[match.start()] = (match.start(), end, ticker)
                break
    return [found[k] for k in sorted(found)]


def _bind_company(answer: str, claim: Claim, companies: list[tuple[int, int, str]],
                  company_starts: list[int], unit_start: int, c_end: int,
                  structure: _Structure) -> tuple[tuple[str, ...], str, bool]:
    """The company the figure's sentence names (nearest before it, else in its clause after
    it), else the paragraph's last (inherited: True)."""
    i = bisect.bisect_left(company_starts, claim.start)
    if i > 0 and companies[i - 1][0] >= unit_start:
        a, b, ticker = companies[i - 1]
        return (ticker,), answer[a:b], False
    if i < len(companies) and companies[i][0] < c_end:
        a, b, ticker = companies[i]
        return (ticker,), answer[a:b], False
    k = bisect.bisect_right(structure.paragraph_starts, claim.start) - 1
    paragraph = structure.paragraphs[k] if k >= 0 and claim.start < \
        structure.paragraphs[k][1] else (unit_start, unit_start)
    if i > 0 and companies[i - 1][0] >= paragraph[0]:
        a, b, ticker = companies[i - 1]
        return (ticker,), answer[a:b], True
    return (), "", False


def _polarity(lowered: str, claim: Claim, mention: _MetricMention | None, loss: bool,
              c_start: int, c_end: int) -> int:
    """``lowered``: the answer in lower case."""
    if claim.negative:
        return -1
    if loss:
        return -1
    start = max(c_start, mention.start - 30) if mention is not None and \
        c_start <= mention.start < claim.start else max(c_start, claim.start - 30)
    window = lowered[start:claim.start] + " " + lowered[claim.end:min(c_end, claim.end + 30)]
    if mention is not None and mention.start >= start:
        window = window.replace(lowered[mention.start:mention.end], " ")
    tokens = _WORDS_OF.findall(window)
    if not _LOSS_WORDS.isdisjoint(tokens) or "net use" in window:
        return -1
    if not _GAIN_WORDS.isdisjoint(tokens) or (
            mention is not None and "profit" in lowered[mention.start:mention.end]):
        return 1
    return 0


def _cited(answer: str, claim: Claim, citations: Sequence[Citation], starts: list[int],
           unit_start: int, unit_end: int) -> tuple[str, ...]:
    first = bisect.bisect_left(starts, unit_start)
    last = bisect.bisect_left(starts, unit_end, first)
    if first == last:
        return ()
    k = bisect.bisect_left(starts, claim.end, first, last)
    if k < last:  # the first citation after the figure, with the ones right after it
        chosen = [citations[k]]
        for j in range(k + 1, last):
            c = citations[j]
            end = chosen[-1].end
            if c.start - end <= 6 and not answer[end:c.start].strip(" ,;and"):
                chosen.append(c)
            else:
                break
        if len(chosen) == 1:  # the common case
            return (chosen[0].id,)
        return tuple(dict.fromkeys(c.id for c in chosen))
    return tuple(dict.fromkeys(c.id for c in citations[first:last]))


@lru_cache(maxsize=4096)
def _label_metrics(text: str) -> list[tuple[int, int, tuple[metrics.Metric, ...]]]:
    return metrics.metrics_at(text)


def _read_cell(answer: str, claim: Claim, index: int, cell: _Cell, unit: tuple[int, int],
               siblings: tuple[int, ...], named: Callable[[str], list[tuple[int, int, str]]],
               structure: _Structure, companies: list[tuple[int, int, str]],
               company_starts: list[int]) -> Reading:
    """``named``: the companies a text names."""
    label_metrics = _label_metrics(cell.row)
    head_metrics = _label_metrics(cell.header)
    fields: tuple[str, ...] = ()
    metric_text = ""
    qualified = False
    role: Role = "level"
    # the cell's own words say which way a change went ("down 3.36%")
    a, b = cell.span
    direction = _direction_of(_WORDS_OF.findall(
        f"{answer[a:claim.start]} {answer[claim.end:b]}".lower()))
    header_low = f"{cell.header} {cell.row}".lower()
    if claim.kind == "percent" and _GROWTH_HEADER.search(header_low):
        role = "cagr" if "cagr" in header_low else "growth"
    elif claim.kind in ("money", "number") and _CHANGE_HEADER.search(header_low):
        role = "difference"
    for text, found in ((cell.row, label_metrics), (cell.header, head_metrics)):
        if found:
            a, b, ms = found[0]
            metric_text = text[a:b]
            rest = (text[:a] + text[b:]).strip(" :*_()$%").lower()
            rest = re.sub(r"\(.*?\)|\b(?:usd|us\$|\$|bn|b|m|mm|millions?|billions?|total|net|"
                          r"gaap|reported|consolidated)\b", " ", rest).strip(" ,.-")
            qualified = bool(rest) and not _period_only(rest) and len(rest) > 1
            if not qualified:
                fields = _fields_for(tuple(m.field for m in ms), claim, role)
            break
    periods_text = ""
    refs: tuple[PeriodRef, ...] = ()
    for text in (cell.header, cell.row, cell.caption):
        found_p = find_periods(text)
        if found_p:
            refs = tuple(r for p in found_p for r in p.refs)
            periods_text = ", ".join(text[p.start:p.end] for p in found_p)
            break
    base: tuple[PeriodRef, ...] = ()
    if role in ("growth", "difference") and len(refs) >= 2:
        refs, base = refs[-1:], refs[:-1]
    elif role in ("growth", "difference") and len(refs) == 1:
        base = prior(refs[0])
    company: tuple[str, ...] = ()
    company_text = ""
    inherited = False
    for text in (cell.row, cell.header, cell.caption):
        for found_c in named(text):
            company, company_text = (found_c[2],), text[found_c[0]:found_c[1]]
            break
        if company:
            break
    if not company:
        company, company_text, inherited = _bind_company(
            answer, claim, companies, company_starts, unit[0], unit[1], structure)
    polarity = -1 if claim.negative else -1 if "loss" in metric_text.lower() else 0
    return Reading(claim=claim, index=index, cited=cell.cited, fields=fields,
                   metric=metric_text, qualified=qualified, periods=refs,
                   period_text=periods_text, base=base, companies=company,
                   company_text=company_text, company_inherited=inherited,
                   polarity=polarity, direction=direction,
                   role=role, unit=unit, siblings=siblings, in_table=True)


def _period_only(text: str) -> bool:
    return bool(text) and not re.sub(r"\b(?:fy|cy|q[1-4]|fiscal|year|quarter|ttm|\d{2,4}|"
                                     r"ended|ending|the|of|in)\b", " ", text).strip(" ,.-'’")


def _pair_respectively(answer: str, readings: list[Reading],
                       placed: list[tuple[Claim, int, _Cell | None]], structure: _Structure,
                       periods: list[Mention], mentions: list[_MetricMention]) -> None:
    """"Revenue and net income were $391.0B and $93.7B, respectively": pair in order."""
    if "respectively" not in answer.lower() or _RESPECTIVELY.search(answer) is None:
        return
    groups: dict[tuple[int, int], list[int]] = {}
    for r in readings:
        if not r.in_table:
            groups.setdefault(r.unit, []).append(r.index)
    for (start, end), indexes in groups.items():
        if not _RESPECTIVELY.search(answer, start, end) or len(indexes) < 2:
            continue
        unit_periods = [p for p in periods if start <= p.start < end]
        refs = [p for p in unit_periods]
        unit_mentions = [m for m in mentions if start <= m.start < end]
        levels = [i for i in indexes if readings[i].role == "level"]
        if len(refs) == len(levels) and len(refs) >= 2:
            for i, p in zip(levels, refs, strict=True):
                readings[i] = dataclasses.replace(readings[i], periods=p.refs,
                                                  period_text=answer[p.start:p.end])
        if len(unit_mentions) == len(levels) and len(levels) >= 2:
            for i, m in zip(levels, unit_mentions, strict=True):
                r = readings[i]
                readings[i] = dataclasses.replace(
                    r, fields=_fields_for(m.fields, r.claim, r.role), metric=m.text,
                    qualified=False)


def _inherit_periods(readings: list[Reading]) -> None:
    """A level figure with no period of its own after one with a period in the same
    sentence takes that period ("revenue was $391.0B in FY2024 and net income $93.7B"),
    unless it is a comparison base; a change with no base compares with the prior
    period."""
    for i, r in enumerate(readings):
        if r.in_table:
            continue
        if not r.periods and r.role in ("level", "growth", "difference"):
            # the sentence's other level figures with a period (only a figure with none
            # of its own looks)
            levels = [readings[j] for j in r.siblings if readings[j].periods
                      and readings[j].role == "level" and not readings[j].is_base
                      and not readings[j].in_table]
            earlier = [x for x in levels if x.index < i]
            if r.role == "level":
                if earlier:
                    source = earlier[-1]
                    if r.is_base or r.relative:
                        r.periods = _carry.shifted(source.periods, r.relative or r.basis)
                        r.period_text = ""
                    else:
                        r.periods, r.period_text = source.periods, source.period_text
            elif levels:
                source = (earlier or levels)[-1]
                r.periods, r.period_text = source.periods, source.period_text
        if r.role in ("growth", "difference") and r.periods and not r.base:
            r.base = _carry.shifted(r.periods, r.basis)
