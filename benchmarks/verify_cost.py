"""What checking an answer's figures costs: a 5,000-word answer against 200 sources.

The sources are what a long run gathers: 196 statement results as the finance tools return
them (each the real Apple income statement's records, rescaled for one of 196 companies, as
JSON text for the model plus its data table), and four copies of Apple's real FY2024 10-K text
(about 200 KB each, with its statement tables). The answer is analyst prose and tables with
about 520 figures: levels with their company, metric and period, growth rates, margins,
figures of the wrong year, invented ones, and citations. Prints the time to add the sources
(paid once, as results arrive, with their numbers merged into the ledger's sorted index),
then ``verify_answer`` on 15 different answers of that size, each checked twice: first as a
run checks its final answer, right after sources joined the ledger (the session's checker is
built anew: company names, grounded calculations), then again with the ledger unchanged (the
repair turn's answer). For each: median and p90 of the CPU time, the wall time, what it
found, and as a yardstick of the machine's speed at the time the same figures looked up by
value only (the ratio moves less with the load than the milliseconds do). Goal: the first
check's median CPU time under 50 ms (the wall time is printed too; on a shared machine it
also counts other processes' turns).

Prints figures and a GOAL MET/NOT MET line; always exits 0.
Run: ``.venv/bin/python benchmarks/verify_cost.py``
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dexter.data.filing_text import html_to_text
from dexter.evidence.ledger import SourceLedger
from dexter.evidence.numbers import extract_claims
from dexter.evidence.tables import tables_from_data
from dexter.evidence.verify import verify_answer
from dexter.tools.base import format_result
from dexter.tools.finance.formatting import render_data

ROOT = Path(__file__).resolve().parents[1]
GOAL_MS = 50.0
RUNS = 15
FILING = (ROOT / "tests" / "fixtures" / "sec-real" / "www.sec.gov" / "Archives" / "edgar"
          / "data" / "320193" / "000032019324000123" / "aapl-20240928.htm")
FACTS = ROOT / "tests" / "fixtures" / "sec-real" / "data.sec.gov" / "api" / "xbrl" / \
    "companyfacts" / "CIK0000320193.json"
FIELDS = ("revenue", "cost_of_revenue", "gross_profit", "research_and_development",
          "operating_income", "net_income")
NAMES = {"revenue": "revenue", "cost_of_revenue": "cost of sales",
         "gross_profit": "gross profit", "research_and_development": "R&D",
         "operating_income": "operating income", "net_income": "net income"}
YEARS = (2021, 2022, 2023, 2024, 2025)
ENDS = {2021: "2021-09-25", 2022: "2022-09-24", 2023: "2023-09-30", 2024: "2024-09-28",
        2025: "2025-09-27"}


def apple_records() -> list[dict[str, Any]]:
    """Apple's annual income statement lines FY2021-FY2025, from the real companyfacts."""
    gaap = json.loads(FACTS.read_text(encoding="utf-8"))["facts"]["us-gaap"]
    concepts = {"revenue": "RevenueFromContractWithCustomerExcludingAssessedTax",
                "cost_of_revenue": "CostOfGoodsAndServicesSold", "gross_profit": "GrossProfit",
                "research_and_development": "ResearchAndDevelopmentExpense",
                "operating_income": "OperatingIncomeLoss", "net_income": "NetIncomeLoss"}
    records = []
    for year in YEARS:
        record: dict[str, Any] = {"ticker": "AAPL", "report_period": ENDS[year],
                                  "fiscal_period": f"FY{year}", "period": "annual",
                                  "currency": "USD"}
        for name, concept in concepts.items():
            rows = [r for r in gaap[concept]["units"]["USD"] if r.get("fp") == "FY"
                    and r["end"] == ENDS[year] and r.get("start", "")[:4] == str(year - 1)]
            record[name] = rows[-1]["val"] if rows else None
        record["gross_margin"] = round(record["gross_profit"] / record["revenue"], 4)
        records.append(record)
    return records


