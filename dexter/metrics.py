"""The metric lexicon: what each statement field is called by a reader, and by an analyst.

Finance sources name their figures with field names (``cost_of_revenue``,
``net_cash_flow_from_operations``); a reader must never see those. This module is the one
table that says, for every field dexter fetches, its human label (``Cost of revenue``), the
statement it belongs to and its place in that statement's standard order, what kind of
value it holds (an amount, a per-share value, a share count, a ratio, a price), and the
phrases an analyst writes for it in prose (``net sales``, ``cost of sales``, ``opex``).

Reports and charts label rows with :func:`label`, sort them with :func:`order` and set the
statement's totals (``Gross profit``, ``Net income``: :func:`is_total`) in bold; the figure
check reads which metrics a sentence names with :func:`metrics_named` (or
:func:`metrics_at`, which keeps every metric a shared phrase such as ``EPS`` may mean), what
a metric's sign means (:attr:`Metric.sign`), which two fields make a ratio
(:attr:`Metric.parts`) and which field a growth rate is of (:attr:`Metric.growth_of`).
Pure data and pure functions; no I/O, no imports from the rest of dexter.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

Statement = Literal["income", "balance", "cash_flow", "ratio", "market", "ownership",
                    "other"]
Kind = Literal["amount", "per_share", "shares", "ratio", "price", "count"]
Sign = Literal["unsigned", "signed", "flow", "outflow"]
"""What a metric's sign means. ``unsigned``: never negative in practice (revenue, assets);
``signed``: a negative value is a loss or a shortfall and a writer must say so (operating
income, net income, EPS, free cash flow, margins); ``flow``: a cash flow that is often
negative and is written either way (investing and financing cash flows, a tax benefit);
``outflow``: a payment that sources show as a negative number and writers state as a
positive amount (capital expenditure, dividends, buybacks)."""

STATEMENTS: tuple[Statement, ...] = ("income", "balance", "cash_flow", "ratio", "market",
                                     "ownership", "other")
"""Statement kinds in the order a report shows them."""


@dataclass(frozen=True, slots=True)
class Metric:
    """One field: its reader's label, statement, kind and the phrases that name it."""

    field: str
    label: str
    statement: Statement
    kind: Kind
    aliases: tuple[str, ...] = ()
    """Lower-case phrases that name this metric in prose, besides the label itself. A
    phrase may name several metrics (``eps`` is basic or diluted)."""
    sign: Sign = "unsigned"
    parts: tuple[str, str] | None = None
    """For a ratio: the numerator's and the denominator's fields (gross margin is gross
    profit over revenue)."""
    growth_of: str = ""
    """For a growth rate: the field it is the change of."""

    @property
    def phrases(self) -> tuple[str, ...]:
        """Every phrase naming the metric, lower case, the label first."""
        return (self.label.lower(), *self.aliases)


def _m(field: str, label: str, statement: Statement, kind: Kind = "amount",
       *aliases: str, sign: Sign = "unsigned", parts: tuple[str, str] | None = None,
       growth_of: str = "") -> Metric:
    return Metric(field, label, statement, kind, aliases, sign, parts, growth_of)


