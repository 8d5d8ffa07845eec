"""Side requests over the real OpenAI and Anthropic wire: the bytes a side request sends
start with the bytes of the main request before it (system prompt, tool definitions and
messages), so a prompt cache serves that prefix."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from dexter.config import Settings
from dexter.context.compaction import CONTINUATION_OPENING
from dexter.context.continuation import Continuation, main_request
from dexter.messages import AssistantMessage, Message, ToolCall, ToolResultMessage
from dexter.providers.base import ChatModel, ModelResponse, ToolSpec
from dexter.providers.call import create_chat_model
from dexter.providers.registry import resolve_model
from dexter.testing.fakellm import FakeLLM, RecordedRequest, Reply, ToolCallSpec
from tests.context_builders import head

READ = ToolSpec("read_file", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}})
CALC = ToolSpec("calculator", "Arithmetic", {"type": "object", "properties": {"expr": {"type": "string"}}})
TOOLS = (READ, CALC)
SUMMARY = "<analysis>a</analysis><summary>\n## 6. Numerical Data\n- revenue 60.92B [S1]\n</summary>"


@pytest.fixture(params=["gpt-5.6-sol", "claude-sonnet-4-6"], ids=["openai", "anthropic"])
async def model(request: pytest.FixtureRequest, fake_llm: FakeLLM) -> AsyncIterator[ChatModel]:
    settings = Settings()
    chat = create_chat_model(resolve_model(request.param, settings), settings)
    yield chat
    await chat.aclose()


def _round(n: int) -> list[Message]:
    call = ToolCall(f"toolu_{n}", "read_file", {"path": f"data/q{n}.txt"})
    return [AssistantMessage(text=f"Reading quarter {n}.", tool_calls=(call,)),
            ToolResultMessage(call.id, "read_file", f"[S{n}] Quarter {n}: revenue {n * 11.5:.2f}B")]


def _array(raw: bytes, key: str) -> tuple[int, str]:
    """Where the JSON value of ``key`` starts in the body, and its exact text."""
    text = raw.decode("utf-8")
    start = text.index(f'"{key}":') + len(key) + 3
    _value, end = json.JSONDecoder().raw_decode(text, start)
    return start, text[start:end]


def _cache_order(body: dict[str, Any]) -> str:
    """The request as the cost rule serialises it: system, tools, then each message."""
    system, messages = body.get("system", ""), body["messages"]
    if not system and messages[0].get("role") == "system":
        system, messages = messages[0], messages[1:]
    parts = [system, body.get("tools", []), *messages]
    return "\n".join(json.dumps(p, sort_keys=True) for p in parts)


async def _send_main(chat: ChatModel, view: list[Message]) -> ModelResponse:
    response = None
    async for item in chat.stream(main_request(view, TOOLS, 8_192)):
        if isinstance(item, ModelResponse):
            response = item
    assert response is not None
    return response


def _route(fake: FakeLLM, chat: ChatModel) -> list[RecordedRequest]:
    return fake.requests_for("anthropic" if chat.provider_id == "anthropic" else "openai")


async def test_a_side_request_repeats_the_main_request_byte_for_byte(
        model: ChatModel, fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.enqueue(Reply(text="Reading quarter 2.",
                           tool_calls=[ToolCallSpec("read_file", {"path": "data/q2.txt"})]),
                     Reply(text=SUMMARY))
    view = [*head(), *_round(1)]
    await _send_main(model, view)
    later = [*view, *_round(2)]  # the loop's view once the turn's tool ran
    cont = Continuation(model=model, tools=TOOLS, window=200_000, memory_dir=tmp_path)
    result = await cont.compact(later, "What was NVDA's revenue growth?", [])
    assert "revenue 60.92B [S1]" in result.summary
    main, side = _route(fake_llm, model)

    # the messages: the main request's, in the very same bytes, then more after a comma
    _, main_messages = _array(main.raw, "messages")
    _, side_messages = _array(side.raw, "messages")
    assert side_messages.startswith(main_messages[:-1] + ",")
    # the system prompt and the tool definitions: the same bytes; no tool_choice anywhere
    for key in ("tools", *(("system",) if model.provider_id == "anthropic" else ())):
        assert _array(side.raw, key)[1] == _array(main.raw, key)[1], key
    assert "tool_choice" not in side.body and "tool_choice" not in main.body
    assert side.body["model"] == main.body["model"]
    # by the cost rule, the whole main request is the side request's cached prefix
    assert _cache_order(side.body).startswith(_cache_order(main.body)[:-1])
    # and the side request ends with the instruction, after the turn's new round
    last = side.body["messages"][-1]
    text = last["content"] if isinstance(last["content"], str) else last["content"][-1]["text"]
    assert text.startswith(CONTINUATION_OPENING) and "Numerical Data" in text
    if model.provider_id == "anthropic":
        # the breakpoints sit on the same blocks as in the main request (the query and the
        # main request's last block), so the side request reads the cache and writes none
        def marked(body: dict[str, Any]) -> list[dict[str, Any]]:
            return [b for m in body["messages"] for b in m["content"] if "cache_control" in b]

        assert marked(side.body) == marked(main.body)
        assert [b.get("type") for b in marked(main.body)] == ["text", "tool_result"]
        assert json.dumps(side.body).count('"cache_control"') == 4  # the API's limit
    fake_llm.assert_no_violations()


async def test_a_tool_call_in_reply_over_the_wire_is_refused(
        model: ChatModel, fake_llm: FakeLLM, tmp_path: Path) -> None:
    from dexter.context.continuation import SideRequestError

    fake_llm.enqueue(Reply(text="Let me check once more.",
                           tool_calls=[ToolCallSpec("read_file", {"path": "data/q9.txt"})]))
    cont = Continuation(model=model, tools=TOOLS, window=200_000, memory_dir=tmp_path)
    with pytest.raises(SideRequestError, match=r"tool call \(read_file\)"):
        await cont.flush([*head(), *_round(1)], "q")
    assert not list(tmp_path.iterdir())  # no memory written
    [side] = _route(fake_llm, model)
    assert side.body["tools"]  # the tools were bound, as in the main request
