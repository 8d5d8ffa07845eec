"""TLS as the user configures it, on both SDKs and the data sources' client, over real HTTPS
on loopback: a server whose certificate comes from a private CA is refused until the CA is
named in ``SSL_CERT_FILE``, then reached. dexter builds one verifying context per HTTP
library and process (``dexter/tls.py``): these check that the shared context never hides a
change of the trust the user set, and that a refused certificate reads as one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

from dexter.config import Settings
from dexter.data.http import HttpClient, RetryPolicy, ServiceInfo
from dexter.messages import UserMessage
from dexter.providers.base import ModelRequest, ModelResponse
from dexter.providers.call import create_chat_model, generate
from dexter.providers.errors import ProviderError
from dexter.providers.registry import resolve_model
from dexter.testing.fakellm import FakeLLM, Reply
from tests.cli_helpers import cli_env, run_cli

REQUEST = ModelRequest(system="You are Dexter.", messages=(UserMessage("AAPL revenue?"),))


@pytest.fixture
def ca(tmp_path: Path) -> tuple[trustme.CA, Path]:
    authority = trustme.CA()
    pem = tmp_path / "private-ca.pem"
    authority.cert_pem.write_to_path(str(pem))
    return authority, pem


@pytest.fixture
def https_llm(ca: tuple[trustme.CA, Path], monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLM]:
    import ssl

    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca[0].issue_cert("127.0.0.1").configure_cert(server_ctx)
    with FakeLLM(tls=server_ctx) as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.openai_base_url)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.anthropic_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-openai")
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
        monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
        monkeypatch.delenv("SSL_CERT_FILE", raising=False)
        monkeypatch.delenv("SSL_CERT_DIR", raising=False)
        yield fake


async def _ask(name: str) -> str:
    settings = Settings()
    model = create_chat_model(resolve_model(name, settings), settings)
    try:
        items = [item async for item in generate(model, REQUEST, max_retries=0)]
    finally:
        await model.aclose()
    final = items[-1]
    assert isinstance(final, ModelResponse)
    return final.message.text


@pytest.mark.parametrize("name", ["gpt-fake", "claude-fake"], ids=["openai", "anthropic"])
async def test_a_provider_behind_a_private_ca_is_refused_then_reached_once_the_ca_is_named(
        https_llm: FakeLLM, ca: tuple[trustme.CA, Path], monkeypatch: pytest.MonkeyPatch,
        name: str) -> None:
    assert https_llm.url.startswith("https://127.0.0.1:")
    https_llm.enqueue(Reply(text="first"), Reply(text="revenue was $391.0B"))
    with pytest.raises(ProviderError) as refused:
        await _ask(name)
    assert refused.value.kind == "connection"
    assert "certificate" in refused.value.message and "SSL_CERT_FILE" in refused.value.message
    assert not https_llm.requests, "no request is sent over an unverified connection"

    monkeypatch.setenv("SSL_CERT_FILE", str(ca[1]))
    assert await _ask(name) == "first"
    monkeypatch.delenv("SSL_CERT_FILE")
    with pytest.raises(ProviderError):
        await _ask(name)  # the trust the user took away is not kept either
    assert len(https_llm.requests) == 1


async def test_the_data_sources_client_follows_ssl_cert_file_too(
        https_llm: FakeLLM, ca: tuple[trustme.CA, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """The data sources' client (httpx, certifi's bundle by default) against the same
    server: refused without the CA, reached with it (the fake's embeddings route answers
    any POST with vectors)."""
    url = https_llm.openai_base_url + "/embeddings"
    body = {"model": "text-embedding-3-small", "input": ["x"]}
    service = ServiceInfo(name="Test service", key_env=None)
    for trusted in (False, True):
        if trusted:
            monkeypatch.setenv("SSL_CERT_FILE", str(ca[1]))
        client = HttpClient(service, retry=RetryPolicy(max_retries=0))
        try:
            if trusted:
                response = await client.post_json(url, body, what="test vectors")
                assert response.data["data"][0]["embedding"]
            else:
                with pytest.raises(Exception) as refused:
                    await client.post_json(url, body, what="test vectors")
                assert "certificate" in str(refused.value).lower()
        finally:
            await client.aclose()


def test_dexter_ask_says_the_certificate_is_not_trusted_then_answers_with_ssl_cert_file(
        https_llm: FakeLLM, ca: tuple[trustme.CA, Path], tmp_path: Path) -> None:
    """End to end: the message a user reads names the cause and the setting, with no
    traceback and no retries (the same call would fail the same way); the same command
    with the CA named answers."""
    https_llm.enqueue(Reply(text="Apple reports in September."))
    env = cli_env(https_llm, tmp_path)
    refused = run_cli(["ask", "--plain", "AAPL revenue?"], cwd=tmp_path, env=env)
    assert refused.code != 0
    said = refused.stdout + refused.stderr
    assert "TLS certificate is not trusted" in said and "SSL_CERT_FILE" in said
    assert "Traceback" not in refused.stderr + refused.stdout
    assert "retrying" not in refused.stdout, "an untrusted certificate is not tried again"
    assert not https_llm.requests

    answered = run_cli(["ask", "--plain", "AAPL revenue?"], cwd=tmp_path,
                       env={**env, "SSL_CERT_FILE": str(ca[1])})
    assert answered.code == 0, answered.stderr
    assert "Apple reports in September." in answered.stdout


@pytest.mark.parametrize("where", ["missing", "not-pem", "folder"])
@pytest.mark.parametrize("args", [["ask", "--plain", "AAPL revenue?"], []], ids=["ask", "repl"])
def test_a_trust_variable_that_names_no_ca_file_stops_dexter_at_start_with_one_line(
        tmp_path: Path, where: str, args: list[str]) -> None:
    """``SSL_CERT_FILE`` naming a missing path, a file holding no certificate or a folder:
    dexter says which variable and what is wrong, exits 2 (a configuration error) before
    any request, in one-shot and interactive starts alike, with no traceback."""
    target = {"missing": tmp_path / "no-such-ca.pem", "not-pem": tmp_path / "notes.txt",
              "folder": tmp_path}[where]
    if where == "not-pem":
        target.write_text("not a certificate\n")
    with FakeLLM() as fake:
        env = cli_env(fake, tmp_path, SSL_CERT_FILE=str(target))
        result = run_cli(args, cwd=tmp_path, env=env, input_text="q\n")
        assert not fake.requests
    said = result.stdout + result.stderr
    assert result.code == 2, said
    assert f"SSL_CERT_FILE names {target}" in said and "CA certificates" in said
    assert "Traceback" not in said
