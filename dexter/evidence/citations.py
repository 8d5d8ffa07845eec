"""Citations in an answer: ``[S3]``, ``[S3, S5]``, ``[S3][S5]``, ``[S3; S5]``."""

from __future__ import annotations

import re
from dataclasses import dataclass

_GROUP = re.compile(r"\[\s*(S\d+(?:\s*[,;]\s*S\d+)*)\s*\]", re.IGNORECASE)
_ID = re.compile(r"S\d+", re.IGNORECASE)


@dataclass(slots=True)
class Citation:
    """One cited id and where its bracket is."""

    id: str
    start: int
    end: int


def find_citations(text: str) -> list[Citation]:
    """Every cited id in ``text``, in order (an id cited twice appears twice)."""
    out: list[Citation] = []
    for group in _GROUP.finditer(text):
        ids = group.group(1)
        start, end = group.span()
        if "," not in ids and ";" not in ids:  # the usual [S3]
            out.append(Citation(ids.strip().upper(), start, end))
            continue
        for source_id in _ID.findall(ids):
            out.append(Citation(source_id.upper(), start, end))
    return out


def cited_ids(text: str) -> list[str]:
    """The ids ``text`` cites, first citation first, each once."""
    return list(dict.fromkeys(c.id for c in find_citations(text)))


def mask_citations(text: str) -> str:
    """``text`` with every citation bracket blanked (same length), so its digits are not
    read as figures."""
    return _GROUP.sub(lambda m: " " * len(m.group()), text)
