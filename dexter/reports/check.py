"""The verification banner at the top of a report: what the figure check found, naming
every figure it did not accept and why (pure).

Read from ``done.verification``: its ``figures`` (each figure with its text, status and a
reason, when the check gives them) or, from a check that lists only what failed, its
``unsupported`` figures. Statuses shown as flags: ``unsupported`` (in no source),
``misattributed`` (the number is in a source, for another line, period or company),
``miscited`` (not in the source it cites); ``weak`` figures (one or two significant
digits found only in free text) are counted, not flagged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dexter.evidence.report import verification_line
from dexter.reports.model import Flag

FLAGGED = ("unsupported", "misattributed", "miscited")
REASONS = {
    "unsupported": "in no source the run fetched",
    "misattributed": "the number is in a source, but for another line, period or company",
    "miscited": "not in the source it cites",
}
"""What a flag says when the check gives no reason of its own."""


def banner(verification: Mapping[str, Any] | None) -> tuple[str, tuple[Flag, ...]]:
    """(the headline, the flagged figures); ('', ()) when the check did not run."""
    if not isinstance(verification, Mapping) or not verification:
        return "", ()
    flags, weak = _flags(verification)
    checked = _count(verification.get("checked"))
    listed = verification.get("unknown_citations")
    unknown = [str(i) for i in listed] if isinstance(listed, list) else []
    if verification.get("status") == "no_evidence":
        # nothing was fetched: the terminal's line says what that means, the flags follow
        return verification_line(verification), tuple(flags)
    parts = []
    if flags:
        parts.append(f"⚠ {len(flags)} of {_figures(checked)} {_be(len(flags), 'is', 'are')} "
                     "not supported by the sources.")
    elif checked:
        parts.append(f"✓ All {_figures(checked)} checked against the sources." if checked > 1
                     else "✓ The one figure was checked against the sources.")
    else:
        parts.append("✓ No figures to check.")
    if weak:
        parts.append(f"{_figures(weak).capitalize()} {_be(weak, 'rests', 'rest')} only on a "
                     "mention in text.")
    if unknown:
        ids = ", ".join(f"[{i}]" for i in unknown)
        parts.append(f"⚠ {ids} {_be(len(unknown), 'cites', 'cite')} no source.")
    return " ".join(parts), tuple(flags)


def _flags(verification: Mapping[str, Any]) -> tuple[list[Flag], int]:
    figures = verification.get("figures")
    if isinstance(figures, list) and figures:
        flags, weak = [], 0
        for figure in figures:
            if not isinstance(figure, Mapping):
                continue
            status = str(figure.get("status") or "")
            weak += status == "weak"
            if status in FLAGGED:
                reason = str(figure.get("reason") or "") or REASONS[status]
                flags.append(Flag(str(figure.get("text") or ""), status, reason))
        return flags, weak
    listed = verification.get("unsupported")
    flags = [Flag(str(u.get("text") or ""), "unsupported",
                  str(u.get("reason") or "") or REASONS["unsupported"])
             for u in listed if isinstance(u, Mapping)] if isinstance(listed, list) else []
    return flags, 0


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and \
        0 <= value < 10**9 else 0


def _figures(n: int) -> str:
    return f"{n} figure" if n == 1 else f"{n} figures"


def _be(n: int, one: str, many: str) -> str:
    return one if n == 1 else many
