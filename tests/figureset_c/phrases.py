"""Set C's words: company names, metric phrases, period phrases as research notes write them,
and sentences of non-figures (marked «...»). No dexter import."""

from __future__ import annotations

import random

MONTHS = {1: "January", 2: "February", 3: "March", 4: "April", 5: "May", 6: "June", 7: "July",
          8: "August", 9: "September", 10: "October", 11: "November", 12: "December"}
FY_END = {"AAPL": 9, "TSLA": 12}


def company_name(ticker: str, rng: random.Random) -> str:
    names = {"AAPL": ("Apple", "Apple", "AAPL", "Apple Inc."),
             "TSLA": ("Tesla", "Tesla", "TSLA", "Tesla, Inc.")}
    return rng.choice(names[ticker])


METRICS: dict[str, tuple[str, ...]] = {
    "revenue": ("revenue", "net sales", "total revenue", "sales", "top line"),
    "cost_of_revenue": ("cost of sales", "COGS", "cost of revenue"),
    "gross_profit": ("gross profit", "gross income"),
    "rnd": ("R&D", "R&D expense", "research and development"),
    "sga": ("SG&A", "SG&A expense"),
    "operating_income": ("operating income", "EBIT", "operating profit", "income from operations"),
    "income_tax": ("tax expense", "income tax expense", "the tax charge"),
    "net_income": ("net income", "net profit", "earnings", "bottom line"),
    "eps_diluted": ("diluted EPS", "EPS (diluted)", "diluted earnings per share"),
    "eps_basic": ("basic EPS",),
    "diluted_shares": ("diluted share count", "weighted diluted shares"),
    "cfo": ("operating cash flow", "cash from operations", "CFO"),
    "capex": ("capex", "capital expenditure", "capital spending"),
    "buybacks": ("buybacks", "share repurchases"),
    "dividends": ("dividends paid", "dividends"),
    "fcf": ("free cash flow", "FCF"),
    "gross_margin": ("gross margin", "GM"),
    "operating_margin": ("operating margin", "EBIT margin"),
    "net_margin": ("net margin", "net income margin"),
}


def metric_words(metric: str, rng: random.Random) -> str:
    return rng.choice(METRICS[metric])


def _qend(ticker: str, q: int, fy: int) -> tuple[int, int]:
    """(month, calendar year) a fiscal quarter ends in."""
    month = (FY_END[ticker] + 3 * q - 1) % 12 + 1
    return month, fy if month <= FY_END[ticker] else fy - 1


def period_words(ticker: str, period: str, rng: random.Random) -> str:
    """A period as analysts write it (in the company's fiscal calendar)."""
    if period.startswith("FY"):
        y = int(period[2:])
        if ticker == "TSLA":
            return rng.choice((str(y), f"FY{y % 100}", f"CY{y}", f"full-year {y}", f"FY {y}"))
        return rng.choice((f"FY{y % 100}", f"fiscal {y}", f"FY{y}", f"fiscal year {y}",
                           f"the September-{y} fiscal year", f"FY {y}"))
    if period.startswith("TTM "):
        q, fy = int(period[5]), int(period[-4:])
        month, year = _qend(ticker, q, fy)
        return rng.choice((f"TTM to {MONTHS[month]} {year}", f"LTM ({MONTHS[month][:3]}-{year % 100})",
                           f"on a trailing-twelve-month basis through {MONTHS[month]} {year}"))
    if period[:3] in ("9M ", "H1 "):
        fy = int(period[-4:])
        if period.startswith("9M"):
            month, year = _qend(ticker, 3, fy)
            return rng.choice((f"9M FY{fy % 100}", f"the nine months ended {MONTHS[month]} {year}",
                               f"the first nine months of fiscal {fy}"))
        month, year = _qend(ticker, 2, fy)
        return rng.choice((f"1H FY{fy % 100}", f"the first half of fiscal {fy}", f"H1 FY{fy}",
                           f"the six months ended {MONTHS[month]} {year}"))
    q, fy = int(period[1]), int(period[-4:])
    month, year = _qend(ticker, q, fy)
    yy = fy % 100
    if ticker == "TSLA":
        return rng.choice((f"Q{q}'{yy}", f"{q}Q{yy}", f"Q{q} {fy}", f"the {MONTHS[month]}-{year} quarter",
                           f"{q}Q {fy}", f"the {MONTHS[month]} {year} quarter"))
    return rng.choice((f"Q{q} FY{yy}", f"{q}Q FY{yy}", f"fiscal Q{q} {fy}", f"F{q}Q{yy}",
                       f"the {MONTHS[month]}-{year} quarter", f"FQ{q}'{yy}",
                       f"fiscal Q{q}'{yy}", f"the {MONTHS[month]} quarter of fiscal {fy}"))


COMMON = (
    "See «Item 7» (MD&A) and «Note 12» of the «10-K» for the segment bridge.",
    "Insiders sold under «Rule 10b5-1» plans; the «Section 16(a)» filings were on time.",
    "The name remains an «S&P 500» heavyweight and a top «Nasdaq-100» weight.",
    "Management hosts the call at «4:30 p.m.» ET.",
    "Our last note is on «page 14», and the reconciliation is in «Exhibit 99.1» of the «8-K».",
    "The quarterly detail comes from the «Form 10-Q», not the press release.",
    "We flag the «FY'24» restatement risk as low.",
    "Peers in the screen include TSMC («2330.TW») and Samsung («005930.KS»).",
    "Sell-side consensus is updated through «2025-01-31».",
    "Data as of «March 3, 2025»; model version «v4.2.1».",
    "Non-GAAP items are described in the footnotes[^«1»].",
    "This note follows our «Q3» preview and our «2H25» outlook piece.",
)
NON_FIGURES: dict[str, tuple[str, ...]] = {
    "AAPL": (*COMMON, "Apple Park is at One Apple Park Way, Cupertino, CA «95014»; IR can be reached at «(408) 996-1010».", "The «iPhone 16 Pro» cycle and «M4 chip» Macs, shipping with «iOS 18» and «macOS 15.1», frame the outlook.", "The «10-K» for the year ended «September 28, 2024» was filed on «November 1, 2024».", "The «Apple Watch Series 10» and «AirPods 4» round out Wearables.", "The «10-Q» for the quarter ended «June 28, 2025» was filed on «August 1, 2025».", "Our «FY2026» model assumes no change to the «Section 301» tariffs."),
    "TSLA": (*COMMON, "Tesla's «1» Tesla Road, Austin, TX «78725» campus lists «(512) 516-8177» for IR.", "«Model 3» and «Model Y» still drive the mix, with «Cybertruck» ramping on «4680» cells.", "The «10-K» for the year ended «December 31, 2021» was filed on «February 7, 2022».", "FSD «v12» and software «version 2024.38» are not in our numbers.", "The Shanghai plant ran «24/7» through the quarter, per the «8-K».", "Supply of «2170»-format cells was stable."),
}
