"""Both adapters and the retry driver over real HTTP, against the scripted fake server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from dexter.config import Settings
from dexter.events import ProviderRetry
from dexter.messages import ToolResultMessage, UserMessage
from dexter.providers.base import ChatModel, ModelRequest, ModelResponse, StreamChunk, ToolSpec
from dexter.providers.call import STREAM_RESTART, create_chat_model, generate
from dexter.providers.errors import ProviderError
from dexter.providers.registry import resolve_model
from dexter.testing.fakellm import (
    DropStream,
    FakeLLM,
    HttpError,
    Malformed,
    MidStreamError,
    Reply,
    Stall,
    ToolCallSpec,
    Truncate,
    Usage,
)

SEARCH = ToolSpec("web_search", "Search the web", {"type": "object", "properties": {"query": {"type": "string"}}})
CALC = ToolSpec("calculator", "Arithmetic", {"type": "object", "properties": {"expr": {"type": "string"}}})
REQUEST = ModelRequest(system="You are Dexter.", messages=(UserMessage("NVDA revenue?"),), tools=(SEARCH, CALC))
TWO_CALLS = [ToolCallSpec("web_search", {"query": "NVDA revenue 2025"}), ToolCallSpec("calculator", {"expr": "60.9 * 1.1"})]

Item = StreamChunk | ProviderRetry | ModelResponse


async def _model(name: str) -> AsyncIterator[ChatModel]:
    settings = Settings()
    model = create_chat_model(resolve_model(name, settings), settings)
    yield model
    await model.aclose()


@pytest.fixture
async def openai_model(fake_llm: FakeLLM) -> AsyncIterator[ChatModel]:
    async for model in _model("gpt-fake"):
        yield model


@pytest.fixture
async def anthropic_model(fake_llm: FakeLLM) -> AsyncIterator[ChatModel]:
    async for model in _model("claude-fake"):
        yield model


@pytest.fixture(params=["gpt-fake", "claude-fake"], ids=["openai", "anthropic"])
async def any_model(request: pytest.FixtureRequest, fake_llm: FakeLLM) -> AsyncIterator[ChatModel]:
    async for model in _model(request.param):
        yield model


def preset(model: ChatModel, openai_step: HttpError, anthropic_step: HttpError) -> HttpError:
    """The error step in the wire format of ``model``'s provider."""
    return openai_step if model.provider_id == "openai" else anthropic_step