def company_source(ticker: str, base: list[dict[str, Any]], factor: float,
                   rng: random.Random) -> tuple[str, str, list[Any], list[dict[str, Any]]]:
    """One company's statements: Apple's lines rescaled, each line by its own factor (so
    margins and growth differ from company to company, as they do)."""
    factors = {name: factor * rng.uniform(0.7, 1.3) for name in FIELDS}
    records = []
    for record in base:
        scaled = dict(record, ticker=ticker)
        for name in FIELDS:
            scaled[name] = round(record[name] * factors[name] * rng.uniform(0.97, 1.03), -6)
        scaled["gross_margin"] = round(scaled["gross_profit"] / scaled["revenue"], 4)
        records.append(scaled)
    key = f"income_statements[{ticker}, annual]"
    text = format_result({key: {"source": "SEC EDGAR (XBRL company facts)",
                                "data": render_data(list(reversed(records)))}})
    return key, text, tables_from_data(key, records, "SEC EDGAR"), records


def ticker_of(n: int) -> str:
    """The made-up ticker of company ``n`` (ZAA, ZAB, ...: letters, as tickers are, so the
    answer's company names are read and bound like real ones)."""
    return "Z" + chr(ord("A") + n // 26) + chr(ord("A") + n % 26)


def money(value: float, rng: random.Random) -> str:
    style = rng.random()
    if style < 0.5:
        return f"${value / 1e9:,.1f} billion"
    if style < 0.75:
        return f"${value / 1e9:,.2f}B"
    return f"${value / 1e6:,.0f} million"


def answer(rng: random.Random, companies: list[tuple[str, list[dict[str, Any]]]]) -> str:
    parts: list[str] = []
    words = 0
    while words < 5_000:
        sid = rng.randrange(len(companies))
        ticker, records = companies[sid]
        i = rng.randrange(1, len(YEARS))
        now, then = records[i], records[i - 1]
        field = rng.choice(FIELDS)
        year = YEARS[i]
        value = now[field]
        kind = rng.random()
        if kind < 0.1:
            value = value * rng.uniform(0.6, 1.4)  # invented
        elif kind < 0.2:
            year = YEARS[i - 1]  # the wrong year
        growth = (now[field] / then[field] - 1) * 100
        cite = f"[S{sid + 1}]"
        templates = [
            f"{ticker}'s {NAMES[field]} was {money(value, rng)} in fiscal {year} {cite}, "
            f"{'up' if growth >= 0 else 'down'} {abs(growth):.1f}% from the prior year.",
            f"In FY{year}, {ticker} reported {NAMES[field]} of {money(value, rng)} {cite}, "
            f"with a gross margin of {now['gross_margin'] * 100:.1f}% and analysts watching "
            "the S&P 500 and the iPhone 16 cycle.",
            f"For the year ended {ENDS[year]}, {NAMES[field]} came in at "
            f"{money(value, rng)} {cite}, compared with {money(then[field], rng)} a year "
            "earlier, according to the filings we reviewed.",
        ]
        sentence = rng.choice(templates)
        parts.append(sentence)
        words += len(sentence.split())
        if len(parts) % 25 == 0:
            picked = rng.sample(range(len(companies)), 4)
            rows = "\n".join(f"| {companies[n][0]} | {companies[n][1][-1]['revenue'] / 1e6:,.0f} | "
                             f"{companies[n][1][-1]['net_income'] / 1e6:,.0f} | [S{n + 1}] |"
                             for n in picked)
            parts.append(f"\n\n| Company | FY2025 revenue ($M) | Net income ($M) | Source |\n"
                         f"|---|---|---|---|\n{rows}\n\n")
    return " ".join(parts)


def _p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1]