# In each statement's standard order (as a 10-K lays it out); a report's rows follow it.
METRICS: tuple[Metric, ...] = (
    # income statement
    _m("revenue", "Revenue", "income", "amount", "revenues", "total revenue",
       "total revenues", "net sales", "total net sales", "sales", "net revenue",
       "net revenues", "top line", "turnover", "total net revenue", "total net revenues"),
    _m("cost_of_revenue", "Cost of revenue", "income", "amount", "cost of revenues",
       "cost of sales", "total cost of sales", "cost of goods sold", "cogs",
       "cost of goods and services sold", "total cost of revenue",
       "total cost of revenues"),
    _m("gross_profit", "Gross profit", "income", "amount", "gross margin dollars",
       "total gross margin", "gross income", sign="signed"),
    _m("research_and_development", "Research and development", "income", "amount",
       "r&d", "research and development expense", "research & development"),
    _m("selling_general_and_administrative_expenses",
       "Selling, general and administrative", "income", "amount", "sg&a",
       "selling, general and administrative expenses", "selling general and administrative"),
    _m("operating_expense", "Total operating expenses", "income", "amount",
       "operating expenses", "opex", "total operating expense",
       "operating costs"),
    _m("operating_income", "Operating income", "income", "amount", "operating profit",
       "operating loss", "income from operations", "loss from operations", "ebit",
       "operating income (loss)", "income (loss) from operations", sign="signed"),
    _m("interest_expense", "Interest expense", "income", "amount"),
    _m("ebitda", "EBITDA", "income", "amount", sign="signed"),
    _m("income_tax_expense", "Income tax expense", "income", "amount",
       "provision for income taxes", "income taxes", "tax expense",
       "provision for (benefit from) income taxes", "income tax provision", sign="flow"),
    _m("net_income", "Net income", "income", "amount", "net loss", "net earnings",
       "earnings", "net profit", "profit", "bottom line", "net income (loss)",
       "net income attributable to common stockholders", sign="signed"),
    _m("earnings_per_share", "EPS, basic", "income", "per_share", "basic eps",
       "basic earnings per share", "earnings per share, basic", "eps basic", "eps",
       "earnings per share", "earnings", "net income per share", "net loss per share",
       "basic net income per share", "net income per share, basic", sign="signed"),
    _m("earnings_per_share_diluted", "EPS, diluted", "income", "per_share", "diluted eps",
       "eps", "diluted earnings per share", "earnings per share", "eps diluted",
       "earnings", "net income per share", "net loss per share",
       "diluted net income per share", "earnings per diluted share",
       "net income per share, diluted", sign="signed"),
    _m("weighted_average_shares", "Weighted average shares, basic", "income", "shares",
       "basic shares", "weighted average shares", "basic weighted average shares",
       "share count", "shares", "weighted-average shares",
       "shares used to compute basic net income per share",
       "shares used in computing basic earnings per share"),
    _m("weighted_average_shares_diluted", "Weighted average shares, diluted", "income",
       "shares", "diluted shares", "diluted weighted average shares", "share count",
       "shares", "diluted share count", "weighted-average diluted shares",
       "shares used to compute diluted net income per share",
       "shares used in computing diluted earnings per share"),
    # balance sheet
    _m("cash_and_equivalents", "Cash and equivalents", "balance", "amount",
       "cash and cash equivalents", "cash"),
    _m("short_term_investments", "Short-term investments", "balance", "amount",
       "marketable securities", "current marketable securities"),
    _m("current_assets", "Total current assets", "balance", "amount", "current assets"),
    _m("total_assets", "Total assets", "balance", "amount", "assets"),
    _m("current_liabilities", "Total current liabilities", "balance", "amount",
       "current liabilities"),
    _m("short_term_borrowings", "Short-term borrowings", "balance", "amount",
       "commercial paper"),
    _m("current_debt", "Current portion of debt", "balance", "amount", "current debt",
       "term debt, current"),
    _m("long_term_debt", "Long-term debt", "balance", "amount", "term debt",
       "non-current debt", "long term debt"),
    _m("total_debt", "Total debt", "balance", "amount", "debt", "borrowings"),
    _m("total_liabilities", "Total liabilities", "balance", "amount", "liabilities"),
    _m("shareholders_equity", "Shareholders' equity", "balance", "amount",
       "stockholders' equity", "shareholders equity", "stockholders equity",
       "total equity", "book value", "equity", "total shareholders' equity",
       "total stockholders' equity", sign="signed"),
    _m("liabilities_and_equity", "Total liabilities and equity", "balance", "amount",
       "total liabilities and shareholders' equity"),
    _m("outstanding_shares", "Shares outstanding", "balance", "shares",
       "shares outstanding", "common shares outstanding", "share count", "shares"),
    # cash flow statement
    _m("net_cash_flow_from_operations", "Operating cash flow", "cash_flow", "amount",
       "cash from operations", "cash flow from operations", "operating cash flows",
       "cash generated from operations", "cash generated by operations",
       "cash provided by operations", "cash from operating activities",
       "net cash from operating activities", "cash generated by operating activities",
       "net cash provided by operating activities", "ocf", "operating cash",
       "cash flow from operating activities", "cash flows from operating activities",
       "net cash provided by (used in) operating activities", sign="signed"),
    _m("depreciation_and_amortization", "Depreciation and amortization", "cash_flow",
       "amount", "d&a", "depreciation"),
    _m("share_based_compensation", "Share-based compensation", "cash_flow", "amount",
       "stock-based compensation", "stock based compensation", "sbc"),
    _m("capital_expenditure", "Capital expenditure", "cash_flow", "amount",
       "capital expenditures", "capex", "purchases of property, plant and equipment",
       "payments for acquisition of property, plant and equipment", "capital spending",
       "purchases of property and equipment", sign="outflow"),
    _m("free_cash_flow", "Free cash flow", "cash_flow", "amount", "fcf", sign="signed"),
    _m("net_cash_flow_from_investing", "Investing cash flow", "cash_flow", "amount",
       "cash from investing", "net cash used in investing activities",
       "cash used in investing activities", "investing cash flows",
       "cash flow from investing activities", sign="flow"),
    _m("dividends_paid", "Dividends paid", "cash_flow", "amount", "dividends",
       "payments for dividends", "dividend payments", sign="outflow"),
    _m("share_repurchases", "Share repurchases", "cash_flow", "amount", "buybacks",
       "stock buybacks", "repurchases of common stock", "repurchased", "share buybacks",
       "repurchases", "stock repurchases", "buyback",
       sign="outflow"),
    _m("net_cash_flow_from_financing", "Financing cash flow", "cash_flow", "amount",
       "cash from financing", "net cash used in financing activities",
       "financing cash flows", "cash flow from financing activities", sign="flow"),
    # ratios (stored as fractions, shown as percentages)
    _m("gross_margin", "Gross margin", "ratio", "ratio", "gross profit margin",
       "gross margin percentage", "total gross margin percentage", sign="signed",
       parts=("gross_profit", "revenue")),
    _m("operating_margin", "Operating margin", "ratio", "ratio", "operating profit margin",
       "ebit margin", sign="signed", parts=("operating_income", "revenue")),
    _m("net_margin", "Net margin", "ratio", "ratio", "net profit margin", "profit margin",
       "net income margin", sign="signed", parts=("net_income", "revenue")),
    _m("free_cash_flow_margin", "Free cash flow margin", "ratio", "ratio", "fcf margin",
       sign="signed", parts=("free_cash_flow", "revenue")),
    _m("ebitda_margin", "EBITDA margin", "ratio", "ratio", sign="signed",
       parts=("ebitda", "revenue")),
    _m("revenue_growth", "Revenue growth", "ratio", "ratio", "sales growth",
       "top-line growth", sign="signed", growth_of="revenue"),
    _m("earnings_growth", "Earnings growth", "ratio", "ratio", "net income growth",
       sign="signed", growth_of="net_income"),
    _m("return_on_equity", "Return on equity", "ratio", "ratio", "roe", sign="signed",
       parts=("net_income", "shareholders_equity")),
    _m("return_on_assets", "Return on assets", "ratio", "ratio", "roa", sign="signed",
       parts=("net_income", "total_assets")),
    _m("return_on_invested_capital", "Return on invested capital", "ratio", "ratio",
       "roic"),
    _m("dividend_yield", "Dividend yield", "ratio", "ratio"),
    _m("payout_ratio", "Payout ratio", "ratio", "ratio"),
    _m("debt_to_equity", "Debt to equity", "ratio", "ratio", "debt-to-equity",
       "leverage", "debt-to-equity ratio", parts=("total_debt", "shareholders_equity")),
    _m("current_ratio", "Current ratio", "ratio", "ratio",
       parts=("current_assets", "current_liabilities")),
    # market data
    _m("price", "Price", "market", "price", "share price", "stock price"),
    _m("open", "Open", "market", "price"),
    _m("high", "High", "market", "price"),
    _m("low", "Low", "market", "price"),
    _m("close", "Close", "market", "price", "closing price", "closed at"),
    _m("adj_close", "Adjusted close", "market", "price"),
    _m("volume", "Volume", "market", "shares", "trading volume"),
    _m("market_cap", "Market capitalisation", "market", "amount", "market cap",
       "market capitalization", "market value"),
    _m("enterprise_value", "Enterprise value", "market", "amount", "ev"),
    _m("price_to_earnings_ratio", "P/E", "market", "ratio", "p/e ratio",
       "price to earnings", "price-to-earnings", "pe ratio"),
    _m("price_to_book_ratio", "P/B", "market", "ratio", "price to book", "price-to-book"),
    _m("price_to_sales_ratio", "P/S", "market", "ratio", "price to sales",
       "price-to-sales"),
    _m("enterprise_value_to_ebitda_ratio", "EV/EBITDA", "market", "ratio"),
    # segments (the geographic note's assets)
    _m("long_lived_assets", "Long-lived assets", "balance", "amount", "noncurrent assets"),
    _m("share_of_total", "Share of total", "ratio", "ratio", "share of revenue",
       "percent of revenue"),
    # insider transactions (Forms 3, 4, 5)
    _m("transaction_shares", "Shares traded", "ownership", "shares", "shares sold",
       "shares bought", "shares"),
    _m("transaction_price_per_share", "Price per share", "ownership", "price"),
    _m("transaction_value", "Transaction value", "ownership", "amount"),
    _m("shares_owned_after", "Shares owned after", "ownership", "shares",
       "shares owned following the transaction"),
    _m("exercise_price", "Exercise price", "ownership", "price", "strike price"),
    _m("underlying_shares", "Underlying shares", "ownership", "shares"),
    # institutional holdings (Form 13F)
    _m("value", "Position value", "ownership", "amount", "value of the position"),
    _m("value_as_filed", "Value as filed", "ownership", "amount"),
    _m("shares", "Shares held", "ownership", "shares", "shares"),
    _m("voting_sole", "Voting authority, sole", "ownership", "shares"),
    _m("voting_shared", "Voting authority, shared", "ownership", "shares"),
    _m("voting_none", "Voting authority, none", "ownership", "shares"),
    _m("shares_before", "Shares at the earlier quarter", "ownership", "shares"),
    _m("shares_after", "Shares at the later quarter", "ownership", "shares"),
    _m("shares_change", "Change in shares", "ownership", "shares"),
    _m("shares_change_pct", "Change in shares (%)", "ownership", "ratio"),
    _m("value_before", "Value at the earlier quarter", "ownership", "amount"),
    _m("value_after", "Value at the later quarter", "ownership", "amount"),
    _m("value_change", "Change in value", "ownership", "amount"),
    _m("total_value", "Total portfolio value", "ownership", "amount"),
    # other
    _m("employees", "Employees", "other", "count", "headcount", "number of employees"),
)

