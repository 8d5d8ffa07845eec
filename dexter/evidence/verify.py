"""Deterministic number verification: is every figure of an answer in what was fetched?

No model call. Each figure the answer states (:func:`~dexter.evidence.numbers.extract_claims`)
is *supported* when the same value, within the rounding of the precision written, is in

1. a source the answer cites on the same line, else
2. any source of fetched data (or an answer the user gave), else
3. a calculator result whose inputs are themselves supported (by sources, the question,
   or an earlier supported calculation).

Scales convert both ways: ``$383.3 billion`` is supported by ``383,285`` in a table in
millions and by ``383285000000`` in JSON; a percentage by the same ratio (``12.5%`` by
``0.125``). Signs are not compared (a loss is often written as a positive amount after
the word "loss"). Figures the user wrote in the question are not claims. The rules are in
docs/verification.md.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from dexter.evidence.citations import Citation, find_citations, mask_citations
from dexter.evidence.ledger import Source, SourceLedger
from dexter.evidence.numbers import Claim, extract_claims

Status = Literal["verified", "unverified", "no_evidence"]
CONSTANTS = frozenset({100.0, 1_000.0, 1e6, 1e9, 1e12, 365.0, 360.0, 52.0})
"""Numbers a calculation may use without a source (percent, scale, days, weeks)."""
_SCALES = tuple(10.0 ** (3 * k) for k in (0, 1, 2, 3, 4, -1, -2, -3, -4))


@dataclass(frozen=True, slots=True)
class AnswerCheck:
    """The outcome of checking one answer."""

    checked: int
    supported: int
    unsupported: tuple[Claim, ...]
    unknown_citations: tuple[str, ...]
    status: Status
    cited: tuple[str, ...] = ()
    support: dict[str, str] = field(default_factory=dict)
    """Claim text → the id of the source that supports it."""

    def to_dict(self) -> dict[str, Any]:
        """The ``verification`` event's and ``done.verification``'s fields."""
        return {
            "checked": self.checked, "supported": self.supported,
            "unsupported": [{"text": c.text, "value": c.value, "start": c.start, "end": c.end}
                            for c in self.unsupported],
            "unknown_citations": list(self.unknown_citations), "status": self.status,
        }


def verify_answer(answer: str, ledger: SourceLedger, question: str = "") -> AnswerCheck:
    """Check every figure of ``answer`` against ``ledger`` (see the module docstring)."""
    masked = mask_citations(answer)
    given = extract_claims(question)
    claims = [c for c in extract_claims(masked) if not any(_same(c, g) for g in given)]
    citations = find_citations(answer)
    starts = [c.start for c in citations]
    cited = tuple(dict.fromkeys(c.id for c in citations))
    unknown = tuple(i for i in cited if ledger.get(i) is None)
    grounded = _grounded_calculations(ledger, given)
    unsupported: list[Claim] = []
    support: dict[str, str] = {}
    for claim in claims:
        near = [ledger.get(i) for i in _line_citations(answer, claim, citations, starts)]
        found = _support(claim, [s for s in near if s is not None], ledger, grounded)
        if found is None:
            unsupported.append(claim)
        else:
            support[claim.text] = found
    if ledger.evidence_count() == 0:
        status: Status = "no_evidence"
    elif unsupported or unknown:
        status = "unverified"
    else:
        status = "verified"
    return AnswerCheck(checked=len(claims), supported=len(claims) - len(unsupported),
                        unsupported=tuple(unsupported), unknown_citations=unknown,
                        status=status, cited=cited, support=support)


def repair_note(result: AnswerCheck) -> str:
    """The message the model gets once before its answer is final, naming what failed."""
    parts = []
    if result.unsupported:
        figures = ", ".join(f'"{c.text}"' for c in result.unsupported[:20])
        more = len(result.unsupported) - 20
        parts.append(
            f"These figures in your answer are in no source: {figures}"
            + (f" (and {more} more)" if more > 0 else "")
            + ". Fetch them, compute them with the calculator from fetched figures, or "
            "remove them.")
    if result.unknown_citations:
        parts.append("These citations name no source: "
                     + ", ".join(f"[{i}]" for i in result.unknown_citations)
                     + ". Cite only the ids shown at the head of tool results.")
    parts.append("Then write the whole answer again, citing [S#] after each figure.")
    return "Before your answer is final: " + " ".join(parts)


def ranges(claim: Claim) -> Iterator[tuple[float, float]]:
    """The intervals a source number may fall in to support ``claim``, likeliest first."""
    tol = claim.tolerance + abs(claim.value) * 1e-9
    low, high = claim.value - tol, claim.value + tol
    if claim.kind == "percent":
        yield low, high
        yield low / 100, high / 100
        return
    if claim.kind == "multiple" or (claim.kind == "money" and not claim.scaled
                                    and claim.value < 1_000):
        yield low, high  # a per-share amount or a multiple is never a scaled table figure
        return
    for scale in _SCALES:
        yield low / scale, high / scale


def _support(claim: Claim, cited: Sequence[Source], ledger: SourceLedger,
             grounded: Sequence[Source]) -> str | None:
    spans = list(ranges(claim))
    for source in cited:
        usable = source.kind != "calculation" or source in grounded
        if usable and any(source.has_number(lo, hi) for lo, hi in spans):
            return source.id
    for lo, hi in spans:
        found = ledger.find(lo, hi)
        if found is not None:
            return found
    for source in grounded:
        if any(source.has_number(lo, hi) for lo, hi in spans):
            return source.id
    return None


def _grounded_calculations(ledger: SourceLedger, given: Sequence[Claim]) -> list[Source]:
    """Calculations whose every input is in a source, the question, or an earlier grounded
    calculation (in ledger order, so a chain of calculations grounds step by step)."""
    grounded: list[Source] = []
    for source in ledger.sources:
        if source.kind != "calculation":
            continue
        ok = True
        for claim in source.inputs:
            if claim.value in CONSTANTS or any(_same(claim, g) for g in given):
                continue
            spans = list(ranges(claim))
            if any(ledger.find(lo, hi) is not None for lo, hi in spans):
                continue
            if any(s.has_number(lo, hi) for s in grounded for lo, hi in spans):
                continue
            ok = False
            break
        if ok:
            grounded.append(source)
    return grounded


def _same(claim: Claim, given: Claim) -> bool:
    """Whether ``claim`` restates a figure of the question (at any scale: the question's
    ``$130.5B`` is the calculator's ``130.5``)."""
    if abs(claim.value - given.value) <= max(claim.tolerance, given.tolerance) + 1e-9:
        return True
    return any(lo <= given.value <= hi for lo, hi in ranges(claim))


def _line_citations(answer: str, claim: Claim, citations: Sequence[Citation],
                    starts: Sequence[int]) -> list[str]:
    """Ids cited on the claim's line (a table row, a bullet, a paragraph line);
    ``starts`` are the citations' offsets, sorted."""
    line_start = answer.rfind("\n", 0, claim.start) + 1
    line_end = answer.find("\n", claim.end)
    line_end = len(answer) if line_end == -1 else line_end
    first, last = bisect.bisect_left(starts, line_start), bisect.bisect_left(starts, line_end)
    return list(dict.fromkeys(c.id for c in citations[first:last]))
