"""Held-out set C for the figure check: rule-based, seeded, deterministic analyst-style answers
over Apple's and Tesla's real SEC data, every figure labelled by :mod:`tests.figureset_c.oracle`
from the raw companyfacts JSON. Writes tests/fixtures/figureset_c/cases.jsonl.

Run: ``.venv/bin/python -m tests.figureset_c.generate``. No dexter import.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

from tests.figureset_c import oracle
from tests.figureset_c.holds import HOLDS
from tests.figureset_c.phrases import NON_FIGURES, company_name, metric_words, period_words
from tests.figureset_c.write import Written, bps, money, mutate, pct, per_share, shares

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "fixtures" / "figureset_c" / "cases.jsonl"
SEED = 20261202

EXPECT = {"true": "true", "near": "fabricated", "swap": "fabricated", "scale": "fabricated",
          "random": "fabricated", "period": "misattributed", "line": "misattributed",
          "company": "misattributed", "miscited": "miscited", "sign": "sign"}
MONEY = ("revenue", "cost_of_revenue", "gross_profit", "rnd", "sga", "operating_income",
         "net_income", "income_tax", "cfo", "capex", "buybacks", "dividends", "fcf")


def half(case_id: str) -> str:
    """DEV or HELD, by a seeded hash of the case id."""
    return "dev" if hashlib.sha256(f"{SEED}:{case_id}".encode()).digest()[0] % 2 == 0 else "held"


class Case:
    """An answer being written, with its labelled figures and non-figures by offset."""

    def __init__(self, cid: str, sources: list[str], rng: random.Random) -> None:
        self.id, self.sources, self.rng = cid, sources, rng
        self.text = ""
        self.figures: list[dict[str, Any]] = []
        self.nons: list[dict[str, Any]] = []
        self.scope = oracle.Scope({f"S{i + 1}": HOLDS[k] for i, k in enumerate(sources)})

    def t(self, s: str) -> None:
        self.text += s

    def non(self, s: str) -> None:
        start = len(self.text)
        self.text += s
        if any(ch.isdigit() for ch in s):
            self.nons.append({"text": s, "start": start, "end": len(self.text)})

    def prose(self, s: str) -> None:
        """Text with «non-figure» tokens marked."""
        while "«" in s:
            head, rest = s.split("«", 1)
            token, s = rest.split("»", 1)
            self.t(head)
            self.non(token)
        self.t(s)

    def sid(self, ticker: str, metric: str, period: str) -> str | None:
        return next((s for s in self.scope.sources
                     if self.scope.holds(s, ticker, metric, period)), None)

    # -- one figure -------------------------------------------------------------------

    def slot(self, ticker: str, metric: str, period: str, kind: str = "level",
             fmt: str = "money", base: str = "", intents: tuple[str, ...] | None = None,
             table_scale: float | None = None) -> tuple[Written, str, str, str] | None:
        """A figure for the words (ticker, metric, period): its writing, label, intent and
        the id it cites."""
        probe = oracle.Claim(ticker, metric, period, kind, 0.0, 0.0, base)
        right = oracle.truth(probe)
        home = self.sid(ticker, metric, period)
        if right is None or home is None or not self._safe(ticker, metric, period, kind, base,
                                                            right, fmt):
            return None
        pool = intents or ("true",) * 7 + ("near", "swap", "scale", "random", "period", "line",
                                            "company", "miscited", "sign")
        order = [self.rng.choice(pool) for _ in range(4)] + ["true"]
        for intent in order:
            got = self._attempt(intent, ticker, metric, period, kind, fmt, base, right, home,
                                table_scale)
            if got is None:
                continue
            w, cite = got
            claim = oracle.Claim(ticker, metric, period, kind, w.value, w.half_unit, base,
                                 (cite,))
            found = oracle.label(claim, self.scope, self._pool(kind, metric))
            if found == EXPECT[intent]:
                return w, found, intent, cite
        return None

    def _safe(self, ticker: str, metric: str, period: str, kind: str, base: str,
              right: float, fmt: str) -> bool:
        """A derived figure whose rounding is not on a knife-edge, and whose change in points
        is the same from exact and from rounded margins."""
        if kind == "level" and fmt != "pct":
            return True
        x = right * 10
        if abs(x - round(x)) > 0.45:
            return False
        if kind == "pts":
            v = oracle.values(ticker)
            a, b = v[(metric, period)], v[(metric, base or oracle.prior(period))]
            return round(a, 1) - round(b, 1) == round(right, 1) or abs(
                (round(a, 1) - round(b, 1)) - right) < 0.04
        return True

    def _pool(self, kind: str, metric: str) -> list[float] | None:
        if kind == "level" and metric not in oracle.RATIOS:
            return None
        out: list[float] = []
        for t in {h[0] for h in self.scope.sources.values()}:
            vals = oracle.values(t)
            for (m, p), v in vals.items():
                if m in oracle.RATIOS:
                    out.append(v)
                    d = oracle.change_pts(t, m, p)
                    if d is not None:
                        out.append(d)
                g = oracle.growth(t, m, p)
                if g is not None:
                    out.append(g)
                if p.startswith("Q"):
                    g = oracle.growth(t, m, p, oracle.previous_quarter(p))
                    if g is not None:
                        out.append(g)
        return out

    def write(self, value: float, fmt: str, table_scale: float | None) -> Written:
        rng = self.rng
        if table_scale is not None:
            v = value / table_scale
            decimals = 2 if fmt == "eps" else (1 if table_scale == 1e9 or fmt == "pct" else 0)
            digits = f"{abs(v):,.{decimals}f}"
            if value < 0:
                return Written("(", digits, ")", table_scale, -1)
            return Written("", digits, "", table_scale)
        if fmt == "money":
            return money(value, rng)
        if fmt == "money-":
            return money(value, rng, negative="-")
        if fmt == "loss":
            return replace(money(abs(value), rng), sign=-1 if value < 0 else 1)
        if fmt == "eps":
            return per_share(value, rng)
        if fmt == "shares":
            return shares(value, rng)
        if fmt == "pts":
            return bps(value, rng)
        return pct(value)

    def _attempt(self, intent: str, ticker: str, metric: str, period: str, kind: str, fmt: str,
                 base: str, right: float, home: str,
                 table_scale: float | None) -> tuple[Written, str] | None:
        rng = self.rng
        if intent == "true":
            return self.write(right, fmt, table_scale), home
        if intent in ("near", "swap", "scale", "random"):
            if intent == "scale" and (table_scale is not None or fmt not in ("money", "money-")):
                return None
            w = mutate(self.write(right, fmt, table_scale), intent, rng)
            return (w, home) if w else None
        if intent == "sign":
            if kind == "level" and (metric not in ("net_income", "operating_income", "fcf")
                                    or (fmt not in ("money-", "loss") and table_scale is None)):
                return None
            return self.write(-right, fmt, table_scale), home
        if intent == "miscited":
            others = [s for s in self.scope.sources if s != home]
            return (self.write(right, fmt, table_scale), rng.choice(others)) if others else None
        probe = oracle.Claim(ticker, metric, period, kind, 0.0, 0.0, base)
        candidates: list[float] = []
        _, _, periods = self.scope.sources[home]
        if intent == "period":
            for p in periods:
                if p != period and not (kind != "level" and p == base):
                    v = oracle.truth(probe, period=p)
                    if v is not None:
                        candidates.append(v)
        elif intent == "line" and kind == "level" and metric in MONEY:
            for m in MONEY:
                v = oracle.values(ticker).get((m, period))
                if m != metric and v is not None and self.sid(ticker, m, period) == home:
                    candidates.append(v)
        elif intent == "company":
            for s, (t, _, ps) in self.scope.sources.items():
                if t != ticker:
                    for p in ps:
                        v = oracle.truth(probe, ticker=t, period=p)
                        if v is not None and self.scope.holds(s, t, metric, p):
                            candidates.append(v)
        candidates = [v for v in candidates
                      if abs(v - right) > 0.02 * abs(right) + 1e-9 and
                      (v > 0 or fmt in ("money-", "loss") or kind != "level" or table_scale)]
        if not candidates:
            return None
        return self.write(rng.choice(candidates), fmt, table_scale), home

    def fig(self, before: str, w: Written, after: str, label: str, intent: str,
            cite: str | None, cite_it: bool = True) -> None:
        self.t(before)
        start = len(self.text)
        self.t(w.text)
        self.figures.append({"text": w.text, "start": start, "end": len(self.text),
                             "label": label, "intent": intent})
        stop = after.rstrip(".;")
        self.t(stop)
        if cite_it and cite:
            self.t(f" [{cite}]")
        self.t(after[len(stop):])

    def record(self) -> dict[str, Any]:
        return {"id": self.id, "half": half(self.id), "sources": self.sources,
                "answer": self.text, "figures": self.figures, "non_figures": self.nons}


def build_all() -> list[dict[str, Any]]:
    from tests.figureset_c.templates import TEMPLATES
    rng = random.Random(SEED)
    cases: list[dict[str, Any]] = []
    n = 0
    while len(cases) < 130:
        sources_for, body = TEMPLATES[n % len(TEMPLATES)]
        srcs = sources_for(rng)
        case = Case(f"c{n:03d}", srcs, random.Random(rng.random()))
        n += 1
        if body(case) and case.figures:
            case.t("\n\n")
            for _ in range(case.rng.choice((1, 2, 2, 3))):
                case.prose(case.rng.choice(NON_FIGURES[srcs[0][:4]]) + " ")
            case.text = case.text.rstrip()
            cases.append(case.record())
    return cases


def main() -> int:
    cases = build_all()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases),
                   encoding="utf-8")
    figs = [f for c in cases for f in c["figures"]]
    print(f"{len(cases)} cases, {len(figs)} figures, "
          f"{sum(len(c['non_figures']) for c in cases)} non-figures")
    labels: dict[str, int] = {}
    for f in figs:
        labels[f["label"]] = labels.get(f["label"], 0) + 1
    print(labels)
    return 0


__all__ = ["Case", "company_name", "main", "metric_words", "period_words"]

if __name__ == "__main__":
    raise SystemExit(main())
