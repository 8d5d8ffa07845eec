"""Chunking: paragraph boundaries, line ranges, packing, overlap and oversized input."""

from __future__ import annotations

import hashlib

import pytest

from dexter.memory import chunker
from dexter.memory.chunker import chunk_text, split_paragraphs


@pytest.fixture(autouse=True)
def one_token_per_word(monkeypatch: pytest.MonkeyPatch) -> None:
    """Count tokens as words so boundaries are exact whatever estimator is installed."""
    monkeypatch.setattr(chunker, "estimate_tokens", lambda text: len(text.split()))


def para(n_words: int, tag: str) -> str:
    return " ".join(f"{tag}{i}" for i in range(n_words))


def test_paragraphs_split_at_blank_lines_with_1_based_line_ranges() -> None:
    text = "alpha\nbeta\n\ngamma\n\n   \n\ndelta\n"
    assert split_paragraphs(text) == [(1, 2, "alpha\nbeta"), (4, 4, "gamma"), (8, 8, "delta")]


def test_empty_or_blank_text_gives_no_chunks() -> None:
    assert chunk_text("") == []
    assert chunk_text("\n\n   \n") == []


def test_paragraphs_pack_up_to_exactly_the_budget() -> None:
    # Eight 50-word paragraphs are exactly 400 tokens: they fit; the ninth starts a new chunk.
    paras = [para(50, f"p{i}_") for i in range(9)]
    text = "\n\n".join(paras)
    chunks = chunk_text(text, max_tokens=400, overlap_tokens=0)
    assert len(chunks) == 2
    assert (chunks[0].start_line, chunks[0].end_line) == (1, 15)
    assert chunks[0].content == "\n\n".join(paras[:8])
    assert (chunks[1].start_line, chunks[1].end_line) == (17, 17)
    assert chunks[1].content == paras[8]


def test_overlap_carries_whole_trailing_paragraphs_up_to_the_overlap_budget() -> None:
    paras = [para(50, f"p{i}_") for i in range(10)]
    chunks = chunk_text("\n\n".join(paras), max_tokens=400, overlap_tokens=80)
    # One 50-token paragraph fits in 80 tokens of overlap; two (100) do not.
    assert chunks[0].content.endswith(paras[7])
    assert chunks[1].content.startswith(paras[7] + "\n\n")
    assert chunks[1].start_line == 15  # paragraph 8 sits on line 15
    assert chunks[1].content.endswith(paras[9])


def test_overlap_never_stalls_even_when_it_exceeds_the_chunk_size() -> None:
    paras = [para(30, f"p{i}_") for i in range(12)]
    chunks = chunk_text("\n\n".join(paras), max_tokens=60, overlap_tokens=1_000)
    starts = [c.start_line for c in chunks]
    assert starts == sorted(set(starts)), "every chunk starts later than the one before"
    assert chunks[-1].content.endswith(paras[-1])


def test_an_oversized_paragraph_is_split_at_lines() -> None:
    lines = [para(100, f"l{i}_") for i in range(10)]  # one paragraph, 1,000 tokens
    chunks = chunk_text("intro\n\n" + "\n".join(lines), max_tokens=400, overlap_tokens=0)
    assert chunks[0].content.startswith("intro")
    ranges = [(c.start_line, c.end_line) for c in chunks]
    assert ranges[0][0] == 1 and ranges[-1][1] == 12
    assert all(len(c.content.split()) <= 400 for c in chunks)
    body = "\n".join(c.content for c in chunks)
    assert all(line in body for line in lines)


def test_a_single_line_longer_than_a_chunk_is_cut_into_pieces() -> None:
    line = para(1_000, "w")
    chunks = chunk_text(line, max_tokens=400, overlap_tokens=0)
    assert len(chunks) >= 3
    assert all((c.start_line, c.end_line) == (1, 1) for c in chunks)
    assert all(len(c.content.split()) <= 400 for c in chunks)
    assert " ".join(c.content for c in chunks).split() == line.split()


def test_chunk_hash_is_the_sha256_of_its_content() -> None:
    chunk = chunk_text("- Holds AAPL\n- Risk tolerance: moderate")[0]
    assert chunk.hash == hashlib.sha256(chunk.content.encode()).hexdigest()


def test_default_sizes_are_400_tokens_with_80_overlap() -> None:
    assert chunker.CHUNK_TOKENS == 400
    assert chunker.CHUNK_OVERLAP_TOKENS == 80
