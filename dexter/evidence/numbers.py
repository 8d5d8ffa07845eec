"""Quantities in text: the figures an answer states, and the numbers a text holds.

A figure (a :class:`Claim`) has the value it states in base units (``$383.3 billion`` is
383.3e9; a percentage in percent points), the number as written (383.3), the tolerance its
written precision implies (half a unit of the last digit written, times its scale: 0.05e9
there), its significant digits, a kind (money, percent, multiple, number) and a sign
(``-$3.2 billion``, ``(1,234)``).

What is not a figure (see docs/verification.md, "What counts as a figure"):

- years written bare (1900-2100), dates (``2024-09-28``, ``9/28/2024``, ``Sep 28, 2024``),
  ``FY'24`` and ``'24``, period names (``Q3``, ``FY2024``, ``H1``), form names (``10-K``),
  citation ids (``S3``) and numbers glued to letters on either side (``16GB``, ``3nm``,
  ``2nd``, ``1990s``);
- names with a number: products and models (``iPhone 16``, ``RTX 4090``, ``Model 3``),
  indexes (``S&P 500``, ``Russell 2000``, ``Nasdaq-100``, ``FTSE 100``), hyphenated names
  (``COVID-19``, ``F-150``), versions (``iOS 18.1``, ``version 2.5``, ``4.2.1``);
- list numbering at the start of a line or heading (``1.``, ``2)``, ``## 3.``);
- counts: bare integers up to 12, and bare integers before a unit of time (``30 days``);
- a bare number of three to five digits naming a product by the noun after it (``the 18650
  cells``, ``the 7000 series``, ``its 2500 chip``);
- references: a number after ``Item``, ``Note``, ``Part``, ``Section``, ``Page``, ...;
- anything inside a URL, an e-mail address, an SEC accession or file number, a phone
  number or a time of day.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from dexter.metrics import metrics_at

Kind = Literal["money", "percent", "multiple", "number"]

# a number: ``391,035.5``, ``391035``, ``3.2e9``, ``.5``; written to start with one character
# class, so a scan skips to the digits and points (an alternation of repeats would be tried
# at every character of a long text)
CORE = re.compile(r"[\d.](?:(?<=\d)(?:\d{0,2}(?:,\d{3})+(?:\.\d+)?|\d*(?:\.\d+)?"
                  r"(?:[eE][+-]?\d+)?)|(?<=\.)\d+)")
SCALE_WORDS = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
SCALE_SHORT = {"k": 1e3, "m": 1e6, "mm": 1e6, "mn": 1e6, "mln": 1e6, "b": 1e9, "bn": 1e9,
               "bln": 1e9, "t": 1e12, "tn": 1e12}
AFTER = re.compile(
    r"(?P<close>\))?(?P<glued>(?:mm|mn|mln|bn|bln|tn|[kmbt])(?![a-z0-9]))?"
    r"(?:\s?(?P<word>thousand|million|billion|trillion)s?\b|\s(?P<short>bn|mn|mln|bln|tn|mm)\b)?"
    r"(?P<close2>\))?"
    r"(?:\s?(?P<unit>%|percent\b|per\s?cent\b|percentage\s+points?\b|pp\b|ppts?\b|pts\b|"
    r"x(?![a-z])|×|times\b|bps\b|basis\s+points?\b|bp\b))?"
    r"(?:\s(?P<money>dollars\b|usd\b|us\s+dollars\b))?",
    re.IGNORECASE)
_CURRENCY = re.compile(r"(?:US\$|C\$|A\$|HK\$|\$|€|£|¥|USD|EUR|GBP|JPY|CNY|RMB|INR)\s?[(]?\s?$",
                       re.IGNORECASE)
_MONTH_NAMES = ("january|february|march|april|may|june|july|august|september|october|"
                "november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec")
_MONTH_AFTER = re.compile(rf"^(?:st|nd|rd|th)?\s+(?:{_MONTH_NAMES})\b", re.IGNORECASE)
_TIME_AFTER = re.compile(
    r"^[\s-]*(?:days?|weeks?|months?|quarters?|years?|hours?|minutes?|seconds?|yrs?|qtrs?|"
    r"employees|people|countries|states|markets|stores|segments|products|models|times)\b",
    re.IGNORECASE)
_PRODUCT_AFTER = re.compile(
    r"[ \u00a0](?:cells?|chips?|chipsets?|series|processors?|engines?|platforms?|gpus?|cpus?|"
    r"socs?|batter(?:y|ies)|modules?|variants?|editions?|lineup|family|architecture|model|"
    r"class|format|trim)\b", re.IGNORECASE)
_LIST_NUMBER = re.compile(r"(?:^|\n)[ \t>*#-]*$")
_LIST_AFTER = re.compile(r"[.)]\s")
_NEGATIVE_CURRENCY = re.compile(r"[-−–]\s?(?:US\$|\$|€|£|¥)\s?$")
_OPEN_PAREN = re.compile(r"\(\s?(?:US\$|\$|€|£|¥)?\s?$")
_LEAD = re.compile(r"(?:[-−–]\s?)?(?:US\$|C\$|A\$|HK\$|\$|€|£|¥|USD|EUR|GBP|JPY|CNY|RMB|INR)"
                   r"\s?[(]?\s?$|[(]$|[-−]$", re.IGNORECASE)
_THE_BEFORE = re.compile(r"\b[Tt]he[ \u00a0]$")
# "9M FY25", "6M 2025", "3M ended June": a span of months names a period, not 9 million
_MONTHS_SPAN_AFTER = re.compile(
    r"[ \u00a0]+(?:fy|fiscal|cy|calendar|ytd|ended|ending|period|"
    r"(?:19|20)\d{2}(?!\d)|['’]\d{2}(?!\d))(?![a-z])", re.IGNORECASE)
# a ZIP code after a state's postal abbreviation or name ("Austin, TX 78701", "Boise,
# Idaho 83702-1234")
_STATE_BEFORE = re.compile(
    r"(?:\b(?:A[KLRZ]|C[AOT]|D[CE]|FL|GA|HI|I[ADLN]|K[SY]|LA|M[ADEINOST]|N[CDEHJMVY]|O[HKR]|"
    r"PA|RI|S[CD]|T[NX]|UT|V[AT]|W[AIVY])|(?:Alabama|Alaska|Arizona|Arkansas|California|"
    r"Colorado|Connecticut|Delaware|Florida|Georgia|Hawaii|Idaho|Illinois|Indiana|Iowa|"
    r"Kansas|Kentucky|Louisiana|Maine|Maryland|Massachusetts|Michigan|Minnesota|"
    r"Mississippi|Missouri|Montana|Nebraska|Nevada|Hampshire|Jersey|Mexico|York|Carolina|"
    r"Dakota|Ohio|Oklahoma|Oregon|Pennsylvania|Rhode Island|Tennessee|Texas|Utah|Vermont|"
    r"Virginia|Washington|Wisconsin|Wyoming))\.?,?[ \u00a0]+$")
_NAME_AFTER = re.compile(r"[ \u00a0][A-Z][A-Za-z]")

# Masked before reading numbers: the numbers inside these are never figures. Each pattern
# starts with something rare (a link's scheme, an "@", digits joined by "-", "/" or ":", a
# month's name), so a long answer is scanned quickly.
_LINKS = re.compile(r"https?://\S+|www\.\S+")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+")
_JOINED = re.compile(r"\d(?<!\d\d)[\d:/\-]*[:/\-]\d[\d:/\-]*(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?"
                     r"(?:Z|[+-]\d{2}:?\d{2})?)?(?:\s?[ap]\.?m\.?)?")
_JOINED_FRAMING = re.compile(
    r"\d{10}-\d{2}-\d{6}"  # SEC accession numbers
    r"|\d{3}-\d{5}"  # SEC file numbers (001-36743)
    r"|\d{3}-\d{3}-\d{4}|\d{3}-\d{4}"  # phone numbers
    r"|\d{4}-\d{2}-\d{2}.*"  # ISO dates and timestamps
    r"|\d{1,2}/\d{1,2}/\d{2,4}"  # 9/28/2024
    r"|\d{1,2}:\d{2}.*"  # times of day
    r"|\d{5}-\d{4}")  # ZIP+4 codes
_PHONE_AREA = re.compile(r"\(\d{3}\)(?=\s?\d{3}-\d{4})")
_ACCESSION_PLAIN = re.compile(r"\d{18}(?!\d)")
_MONTH_DATE = re.compile(
    r"\b(?:[Jj]an|[Ff]eb|[Mm]ar|[Aa]pr|[Mm]ay|[Jj]un|[Jj]ul|[Aa]ug|[Ss]ep|[Oo]ct|[Nn]ov|[Dd]ec)"
    r"[a-z]*\.?\s+\d{1,2}(?:st|nd|rd|th)?\b(?:,?\s+\d{4}\b)?")
_DAY_MONTH = re.compile(
    r"\b\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:[Jj]an|[Ff]eb|[Mm]ar|[Aa]pr|[Mm]ay|[Jj]un|[Jj]ul|"
    r"[Aa]ug|[Ss]ep|[Oo]ct|[Nn]ov|[Dd]ec)[a-z]*\.?(?:,?\s+\d{4}\b)?")
_MONTH_WORDS = frozenset(_MONTH_NAMES.split("|"))
_MONTH_WORD = re.compile(r"[A-Za-z]{3,}")


def words(text: str) -> frozenset[str]:
    """The set of the whitespace-separated words of ``text`` (for word lists)."""
    return frozenset(text.split())


# A capitalised word before a bare number names something (a product, an index, a model),
# unless it is one of these words that start sentences or lead up to amounts.
_LEAD_WORDS = words("""
a about above after against all almost also among an and another any approximately around
as at average below between both but by circa close down each either even every exactly
fell few fewer for from further given grew had has have he however if in including into is
it its just last less more most much nearly net next no nor not of on once one only or
other our over per plus rose roughly since so some still such than that the their them
then there these they this those through to today total totaled totaling towards under
until up upon us very was we were what when where whereas which while who with within
without yet ca approx est estimated reached reaching
""")
_VERSION_WORDS = words("""
version versions ver v release releases update updates build firmware ios ipados macos
watchos tvos visionos android windows python java bluetooth usb wi-fi wifi hdmi pcie gen
generation api http tls ddr lpddr hbm series chrome linux ubuntu office
""")


@dataclass(slots=True)
class Claim:
    """One figure an answer states."""

    text: str
    """As written, e.g. ``$383.3 billion`` or ``(1,234)``."""
    start: int
    end: int
    value: float
    """Unsigned, in base units (dollars, percent points, times)."""
    tolerance: float
    """Half a unit of the last digit written, in base units."""
    kind: Kind
    negative: bool = False
    scaled: bool = False
    """A scale was written (``billion``, ``B``) or given by the answer's table header: the
    value is not the bare number as written."""
    written: float = 0.0
    """The number as written, unsigned, before any scale (383.3)."""
    digits: int = 0
    """Significant digits written (``$2 billion``: 1; ``$391.0 billion``: 4)."""
    parens: bool = False
    """Written in parentheses: a negative in a table (``(1,234)``), an aside in prose
    (``(391,035 million)``), so only a bare number in parentheses counts as negative."""

    @property
    def bare(self) -> bool:
        """No currency, unit or scale: a number compared as written."""
        return self.kind == "number" and not self.scaled


def mask_framing(text: str, *, dates: bool = True, runs: bool = True) -> str:
    """``text`` with links, e-mail addresses, accession and file numbers, phone numbers,
    dates and times blanked (same length), so their digits are not read as figures.
    ``dates=False`` leaves "Sep 28, 2024" alone (a figure reader excludes its day and year
    itself: a month before or after a day, a bare year); ``runs=False`` leaves 18-digit
    runs (plain accession numbers) to the reader as well."""
    spans = [m.span() for m in _LINKS.finditer(text)] if "http" in text or "www." in text \
        else []
    if "@" in text:
        spans.extend(m.span() for m in _EMAIL.finditer(text))
    for m in _JOINED.finditer(text):
        if _JOINED_FRAMING.fullmatch(m.group()):
            spans.append(m.span())
    if "(" in text:
        spans.extend(m.span() for m in _PHONE_AREA.finditer(text))
    if runs:
        spans.extend(m.span() for m in _ACCESSION_PLAIN.finditer(text)
                     if not (m.start() and text[m.start() - 1].isdigit()))
    for pattern in (_MONTH_DATE, _DAY_MONTH) if dates else ():
        for m in pattern.finditer(text):
            word = _MONTH_WORD.search(m.group())
            if word is not None and word.group().lower() in _MONTH_WORDS:  # not "Mayfair 12"
                spans.append(m.span())
    if not spans:
        return text
    parts: list[str] = []
    done = 0  # the text before this offset is written (blanked where a span covers it)
    for a, b in sorted(spans):
        if b <= done:
            continue
        a = max(a, done)
        parts.append(text[done:a])
        parts.append(" " * (b - a))
        done = b
    parts.append(text[done:])
    return "".join(parts)


def significant_digits(raw: str) -> int:
    """Significant digits of a number as written (``391.0``: 4, ``2,000``: 1, ``0.05``: 1)."""
    digits = raw.replace(",", "").lstrip("0.")
    if "." in raw:
        return max(1, len(digits.replace(".", "")))
    return max(1, len(digits.rstrip("0")))


def extract_claims(text: str) -> list[Claim]:
    """Every figure ``text`` states, in order (see the module docstring for what is not)."""
    masked = mask_framing(text, dates=False, runs=False)
    claims: list[Claim] = []
    for match in CORE.finditer(masked):
        claim = _claim_at(masked, match, text)
        if claim is not None:
            claims.append(claim)
    return claims


def scale_of(after: re.Match[str]) -> float:
    """The multiplier a scale word or suffix after a number states (1.0 when none)."""
    word, glued, short = after.group("word"), after.group("glued"), after.group("short")
    if word:
        return SCALE_WORDS[word.lower()]
    if short:
        return SCALE_SHORT[short.lower()]
    if glued:
        return SCALE_SHORT[glued.lower()]
    return 1.0


_GLUE_AFTER = frozenset("/\\-–.('’")
"""What may follow a number that is part of a word or code (a path, ``10-K``, ``401(k)``)."""


def glued_to_letters(masked: str, start: int, end: int) -> bool:
    """Whether the number at ``start``-``end`` is part of a word or code: ``Q3``,
    ``FY2024``, ``S3``, ``10-K``, ``COVID-19``, ``FY'24``, a path, a version."""
    prev = masked[start - 1] if start else ""
    if prev:
        if prev.isalpha() or prev in "/_#@\\'’":
            return True
        if prev in ".-–" and start > 1:
            prev2 = masked[start - 2]
            if prev == "." and prev2.isalnum():
                return True  # a version number's later part, a file extension
            if prev != "." and prev2.isalpha():
                return True  # Nasdaq-100, COVID-19, F-150
    nxt = masked[end] if end < len(masked) else ""
    if not nxt or nxt not in _GLUE_AFTER:
        return False  # the common case: a space, a sign or a unit follows
    nxt2 = masked[end + 1] if end + 1 < len(masked) else ""
    if nxt in "/\\" and nxt2.isalnum():
        return True  # 9/28, a path
    if nxt in "-–" and nxt2.isalpha():
        return True  # 10-K, 52-week
    if nxt == "." and nxt2.isalpha() and nxt2.isupper() and end + 2 < len(masked) \
            and masked[end + 2].isalpha():
        return True  # 2330.TW
    if nxt == "(" and nxt2.isalpha() and masked[end + 2:end + 3] == ")":
        return True  # 401(k)
    return nxt in "'’" and nxt2.isalpha()


