"""Where memory vectors come from: OpenAI, Gemini or Ollama through the ``openai`` SDK.

``memory.embedding_provider = "auto"`` picks the first source whose key is present:
``OPENAI_API_KEY`` (text-embedding-3-small), then ``GOOGLE_API_KEY`` (gemini-embedding-001
through Google's OpenAI-compatible endpoint), then ``OLLAMA_BASE_URL`` (nomic-embed-text on
Ollama's ``/v1`` endpoint). ``"none"`` or no source means keyword search only. The SDK is
imported on first use; a failed call raises ``EmbeddingError`` with a key-free message.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from dexter.secrets import scrub, secret_values
from dexter.tls import sdk_http_client

BATCH_SIZE = 64
TIMEOUT_SECONDS = 15.0
PARALLEL_BATCHES = 4

GEMINI_OPENAI_BASE_URL = "https://generativelanguage.googleapis.com/v1beta/openai/"
OLLAMA_DEFAULT_URL = "http://localhost:11434"
DEFAULT_MODELS = {
    "openai": "text-embedding-3-small",
    "gemini": "gemini-embedding-001",
    "ollama": "nomic-embed-text",
}
PROVIDER_CHOICES = ("auto", "openai", "gemini", "ollama", "none")


class EmbeddingError(Exception):
    """An embedding call failed; the message is safe to show (it never holds a key)."""


class Embedder(Protocol):
    """Turns texts into vectors. ``provider`` and ``model`` identify the vector space."""

    @property
    def provider(self) -> str: ...

    @property
    def model(self) -> str: ...

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order."""
        ...


@dataclass(frozen=True, slots=True)
class EmbeddingSource:
    """A resolved embedding endpoint (the key is kept out of ``repr``)."""

    provider: str
    model: str
    base_url: str | None
    api_key: str

    def __repr__(self) -> str:
        return f"EmbeddingSource(provider={self.provider!r}, model={self.model!r}, base_url={self.base_url!r})"


@dataclass(frozen=True, slots=True)
class SourceChoice:
    """The outcome of choosing a source: the source, or None and why."""

    source: EmbeddingSource | None
    reason: str


def choose_source(provider: str, model: str, env: Mapping[str, str]) -> SourceChoice:
    """Pick the embedding source from the settings and the keys in ``env``."""
    wanted = (provider or "auto").strip().lower()
    if wanted not in PROVIDER_CHOICES:
        return SourceChoice(None, f"memory.embedding_provider '{provider}' is not one of "
                                  f"{', '.join(PROVIDER_CHOICES)}; using keyword search")
    if wanted == "none":
        return SourceChoice(None, "embeddings are off (memory.embedding_provider = \"none\")")
    order = ["openai", "gemini", "ollama"] if wanted == "auto" else [wanted]
    for name in order:
        source = _source_for(name, model, env, explicit=wanted != "auto")
        if source is not None:
            return SourceChoice(source, f"{name} embeddings ({source.model})")
    if wanted == "auto":
        return SourceChoice(None, "no embedding source (set OPENAI_API_KEY, GOOGLE_API_KEY or "
                                  "OLLAMA_BASE_URL for semantic search)")
    key = "OPENAI_API_KEY" if wanted == "openai" else "GOOGLE_API_KEY"
    return SourceChoice(None, f"memory.embedding_provider is '{wanted}' but {key} is not set")


def _source_for(name: str, model: str, env: Mapping[str, str], explicit: bool) -> EmbeddingSource | None:
    chosen_model = model.strip() or DEFAULT_MODELS[name]
    if name == "openai" and env.get("OPENAI_API_KEY"):
        return EmbeddingSource("openai", chosen_model, env.get("OPENAI_BASE_URL") or None,
                               env["OPENAI_API_KEY"])
    if name == "gemini" and env.get("GOOGLE_API_KEY"):
        return EmbeddingSource("gemini", chosen_model, GEMINI_OPENAI_BASE_URL, env["GOOGLE_API_KEY"])
    if name == "ollama" and (env.get("OLLAMA_BASE_URL") or explicit):
        base = (env.get("OLLAMA_BASE_URL") or OLLAMA_DEFAULT_URL).rstrip("/")
        if not base.endswith("/v1"):
            base += "/v1"
        return EmbeddingSource("ollama", chosen_model, base, "ollama")
    return None


class OpenAICompatibleEmbedder:
    """Embeddings through ``AsyncOpenAI().embeddings.create`` (OpenAI, Gemini, Ollama)."""

    def __init__(self, source: EmbeddingSource, timeout: float = TIMEOUT_SECONDS) -> None:
        self._source = source
        self._timeout = timeout
        self._client: Any = None

    @property
    def provider(self) -> str:
        return self._source.provider

    @property
    def model(self) -> str:
        return self._source.model

    def _get_client(self) -> Any:
        if self._client is None:
            from openai import AsyncOpenAI, DefaultAsyncHttpxClient

            base_url = self._source.base_url
            self._client = AsyncOpenAI(
                api_key=self._source.api_key, base_url=base_url, timeout=self._timeout,
                max_retries=1,
                http_client=sdk_http_client(DefaultAsyncHttpxClient, base_url, self._timeout))
        return self._client

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors for ``texts`` in batches of 64, a few batches at a time."""
        batches = [list(texts[i:i + BATCH_SIZE]) for i in range(0, len(texts), BATCH_SIZE)]
        vectors: list[list[float]] = []
        for start in range(0, len(batches), PARALLEL_BATCHES):
            group = batches[start:start + PARALLEL_BATCHES]
            results = await asyncio.gather(*(self._embed_batch(b) for b in group))
            for result in results:
                vectors.extend(result)
        return vectors

    async def _embed_batch(self, batch: list[str]) -> list[list[float]]:
        import openai

        try:
            response = await self._get_client().embeddings.create(
                input=batch, model=self._source.model, timeout=self._timeout)
        except openai.APIStatusError as exc:
            raise EmbeddingError(f"{self.provider} embeddings failed with HTTP {exc.status_code}"
                                 f" ({self._safe(exc.message)})") from None
        except openai.APITimeoutError:
            raise EmbeddingError(f"{self.provider} embeddings timed out after {self._timeout:g}s") from None
        except openai.APIConnectionError:
            raise EmbeddingError(f"could not connect to the {self.provider} embeddings endpoint") from None
        except openai.OpenAIError as exc:
            raise EmbeddingError(f"{self.provider} embeddings failed: {self._safe(str(exc))}") from None
        ordered = sorted(response.data, key=lambda item: item.index)
        if len(ordered) != len(batch):
            raise EmbeddingError(f"{self.provider} returned {len(ordered)} vectors for {len(batch)} texts")
        return [list(item.embedding) for item in ordered]

    def _safe(self, text: str) -> str:
        """``text`` shortened, with the key and anything key-shaped masked."""
        extra = (self._source.api_key,) if self._source.api_key else ()
        return _short(scrub(text, secret_values(extra=extra), key_shaped=True))


def make_embedder(source: EmbeddingSource) -> OpenAICompatibleEmbedder:
    """The embedder for a resolved source."""
    return OpenAICompatibleEmbedder(source)


def normalize(vector: Sequence[float]) -> list[float]:
    """``vector`` scaled to unit length (a zero vector stays zero)."""
    norm = math.sqrt(sum(v * v for v in vector))
    return [v / norm for v in vector] if norm else [0.0 for _ in vector]


def _short(text: str, limit: int = 200) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[:limit] + "..."
