"""The OpenAI adapter streams its body as built: no SDK parameter transform per request."""

from __future__ import annotations

from typing import Any

import openai._utils._transform as sdk_transform
import pytest

from dexter.messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from dexter.providers.base import ModelRequest, ModelResponse, ToolSpec
from dexter.providers.call import generate
from dexter.providers.errors import ProviderError
from dexter.providers.openai_chat import OpenAIChatModel, request_params
from dexter.testing.fakellm import FakeLLM, HttpError, Reply

TOOL = ToolSpec(name="get_financials", description="Statements.",
                parameters={"type": "object", "properties": {"query": {"type": "string"}}})


async def test_the_stream_sends_the_built_body_with_auth_and_no_sdk_transform(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the SDK's per-request transform ran")

    monkeypatch.setattr(sdk_transform, "_async_transform_recursive", refuse)
    call = ToolCall("call_1", "get_financials", {"query": "NVDA"})
    request = ModelRequest(
        system="You are dexter.", tools=(TOOL,), max_tokens=500,
        messages=(UserMessage("NVDA margins?"), AssistantMessage(text="Reading.", tool_calls=(call,)),
                  ToolResultMessage("call_1", "get_financials", "gross margin 75.0%")))
    with FakeLLM() as fake:
        model = OpenAIChatModel(model="gpt-5.6-sol", api_key="sk-test-0000",
                                base_url=fake.openai_base_url)
        fake.enqueue(Reply(text="Margins rose."))
        try:
            items = [item async for item in generate(model, request, max_retries=0)]
        finally:
            await model.aclose()
        (sent,) = fake.requests
    response = items[-1]
    assert isinstance(response, ModelResponse) and response.message.text == "Margins rose."
    assert response.usage.input_tokens > 0
    assert sent.headers.get("authorization") == "Bearer sk-test-0000"
    expected = {**request_params(request, "gpt-5.6-sol", "openai"), "stream": True,
                "stream_options": {"include_usage": True}}
    assert sent.body == expected


REQUEST = ModelRequest(
    system="You are dexter.", tools=(TOOL,), max_tokens=500, temperature=0.0, json_output=True,
    messages=(UserMessage("NVDA margins?"),
              AssistantMessage(text="Reading.", tool_calls=(ToolCall("call_1", "get_financials",
                                                                     {"query": "NVDA"}),)),
              ToolResultMessage("call_1", "get_financials", "gross margin 75.0%")))


async def test_a_blocking_call_sends_the_built_body_with_auth_and_no_sdk_transform(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the SDK's per-request transform ran")

    monkeypatch.setattr(sdk_transform, "_async_transform_recursive", refuse)
    with FakeLLM() as fake:
        model = OpenAIChatModel(model="gpt-5.6-sol", api_key="sk-test-0000",
                                base_url=fake.openai_base_url)
        fake.enqueue(Reply(text='{"margin": "rose"}'))
        try:
            response = await model.complete(REQUEST)
        finally:
            await model.aclose()
        (sent,) = fake.requests
    assert response.message.text == '{"margin": "rose"}'
    assert response.usage.input_tokens > 0
    assert sent.headers.get("authorization") == "Bearer sk-test-0000"
    assert sent.stream is False
    assert sent.body == request_params(REQUEST, "gpt-5.6-sol", "openai")


@pytest.mark.parametrize(("step", "kind"), [
    (HttpError.openai_context_overflow(), "context_overflow"),
    (HttpError.openai_rate_limit(), "rate_limit"),
    (HttpError.openai_auth(), "auth"),
    (HttpError.server_error(503), "overloaded"),
    (HttpError.server_error(500), "server"),
])
async def test_blocking_call_errors_are_the_sdks_mapped_to_ours(step: HttpError, kind: str) -> None:
    with FakeLLM() as fake:
        model = OpenAIChatModel(model="gpt-5.6-sol", api_key="sk-test-0000",
                                base_url=fake.openai_base_url)
        fake.enqueue(step)
        try:
            with pytest.raises(ProviderError) as caught:
                await model.complete(REQUEST)
        finally:
            await model.aclose()
        assert len(fake.requests) == 1  # the caller retries, not the SDK (max_retries=0)
    assert caught.value.kind == kind