TOTALS = frozenset({
    "gross_profit", "operating_expense", "operating_income", "net_income", "current_assets",
    "total_assets", "current_liabilities", "total_liabilities", "shareholders_equity",
    "liabilities_and_equity", "net_cash_flow_from_operations", "free_cash_flow",
    "net_cash_flow_from_investing", "net_cash_flow_from_financing",
})
"""Fields that close a section of their statement (a filing sets them on a rule, in bold)."""

STATEMENT_NAMES: dict[Statement, str] = {
    "income": "Income statement", "balance": "Balance sheet", "cash_flow": "Cash flow statement",
    "ratio": "Ratios", "market": "Market data", "other": "Figures",
}
"""What a reader calls each statement kind."""

_BY_FIELD: dict[str, Metric] = {m.field: m for m in METRICS}
_ORDER: dict[str, int] = {m.field: i for i, m in enumerate(METRICS)}

# Words kept in their written case when a field name not in the lexicon is turned into a
# label (``ebitda_margin`` -> ``EBITDA margin``).
_ACRONYMS = {"eps": "EPS", "ebit": "EBIT", "ebitda": "EBITDA", "usd": "USD", "ttm": "TTM",
             "r": "R", "d": "D", "sga": "SG&A", "roe": "ROE", "roa": "ROA", "roic": "ROIC",
             "ev": "EV", "fcf": "FCF", "pe": "P/E", "cik": "CIK", "sec": "SEC",
             "cusip": "CUSIP", "gaap": "GAAP", "us": "US", "sic": "SIC", "url": "URL"}