_GLUE_BEFORE = "/_#@\\'’.-–"
"""What may come before a number that is part of a word or code (with the letters)."""
_AFTER_FIRST = frozenset(")%×kmbtpxKMBTPX\u212a")
"""The characters a match of :data:`AFTER` can start with; after one space, these:"""
_AFTER_SECOND = frozenset("%×tmbpxduTMBPXDU")


def _claim_at(masked: str, match: re.Match[str], original: str) -> Claim | None:
    start, end = match.span()
    raw = match.group()
    prev = masked[start - 1] if start else ""
    nxt = masked[end] if end < len(masked) else ""
    # (the common case, a space or a sign before and a space or a unit after, decided here)
    if (prev in _GLUE_BEFORE or prev.isalpha() or nxt in _GLUE_AFTER) and \
            glued_to_letters(masked, start, end):
        return None
    if "e" in raw or "E" in raw or (raw.startswith(".") and prev.isdigit()):
        return None  # exponent notation is data, not prose; 2.5.1's last part
    if len(raw) >= 18 and raw.isdigit():
        return None  # an accession number written without dashes
    if nxt == "." and end + 1 < len(masked) and masked[end + 1].isdigit():
        return None  # 4.2.1
    before = masked[max(0, start - 24):start]
    # a number right after a character other than a space has no word before it
    tail = "" if before and not before[-1].isspace() else _tail_word(before)
    if tail and (tail in _REFERENCE_WORDS or tail.rstrip(".") in _MONTH_WORDS):
        return None  # Item 7, Note 12, Sep 28
    after: re.Match[str] | None = None
    if nxt and (nxt in _AFTER_FIRST or (nxt.isspace() and end + 1 < len(masked)
                                        and masked[end + 1] in _AFTER_SECOND)):
        after = AFTER.match(masked, end)  # else no scale or unit can follow
    after_end = after.end() if after is not None else end
    if after is None or after_end == end:  # nothing after the number: read fast
        if nxt.isalpha():
            return None
        unit, scale, money, word_or_short = "", 1.0, None, False
    else:
        _close, glued, word, short, _close2, unit_raw, money = after.groups()
        unit = " ".join(unit_raw.lower().split()) if unit_raw else ""
        scale = SCALE_WORDS[word.lower()] if word else SCALE_SHORT[short.lower()] if short \
            else SCALE_SHORT[glued.lower()] if glued else 1.0
        word_or_short = bool(word or short or money)
        if after_end < len(masked) and masked[after_end - 1].isalnum() \
                and masked[after_end].isalpha() and not word_or_short:
            return None  # 16GB, 3nm, 2nd, 1990s: the number is part of a word
    currency = _ends_with_currency(before) or bool(money)
    if scale == 1e6 and not currency and not unit and not word_or_short and \
            raw in ("3", "6", "9", "12") and _MONTHS_SPAN_AFTER.match(masked, after_end):
        return None  # 9M FY25: nine months, not nine million
    decimals = len(raw.split(".")[1]) if "." in raw else 0
    bare = not currency and not unit and scale == 1.0
    written = value = float(raw.replace(",", ""))
    if bare and "," not in raw and decimals == 0:
        if 1900 <= value <= 2100 or value <= 12:
            return None  # a year, or a count
        if _names_something(masked, start):
            return None  # iPhone 16, RTX 4090, S&P 500
        if _TIME_AFTER.match(masked[end:end + 24]) or _MONTH_AFTER.match(masked[end:end + 14]):
            return None
        if 100 <= value < 100_000 and _PRODUCT_AFTER.match(masked, end):
            return None  # the 18650 cells, the 7000 series, its 2500 chip: a product's name
        if len(raw) == 5 and _STATE_BEFORE.search(masked, max(0, start - 16), start):
            return None  # a ZIP code: Cupertino, CA 95014
    if bare and _LIST_NUMBER.search(masked[max(0, start - 8):start]) and \
            _LIST_AFTER.match(masked, end):
        return None  # list numbering
    if bare and decimals and (_version_before(masked, start) or _names_something(masked, start)):
        return None  # iOS 18.1, version 2.5, Gemini 1.5
    if bare and "," not in raw and not decimals and _THE_BEFORE.search(masked, max(0, start - 5), start) and \
            _NAME_AFTER.match(masked, end):
        return None  # the 737 MAX, the 787 Dreamliner
    if unit == "x" and masked[end:end + 1] == "X" and not decimals and value >= 100:
        return None  # the 777X
    kind: Kind = "number"
    if unit in ("%", "percent", "per cent", "percentcent") or unit.startswith(
            ("percentage", "pp", "pt")):
        kind = "percent"
    elif unit in ("bps", "basis points", "basis point", "bp"):
        kind, value, scale = "percent", value / 100, 1.0
        # basis points are rounded to tens as often as not: "210 bps" is 2.05-2.15 points
        zeros = len(raw) - len(raw.rstrip("0")) if decimals == 0 and value else 0
        decimals += 2 - min(zeros, 1)
    elif unit in ("x", "×", "times"):
        kind = "multiple"
    elif currency:
        kind = "money"
    negative = prev != "" and prev in "-−–" and not (start > 1 and masked[start - 2].isalnum())
    in_parens = "(" in before[-6:] and bool(_OPEN_PAREN.search(before)) and \
        ")" in masked[end:after_end + 2]
    if (in_parens and bare) or (currency and _has_minus(before[-6:]) and
                                _NEGATIVE_CURRENCY.search(before)):
        negative = True
    tolerance = 0.5 * 10.0 ** (-decimals) * scale
    text_end = after_end if (unit or scale != 1.0 or money) else end
    text_start = start
    if before.endswith("$") and before[-2:-1] in ("", " ", "\n") and \
            before[-3:-2] not in ("-", "−", "–"):
        text_start = start - 1  # the common lead: a dollar sign after a space
    elif currency or before.endswith(("(", "-", "−", "–")):
        near = before[-10:]  # the longest lead, "-US$ ( ", is shorter
        lead = _LEAD.search(near)
        if lead is not None:
            text_start = start - (len(near) - lead.start())
    if in_parens:
        close = masked.find(")", end, after_end + 2)
        text_end = max(text_end, close + 1)
        opening = original.rfind("(", 0, text_start + 1)
        if opening != -1 and not original[opening + 1:text_start].strip():
            text_start = opening
    text = original[text_start:text_end].rstrip()
    # (in the order of the fields: a call by keyword costs several times as much)
    return Claim(text, text_start, text_start + len(text), value * scale, tolerance, kind,
                 negative, scale != 1.0, written, significant_digits(raw), in_parens)


