"""Set C's answer templates: research-note prose, answer tables with unit headers, two-company
comparisons, losses, TTM and year-to-date figures. Each is (sources, body); a body returns False
when a figure it needs cannot be written. No dexter import."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import replace

from tests.figureset_c import oracle
from tests.figureset_c.generate import Case
from tests.figureset_c.phrases import company_name, metric_words, period_words
from tests.figureset_c.write import Written, money

LEVEL = ("true",) * 7 + ("near", "swap", "scale", "random", "period", "line", "company",
                         "miscited", "sign")
RATE = ("true",) * 6 + ("near", "swap", "random", "period", "period", "sign", "miscited",
                        "company")
TABLE = ("true",) * 6 + ("near", "swap", "random", "period", "line", "sign")


def _direction(c: Case, w: Written, qoq: bool = False, pts: bool = False) -> tuple[str, Written,
                                                                                 str]:
    rng = c.rng
    tail = rng.choice((" q/q", " QoQ", " sequentially")) if qoq else rng.choice(
        (" y/y", " YoY", " year on year", " vs. the prior year"))
    if w.sign > 0:
        form = rng.choice(("up", "plus", "grow", "rise") if not pts else ("up", "plus", "expand"))
        if form == "plus":
            return "", replace(w, pre="+" + w.pre), tail
        word = {"up": "up ", "grow": "growth of ", "rise": "rising ", "expand": "expanding "}[form]
        return word, w, tail
    form = rng.choice(("down", "minus", "paren", "fall") if not pts else ("down", "minus",
                                                                            "contract"))
    if form == "minus":
        return "", replace(w, pre="-" + w.pre), tail
    if form == "paren":
        return "down ", replace(w, pre="(", post=")" + w.post), tail
    word = {"down": "down ", "fall": "a decline of ", "contract": "contracting "}[form]
    return word, w, tail


def level(c: Case, before: str, ticker: str, metric: str, period: str, after: str = "",
          fmt: str = "money", intents: tuple[str, ...] = LEVEL, cite: bool = True) -> bool:
    got = c.slot(ticker, metric, period, "level", fmt, intents=intents)
    if got is None:
        return False
    w, label, intent, sid = got
    if fmt == "loss":
        words = {"net_income": ("a net loss of ", "a net profit of "),
                 "operating_income": ("an operating loss of ", "an operating profit of "),
                 "fcf": ("negative free cash flow of ", "positive free cash flow of ")}[metric]
        before = before + words[0 if w.sign < 0 else 1]
    c.fig(before, w, after, label, intent, sid, cite)
    return True


def rate(c: Case, before: str, ticker: str, metric: str, period: str, kind: str = "growth",
         base: str = "", after: str = "", qoq: bool = False, cite: bool = True,
         fmt: str = "pct") -> bool:
    if qoq:
        base = oracle.previous_quarter(period)
    got = c.slot(ticker, metric, period, kind, "pts" if kind == "pts" else fmt, base, RATE)
    if got is None:
        return False
    w, label, intent, sid = got
    if kind in ("growth", "pts"):
        word, w, tail = _direction(c, w, qoq, kind == "pts")
        before, after = before + word, tail + after
    c.fig(before, w, after, label, intent, sid, cite)
    return True


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def _p(c: Case, ticker: str, period: str) -> str:
    return period_words(ticker, period, c.rng)


def _say_period(c: Case, ticker: str, period: str) -> None:
    c.non(_p(c, ticker, period))


def apple_annual(c: Case) -> bool:
    y = c.rng.choice((2022, 2023, 2024, 2025))
    p, co = f"FY{y}", company_name("AAPL", c.rng)
    c.t(f"{co} ")
    c.t(c.rng.choice(("printed ", "reported ", "delivered ")))
    _say_period(c, "AAPL", p)
    ok = level(c, f" {metric_words('revenue', c.rng)} of ", "AAPL", "revenue", p)
    ok = ok and rate(c, ", ", "AAPL", "revenue", p, after=".")
    ok = ok and level(c, f" {_cap(metric_words('gross_margin', c.rng))} came in at ", "AAPL",
                      "gross_margin", p, fmt="pct")
    ok = ok and rate(c, " (", "AAPL", "gross_margin", p, "pts", after=")")
    ok = ok and level(c, f", and {metric_words('operating_margin', c.rng)} at ", "AAPL",
                      "operating_margin", p, fmt="pct", after=".")
    ok = ok and level(c, f" {_cap(metric_words('eps_diluted', c.rng))} was ", "AAPL",
                      "eps_diluted", p, fmt="eps")
    ok = ok and level(c, " on ", "AAPL", "diluted_shares", p, fmt="shares", after=" diluted shares",
                      cite=False)
    c.t(" [S1].")
    if len(c.sources) > 1 and ok:
        ok = level(c, f" {metric_words('fcf', c.rng)} of ", "AAPL", "fcf", p)
        ok = ok and level(c, f" covered {metric_words('buybacks', c.rng)} of ", "AAPL", "buybacks", p,
                          after=".")
    return ok


def apple_quarter(c: Case) -> bool:
    q = c.rng.choice(("Q2 FY2025", "Q3 FY2025", "Q1 FY2026", "Q4 FY2025"))
    co = c.rng.choice(("Apple", "AAPL"))
    c.t("In ")
    _say_period(c, "AAPL", q)
    ok = level(c, f", {co} {metric_words('revenue', c.rng)} reached ", "AAPL", "revenue", q,
               cite=False)
    ok = ok and rate(c, " (", "AAPL", "revenue", q, cite=False)
    ok = ok and rate(c, ", ", "AAPL", "revenue", q, qoq=True, after=")", cite=False)
    c.t(" [S1].")
    ok = ok and level(c, f" {_cap(metric_words('gross_margin', c.rng))} was ", "AAPL",
                      "gross_margin", q, fmt="pct")
    ok = ok and rate(c, ", ", "AAPL", "gross_margin", q, "pts", after=".")
    if q != "Q4 FY2025" and ok:
        ok = level(c, f" {_cap(metric_words('eps_diluted', c.rng))} of ", "AAPL",
                   "eps_diluted", q, fmt="eps")
        ok = ok and level(c, " compared with ", "AAPL", "eps_diluted", oracle.prior(q),
                          fmt="eps", after=" a year earlier")
        c.t(".")
    if len(c.sources) > 1 and ok:
        y = int(q[-4:])
        c.t(" For the full year ")
        _say_period(c, "AAPL", f"FY{y - 1}")
        ok = level(c, f", {metric_words('net_income', c.rng)} was ", "AAPL", "net_income",
                   f"FY{y - 1}", after=".")
    return ok


def tesla_quarter(c: Case) -> bool:
    q = c.rng.choice(("Q4 FY2021", "Q1 FY2022", "Q2 FY2022", "Q3 FY2022", "Q3 FY2021"))
    c.t(f"{company_name('TSLA', c.rng)} in ")
    _say_period(c, "TSLA", q)
    ok = level(c, f": {metric_words('revenue', c.rng)} ", "TSLA", "revenue", q, cite=False)
    ok = ok and rate(c, ", ", "TSLA", "revenue", q)
    ok = ok and level(c, f"; {metric_words('operating_income', c.rng)} ", "TSLA",
                      "operating_income", q, cite=False)
    ok = ok and level(c, " (", "TSLA", "operating_margin", q, fmt="pct", after=" margin)")
    ok = ok and level(c, f". {_cap(metric_words('net_income', c.rng))} was ", "TSLA",
                      "net_income", q)
    ok = ok and rate(c, ", ", "TSLA", "net_income", q, qoq=True, after=".")
    return ok


def tesla_annual(c: Case) -> bool:
    y = c.rng.choice((2017, 2018, 2019, 2020, 2021))
    p = f"FY{y}"
    c.t(f"{company_name('TSLA', c.rng)} booked ")
    fmt = c.rng.choice(("loss", "money-"))
    ok = level(c, "net income of " if fmt == "money-" else "", "TSLA", "net_income", p, fmt=fmt,
               cite=False)
    c.t(" in ")
    _say_period(c, "TSLA", p)
    c.t(" [S1]")
    ok = ok and level(c, " on revenue of ", "TSLA", "revenue", p)
    ok = ok and rate(c, " (", "TSLA", "revenue", p, after=")")
    ok = ok and level(c, ", with operating income of ", "TSLA", "operating_income", p,
                      fmt="money-", after=".")
    if len(c.sources) > 1 and ok:
        ok = level(c, " It reported ", "TSLA", "fcf", p, fmt="loss")
        ok = ok and level(c, f" after {metric_words('capex', c.rng)} of ", "TSLA", "capex", p,
                          after=".")
    return ok


def compare(c: Case) -> bool:
    p = "FY2021"
    c.t("In ")
    c.non(c.rng.choice(("FY21", "fiscal 2021", "2021")))
    ok = level(c, ", Apple earned ", "AAPL", "net_income", p, cite=True)
    if c.rng.random() < 0.5:
        ok = ok and level(c, " against Tesla's ", "TSLA", "net_income", p)
    else:
        ok = ok and level(c, " vs. ", "TSLA", "net_income", p, after=" at Tesla")
    ok = ok and level(c, "; Apple's net margin of ", "AAPL", "net_margin", p, fmt="pct")
    ok = ok and level(c, " compares with Tesla's ", "TSLA", "net_margin", p, fmt="pct",
                      after=".")
    ok = ok and level(c, " Tesla's revenue grew to ", "TSLA", "revenue", p)
    ok = ok and rate(c, " (", "TSLA", "revenue", p, after=")")
    ok = ok and level(c, ", while Apple's reached ", "AAPL", "revenue", p, after=".")
    return ok


def apple_ttm(c: Case) -> bool:
    t = "TTM Q1 FY2026"
    c.t(c.rng.choice(("Apple ", "On our numbers, Apple ")))
    _say_period(c, "AAPL", t)
    ok = level(c, f": {metric_words('revenue', c.rng)} ", "AAPL", "revenue", t)
    ok = ok and level(c, f" and {metric_words('net_income', c.rng)} ", "AAPL", "net_income", t,
                      after=".")
    span = c.rng.choice(("9M FY2025", "H1 FY2025"))
    c.t(" For ")
    _say_period(c, "AAPL", span)
    ok = ok and level(c, f", {metric_words('revenue', c.rng)} totalled ", "AAPL", "revenue", span)
    ok = ok and level(c, f" and {metric_words('gross_profit', c.rng)} ", "AAPL", "gross_profit",
                      span, after=".")
    return ok


def apple_cash(c: Case) -> bool:
    y = c.rng.choice((2023, 2024, 2025))
    p = f"FY{y}"
    c.t("Apple generated ")
    ok = level(c, "", "AAPL", "cfo", p, after=" of operating cash flow", cite=False)
    c.t(" in ")
    _say_period(c, "AAPL", p)
    c.t(" [S1]")
    ok = ok and level(c, ", spent ", "AAPL", "capex", p, after=" on capex")
    ok = ok and level(c, " and returned ", "AAPL", "buybacks", p, after=" via repurchases")
    ok = ok and level(c, " plus ", "AAPL", "dividends", p, after=" in dividends.")
    ok = ok and level(c, " FCF was ", "AAPL", "fcf", p)
    ok = ok and rate(c, ", ", "AAPL", "fcf", p, after=".")
    return ok


def cagr(c: Case) -> bool:
    ticker = c.rng.choice(("AAPL", "TSLA"))
    a, b = (("FY2021", "FY2025") if ticker == "AAPL" else c.rng.choice(
        (("FY2017", "FY2021"), ("FY2018", "FY2021"), ("FY2016", "FY2020"))))
    metric = c.rng.choice(("revenue", "gross_profit", "revenue"))
    n = int(b[2:]) - int(a[2:])
    words = metric_words(metric, c.rng)
    c.t(f"{company_name(ticker, c.rng)}'s {words} compounded at ")
    ok = rate(c, "", ticker, metric, b, "cagr", a, cite=False)
    c.t(" a year from ")
    _say_period(c, ticker, a)
    c.t(" to ")
    _say_period(c, ticker, b)
    c.t(f" (a {n}-year CAGR) [S1].")
    ok = ok and level(c, f" {_cap(words)} ended the period at ", ticker, metric, b,
                      after=".")
    return ok


HEADERS = {1e9: ("($bn)", "USD bn", "US$ bn", "$ in billions"),
           1e6: ("USD m", "($m)", "(in millions, except per share)", "$ in millions")}


def table(c: Case) -> bool:
    ticker = "AAPL" if c.sources[0].startswith("AAPL") else "TSLA"
    periods = list(oracle.Scope({"S1": c.scope.sources["S1"]}).sources["S1"][2])
    quarterly = "-q" in c.sources[0]
    if ticker == "TSLA":
        periods = [p for p in periods if p >= "FY2018"] if not quarterly else periods
    start = c.rng.randrange(0, max(1, len(periods) - 2))
    cols = periods[start:start + c.rng.choice((2, 3))]
    scale = 1e9 if ticker == "AAPL" and c.rng.random() < 0.6 else 1e6
    head = c.rng.choice(HEADERS[scale])
    c.t(f"{company_name(ticker, c.rng)} at a glance:\n\n| {head} | ")
    for p in cols:
        c.non(_p(c, ticker, p) if c.rng.random() < 0.5 else
              (p.replace(" FY20", "'") if p.startswith("Q") else f"FY{p[-2:]}"))
        c.t(" | ")
    c.t("Source |\n|" + "---|" * (len(cols) + 2) + "\n")
    rows = [("Revenue", "revenue", "money"), ("Gross profit", "gross_profit", "money"),
            ("Operating income", "operating_income", "money"), ("Net income", "net_income", "money"),
            ("Gross margin (%)", "gross_margin", "pct")]
    if ticker == "AAPL" and not (quarterly and any(p.startswith("Q4") for p in cols)):
        rows.append(("Diluted EPS" if "except" in head else "Diluted EPS ($)", "eps_diluted", "eps"))
    ok = True
    for label, metric, fmt in rows:
        c.t(f"| {label} |")
        for p in cols:
            s = scale if fmt == "money" else 1.0
            got = c.slot(ticker, metric, p, "level", fmt, intents=TABLE, table_scale=s)
            if got is None:
                return False
            w, lab, intent, _ = got
            c.fig(" ", w, " |", lab, intent, None, cite_it=False)
        c.t(" [S1] |\n")
    return ok


def _one(key: str) -> list[str]:
    return [key]


TEMPLATES: list[tuple[Callable[[random.Random], list[str]], Callable[[Case], bool]]] = [
    (lambda r: ["AAPL-inc-a"] + (["AAPL-cf-a"] if r.random() < 0.5 else []), apple_annual),
    (lambda r: ["AAPL-inc-q"] + (["AAPL-inc-a"] if r.random() < 0.5 else []), apple_quarter),
    (lambda r: ["TSLA-inc-q"], tesla_quarter),
    (lambda r: ["TSLA-inc-a"] + (["TSLA-cf-a"] if r.random() < 0.6 else []), tesla_annual),
    (lambda r: ["AAPL-inc-a", "TSLA-inc-a"], compare),
    (lambda r: ["AAPL-inc-ttm", "AAPL-inc-q"], apple_ttm),
    (lambda r: ["AAPL-cf-a"] + (["AAPL-inc-a"] if r.random() < 0.5 else []), apple_cash),
    (lambda r: [r.choice(("AAPL-inc-a", "TSLA-inc-a"))], cagr),
    (lambda r: [r.choice(("AAPL-inc-a", "AAPL-inc-q", "TSLA-inc-a", "TSLA-inc-q"))], table),
    (lambda r: [r.choice(("AAPL-inc-a", "TSLA-inc-a", "TSLA-inc-q"))], table),
]
"""(sources for a case, its body): tables twice as often, for their many cells."""

_unused = (random, money, _one)