def metric(field: str) -> Metric | None:
    """The lexicon entry of a field name, or None when the lexicon has none."""
    found = _BY_FIELD.get(field)
    return found if found is not None else _BY_FIELD.get(field.lower())


def label(field: str) -> str:
    """A reader's label for a field: the lexicon's, else the name in words
    (``gross_profit_ttm`` -> ``Gross profit TTM``); a name that already reads as words (a
    table's own row label, ``iPhone net sales``) is kept as written. Never returns the raw
    name."""
    known = metric(field)
    if known is not None:
        return known.label
    stripped = " ".join(field.split())
    if "_" not in stripped and (" " in stripped or any(c.isupper() for c in stripped)):
        return stripped
    words = [w for w in re.split(r"[_\s]+", field.strip()) if w]
    if not words:
        return field
    shown = [_ACRONYMS.get(w.lower(), w.lower()) for w in words]
    first = shown[0]
    if first == first.lower():
        shown[0] = first[:1].upper() + first[1:]
    return " ".join(shown)


def is_total(field: str) -> bool:
    """Whether a field closes a section of its statement (:data:`TOTALS`)."""
    return field.lower() in TOTALS


_LABEL_NOISE = re.compile(r"\s*(\(\d\)|\d|\*|†)+\s*$|:\s*$")


