"""Real provider responses replayed through the real SDKs into dexter's adapters.

Every body in ``tests/fixtures/provider-wire/`` (OpenAI and Anthropic, streamed and
blocking, recorded by public repositories' tests) is served from a local server; the
adapter's text, tool calls and stop reason are compared with what a plain reading of the
same body says. Then the shapes other OpenAI-compatible hosts send, made from a real body:
``message.reasoning`` (Groq, Cerebras, Ollama, OpenRouter, Bedrock), usage and ``[DONE]``
without a ``finish_reason`` (Snowflake), ``content`` as a list of parts (Mistral),
``<think>`` inside the content (DeepSeek-R1 on some hosts), and lone surrogates.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from dexter.messages import UserMessage
from dexter.providers.anthropic_messages import AnthropicModel
from dexter.providers.base import ChatModel, ModelRequest, ModelResponse, StreamChunk
from dexter.providers.openai_chat import OpenAIChatModel
from dexter.testing.fakellm import FakeLLM, Raw

WIRE = Path(__file__).parent / "fixtures" / "provider-wire"
INDEX = json.loads((WIRE / "index.json").read_text())
REQUEST = ModelRequest(system="You are a test.", messages=(UserMessage("hello"),))
SSE = {"content-type": "text/event-stream"}
JSON = {"content-type": "application/json"}


def sse_events(body: str) -> list[dict[str, Any]]:
    """The JSON payloads of an SSE body (``[DONE]`` and comments skipped)."""
    out = []
    for line in body.splitlines():
        if line.startswith("data:"):
            data = line[5:].strip()
            if data and data != "[DONE]":
                out.append(json.loads(data))
    return out


def expected_openai(body: str) -> dict[str, Any]:
    text, calls, finish = [], {}, None
    for event in sse_events(body):
        for choice in event.get("choices") or []:
            delta = choice.get("delta") or {}
            if isinstance(delta.get("content"), str):
                text.append(delta["content"])
            for tc in delta.get("tool_calls") or []:
                entry = calls.setdefault(tc["index"], {"name": "", "args": ""})
                fn = tc.get("function") or {}
                entry["name"] = entry["name"] or fn.get("name") or ""
                entry["args"] += fn.get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    return {"text": "".join(text), "calls": [calls[i] for i in sorted(calls)], "finish": finish}


def expected_anthropic(body: str, stream: bool) -> dict[str, Any]:
    text, calls, stop = [], [], None
    if not stream:
        message = json.loads(body)
        for block in message["content"]:
            if block["type"] == "text":
                text.append(block["text"])
            elif block["type"] == "tool_use":
                calls.append({"name": block["name"], "args": block["input"]})
        return {"text": "".join(text), "calls": calls, "stop": message.get("stop_reason")}
    kinds: dict[int, dict[str, Any]] = {}
    for event in sse_events(body):
        kind = event.get("type")
        if kind == "content_block_start":
            block = event["content_block"]
            kinds[event["index"]] = {"type": block["type"], "name": block.get("name"), "json": ""}
            if block["type"] == "text":
                text.append(block.get("text") or "")
        elif kind == "content_block_delta":
            delta = event["delta"]
            if delta["type"] == "text_delta":
                text.append(delta["text"])
            elif delta["type"] == "input_json_delta":
                kinds[event["index"]]["json"] += delta["partial_json"]
        elif kind == "message_delta":
            stop = event["delta"].get("stop_reason") or stop
    for block in kinds.values():
        if block["type"] == "tool_use":
            calls.append({"name": block["name"], "args": json.loads(block["json"] or "{}")})
    return {"text": "".join(text), "calls": calls, "stop": stop}


@pytest.fixture
def wire() -> AsyncIterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


def openai_model(server: FakeLLM) -> OpenAIChatModel:
    return OpenAIChatModel(model="gpt-4o", api_key="sk-test-0123456789", base_url=server.openai_base_url)


def anthropic_model(server: FakeLLM) -> AnthropicModel:
    return AnthropicModel(model="claude-sonnet-4-6", api_key="sk-ant-test-0123456789",
                                  base_url=server.anthropic_base_url)


async def streamed(model: ChatModel) -> tuple[str, str, ModelResponse]:
    text, thinking, response = [], [], None
    async for item in model.stream(REQUEST):
        if isinstance(item, StreamChunk):
            (text if item.kind == "text" else thinking if item.kind == "thinking" else []).append(item.text)
        else:
            response = item
    assert response is not None
    return "".join(text), "".join(thinking), response


OPENAI_SSE = [e for e in INDEX if e["kind"] == "openai_chat" and e["stream"]]
ANTHROPIC = [e for e in INDEX if e["kind"] == "anthropic"]


def test_the_recordings_are_all_here() -> None:
    assert len(OPENAI_SSE) == 38 and len(ANTHROPIC) == 48
    assert all((WIRE / e["file"]).is_file() for e in INDEX)


@pytest.mark.parametrize("entry", OPENAI_SSE, ids=lambda e: e["file"].rsplit("-", 1)[-1])
async def test_every_recorded_openai_stream(wire: FakeLLM, entry: dict[str, Any]) -> None:
    body = (WIRE / entry["file"]).read_text()
    wire.enqueue(Raw(200, body, SSE))
    model = openai_model(wire)
    try:
        shown, _, response = await streamed(model)
    finally:
        await model.aclose()
    want = expected_openai(body)
    assert response.message.text == want["text"] == shown
    assert [(c.name, json.loads(want_c["args"] or "{}")) for c, want_c in
            zip(response.message.tool_calls, want["calls"], strict=True)] == \
        [(w["name"], c.arguments) for w, c in zip(want["calls"], response.message.tool_calls, strict=True)]
    assert response.stop_reason == {"stop": "end_turn", "tool_calls": "tool_use",
                                    "length": "max_tokens"}.get(want["finish"], want["finish"])


@pytest.mark.parametrize("entry", ANTHROPIC, ids=lambda e: e["file"].rsplit("-", 1)[-1])
async def test_every_recorded_anthropic_response(wire: FakeLLM, entry: dict[str, Any]) -> None:
    body = (WIRE / entry["file"]).read_text()
    wire.enqueue(Raw(200, body, SSE if entry["stream"] else JSON))
    model = anthropic_model(wire)
    try:
        if entry["stream"]:
            shown, _, response = await streamed(model)
        else:
            response = await model.complete(REQUEST)
            shown = response.message.text
    finally:
        await model.aclose()
    want = expected_anthropic(body, entry["stream"])
    assert response.message.text == want["text"] == shown
    assert [(c.name, c.arguments) for c in response.message.tool_calls] == \
        [(c["name"], c["args"]) for c in want["calls"]]
    assert response.stop_reason == want["stop"]


# -- the shapes of other OpenAI-compatible hosts, made from a real recording -------------

BASE = (WIRE / "bodies" / "openai_chat-sse-openai-6acc6ad65c7bca81.sse").read_text()


def _reframe(events: list[dict[str, Any]]) -> str:
    return "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"


def _blocking_from(events: list[dict[str, Any]], **message: Any) -> str:
    """The blocking ``chat.completion`` a server would send for the same reply."""
    text = expected_openai(_reframe(events))["text"]
    first = events[0]
    return json.dumps({
        "id": first["id"], "object": "chat.completion", "created": first["created"],
        "model": first["model"],
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": text, **message}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    })


async def test_blocking_reasoning_in_message_reasoning_is_kept(wire: FakeLLM) -> None:
    wire.enqueue(Raw(200, _blocking_from(sse_events(BASE), reasoning="Check the units first."), JSON))
    model = openai_model(wire)
    try:
        response = await model.complete(REQUEST)
    finally:
        await model.aclose()
    assert [b.text for b in response.message.thinking] == ["Check the units first."]
    assert response.message.text == expected_openai(BASE)["text"]


async def test_a_stream_with_usage_and_done_but_no_finish_reason_is_complete(wire: FakeLLM) -> None:
    events = sse_events(BASE)
    for event in events:
        for choice in event.get("choices") or []:
            choice["finish_reason"] = None
    events.append({**events[0], "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 4,
                                                         "total_tokens": 13}})
    wire.enqueue(Raw(200, _reframe(events), SSE))
    model = openai_model(wire)
    try:
        _, _, response = await streamed(model)
    finally:
        await model.aclose()
    assert response.message.text == expected_openai(BASE)["text"]
    assert response.stop_reason == "end_turn" and response.usage.output_tokens == 4


async def test_a_stream_cut_before_any_finish_or_usage_still_fails(wire: FakeLLM) -> None:
    events = [e for e in sse_events(BASE) if not any(c.get("finish_reason") for c in e.get("choices") or [])]
    events = [e for e in events if not e.get("usage")]
    wire.enqueue(Raw(200, "".join(f"data: {json.dumps(e)}\n\n" for e in events), SSE))
    model = openai_model(wire)
    from dexter.providers.errors import ProviderError

    with pytest.raises(ProviderError, match="ended early"):
        await streamed(model)
    await model.aclose()


async def test_content_as_a_list_of_parts_becomes_text_and_thinking(wire: FakeLLM) -> None:
    events = sse_events(BASE)
    text = expected_openai(BASE)["text"]
    for event in events:
        for choice in event.get("choices") or []:
            piece = choice.get("delta", {}).get("content")
            if isinstance(piece, str) and piece:
                choice["delta"]["content"] = [{"type": "text", "text": piece}]
    events.insert(1, {**events[0], "choices": [{"index": 0, "delta": {"content": [
        {"type": "thinking", "thinking": [{"type": "text", "text": "Reasoning here."}]}]},
        "finish_reason": None}]})
    wire.enqueue(Raw(200, _reframe(events), SSE))
    model = openai_model(wire)
    try:
        shown, thinking, response = await streamed(model)
    finally:
        await model.aclose()
    assert response.message.text == text == shown and "[{" not in shown
    assert thinking == "Reasoning here." == response.message.thinking[0].text


async def test_blocking_content_list_is_text_not_a_python_repr(wire: FakeLLM) -> None:
    body = json.loads(_blocking_from(sse_events(BASE)))
    message = body["choices"][0]["message"]
    message["content"] = [{"type": "text", "text": message["content"]}]
    wire.enqueue(Raw(200, json.dumps(body), JSON))
    model = openai_model(wire)
    try:
        response = await model.complete(REQUEST)
    finally:
        await model.aclose()
    assert response.message.text == expected_openai(BASE)["text"]


@pytest.mark.parametrize("cut", [1, 3, 7])
async def test_think_tags_in_streamed_content_become_thinking(wire: FakeLLM, cut: int) -> None:
    events = sse_events(BASE)
    answer = expected_openai(BASE)["text"]
    raw = "<think>Revenue is in millions.</think>" + answer
    template = events[1]
    pieces = [raw[i:i + cut] for i in range(0, len(raw), cut)]  # tags split across chunks
    chunks = [{**template, "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]}
              for p in pieces]
    final = [e for e in events if any(c.get("finish_reason") for c in e.get("choices") or [])]
    wire.enqueue(Raw(200, _reframe([events[0], *chunks, *final]), SSE))
    model = openai_model(wire)
    try:
        shown, thinking, response = await streamed(model)
    finally:
        await model.aclose()
    assert response.message.text == answer == shown
    assert thinking == "Revenue is in millions." == response.message.thinking[0].text


async def test_lone_surrogates_from_the_provider_are_replaced_not_fatal(wire: FakeLLM) -> None:
    events = sse_events(BASE)
    # A split emoji: JSON escapes carry half a surrogate pair, in text and in tool arguments.
    first = {**events[1], "choices": [{"index": 0, "delta": {"content": "Up 5% \ud83d"}, "finish_reason": None}]}
    call = {**events[1], "choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "id": "call_1", "type": "function",
         "function": {"name": "note", "arguments": json.dumps({"text": "x\ude00y"})}}]}, "finish_reason": None}]}
    end = {**events[1], "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}
    wire.enqueue(Raw(200, _reframe([events[0], first, call, end]), SSE))
    model = openai_model(wire)
    try:
        _, _, response = await streamed(model)
    finally:
        await model.aclose()
    assert response.message.text == "Up 5% \ufffd"
    assert response.message.tool_calls[0].arguments == {"text": "x\ufffdy"}
    response.message.text.encode("utf-8")  # every writer can now take it
