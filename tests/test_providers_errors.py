"""Classifying provider failures into kinds and plain-words messages, without leaking keys."""

from __future__ import annotations

import email.utils
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from dexter.providers.errors import (
    ProviderError,
    classify_error,
    context_limit_from_error,
    error_from_text,
    is_context_overflow,
    parse_retry_after,
    scrub_secrets,
)

REQUEST = httpx2.Request("POST", "https://api.example.test/v1/chat/completions")


def _response(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> httpx2.Response:
    return httpx2.Response(status, json=body, headers=headers or {}, request=REQUEST)


def openai_error(status: int, message: str, code: str | None = None, type_: str = "invalid_request_error",
                 headers: dict[str, str] | None = None) -> openai.APIStatusError:
    body = {"error": {"message": message, "type": type_, "param": None, "code": code}}
    return openai.APIStatusError(message, response=_response(status, body, headers), body=body["error"])


def anthropic_error(status: int, type_: str, message: str, headers: dict[str, str] | None = None) -> anthropic.APIStatusError:
    body = {"type": "error", "error": {"type": type_, "message": message}, "request_id": "req_1"}
    return anthropic.APIStatusError(message, response=_response(status, body, headers), body=body)


def test_openai_context_length_code_is_overflow() -> None:
    exc = openai_error(400, "Your input exceeds the context window of this model.", "context_length_exceeded")
    err = classify_error(exc, "OpenAI", "gpt-4o", "OPENAI_API_KEY")
    assert err.kind == "context_overflow" and is_context_overflow(err)
    assert not err.retryable
    assert "gpt-4o" in err.message and "context window" in err.message


@pytest.mark.parametrize(
    "text",
    [
        "prompt is too long: 205351 tokens > 200000 maximum",
        "input length and `max_tokens` exceed context limit: 199759 + 8192 > 200000",
        "This model's maximum context length is 32768 tokens. However, you requested 40000 tokens",
        "Request too large: too many tokens in the prompt",
        "The input is too long for the requested model.",
        "上下文过长",
    ],
)
def test_overflow_wordings(text: str) -> None:
    assert classify_error(anthropic_error(400, "invalid_request_error", text), "Anthropic").kind == "context_overflow"
    assert error_from_text(text).kind == "context_overflow"


def test_tokens_per_minute_limit_is_a_rate_limit_not_an_overflow() -> None:
    text = ("Request too large for gpt-4o in organization org-x on tokens per min (TPM): "
            "Limit 30000, Requested 50000. The input or output tokens must be reduced.")
    err = classify_error(openai_error(429, text, "rate_limit_exceeded", "tokens"), "OpenAI", "gpt-4o")
    assert err.kind == "rate_limit"
    assert error_from_text(text).kind == "rate_limit"
    assert error_from_text("context window exceeded: too many tokens per minute").kind == "rate_limit"


def test_insufficient_quota_429_is_billing_and_not_retried() -> None:
    exc = openai_error(429, "You exceeded your current quota, please check your plan and billing details.",
                       "insufficient_quota", "insufficient_quota")
    err = classify_error(exc, "OpenAI", "gpt-4o", "OPENAI_API_KEY")
    assert err.kind == "billing" and not err.retryable
    assert "OPENAI_API_KEY" in err.message and "billing" in err.message


def test_anthropic_credit_balance_is_billing() -> None:
    exc = anthropic_error(400, "invalid_request_error", "Your credit balance is too low to access the Anthropic API.")
    assert classify_error(exc, "Anthropic").kind == "billing"


def test_401_names_the_key_variable_but_never_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-SECRETSECRET123")
    exc = openai_error(401, "Incorrect API key provided: sk-proj-SECRETSECRET123.", "invalid_api_key")
    err = classify_error(exc, "OpenAI", "gpt-4o", "OPENAI_API_KEY")
    assert err.kind == "auth" and err.status == 401 and not err.retryable
    assert err.message == ("OpenAI rejected the API key in OPENAI_API_KEY (HTTP 401). Check the key in "
                           "your .env or shell, then try again.")
    assert "SECRET" not in err.message + err.detail


def test_403_is_auth_and_says_access() -> None:
    err = classify_error(anthropic_error(403, "permission_error", "no access"), "Anthropic", "claude-opus-4-8", "ANTHROPIC_API_KEY")
    assert err.kind == "auth" and "access" in err.message and "ANTHROPIC_API_KEY" in err.message


def test_404_model_is_not_found() -> None:
    exc = openai_error(404, "The model `gpt-9` does not exist", "model_not_found")
    err = classify_error(exc, "OpenAI", "gpt-9")
    assert err.kind == "not_found" and "gpt-9" in err.message and "dexter models" in err.message


@pytest.mark.parametrize(
    ("status", "type_", "kind"),
    [(529, "overloaded_error", "overloaded"), (503, "api_error", "overloaded"),
     (500, "api_error", "server"), (502, "api_error", "server"), (504, "api_error", "timeout"),
     (429, "rate_limit_error", "rate_limit"), (400, "invalid_request_error", "bad_request")],
)
def test_status_classification(status: int, type_: str, kind: str) -> None:
    err = classify_error(anthropic_error(status, type_, "something"), "Anthropic", "claude-x")
    assert err.kind == kind
    assert err.retryable is (kind in {"overloaded", "server", "timeout", "rate_limit"})


def test_anthropic_mid_stream_error_event_is_classified_by_type() -> None:
    body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    exc = anthropic.APIStatusError(str(body), response=_response(200, {}), body=body)
    err = classify_error(exc, "Anthropic", "claude-x")
    assert err.kind == "overloaded" and err.retryable


def test_openai_mid_stream_error_line_is_a_server_error() -> None:
    exc = openai.APIError("boom", REQUEST, body={"message": "boom", "type": "server_error"})
    assert classify_error(exc, "OpenAI").kind == "server"


def test_transport_errors() -> None:
    dropped = httpx2.RemoteProtocolError("peer closed connection without sending complete message body")
    assert classify_error(dropped, "Anthropic", base_url="http://127.0.0.1:1").kind == "connection"
    assert classify_error(openai.APIConnectionError(request=REQUEST), "OpenAI").kind == "connection"
    assert classify_error(openai.APITimeoutError(request=REQUEST), "OpenAI").kind == "timeout"
    assert classify_error(TimeoutError(), "OpenAI").kind == "timeout"


def test_unknown_errors_are_not_retried() -> None:
    err = classify_error(RuntimeError("weird"), "OpenAI", "gpt-4o")
    assert err.kind == "unknown" and not err.retryable and "weird" in err.message


def test_provider_error_passes_through_unchanged() -> None:
    original = ProviderError("timeout", "slow")
    assert classify_error(original) is original


def test_retry_after_from_the_response_headers() -> None:
    exc = openai_error(429, "Rate limit reached for requests", "rate_limit_exceeded", headers={"retry-after": "7"})
    err = classify_error(exc, "OpenAI", "gpt-4o")
    assert err.kind == "rate_limit" and err.retry_after == 7.0


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"Retry-After": "3"}) == 3.0
    assert parse_retry_after({"retry-after": "0.01"}) == 0.01
    now = 1_700_000_000.0
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert parse_retry_after({"retry-after": date}, now=now) == pytest.approx(30.0)
    past = email.utils.formatdate(now - 30, usegmt=True)
    assert parse_retry_after({"retry-after": past}, now=now) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({"retry-after": "-4"}) is None
    assert parse_retry_after({}) is None


def test_scrub_secrets_hides_env_keys_and_key_like_tokens() -> None:
    env = {"MY_API_KEY": "abcdef123456", "DEXTER_HOME": "/home/x"}
    text = "key abcdef123456 and sk-live-1234567890abcd and Bearer eyJhbGciOiJIUzI1 in /home/x"
    cleaned = scrub_secrets(text, env)
    assert "abcdef123456" not in cleaned and "sk-live" not in cleaned and "eyJhbG" not in cleaned
    assert "/home/x" in cleaned and cleaned.count("***") == 3


def test_context_limit_is_read_from_overflow_messages() -> None:
    err = classify_error(openai_error(400, "This model's maximum context length is 128,000 tokens.",
                                      "context_length_exceeded"), "OpenAI")
    assert context_limit_from_error(err) == 128_000
    ant_err = classify_error(anthropic_error(400, "invalid_request_error",
                                             "prompt is too long: 205351 tokens > 200000 maximum"), "Anthropic")
    assert context_limit_from_error(ant_err) == 200_000
    assert context_limit_from_error(ProviderError("server", "oops")) is None