def field_for_label(text: str) -> str | None:
    """The field a row label names when the whole label is one of the lexicon's phrases
    (a press release's ``Total revenue``, ``Diluted net income per share``); None when it
    names none or says more (``Subscription revenue``). Footnote marks and a final colon
    are ignored."""
    cleaned = " ".join(text.replace("\u2019", "'").split()).lower()
    cleaned = _LABEL_NOISE.sub("", cleaned).strip()
    cleaned = cleaned.replace(" (loss)", "").replace("(loss) ", "")
    words = tuple(_TOKEN.findall(cleaned))
    if not words or _GAP.sub("", cleaned) != "".join(words):
        return None  # other characters than words and a phrase's gaps: says more
    for phrase, found in _phrases().get(words[0], ()):
        if phrase == words:
            return found[0].field
    return None


def order(field: str) -> tuple[int, int, str]:
    """A sort key that lays fields out in statement order; unknown fields after the known
    ones of their statement kind (guessed ``other``), alphabetically."""
    known = metric(field)
    if known is not None:
        return (STATEMENTS.index(known.statement), _ORDER[known.field], "")
    return (STATEMENTS.index("other"), len(METRICS), field)


# A phrase several metrics share means this one first (an unqualified "EPS" is diluted).
_PREFERRED = {"eps": "earnings_per_share_diluted",
              "earnings per share": "earnings_per_share_diluted",
              "net income per share": "earnings_per_share_diluted",
              "net loss per share": "earnings_per_share_diluted",
              "shares": "outstanding_shares", "share count": "outstanding_shares"}


