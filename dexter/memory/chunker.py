"""Split a memory file into search chunks that follow its paragraphs and keep line numbers.

Paragraphs (runs of non-blank lines) are packed greedily into chunks of about
``max_tokens``; consecutive chunks share whole trailing paragraphs worth up to
``overlap_tokens``. A paragraph larger than a chunk is split at line boundaries, and a single
line larger than a chunk is split into pieces. Every chunk advances past the previous one's
first unit, so chunking always finishes.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from dexter.memory.tokens import estimate_tokens

CHUNK_TOKENS = 400
CHUNK_OVERLAP_TOKENS = 80


@dataclass(frozen=True, slots=True)
class Chunk:
    """A piece of a file: 1-based inclusive line range, the text, and its sha256."""

    start_line: int
    end_line: int
    content: str
    hash: str


@dataclass(frozen=True, slots=True)
class _Unit:
    start_line: int
    end_line: int
    text: str
    tokens: int


def content_hash(text: str) -> str:
    """sha256 hex digest of ``text`` (the embedding cache key)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def split_paragraphs(text: str) -> list[tuple[int, int, str]]:
    """Paragraphs as ``(start_line, end_line, text)``, 1-based; blank lines separate them."""
    paragraphs: list[tuple[int, int, str]] = []
    current: list[str] = []
    start = 0
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            if not current:
                start = number
            current.append(line)
        elif current:
            paragraphs.append((start, number - 1, "\n".join(current)))
            current = []
    if current:
        paragraphs.append((start, start + len(current) - 1, "\n".join(current)))
    return paragraphs


def chunk_text(
    text: str, max_tokens: int = CHUNK_TOKENS, overlap_tokens: int = CHUNK_OVERLAP_TOKENS
) -> list[Chunk]:
    """Chunks of ``text`` of about ``max_tokens`` each with ``overlap_tokens`` of overlap."""
    if max_tokens < 1:
        raise ValueError("max_tokens must be at least 1")
    units = _units(text, max_tokens)
    chunks: list[Chunk] = []
    i = 0
    while i < len(units):
        j, used = i + 1, units[i].tokens
        while j < len(units) and used + units[j].tokens <= max_tokens:
            used += units[j].tokens
            j += 1
        chunks.append(_join(units[i:j]))
        if j >= len(units):
            break
        i = _overlap_start(units, i, j, overlap_tokens)
    return chunks


def _overlap_start(units: list[_Unit], first: int, end: int, overlap_tokens: int) -> int:
    """Where the next chunk starts: trailing units worth <= overlap, but always past ``first``."""
    k, carried = end, 0
    while k - 1 > first and carried + units[k - 1].tokens <= overlap_tokens:
        k -= 1
        carried += units[k].tokens
    return k


def _join(units: list[_Unit]) -> Chunk:
    content = "\n\n".join(u.text for u in units)
    return Chunk(units[0].start_line, units[-1].end_line, content, content_hash(content))


def _units(text: str, max_tokens: int) -> list[_Unit]:
    units: list[_Unit] = []
    for start, end, para in split_paragraphs(text):
        tokens = estimate_tokens(para)
        if tokens <= max_tokens:
            units.append(_Unit(start, end, para, tokens))
        else:
            units.extend(_split_oversized(start, para, max_tokens))
    return units


def _split_oversized(start: int, para: str, max_tokens: int) -> list[_Unit]:
    """Pack an oversized paragraph's lines into pieces; cut single lines that are too long."""
    pieces: list[_Unit] = []
    buf: list[str] = []
    buf_start, buf_tokens = start, 0
    for offset, line in enumerate(para.split("\n")):
        number = start + offset
        tokens = estimate_tokens(line)
        if buf and buf_tokens + tokens > max_tokens:
            pieces.append(_Unit(buf_start, number - 1, "\n".join(buf), buf_tokens))
            buf, buf_tokens = [], 0
        if tokens > max_tokens:
            pieces.extend(_Unit(number, number, part, estimate_tokens(part))
                          for part in _cut_line(line, max_tokens))
            continue
        if not buf:
            buf_start = number
        buf.append(line)
        buf_tokens += tokens
    if buf:
        pieces.append(_Unit(buf_start, buf_start + len(buf) - 1, "\n".join(buf), buf_tokens))
    return pieces


def _cut_line(line: str, max_tokens: int) -> list[str]:
    """Cut one long line into the longest pieces that fit ``max_tokens``, preferring spaces."""
    parts: list[str] = []
    rest = line
    while rest:
        if estimate_tokens(rest) <= max_tokens:
            parts.append(rest)
            break
        lo, hi = 1, len(rest)
        while lo < hi:  # the longest prefix that fits (at least one character)
            mid = (lo + hi + 1) // 2
            if estimate_tokens(rest[:mid]) <= max_tokens:
                lo = mid
            else:
                hi = mid - 1
        space = rest.rfind(" ", lo // 2, lo + 1)
        cut = space if space > 0 else lo
        parts.append(rest[:cut])
        rest = rest[cut:].lstrip(" ")
    return parts
