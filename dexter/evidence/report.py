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
"""Put after each figure that failed the check (unsupported, misattributed, miscited)."""
NAMED_IN_LINE = 10
"""Failed figures the verification line names with their reason (the rest are counted)."""


def verification_event(check: AnswerCheck, *, final: bool) -> Verification:
    """The event for one check of an answer."""
    data = check.to_dict()
    return Verification(checked=data["checked"], supported=data["supported"],
                        status=data["status"], unsupported=data["unsupported"],
                        unknown_citations=data["unknown_citations"], final=final,
                        counts=data["counts"], figures=data["figures"])


def mark_unsupported(answer: str, unsupported: Sequence[Mapping[str, Any]]) -> str:
    """``answer`` with :data:`MARK` after every unsupported figure (by its offsets)."""
    ends = sorted({int(u["end"]) for u in unsupported
                   if isinstance(u.get("end"), int) and 0 < u["end"] <= len(answer)},
                  reverse=True)
    for end in ends:
        answer = answer[:end] + MARK + answer[end:]
    return answer


def failed_figures(verification: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """``(figure text, reason)`` of each figure that failed, in order."""
    if not isinstance(verification, Mapping):
        return []
    listed = verification.get("unsupported")
    out = []
    for item in listed if isinstance(listed, list) else []:
        if isinstance(item, Mapping):
            text = str(item.get("text", ""))
            reason = str(item.get("reason") or f"{text} is in no source")
            out.append((text, reason))
    return out


def _named(failed: Sequence[tuple[str, str]]) -> str:
    reasons = [reason for _, reason in failed[:NAMED_IN_LINE]]
    more = len(failed) - NAMED_IN_LINE
    return "; ".join(reasons) + (f"; and {more} more" if more > 0 else "")


def verification_line(verification: Mapping[str, Any] | None) -> str:
    """One line on how the figures fared, naming each failed figure with its reason ('' when
    verification was off)."""
    if not isinstance(verification, Mapping) or not verification:
        return ""
    checked = _count(verification.get("checked"))
    supported = _count(verification.get("supported"))
    listed = verification.get("unknown_citations")
    unknown = [str(i) for i in listed] if isinstance(listed, list) else []
    status = verification.get("status")
    failed = failed_figures(verification)
    counts = verification.get("counts")
    counts = counts if isinstance(counts, Mapping) else {}
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
        extra = [f"{_count(counts.get(k))} {k}" for k in ("derived", "weak")
                 if _count(counts.get(k))]
        parts.append(f"✓ {_figures(checked).capitalize()} checked against the sources"
                     + (f" ({', '.join(extra)})" if extra else "") + "."
                     if checked else "✓ No figures to check.")
    else:
        wrong = checked - supported
        verb = "does" if wrong == 1 else "do"
        parts.append(f"⚠ {wrong} of {_figures(checked)} {verb} not check out (marked{MARK})"
                     + (f": {_named(failed)}." if failed else "."))
    if unknown:
        ids = ", ".join(f"[{i}]" for i in unknown)
        parts.append(f"⚠ {ids} {'cites' if len(unknown) == 1 else 'cite'} no source.")
    return " ".join(parts)


def marked_answer(done: Done) -> str:
    """The final answer with :data:`MARK` after each figure that failed its verification
    (unsupported, misattributed or miscited: the ``unsupported`` list holds them all)."""
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