_TOKEN = re.compile(r"[a-z0-9&]+")
_GAP = re.compile(r"[ \t,/()'’-]*")


@lru_cache(maxsize=1)
def _phrases() -> dict[str, list[tuple[tuple[str, ...], tuple[Metric, ...]]]]:
    """First word -> [(the phrase's words, its metrics)], longest phrases first."""
    owners: dict[str, list[str]] = {}
    for m in METRICS:
        for phrase in m.phrases:
            fields = owners.setdefault(phrase, [])
            if m.field not in fields:
                fields.append(m.field)
    for phrase, first in _PREFERRED.items():
        owners[phrase].sort(key=lambda f: f != first)
    by_first: dict[str, list[tuple[tuple[str, ...], tuple[Metric, ...]]]] = {}
    merged: dict[tuple[str, ...], list[str]] = {}
    for phrase, fields in owners.items():
        words = tuple(_TOKEN.findall(phrase))
        known = merged.setdefault(words, [])
        known.extend(f for f in fields if f not in known)
    for words, fields in merged.items():
        by_first.setdefault(words[0], []).append((words, tuple(_BY_FIELD[f] for f in fields)))
    for entries in by_first.values():
        entries.sort(key=lambda e: len(e[0]), reverse=True)  # "net income margin" first
    return by_first


def metrics_at(text: str) -> list[tuple[int, int, tuple[Metric, ...]]]:
    """Every metric phrase a text names, as ``(start, end, metrics)`` in order of
    appearance: ``metrics`` holds each metric the phrase may mean (``EPS``: basic and
    diluted; the first is the one :func:`metrics_named` reports). Words are compared, not
    characters ("selling, general and administrative" and "selling general and
    administrative" are one phrase); overlapping phrases resolve to the longest (``net
    income margin`` is one metric)."""
    lowered = text.lower()
    return metrics_in(lowered, list(_TOKEN.finditer(lowered)))


def tokens(lowered: str) -> list[re.Match[str]]:
    """The words of a text in lower case, as :func:`metrics_in` reads them (a reader of a
    long text scans it once and hands the words to each lookup)."""
    return list(_TOKEN.finditer(lowered))


def metrics_in(lowered: str, matches: Sequence[re.Match[str]]
               ) -> list[tuple[int, int, tuple[Metric, ...]]]:
    """:func:`metrics_at` of a text in lower case whose :func:`tokens` are ``matches``."""
    by_first = _phrase_index()
    words = [m[0] for m in matches]
    # the words a phrase can start with, found in one pass (most words start none)
    starts = [i for i, word in enumerate(words) if word in by_first]
    out: list[tuple[int, int, tuple[Metric, ...]]] = []
    count = len(words)
    reached = 0  # the words of a phrase taken are no phrase's start
    for i in starts:
        if i < reached:
            continue
        by_second, alone = by_first[words[i]]
        n = 0
        found: tuple[Metric, ...] = ()
        # the longest phrase that goes on with the next words, else the word alone
        for phrase, metrics_of in by_second.get(words[i + 1], ()) if i + 1 < count else ():
            size = len(phrase)
            if i + size <= count and tuple(words[i:i + size]) == phrase and all(
                    _joined(lowered, matches[i + k - 1].end(), matches[i + k].start())
                    for k in range(1, size)):
                n, found = size, metrics_of
                break
        if not n and alone is not None:
            n, found = 1, alone
        if n:
            out.append((matches[i].start(), matches[i + n - 1].end(), found))
            reached = i + n
    return out


