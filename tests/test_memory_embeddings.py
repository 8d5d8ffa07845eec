"""Embedding sources: automatic choice from keys, and real calls through the fake OpenAI server."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dexter.config import Settings
from dexter.memory.embeddings import (
    GEMINI_OPENAI_BASE_URL,
    EmbeddingError,
    EmbeddingSource,
    OpenAICompatibleEmbedder,
    choose_source,
)
from dexter.memory.manager import MemoryManager
from dexter.testing.fakellm import FakeLLM, HttpError, fake_embedding

# ---- choosing a source ---------------------------------------------------------------------

ALL_KEYS = {"OPENAI_API_KEY": "sk-o", "GOOGLE_API_KEY": "g-key",
            "OLLAMA_BASE_URL": "http://127.0.0.1:11434"}


@pytest.mark.parametrize(("env", "provider", "model"), [
    (ALL_KEYS, "openai", "text-embedding-3-small"),
    ({k: v for k, v in ALL_KEYS.items() if k != "OPENAI_API_KEY"}, "gemini", "gemini-embedding-001"),
    ({"OLLAMA_BASE_URL": "http://127.0.0.1:11434"}, "ollama", "nomic-embed-text"),
])
def test_auto_picks_openai_then_gemini_then_ollama(env: dict[str, str], provider: str, model: str) -> None:
    source = choose_source("auto", "", env).source
    assert source is not None
    assert (source.provider, source.model) == (provider, model)


def test_auto_without_keys_means_keyword_only_and_says_which_keys_help() -> None:
    choice = choose_source("auto", "", {})
    assert choice.source is None
    assert "OPENAI_API_KEY" in choice.reason and "GOOGLE_API_KEY" in choice.reason


def test_endpoints_for_gemini_and_ollama_are_openai_compatible() -> None:
    gemini = choose_source("gemini", "", {"GOOGLE_API_KEY": "g"}).source
    assert gemini is not None and gemini.base_url == GEMINI_OPENAI_BASE_URL
    ollama = choose_source("ollama", "", {"OLLAMA_BASE_URL": "http://box:11434/"}).source
    assert ollama is not None and ollama.base_url == "http://box:11434/v1"
    default = choose_source("ollama", "", {}).source
    assert default is not None and default.base_url == "http://localhost:11434/v1"


def test_explicit_choices_and_model_override() -> None:
    assert choose_source("openai", "", {}).reason == (
        "memory.embedding_provider is 'openai' but OPENAI_API_KEY is not set")
    assert choose_source("none", "", ALL_KEYS).source is None
    assert "not one of" in choose_source("cohere", "", ALL_KEYS).reason
    source = choose_source("auto", "text-embedding-3-large", ALL_KEYS).source
    assert source is not None and source.model == "text-embedding-3-large"


def test_the_key_never_shows_in_repr_or_reason() -> None:
    choice = choose_source("auto", "", {"OPENAI_API_KEY": "sk-secret-value-123"})
    assert "sk-secret" not in repr(choice.source) and "sk-secret" not in choice.reason


# ---- through the fake server ---------------------------------------------------------------


def manager(tmp_path: Path) -> MemoryManager:
    return MemoryManager(Settings(home=str(tmp_path / "home")), env=dict(os.environ))


async def test_memory_is_embedded_through_the_openai_sdk_in_batches_of_64(
        fake_llm: FakeLLM, tmp_path: Path) -> None:
    mgr = manager(tmp_path)
    mgr.memory_dir.mkdir(parents=True)
    for i in range(70):
        (mgr.memory_dir / f"note{i:02d}.md").write_text(f"- fact number {i} about holding {i}\n")
    target = "- fact number 7 about holding 7"
    outcome = await mgr.search(target)
    calls = fake_llm.requests_for("embeddings")
    sizes = sorted(len(c.body["input"]) for c in calls if isinstance(c.body["input"], list))
    assert sizes == [1, 6, 64]  # 70 chunks in two batches, plus the query
    assert {c.body["model"] for c in calls} == {"text-embedding-3-small"}
    assert all(c.headers["authorization"] == "Bearer sk-test-openai" for c in calls)
    assert outcome.mode == "hybrid"
    top = outcome.results[0]
    assert (top.path, top.match) == ("note07.md", "both")
    assert top.score == pytest.approx(1.0, abs=1e-5)  # identical text: cosine 1, best keyword hit
    status = mgr.status()
    assert (status.mode, status.embedding_provider) == ("hybrid", "openai")
    assert status.embedded_chunks == status.chunks == 70
    assert status.reason == ""  # nothing to explain: the search line already names the source
    fake_llm.assert_no_violations()


async def test_unchanged_chunks_are_not_embedded_again(fake_llm: FakeLLM, tmp_path: Path) -> None:
    mgr = manager(tmp_path)
    mgr.memory_dir.mkdir(parents=True)
    (mgr.memory_dir / "MEMORY.md").write_text("- Holds AAPL\n")
    await mgr.search("AAPL")
    before = len(fake_llm.requests_for("embeddings"))
    await manager(tmp_path).search("AAPL")  # a new process: only the query is embedded
    after = fake_llm.requests_for("embeddings")[before:]
    assert [c.body["input"] for c in after] == [["AAPL"]]


async def test_an_embeddings_outage_falls_back_to_keywords(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.enqueue(HttpError(503, message="overloaded"), HttpError(503, message="overloaded"),
                     route="embeddings")
    mgr = manager(tmp_path)
    mgr.update("append", "long_term", "- Risk tolerance: moderate")
    outcome = await mgr.search("risk tolerance")
    assert outcome.available and outcome.mode == "keyword"
    assert [r.path for r in outcome.results] == ["MEMORY.md"]
    assert "HTTP 503" in outcome.note
    assert "keyword search until it recovers" in mgr.status().reason


async def test_embedder_returns_vectors_in_input_order(fake_llm: FakeLLM) -> None:
    source = EmbeddingSource("openai", "text-embedding-3-small", fake_llm.openai_base_url, "sk-x")
    vectors = await OpenAICompatibleEmbedder(source).embed(["alpha", "beta"])
    assert vectors[0] == pytest.approx(fake_embedding("alpha"), abs=1e-6)
    assert vectors[1] == pytest.approx(fake_embedding("beta"), abs=1e-6)


async def test_error_messages_mask_the_key(fake_llm: FakeLLM) -> None:
    key = "sk-live-abcdef1234567890"
    fake_llm.enqueue(HttpError(401, message=f"Incorrect API key provided: {key}"),
                     route="embeddings")
    source = EmbeddingSource("openai", "text-embedding-3-small", fake_llm.openai_base_url, key)
    with pytest.raises(EmbeddingError) as caught:
        await OpenAICompatibleEmbedder(source).embed(["alpha"])
    assert "HTTP 401" in str(caught.value)
    assert key not in str(caught.value) and "abcdef" not in str(caught.value)