def main() -> None:
    rng = random.Random(7)
    base = apple_records()
    made = [company_source(ticker_of(n), base, rng.uniform(0.05, 3.0), rng) for n in range(196)]
    tenk = html_to_text(FILING.read_text(encoding="utf-8"))
    started = time.perf_counter()
    ledger = SourceLedger()
    for key, text, tables, _ in made:
        ledger.add("get_financials", {"query": key}, text, title=key, tables=tables)
    for n in range(4):
        ledger.add("read_filings", {"ticker": "AAPL", "copy": n}, tenk, title="AAPL 10-K")
    ledger.evidence.around(0.0, 0.0)  # the new numbers merged into the sorted index
    add_ms = (time.perf_counter() - started) * 1000
    evidence = len(ledger.evidence)
    companies = [(ticker_of(n), records) for n, (_, _, _, records) in enumerate(made)]
    # a new answer each run (same size and mix), so nothing is remembered from the last one
    answers = [answer(random.Random(100 + n), companies) for n in range(RUNS + 1)]
    verify_answer(answers[-1], ledger, "compare the companies")  # patterns compiled once
    first_cpu: list[float] = []
    first_wall: list[float] = []
    again_cpu: list[float] = []
    result = None
    for prose in answers[:RUNS]:
        # a source joins (a note whose numbers no figure of the answers has, so they fare
        # the same): its numbers are merged into the index and the session's checker is
        # built anew, as for a run's final answer
        ledger.add("read_file", {"path": f"notes-{len(ledger)}.md"},
                   f"notes on {len(ledger)} peers, 7 regions and 0.137 of the float",
                   kind="user")
        started, started_cpu = time.perf_counter(), time.process_time()
        result = verify_answer(prose, ledger, "compare the companies")
        first_cpu.append((time.process_time() - started_cpu) * 1000)
        first_wall.append((time.perf_counter() - started) * 1000)
        started_cpu = time.process_time()
        verify_answer(prose, ledger, "compare the companies")
        again_cpu.append((time.process_time() - started_cpu) * 1000)
    assert result is not None
    # the same answers' figures only looked up by value (the check before issue 25: no
    # reading of the words, no attribution), timed alongside as a yardstick of the
    # machine's speed at the moment: the ratio moves less than the milliseconds with the load
    lookup_cpu = []
    for prose in answers[:RUNS]:
        started_cpu = time.process_time()
        for claim in extract_claims(prose):
            ledger.find(claim.value - claim.tolerance, claim.value + claim.tolerance)
        lookup_cpu.append((time.process_time() - started_cpu) * 1000)
    prose = answers[RUNS - 1]
    median_cpu = statistics.median(first_cpu)
    statuses = Counter(f.status for f in result.figures)
    print(f"answer: {len(prose.split()):,} words, {result.checked} figures "
          f"({', '.join(f'{n} {s}' for s, n in statuses.most_common())}); ledger: "
          f"{len(ledger)} sources, {evidence:,} numbers")
    print(f"adding the sources: {add_ms:.0f} ms in all ({add_ms / len(ledger):.2f} ms each; "
          f"a 200 KB 10-K about {_tenk_ms(tenk):.0f} ms)")
    print(f"verify_answer, first check after sources joined: CPU median {median_cpu:.1f} ms, "
          f"p90 {_p90(first_cpu):.1f} ms, min {min(first_cpu):.1f} ms over {RUNS} answers "
          f"({median_cpu / max(result.checked, 1) * 1000:.0f} µs per figure); wall median "
          f"{statistics.median(first_wall):.1f} ms, p90 {_p90(first_wall):.1f} ms")
    print(f"verify_answer, ledger unchanged (the repair turn): CPU median "
          f"{statistics.median(again_cpu):.1f} ms, p90 {_p90(again_cpu):.1f} ms")
    lookup = statistics.median(lookup_cpu)
    print(f"value-only lookup of the same figures: median CPU {lookup:.1f} ms; the check "
          f"costs {median_cpu / max(lookup, 1e-9):.1f}x that")
    # the goal is judged on CPU time: on a machine shared with other work the wall time
    # also counts the time other processes held the CPU
    print(f"GOAL {'MET' if median_cpu < GOAL_MS else 'NOT MET'}: verification under "
          f"{GOAL_MS:g} ms (median CPU time of the first check; p90 {_p90(first_cpu):.1f} ms, "
          f"wall median {statistics.median(first_wall):.1f} ms)")


def _tenk_ms(text: str) -> float:
    started = time.perf_counter()
    SourceLedger().add("read_filings", {"ticker": "AAPL"}, text)
    return (time.perf_counter() - started) * 1000


if __name__ == "__main__":
    main()