def scan(lowered: str) -> tuple[list[tuple[int, int, tuple[Metric, ...]]], set[str]]:
    """:func:`metrics_at` of a long text in lower case, and the set of its words (as
    :func:`tokens` reads them), found without a match object for every word: the words a
    phrase can start with are found by a scan for each (a few of them occur in a text),
    and only the words right after one are read."""
    words = set(_TOKEN.findall(lowered))
    by_first = _phrase_index()
    starts = sorted((m.start(), word) for word in words if word in by_first
                    for m in _token_literal(word).finditer(lowered))
    out: list[tuple[int, int, tuple[Metric, ...]]] = []
    reached = 0  # the words of a phrase taken are no phrase's start
    search = _TOKEN.search
    for start, word in starts:
        if start < reached:
            continue
        by_second, alone = by_first[word]
        end = start + len(word)
        found: tuple[Metric, ...] = ()
        last = -1
        following: list[re.Match[str]] = []  # the words after it, read as far as needed
        done = False
        candidates = _after_first(lowered, end, following, by_second) if by_second else []
        for phrase, metrics_of in candidates:
            size = len(phrase)
            while len(following) < size - 1 and not done:
                at = following[-1].end() if following else end
                nxt = search(lowered, at)
                if nxt is None:
                    done = True
                else:
                    following.append(nxt)
            if len(following) < size - 1:
                continue
            reach = end  # each next word is the phrase's and joined to the one before
            for k in range(1, size):
                word_k = following[k - 1]
                if word_k[0] != phrase[k] or not _joined(lowered, reach, word_k.start()):
                    break
                reach = word_k.end()
            else:
                found, last = metrics_of, reach
                break
        if last < 0 and alone is not None:
            found, last = alone, end
        if last >= 0:
            out.append((start, last, found))
            reached = last
    return out, words


def _after_first(lowered: str, end: int, following: list[re.Match[str]],
                 by_second: dict[str, list[tuple[tuple[str, ...], tuple[Metric, ...]]]]
                 ) -> list[tuple[tuple[str, ...], tuple[Metric, ...]]]:
    """The phrases that go on with the word after the one ending at ``end`` (read into
    ``following``), longest first."""
    nxt = _TOKEN.search(lowered, end)
    if nxt is None:
        return []
    following.append(nxt)
    return by_second.get(nxt[0], [])


@lru_cache(maxsize=1024)
def _token_literal(word: str) -> re.Pattern[str]:
    """``word`` as a whole word of :func:`tokens` (the literal first, so a scan skips to
    its places)."""
    escaped = re.escape(word)
    return re.compile(rf"{escaped}(?<![a-z0-9&]{escaped})(?![a-z0-9&])")


@lru_cache(maxsize=1)
def _phrase_index() -> dict[str, tuple[dict[str, list[tuple[tuple[str, ...], tuple[Metric, ...]]]],
                                       tuple[Metric, ...] | None]]:
    """:func:`_phrases` by first word, then by second word (longest phrases first), with
    the metrics of the first word alone (None when it is no phrase by itself)."""
    out: dict[str, tuple[dict[str, list[tuple[tuple[str, ...], tuple[Metric, ...]]]],
                         tuple[Metric, ...] | None]] = {}
    for first, entries in _phrases().items():
        by_second: dict[str, list[tuple[tuple[str, ...], tuple[Metric, ...]]]] = {}
        alone: tuple[Metric, ...] | None = None
        for phrase, found in entries:
            if len(phrase) == 1:
                alone = found if alone is None else alone
            else:
                by_second.setdefault(phrase[1], []).append((phrase, found))
        out[first] = (by_second, alone)
    return out


def _joined(text: str, end: int, start: int) -> bool:
    """Whether two words belong to one phrase: only spaces or ``, / ( ) ' -`` between."""
    return (start - end == 1 and text[end] == " ") or bool(_GAP.fullmatch(text, end, start))


def metrics_named(text: str) -> list[tuple[int, int, Metric]]:
    """Every metric a text names, as ``(start, end, metric)`` in order of appearance;
    overlapping phrases resolve to the longest (``net income margin`` is one metric)."""
    return [(start, end, found[0]) for start, end, found in metrics_at(text)]
