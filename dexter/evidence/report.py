"""How a checked answer is shown: marks on unsupported figures and the verification line.
Pure text (markdown), shared by the live view, plain lines, reports, ``dexter replay`` and
the REPL, so the answer reads the same everywhere (the Sources list under it, in words, is
``reports/sourcing.py``'s)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dexter.events import Done, Verification
from dexter.evidence.verify import AnswerCheck

MARK = " ⚠"
"""Put after each figure no source supports."""


def verification_event(check: AnswerCheck, *, final: bool) -> Verification:
    """The event for one check of an answer."""
    data = check.to_dict()
    return Verification(checked=data["checked"], supported=data["supported"],
                        status=data["status"], unsupported=data["unsupported"],
                        unknown_citations=data["unknown_citations"], final=final)


def mark_unsupported(answer: str, unsupported: Sequence[Mapping[str, Any]]) -> str:
    """``answer`` with :data:`MARK` after every unsupported figure (by its offsets)."""
    ends = sorted({int(u["end"]) for u in unsupported
                   if isinstance(u.get("end"), int) and 0 < u["end"] <= len(answer)},
                  reverse=True)
    for end in ends:
        answer = answer[:end] + MARK + answer[end:]
    return answer


def verification_line(verification: Mapping[str, Any] | None) -> str:
    """One line on how the figures fared ('' when verification was off)."""
    if not isinstance(verification, Mapping) or not verification:
        return ""
    checked = _count(verification.get("checked"))
    supported = _count(verification.get("supported"))
    listed = verification.get("unknown_citations")
    unknown = [str(i) for i in listed] if isinstance(listed, list) else []
    status = verification.get("status")
    parts = []
    if status == "no_evidence":
        missing = checked - supported
        if missing > 0:
            parts.append(f"⚠ No data was fetched for this answer: {missing} of "
                         f"{_figures(checked)} {'rests' if missing == 1 else 'rest'} on no "
                         f"source (marked{MARK}).")
        elif checked:
            what = "figure comes" if checked == 1 else f"{checked} figures come"
            parts.append(f"No data was fetched for this answer; its {what} from your own "
                         "words or calculations on them.")
        else:
            parts.append("No data was fetched for this answer.")
    elif checked == supported:
        parts.append(f"✓ {_figures(checked).capitalize()} checked against the sources."
                     if checked else "✓ No figures to check.")
    else:
        parts.append(f"⚠ {checked - supported} of {_figures(checked)} are in no source "
                     f"(marked{MARK}).")
    if unknown:
        ids = ", ".join(f"[{i}]" for i in unknown)
        parts.append(f"⚠ {ids} {'cites' if len(unknown) == 1 else 'cite'} no source.")
    return " ".join(parts)


def marked_answer(done: Done) -> str:
    """The final answer with :data:`MARK` after each figure its verification found in no
    source."""
    verification = done.verification if isinstance(done.verification, Mapping) else {}
    unsupported = verification.get("unsupported")
    marks = [u for u in unsupported if isinstance(u, Mapping)] \
        if isinstance(unsupported, list) else []
    return mark_unsupported(done.answer.strip(), marks)


def limit_line(done: Done) -> str:
    """The warning under an answer written at the iteration limit ('' otherwise)."""
    if done.status != "max_iterations":
        return ""
    return (f"⚠ Stopped at the iteration limit ({done.iterations}): the answer uses what "
            "was gathered.")


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and \
        0 <= value < 10**9 else 0


def _figures(n: int) -> str:
    return f"{n} figure" if n == 1 else f"{n} figures"
