"""The figure check on held-out set C (tests/fixtures/figureset_c/cases.jsonl, written by
tests/figureset_c/generate.py, labelled by tests/figureset_c/oracle.py from the raw SEC JSON).

Every case is checked as benchmarks/figure_holdout.py checks set B (its outcome records, rates
and failure rule are reused): the sources fetched by dexter's finance tools from the recorded SEC
responses over HTTP, ``verify_answer`` on the answer, a figure matched by overlapping offsets.
The cases are split in two halves by a seeded hash of their id: the four rates are printed for
DEV and for HELD, and the failures (with their sentence and a guessed cause) for DEV only, so
that HELD stays a measure of phrasings nobody has tuned the check on.

Prints; always exits 0. Run: ``.venv/bin/python benchmarks/figure_holdout_c.py [--json OUT]``
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.figure_holdout import (  # noqa: E402
    Outcome,
    case_outcomes,
    failed,
    print_failures,
    print_rates,
    print_status_counts,
)
from dexter.evidence.verify import verify_answer  # noqa: E402
from dexter.tools.base import ToolOutput  # noqa: E402
from tests.figureset_c.specs import fetch_outputs, ledger_for  # noqa: E402

CASES = ROOT / "tests" / "fixtures" / "figureset_c" / "cases.jsonl"


def load_cases() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CASES.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def run(outputs: dict[str, ToolOutput] | None = None,
        ) -> dict[str, tuple[list[Outcome], list[Outcome]]]:
    """Each half's (figures, non-figures) outcomes."""
    cases = load_cases()
    if outputs is None:
        outputs = fetch_outputs(sorted({k for c in cases for k in c["sources"]}))
    halves: dict[str, tuple[list[Outcome], list[Outcome]]] = {"dev": ([], []), "held": ([], [])}
    for case in cases:
        found = verify_answer(case["answer"], ledger_for(case["sources"], outputs)).figures
        more, more_non = case_outcomes(case, found)
        halves[case["half"]][0].extend(more)
        halves[case["half"]][1].extend(more_non)
    return halves


def guess(o: Outcome) -> str:
    """A one-line guess at why a figure came out wrong (from its text, status and reason)."""
    if o.label == "non_figure":
        return f"the token {o.text!r} is read as a figure"
    style = next((s for s, pat in (("'mn'", r"\dmn\b"), ("'mm'", r"\d mm\b"),
                                   ("bare 'B'", r"^\d[\d.,]*B$"), ("'(x)%'", r"^\(.*\)%$"),
                                   ("'ppts'", r"ppts"), ("'US$'", r"^US\$"))
                  if re.search(pat, o.text)), "")
    sent = o.sentence
    if o.label == "true":
        after = sent[sent.find(o.text) + len(o.text):]
        if re.search(r"\b(9M|1H|H1|nine months|six months|first half|first nine)", sent):
            return "a half-year or nine-month sum of quarters is not derived"
        if re.search(r"q/q|QoQ|sequential", after[:40]) and "%" in o.text:
            return "a sequential (q/q) rate is compared with the year-on-year one"
        if "%" in o.text and re.match(r"\s*(\[S\d\]\s*)?\((up |\+|-|down |expanding |contracting )",
                                     after):
            return "a margin level followed by its change in points in brackets is not matched"
        if re.search(r"(pp|ppts|points|bps|bp)$", o.text) and "does not check out" in o.reason:
            return "a change in points is recomputed for another period than the sentence's"
        if " from FY" in o.reason or " to Q" in o.reason or " to FY" in o.reason:
            return "the period is not the sentence's (carried from an earlier sentence or " \
                   "taken from a neighbouring figure)"
        if o.status == "unsupported" and "in no source" in o.reason and style:
            return f"a true figure written {style} is not read at its scale or sign"
        if o.status == "miscited":
            return "the citation bound is not the one the figure's clause cites"
        if o.status == "misattributed":
            return "the words are bound to another line, period or company than they name"
        return f"a true {o.intent} figure does not check out ({o.status})"
    if o.status == "unread":
        return f"the figure {o.text!r} is not read at all"
    if o.status == "weak":
        return "a low-precision figure passes as weak"
    if o.label == "fabricated":
        return "an invented value passes: matched by occurrence or at the wrong scale"
    if o.label == "miscited":
        return "the figure's citation does not bind it (found in an uncited source)"
    if o.label == "sign":
        return "the direction or loss word is not compared with the value's sign"
    return (f"the words' {o.intent} is not read or not bound, so a real value of another "
            f"{o.intent} passes")


def main(argv: list[str]) -> int:
    halves = run()
    for name in ("dev", "held"):
        print_rates(f"set C {name.upper()}", *halves[name])
    figures, non_figures = halves["dev"]
    print("\nDEV label / intent -> status:")
    print_status_counts(figures)
    bad = [o for o in figures + non_figures if failed(o)]
    causes = Counter(guess(o) for o in bad)
    print(f"\nDEV: {len(bad)} failures, by guessed cause:")
    for cause, n in causes.most_common():
        print(f"  {n:>3}  {cause}")
    print()
    print_failures(bad, argv, note=lambda o: f"cause: {guess(o)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