_REFERENCE_WORDS = words("""
item items note notes part section sections page pages exhibit rule topic asc table step
schedule chapter form cik no. number # footnote line lines row column figure fig. appendix
article clause paragraph tier level stage phase round day week year grade
""")
_CURRENCIES = ("US$", "C$", "A$", "HK$", "$", "€", "£", "¥", "USD", "EUR", "GBP", "JPY", "CNY",
               "RMB", "INR", "usd", "eur", "gbp")


def _has_minus(text: str) -> bool:
    return "-" in text or "−" in text or "–" in text


def _tail_word(before: str) -> str:
    """The last word of ``before`` (lower case), '' when it ends without one."""
    stripped = before.rstrip()
    if len(stripped) == len(before) and before:
        return ""  # glued: "#3" is handled as glued, "Q3" too
    cut = max(stripped.rfind(" "), stripped.rfind("\n"), stripped.rfind("("))
    return stripped[cut + 1:].lower()


def _ends_with_currency(before: str) -> bool:
    """Whether a currency sign or code ends ``before`` (``$``, ``US$ (``, ``USD ``)."""
    stripped = before.rstrip(" (\u00a0")
    return stripped.endswith(_CURRENCIES) and not (
        stripped[-3:].isalpha() and len(stripped) > 3 and stripped[-4].isalpha())


