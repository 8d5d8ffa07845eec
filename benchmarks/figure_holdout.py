"""The figure check on the held-out set B (tests/fixtures/figureset_b/cases.jsonl, written by
tests/figureset_b/generate.py, labelled by tests/figureset_b/oracle.py from the raw SEC JSON).

Checks every case exactly as tests/test_figure_rates.py does (the sources fetched by dexter's
finance tools from the recorded SEC responses over HTTP, ``verify_answer`` on the answer, a
figure matched by overlapping offsets; one dexter did not read counts as accepted) and prints
the four rates against the issue's goals, then every failure with its sentence.

Prints; always exits 0. Run: ``.venv/bin/python benchmarks/figure_holdout.py [--json OUT]``
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dexter.evidence.verify import FAILED, Figure, verify_answer  # noqa: E402
from dexter.tools.base import ToolOutput  # noqa: E402
from tests.figureset_b.sources import fetch_outputs, ledger_for  # noqa: E402

CASES = ROOT / "tests" / "fixtures" / "figureset_b" / "cases.jsonl"
MUST_CATCH = ("misattributed", "sign", "miscited")


@dataclass
class Outcome:
    case: str
    text: str
    label: str
    intent: str
    status: str
    reason: str
    sentence: str


def sentence_at(answer: str, start: int, end: int) -> str:
    dot = answer.rfind(". ", 0, start)
    while dot >= 3 and answer[dot - 3:dot] == "Inc":
        dot = answer.rfind(". ", 0, dot)
    lo = max(dot + 2 if dot >= 0 else 0, answer.rfind("\n", 0, start) + 1)
    his = [i for i in (answer.find(". ", end), answer.find("\n", end)) if i >= 0]
    hi = min(his) + 1 if his else len(answer)
    return answer[lo:hi].strip()


def load_cases() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CASES.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def case_outcomes(case: dict[str, Any], found: Sequence[Figure]
                  ) -> tuple[list[Outcome], list[Outcome]]:
    """One case's labelled figures' and non-figures' outcomes, each matched to the figure
    dexter read at overlapping offsets (none: ``unread``)."""
    figures: list[Outcome] = []
    non_figures: list[Outcome] = []
    for kind, items in (("figure", case["figures"]), ("non", case["non_figures"])):
        for item in items:
            match = next((f for f in found if f.claim.start < item["end"]
                          and item["start"] < f.claim.end), None)
            o = Outcome(case["id"], item["text"],
                        item["label"] if kind == "figure" else "non_figure",
                        item.get("intent", ""),
                        match.status if match else "unread",
                        match.reason if match else "",
                        sentence_at(case["answer"], item["start"], item["end"]))
            (figures if kind == "figure" else non_figures).append(o)
    return figures, non_figures


def run(outputs: dict[str, ToolOutput] | None = None) -> tuple[list[Outcome], list[Outcome]]:
    """Every labelled figure's and non-figure's outcome; ``outputs``: the sources' tool
    outputs by spec, when the caller has them (a test's shared ones), else fetched here."""
    cases = load_cases()
    if outputs is None:
        outputs = fetch_outputs(sorted({k for c in cases for k in c["sources"]}))
    figures: list[Outcome] = []
    non_figures: list[Outcome] = []
    for case in cases:
        found = verify_answer(case["answer"], ledger_for(case["sources"], outputs)).figures
        more, more_non = case_outcomes(case, found)
        figures += more
        non_figures += more_non
    return figures, non_figures


@dataclass(frozen=True)
class Rates:
    """The four rates of the issue's goals, as (hits, of)."""

    fabricated_accepted: tuple[int, int]
    misattributed_caught: tuple[int, int]
    true_flagged: tuple[int, int]
    non_figures_read: tuple[int, int]

    def met(self) -> dict[str, bool]:
        """Each goal: fabricated accepted <= 2 %, misattributed (with sign flips and
        miscited) caught >= 80 %, true figures flagged <= 2 %, non-figures read never."""
        (fa, fn), (ca, cn), (ta, tn), (na, _) = (
            self.fabricated_accepted, self.misattributed_caught, self.true_flagged,
            self.non_figures_read)
        return {"fabricated accepted": fa <= 0.02 * fn, "misattributed caught": ca >= 0.8 * cn,
                "true flagged": ta <= 0.02 * tn, "non-figures read": na == 0}


def rates(figures: list[Outcome], non_figures: list[Outcome]) -> Rates:
    fab = [o for o in figures if o.label == "fabricated"]
    wrong = [o for o in figures if o.label in MUST_CATCH]
    true = [o for o in figures if o.label == "true"]
    return Rates((sum(1 for o in fab if o.status not in FAILED), len(fab)),
                 (sum(1 for o in wrong if o.status in FAILED), len(wrong)),
                 (sum(1 for o in true if o.status in FAILED), len(true)),
                 (sum(1 for o in non_figures if o.status != "unread"), len(non_figures)))


def failed(o: Outcome) -> bool:
    if o.label == "non_figure":
        return o.status != "unread"
    if o.label == "true":
        return o.status in FAILED
    return o.status not in FAILED  # fabricated, misattributed, sign, miscited


def print_rates(title: str, figures: list[Outcome], non_figures: list[Outcome]) -> Rates:
    """Print the four rates against their goals under ``title``; return them."""
    found = rates(figures, non_figures)
    met = found.met()

    def line(name: str, hits: tuple[int, int], goal: str) -> str:
        a, n = hits
        share = f"{100 * a / n:.1f} %" if n else "-"
        return f"  {name:<21} {a}/{n} = {share}  (goal {goal}) {'MET' if met[name] else 'NOT MET'}"

    print(f"{title}: {len(figures)} figures, {len(non_figures)} non-figures")
    print(line("fabricated accepted", found.fabricated_accepted, "<= 2 %"))
    print(line("misattributed caught", found.misattributed_caught, ">= 80 %"))
    print(line("true flagged", found.true_flagged, "<= 2 %"))
    a, n = found.non_figures_read
    print(f"  {'non-figures read':<21} {a}/{n}  (goal 0) "
          f"{'MET' if met['non-figures read'] else 'NOT MET'}")
    return found


def main(argv: list[str]) -> int:
    figures, non_figures = run()
    print_rates("held-out set B", figures, non_figures)
    print("\nlabel / intent -> status:")
    print_status_counts(figures)
    bad = [o for o in figures + non_figures if failed(o)]
    print(f"\n{len(bad)} failures:")
    print_failures(bad, argv)
    return 0


def print_status_counts(figures: list[Outcome]) -> None:
    """How many figures of each label and intent came out with each status."""
    for (label, intent, status), n in sorted(Counter((o.label, o.intent, o.status)
                                                     for o in figures).items()):
        print(f"  {label:>13} {intent:>13} -> {status:<13} {n}")


def print_failures(bad: list[Outcome], argv: list[str],
                   note: Callable[[Outcome], str] | None = None) -> None:
    """Each failure with its reason, ``note`` (a line of its own) and sentence; with
    ``--json OUT`` in ``argv``, also written to OUT."""
    for o in bad:
        extra = f"\n    {note(o)}" if note is not None else ""
        print(f"- {o.case} [{o.label}/{o.intent}] {o.text!r} -> {o.status}"
              f"{': ' + o.reason if o.reason else ''}{extra}\n    {o.sentence}")
    if len(argv) > 2 and argv[1] == "--json":
        Path(argv[2]).write_text(json.dumps([asdict(o) for o in bad], indent=1))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
