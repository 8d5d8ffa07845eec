"""A local, deterministic embedder for tests and benchmarks (no network, no model).

Words are hashed into a fixed number of dimensions (the "hashing trick"), so texts that share
words get similar vectors. It is not semantic; it only exercises the vector path end to end.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

_WORD_RE = re.compile(r"\w+")


class HashingEmbedder:
    """``Embedder`` that maps word counts into ``dim`` buckets. Records every call."""

    def __init__(self, dim: int = 256, model: str = "hashing-256", provider: str = "local") -> None:
        self.dim = dim
        self._model = model
        self._provider = provider
        self.calls: list[list[str]] = []

    @property
    def provider(self) -> str:
        return self._provider

    @property
    def model(self) -> str:
        return self._model

    def vector(self, text: str) -> list[float]:
        """The (unnormalised) vector of one text."""
        vec = [0.0] * self.dim
        for word in _WORD_RE.findall(text.lower()):
            digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
            bucket = int.from_bytes(digest[:4], "little") % self.dim
            vec[bucket] += 1.0 if digest[4] & 1 else -1.0
        return vec

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text."""
        self.calls.append(list(texts))
        return [self.vector(t) for t in texts]