def _word_before(masked: str, start: int) -> str:
    """The word right before ``start`` when one space separates them ('' otherwise)."""
    if start < 2 or masked[start - 1] not in " \u00a0" or masked[start - 2].isspace():
        return ""
    before = masked[max(0, start - 40):start - 1]
    cut = max(before.rfind(" "), before.rfind("\n"), before.rfind("\t"), before.rfind("("),
              before.rfind("\u00a0"))
    word = before[cut + 1:]
    return word if word[:1].isalpha() else ""


def _names_something(masked: str, start: int) -> bool:
    """Whether the bare number at ``start`` follows a name (a capitalised word that is not
    a sentence's lead-in): ``iPhone 16``, ``RTX 4090``, ``S&P 500``, ``Windows 11``."""
    word = _word_before(masked, start).rstrip(".'’")
    return bool(word) and _is_name(word)


@lru_cache(maxsize=4096)
def _is_name(word: str) -> bool:
    if not any(ch.isupper() for ch in word):
        return word.lower() in _VERSION_WORDS
    if word.lower() in _LEAD_WORDS:
        return False
    return not metrics_at(word)  # "EPS 6.08" is a figure


def _version_before(masked: str, start: int) -> bool:
    return _word_before(masked, start).lower().rstrip(".") in _VERSION_WORDS