class Sleeps:
    """A stand-in for asyncio.sleep that records the delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


async def collect(model: ChatModel, request: ModelRequest = REQUEST, **kwargs: object) -> list[Item]:
    return [item async for item in generate(model, request, **kwargs)]  # type: ignore[arg-type]


def final(items: list[Item]) -> ModelResponse:
    responses = [i for i in items if isinstance(i, ModelResponse)]
    assert len(responses) == 1 and items[-1] is responses[0]
    return responses[0]


def retries(items: list[Item]) -> list[ProviderRetry]:
    return [i for i in items if isinstance(i, ProviderRetry)]


async def test_openai_streams_text_and_interleaved_tool_calls(fake_llm: FakeLLM, openai_model: ChatModel) -> None:
    fake_llm.enqueue(Reply(text="Looking it up.", tool_calls=TWO_CALLS, interleave_tool_calls=True,
                           chunk_size=4, usage=Usage(321, 45, cached_tokens=128)))
    items = await collect(openai_model)
    text = "".join(i.text for i in items if isinstance(i, StreamChunk) and i.kind == "text")
    assert text == "Looking it up."
    assert sum(isinstance(i, StreamChunk) and i.kind == "tool_input" for i in items) > 4
    response = final(items)
    assert [(c.name, c.arguments) for c in response.message.tool_calls] == [
        ("web_search", {"query": "NVDA revenue 2025"}), ("calculator", {"expr": "60.9 * 1.1"})]
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.cache_read_tokens) == (321, 45, 128)
    body = fake_llm.last_request.body
    assert body["stream_options"] == {"include_usage": True}
    assert body["tools"][0] == {"type": "function", "function": {
        "name": "web_search", "description": "Search the web", "parameters": SEARCH.parameters}}
    assert body["messages"][0] == {"role": "system", "content": "You are Dexter."}
    fake_llm.assert_no_violations()


async def test_openai_tool_results_go_back_paired(fake_llm: FakeLLM, openai_model: ChatModel) -> None:
    fake_llm.enqueue(Reply(tool_calls=TWO_CALLS), Reply(text="Revenue was $60.9B."))
    first = final(await collect(openai_model))
    results = tuple(ToolResultMessage(c.id, c.name, "ok", is_error=(n == 1))
                    for n, c in enumerate(first.message.tool_calls))
    follow_up = ModelRequest(system=REQUEST.system, messages=(*REQUEST.messages, first.message, *results),
                             tools=REQUEST.tools)
    assert final(await collect(openai_model, follow_up)).message.text == "Revenue was $60.9B."
    sent = fake_llm.last_request.body["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "tool"]
    assert sent[4]["content"].startswith("[tool error]")
    fake_llm.assert_no_violations()


async def test_anthropic_streams_thinking_text_and_tool_use(fake_llm: FakeLLM, anthropic_model: ChatModel) -> None:
    fake_llm.enqueue(Reply(text="Searching now.", thinking="Let me look.", thinking_signature="sig-XYZ==",
                           tool_calls=TWO_CALLS, chunk_size=5, usage=Usage(900, 42, cached_tokens=800)))
    items = await collect(anthropic_model)
    kinds = {i.kind for i in items if isinstance(i, StreamChunk)}
    assert kinds == {"thinking", "text", "tool_input"}
    response = final(items)
    assert response.message.text == "Searching now."
    assert response.message.thinking[0].text == "Let me look."
    assert response.message.thinking[0].signature == "sig-XYZ=="
    assert [c.arguments for c in response.message.tool_calls] == [{"query": "NVDA revenue 2025"}, {"expr": "60.9 * 1.1"}]
    assert response.stop_reason == "tool_use"
    # input_tokens is the whole prompt: fresh + cache reads.
    assert (response.usage.input_tokens, response.usage.cache_read_tokens, response.usage.output_tokens) == (1700, 800, 42)
    body = fake_llm.last_request.body
    assert body["system"] == [{"type": "text", "text": "You are Dexter.", "cache_control": {"type": "ephemeral"}}]
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in body["tools"][0]
    assert body["max_tokens"] == REQUEST.max_tokens


async def test_anthropic_thinking_block_round_trips_with_signature(fake_llm: FakeLLM, anthropic_model: ChatModel) -> None:
    fake_llm.enqueue(Reply(thinking="Plan: search.", thinking_signature="sig-ABC==", tool_calls=TWO_CALLS[:1]),
                     Reply(text="Done."))
    first = final(await collect(anthropic_model))
    call = first.message.tool_calls[0]
    follow_up = ModelRequest(
        system=REQUEST.system,
        messages=(*REQUEST.messages, first.message, ToolResultMessage(call.id, call.name, "60.9B"),
                  UserMessage("Tool usage: web_search 1/3", kind="note")),
        tools=REQUEST.tools,
    )
    assert final(await collect(anthropic_model, follow_up)).message.text == "Done."
    sent = fake_llm.last_request.body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert sent[1]["content"][0] == {"type": "thinking", "thinking": "Plan: search.", "signature": "sig-ABC=="}
    assert [b["type"] for b in sent[1]["content"]] == ["thinking", "tool_use"]
    assert [b["type"] for b in sent[2]["content"]] == ["tool_result", "text"]
    fake_llm.assert_no_violations()


async def test_rate_limit_with_retry_after_is_retried(fake_llm: FakeLLM, any_model: ChatModel) -> None:
    model = any_model
    fake_llm.enqueue(preset(model, HttpError.openai_rate_limit("2"), HttpError.anthropic_rate_limit("2")),
                     Reply(text="after the wait"))
    sleeps = Sleeps()
    items = await collect(model, stream=False, sleep=sleeps)
    assert final(items).message.text == "after the wait"
    notice = retries(items)
    assert len(notice) == 1 and notice[0].attempt == 1 and notice[0].delay_s == 2.0
    assert "rate limit" in notice[0].reason
    assert sleeps.delays == [2.0]
    assert len(fake_llm.requests) == 2


async def test_rate_limit_before_streaming_output_falls_back_to_blocking(fake_llm: FakeLLM, openai_model: ChatModel) -> None:
    fake_llm.enqueue(HttpError.openai_rate_limit("0.01"), Reply(text="blocking reply"))
    items = await collect(openai_model)
    assert final(items).message.text == "blocking reply"
    assert len(retries(items)) == 1 and retries(items)[0].delay_s == 0.01
    assert [r.stream for r in fake_llm.requests] == [True, False]


async def test_retries_stop_after_max_retries(fake_llm: FakeLLM, anthropic_model: ChatModel) -> None:
    fake_llm.enqueue(*[HttpError.anthropic_overloaded("5") for _ in range(3)])
    sleeps = Sleeps()
    with pytest.raises(ProviderError) as info:
        await collect(anthropic_model, stream=False, max_retries=2, sleep=sleeps)
    assert info.value.kind == "overloaded" and "gave up after 2 retries" in info.value.message
    assert sleeps.delays == [0.005, 0.005]
    assert len(fake_llm.requests) == 3


async def test_401_is_not_retried_and_never_shows_the_key(fake_llm: FakeLLM, openai_model: ChatModel) -> None:
    fake_llm.enqueue(HttpError.openai_auth(), Reply(text="never served"))
    sleeps = Sleeps()
    with pytest.raises(ProviderError) as info:
        await collect(openai_model, sleep=sleeps)
    err = info.value
    assert err.kind == "auth" and err.status == 401
    assert "OPENAI_API_KEY" in err.message and ".env" in err.message
    assert "sk-test-openai" not in f"{err.message} {err.detail} {err!r}"
    assert len(fake_llm.requests) == 1 and sleeps.delays == []


async def test_anthropic_401_names_its_key(fake_llm: FakeLLM, anthropic_model: ChatModel) -> None:
    fake_llm.enqueue(HttpError.anthropic_auth())
    with pytest.raises(ProviderError, match="ANTHROPIC_API_KEY") as info:
        await collect(anthropic_model)
    assert "sk-ant-test" not in repr(info.value)


async def test_context_overflow_is_classified_and_not_retried(fake_llm: FakeLLM, any_model: ChatModel) -> None:
    fake_llm.enqueue(preset(any_model, HttpError.openai_context_overflow(), HttpError.anthropic_prompt_too_long()))
    with pytest.raises(ProviderError) as info:
        await collect(any_model)
    assert info.value.kind == "context_overflow"
    assert len(fake_llm.requests) == 1


async def test_stream_dropped_before_output_falls_back_to_blocking_call(fake_llm: FakeLLM, any_model: ChatModel) -> None:
    model = any_model
    fake_llm.enqueue(DropStream(after_chunks=1), Reply(text="from the blocking call"))
    sleeps = Sleeps()
    items = await collect(model, sleep=sleeps)
    assert not any(isinstance(i, StreamChunk) for i in items)
    assert final(items).message.text == "from the blocking call"
    assert "without streaming" in retries(items)[0].reason
    assert [r.stream for r in fake_llm.requests] == [True, False]


async def test_stream_dropped_after_output_restarts_the_stream(fake_llm: FakeLLM, any_model: ChatModel) -> None:
    model = any_model
    fake_llm.enqueue(DropStream(after_chunks=4, reply=Reply(text="partial text that will be dropped", chunk_size=3)),
                     Reply(text="complete answer"))
    items = await collect(model, sleep=Sleeps())
    notice = retries(items)
    assert len(notice) == 1 and STREAM_RESTART in notice[0].reason
    before = items[: items.index(notice[0])]
    after = items[items.index(notice[0]) + 1:]
    assert any(isinstance(i, StreamChunk) for i in before)
    assert "".join(i.text for i in after if isinstance(i, StreamChunk)) == "complete answer"
    assert final(items).message.text == "complete answer"
    assert [r.stream for r in fake_llm.requests] == [True, True]


async def test_stream_without_terminal_event_is_retried(fake_llm: FakeLLM, any_model: ChatModel) -> None:
    model = any_model
    fake_llm.enqueue(Truncate(after_chunks=5), Reply(text="second try"))
    items = await collect(model, sleep=Sleeps())
    assert "connection lost" in retries(items)[0].reason
    assert final(items).message.text == "second try"


async def test_malformed_stream_data_is_retried(fake_llm: FakeLLM, any_model: ChatModel) -> None:
    fake_llm.enqueue(Malformed(after_chunks=3), Reply(text="clean reply"))
    items = await collect(any_model, sleep=Sleeps())
    assert "connection lost" in retries(items)[0].reason
    assert final(items).message.text == "clean reply"


async def test_anthropic_mid_stream_overloaded_event_is_retried(fake_llm: FakeLLM, anthropic_model: ChatModel) -> None:
    fake_llm.enqueue(MidStreamError(after_chunks=4), Reply(text="recovered"))
    items = await collect(anthropic_model, sleep=Sleeps())
    assert "overloaded" in retries(items)[0].reason
    assert final(items).message.text == "recovered"


async def test_openai_server_error_is_retried_then_succeeds(fake_llm: FakeLLM, openai_model: ChatModel) -> None:
    fake_llm.enqueue(HttpError.server_error(500, "20"), Reply(text="fine now"))
    items = await collect(openai_model, stream=False, sleep=Sleeps())
    assert retries(items)[0].delay_s == 0.02
    assert final(items).message.text == "fine now"


async def test_cancel_during_stream_propagates(fake_llm: FakeLLM, openai_model: ChatModel) -> None:
    stall = Stall(after_chunks=3, timeout=5)
    fake_llm.enqueue(stall)

    async def run() -> list[Item]:
        return await collect(openai_model)

    task = asyncio.create_task(run())
    while not stall.reached.is_set():
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    stall.gate.set()
    assert len(fake_llm.requests) == 1


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:  # bound, never listening: a connect is refused
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("name", ["ollama:llama3.1", "gpt-fake", "claude-fake"])
async def test_a_refused_connection_is_counted_once_and_named(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Before: attempts 1-4 were announced (a pointless blocking try first), then "gave up
    # after 3 retries", and the error said "connection lost".
    port = _closed_port()
    for var in ("OLLAMA_BASE_URL", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.setenv(var, f"http://127.0.0.1:{port}")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    items: list[Item] = []
    sleeps = Sleeps()
    async for model in _model(name):
        with pytest.raises(ProviderError) as info:
            async for item in generate(model, REQUEST, max_retries=3, sleep=sleeps):
                items.append(item)
    notices = [i for i in items if isinstance(i, ProviderRetry)]
    assert [n.attempt for n in notices] == [1, 2, 3]
    assert len(sleeps.delays) == 3
    assert all("connection refused; retrying" in n.reason for n in notices)
    err = info.value
    assert err.kind == "connection" and err.refused
    assert f"Connection refused: is the server at http://127.0.0.1:{port}" in err.message
    assert "running?" in err.message and "(gave up after 3 retries)" in err.message
    assert "lost" not in err.message.lower()


async def test_a_stream_that_fails_then_falls_back_counts_the_fallback_as_a_retry(
        fake_llm: FakeLLM, openai_model: ChatModel) -> None:
    # The blocking try after a failed stream is announced, so it counts where it is said.
    fake_llm.enqueue(*[HttpError.server_error() for _ in range(4)])
    items: list[Item] = []
    with pytest.raises(ProviderError) as info:
        async for item in generate(openai_model, REQUEST, max_retries=2, sleep=Sleeps()):
            items.append(item)
    notices = [i for i in items if isinstance(i, ProviderRetry)]
    assert [n.attempt for n in notices] == [1, 2, 3]
    assert "retrying without streaming" in notices[0].reason
    assert "(gave up after 3 retries)" in info.value.message
    assert [r.stream for r in fake_llm.requests] == [True, False, False, False]
