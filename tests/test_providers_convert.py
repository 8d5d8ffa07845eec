"""Message conversion both ways for both SDK formats (pure functions, no HTTP)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dexter.messages import (
    AssistantMessage,
    SystemMessage,
    ThinkingBlock,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from dexter.providers import anthropic_messages as ant
from dexter.providers import openai_chat as oai
from dexter.providers.base import ModelRequest, StreamChunk, ToolSpec
from dexter.providers.errors import ProviderError

SEARCH = ToolSpec("web_search", "Search the web", {"type": "object", "properties": {"q": {"type": "string"}}})
CALC = ToolSpec("calculator", "Arithmetic", {"type": "object", "properties": {"expr": {"type": "string"}}})

TOOL_ROUND = (
    UserMessage("What is NVDA's revenue?"),
    AssistantMessage(
        text="Let me look that up.",
        thinking=(ThinkingBlock(text="Need filings.", signature="sig-abc"),),
        tool_calls=(
            ToolCall("call_1", "web_search", {"q": "NVDA revenue"}),
            ToolCall("call_2", "calculator", {"expr": "1+1"}),
        ),
    ),
    ToolResultMessage("call_1", "web_search", '{"data": "60.9B"}'),
    ToolResultMessage("call_2", "calculator", "division by zero", is_error=True),
    UserMessage("Tool usage: web_search 1/3", kind="note"),
)


# --------------------------------------------------------------------------------------------
# OpenAI: request side
# --------------------------------------------------------------------------------------------


def test_openai_messages_roles_tool_calls_and_results() -> None:
    out = oai.to_openai_messages("You are Dexter.", TOOL_ROUND)
    assert [m["role"] for m in out] == ["system", "user", "assistant", "tool", "tool", "user"]
    assert out[0]["content"] == "You are Dexter."
    calls = out[2]["tool_calls"]
    assert out[2]["content"] == "Let me look that up."
    assert [c["id"] for c in calls] == ["call_1", "call_2"]
    assert calls[0]["type"] == "function"
    assert json.loads(calls[0]["function"]["arguments"]) == {"q": "NVDA revenue"}
    assert out[3] == {"role": "tool", "tool_call_id": "call_1", "content": '{"data": "60.9B"}'}
    assert out[4]["tool_call_id"] == "call_2"
    assert out[4]["content"].startswith("[tool error] ") and "division by zero" in out[4]["content"]
    assert "reasoning_content" not in out[2]


def test_openai_system_message_in_list_is_not_duplicated() -> None:
    out = oai.to_openai_messages("sys", (SystemMessage("sys"), UserMessage("hi")))
    assert [m["role"] for m in out] == ["system", "user"]


def test_openai_assistant_without_text_sends_null_content_with_tool_calls() -> None:
    msg = AssistantMessage(tool_calls=(ToolCall("c", "calculator", {}),))
    out = oai.to_openai_messages("", (UserMessage("q"), msg, ToolResultMessage("c", "calculator", "2")))
    assert out[1]["content"] is None
    assert out[1]["tool_calls"][0]["function"]["arguments"] == "{}"
    plain = oai.to_openai_messages("", (UserMessage("q"), AssistantMessage()))
    assert plain[1] == {"role": "assistant", "content": ""}


def test_openai_reasoning_is_echoed_only_when_asked() -> None:
    out = oai.to_openai_messages("", TOOL_ROUND, reasoning_field="reasoning_content")
    assert out[1]["reasoning_content"] == "Need filings."


def test_openai_request_params() -> None:
    request = ModelRequest(system="s", messages=(UserMessage("q"),), tools=(SEARCH,), max_tokens=1000)
    params = oai.request_params(request, "gpt-4.1", "openai")
    assert params["max_completion_tokens"] == 1000 and "max_tokens" not in params
    assert params["tools"] == [{"type": "function", "function": {
        "name": "web_search", "description": "Search the web", "parameters": SEARCH.parameters}}]
    assert "temperature" not in params
    other = oai.request_params(ModelRequest(system="s", messages=(UserMessage("q"),), temperature=0.0),
                               "deepseek-chat", "deepseek")
    assert other["max_tokens"] == 8192 and "tools" not in other and other["temperature"] == 0.0


# --------------------------------------------------------------------------------------------
# OpenAI: response side
# --------------------------------------------------------------------------------------------


def _chunk(delta: dict[str, Any] | None = None, finish: str | None = None, usage: dict[str, Any] | None = None) -> dict[str, Any]:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {"model": "gpt-x", "choices": choices, "usage": usage}


def _fold(acc: oai.OpenAIStreamAccumulator | ant.AnthropicStreamAccumulator, events: list[Any]) -> list[StreamChunk]:
    pieces: list[StreamChunk] = []
    for event in events:
        pieces.extend(acc.add(event))
    return pieces


def test_openai_stream_reassembles_interleaved_tool_calls_by_index() -> None:
    events = [
        _chunk({"role": "assistant", "content": ""}),
        _chunk({"content": "Check"}),
        _chunk({"content": "ing."}),
        _chunk({"tool_calls": [{"index": 0, "id": "call_a", "type": "function",
                                "function": {"name": "web_search", "arguments": ""}}]}),
        _chunk({"tool_calls": [{"index": 1, "id": "call_b", "type": "function",
                                "function": {"name": "calculator", "arguments": '{"ex'}}]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"q": "NV'}}]}),
        _chunk({"tool_calls": [{"index": 1, "function": {"arguments": 'pr": "2*3"}'}}]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'DA"}'}}]}),
        _chunk({}, finish="tool_calls"),
        _chunk(None, usage={"prompt_tokens": 120, "completion_tokens": 30,
                            "prompt_tokens_details": {"cached_tokens": 64}}),
    ]
    acc = oai.OpenAIStreamAccumulator()
    pieces = _fold(acc, events)
    assert "".join(p.text for p in pieces if p.kind == "text") == "Checking."
    assert sum(p.kind == "tool_input" for p in pieces) == 4
    response = acc.finish()
    assert response.message.text == "Checking."
    assert [(c.id, c.name, c.arguments) for c in response.message.tool_calls] == [
        ("call_a", "web_search", {"q": "NVDA"}),
        ("call_b", "calculator", {"expr": "2*3"}),
    ]
    assert response.stop_reason == "tool_use"
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.cache_read_tokens) == (120, 30, 64)


def test_openai_invalid_json_arguments_are_kept_raw() -> None:
    acc = oai.OpenAIStreamAccumulator()
    _fold(acc, [
        _chunk({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "calculator", "arguments": '{"expr": '}}]}),
        _chunk({"tool_calls": [{"index": 1, "id": "c2", "function": {"name": "calculator", "arguments": "[1, 2]"}}]}),
        _chunk({"tool_calls": [{"index": 2, "id": "c3", "function": {"name": "calculator", "arguments": ""}}]}),
        _chunk({}, finish="tool_calls"),
    ])
    first, second, third = acc.finish().message.tool_calls
    assert (first.arguments, first.invalid_arguments) == ({}, '{"expr": ')
    assert (second.arguments, second.invalid_arguments) == ({}, "[1, 2]")
    assert (third.arguments, third.invalid_arguments) == ({}, None)


def test_openai_reasoning_content_becomes_thinking() -> None:
    acc = oai.OpenAIStreamAccumulator()
    pieces = _fold(acc, [
        _chunk({"reasoning_content": "Think "}),
        _chunk({"reasoning_content": "hard."}),
        _chunk({"content": "42"}),
        _chunk({}, finish="stop"),
    ])
    assert [p.kind for p in pieces] == ["thinking", "thinking", "text"]
    response = acc.finish()
    assert response.message.thinking == (ThinkingBlock(text="Think hard."),)
    assert response.message.text == "42" and response.stop_reason == "end_turn"


def test_openai_calls_sharing_index_zero_with_different_ids_stay_separate() -> None:
    acc = oai.OpenAIStreamAccumulator()
    _fold(acc, [
        _chunk({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "web_search", "arguments": '{"q": "x"}'}}]}),
        _chunk({"tool_calls": [{"index": 0, "id": "b", "function": {"name": "web_search", "arguments": '{"q": "y"}'}}]}),
        _chunk({}, finish="tool_calls"),
    ])
    assert [(c.id, c.arguments["q"]) for c in acc.finish().message.tool_calls] == [("a", "x"), ("b", "y")]


def test_openai_stream_without_finish_reason_is_an_error() -> None:
    acc = oai.OpenAIStreamAccumulator()
    _fold(acc, [_chunk({"content": "partial"})])
    with pytest.raises(ProviderError) as info:
        acc.finish()
    assert info.value.kind == "connection" and "ended early" in info.value.message


def test_openai_blocking_completion() -> None:
    completion = {
        "model": "deepseek-chat",
        "choices": [{"finish_reason": "length", "message": {
            "content": "Partial answer", "reasoning_content": "why",
            "tool_calls": [{"id": "c9", "function": {"name": "calculator", "arguments": '{"expr": "1"}'}}]}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "prompt_cache_hit_tokens": 4},
    }
    response = oai.response_from_completion(completion)
    assert response.message.text == "Partial answer"
    assert response.message.tool_calls == (ToolCall("c9", "calculator", {"expr": "1"}),)
    assert response.message.thinking[0].text == "why"
    assert response.stop_reason == "max_tokens"
    assert response.usage.cache_read_tokens == 4


# --------------------------------------------------------------------------------------------
# Anthropic: request side
# --------------------------------------------------------------------------------------------


def test_anthropic_tool_results_and_note_share_one_user_turn() -> None:
    out = ant.to_anthropic_messages(TOOL_ROUND)
    assert [m["role"] for m in out] == ["user", "assistant", "user"]
    results = out[2]["content"]
    assert [b["type"] for b in results] == ["tool_result", "tool_result", "text"]
    assert results[0] == {"type": "tool_result", "tool_use_id": "call_1", "content": '{"data": "60.9B"}'}
    assert results[1]["is_error"] is True and results[1]["tool_use_id"] == "call_2"
    assert results[2]["text"] == "Tool usage: web_search 1/3"


def test_anthropic_thinking_blocks_come_first_and_intact() -> None:
    message = AssistantMessage(
        text="Answer soon.",
        thinking=(ThinkingBlock("step 1", signature="sig-1"), ThinkingBlock(redacted_data="opaque=="),
                  ThinkingBlock("unsigned reasoning from another provider")),
        tool_calls=(ToolCall("toolu_1", "web_search", {"q": "x"}),),
    )
    blocks = ant.to_anthropic_messages((UserMessage("q"), message))[1]["content"]
    assert blocks == [
        {"type": "thinking", "thinking": "step 1", "signature": "sig-1"},
        {"type": "redacted_thinking", "data": "opaque=="},
        {"type": "text", "text": "Answer soon."},
        {"type": "tool_use", "id": "toolu_1", "name": "web_search", "input": {"q": "x"}},
    ]


def test_anthropic_adjacent_user_messages_merge_and_results_lead() -> None:
    messages = (
        UserMessage("first"),
        UserMessage("queued follow-up", kind="queued"),
        AssistantMessage(tool_calls=(ToolCall("t1", "calculator", {"expr": "1"}),)),
        UserMessage("note before the result"),
        ToolResultMessage("t1", "calculator", ""),
    )
    out = ant.to_anthropic_messages(messages)
    assert [m["role"] for m in out] == ["user", "assistant", "user"]
    assert [b["text"] for b in out[0]["content"]] == ["first", "queued follow-up"]
    assert [b["type"] for b in out[2]["content"]] == ["tool_result", "text"]
    assert out[2]["content"][0]["content"] == ant.EMPTY_RESULT


def test_anthropic_skips_system_and_empty_messages() -> None:
    out = ant.to_anthropic_messages((SystemMessage("sys"), UserMessage("q"), AssistantMessage(text="  "), UserMessage("again")))
    assert out == [{"role": "user", "content": [{"type": "text", "text": "q"}, {"type": "text", "text": "again"}]}]


def test_anthropic_request_params_cache_breakpoints_and_max_tokens() -> None:
    request = ModelRequest(system="You are Dexter.", messages=TOOL_ROUND, tools=(SEARCH, CALC), max_tokens=4096)
    params = ant.request_params(request, "claude-sonnet-4-6")
    assert params["max_tokens"] == 4096
    assert params["system"] == [{"type": "text", "text": "You are Dexter.", "cache_control": {"type": "ephemeral"}}]
    assert "cache_control" not in params["tools"][0]
    assert params["tools"][1] == {"name": "calculator", "description": "Arithmetic",
                                  "input_schema": CALC.parameters, "cache_control": {"type": "ephemeral"}}
    assert params["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    # The breakpoint is added to a copy: converting again gives clean blocks.
    assert "cache_control" not in ant.to_anthropic_messages(TOOL_ROUND)[-1]["content"][-1]


def _marked(params: dict[str, Any]) -> list[str]:
    """Where the request's cache breakpoints are: tools, system, and message blocks as
    ``role[turn].type[block]``."""
    out = [f"tool {t['name']}" for t in params.get("tools", []) if "cache_control" in t]
    out += ["system" for b in params.get("system", []) if "cache_control" in b]
    for i, turn in enumerate(params["messages"]):
        for j, block in enumerate(turn["content"]):
            if "cache_control" in block:
                out.append(f"{turn['role']}[{i}].{block['type']}[{j}]")
    return out


LONG_ROUNDS = (
    UserMessage("What is NVDA's revenue?", kind="query"),
    UserMessage("Summary:\nFY2024 revenue 60.92B [S1]", kind="summary"),
    AssistantMessage(text="next", tool_calls=(ToolCall("c1", "web_search", {"q": "a"}),)),
    ToolResultMessage("c1", "web_search", "[S2] result one"),
    AssistantMessage(tool_calls=(ToolCall("c2", "web_search", {"q": "b"}),)),
    ToolResultMessage("c2", "web_search", "[S3] result two"),
    UserMessage("Tool usage: web_search 2/3", kind="note"),
)


def test_anthropic_breakpoints_on_tools_system_the_stable_head_and_the_last_block() -> None:
    request = ModelRequest(system="You are Dexter.", messages=LONG_ROUNDS, tools=(SEARCH, CALC))
    params = ant.request_params(request, "claude-sonnet-4-6")
    # the head (query + compaction summary) is one user turn: its last block, the summary
    assert _marked(params) == ["tool calculator", "system", "user[0].text[1]", "user[4].text[1]"]
    assert len(_marked(params)) <= 4  # the API's limit


def test_anthropic_head_breakpoint_is_the_query_before_a_compaction_and_not_doubled() -> None:
    first = ModelRequest(system="s", messages=(UserMessage("q", kind="query"),), tools=(SEARCH,))
    assert _marked(ant.request_params(first, "m")) == ["tool web_search", "system", "user[0].text[0]"]
    later = ModelRequest(system="s", messages=(UserMessage("q", kind="query"), *TOOL_ROUND[1:]))
    assert _marked(ant.request_params(later, "m")) == ["system", "user[0].text[0]", "user[2].text[2]"]


def test_anthropic_side_request_keeps_the_main_requests_breakpoint_and_prefix() -> None:
    """A side request repeats the main conversation and adds its instruction: its
    conversation breakpoint stays on the block the main request before it marked (the end
    of the round before the last assistant turn), so every earlier block is the same."""
    main = ModelRequest(system="s", messages=LONG_ROUNDS[:4], tools=(SEARCH,))
    side = ModelRequest(system="s", messages=(*LONG_ROUNDS, UserMessage("Summarize.", kind="note")),
                        tools=(SEARCH,), continuation=True)
    main_params, side_params = ant.request_params(main, "m"), ant.request_params(side, "m")
    assert _marked(side_params) == ["tool web_search", "system", "user[0].text[1]", "user[2].tool_result[0]"]
    assert side_params["messages"][:3] == main_params["messages"]  # byte for byte, markers too
    assert side_params["messages"][-1]["content"][-1] == {"type": "text", "text": "Summarize."}
    assert side_params["system"] == main_params["system"] and side_params["tools"] == main_params["tools"]


def test_anthropic_request_without_tools_has_no_tools_key() -> None:
    params = ant.request_params(ModelRequest(system="", messages=(UserMessage("q"),)), "claude-x")
    assert "tools" not in params and "system" not in params and params["max_tokens"] == 8192


# --------------------------------------------------------------------------------------------
# Anthropic: response side
# --------------------------------------------------------------------------------------------


def _ant_stream(stop: bool = True) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"model": "claude-x", "usage": {
            "input_tokens": 10, "cache_creation_input_tokens": 200, "cache_read_input_tokens": 1000,
            "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Let me "}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "look."}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig=="}},
        {"type": "content_block_stop", "index": 0},
        {"type": "ping"},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Searching"}},
        {"type": "content_block_stop", "index": 1},
        {"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "web_search", "input": {}}},
        {"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": ""}},
        {"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": '{"q": "tik'}},
        {"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": 'token"}'}},
        {"type": "content_block_stop", "index": 2},
        {"type": "content_block_start", "index": 3, "content_block": {"type": "redacted_thinking", "data": "xyz"}},
        {"type": "content_block_stop", "index": 3},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 42}},
    ]
    if stop:
        events.append({"type": "message_stop"})
    return events


def test_anthropic_stream_accumulates_thinking_text_and_tool_use() -> None:
    acc = ant.AnthropicStreamAccumulator()
    pieces = _fold(acc, _ant_stream())
    assert [p.kind for p in pieces] == ["thinking", "thinking", "text", "tool_input", "tool_input"]
    response = acc.finish()
    assert response.message.thinking == (ThinkingBlock("Let me look.", signature="sig=="),
                                         ThinkingBlock(redacted_data="xyz"))
    assert response.message.text == "Searching"
    assert response.message.tool_calls == (ToolCall("toolu_1", "web_search", {"q": "tiktoken"}),)
    assert response.stop_reason == "tool_use"
    usage = response.usage
    assert (usage.input_tokens, usage.output_tokens) == (1210, 42)
    assert (usage.cache_read_tokens, usage.cache_write_tokens) == (1000, 200)


def test_anthropic_round_trip_keeps_the_signature() -> None:
    acc = ant.AnthropicStreamAccumulator()
    _fold(acc, _ant_stream())
    message = acc.finish().message
    blocks = ant.to_anthropic_messages((UserMessage("q"), message))[1]["content"]
    assert blocks[0] == {"type": "thinking", "thinking": "Let me look.", "signature": "sig=="}
    assert blocks[1] == {"type": "redacted_thinking", "data": "xyz"}
    assert [b["type"] for b in blocks[2:]] == ["text", "tool_use"]


def test_anthropic_stream_without_message_stop_is_an_error() -> None:
    acc = ant.AnthropicStreamAccumulator()
    _fold(acc, _ant_stream(stop=False))
    with pytest.raises(ProviderError, match="ended early") as info:
        acc.finish()
    assert info.value.kind == "connection"


def test_anthropic_invalid_tool_json_is_kept_raw() -> None:
    acc = ant.AnthropicStreamAccumulator()
    _fold(acc, [
        {"type": "message_start", "message": {"model": "m", "usage": {"input_tokens": 1, "output_tokens": 0}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t", "name": "calculator", "input": {}}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": '{"expr": 1+'}},
        {"type": "message_stop"},
    ])
    call = acc.finish().message.tool_calls[0]
    assert (call.arguments, call.invalid_arguments) == ({}, '{"expr": 1+')


def test_anthropic_blocking_message() -> None:
    message = {
        "model": "claude-x", "stop_reason": "end_turn",
        "content": [{"type": "thinking", "thinking": "t", "signature": "s"}, {"type": "text", "text": "Done."}],
        "usage": {"input_tokens": 5, "output_tokens": 7, "cache_read_input_tokens": 100},
    }
    response = ant.response_from_message(message)
    assert response.message.text == "Done." and response.message.thinking[0].signature == "s"
    assert (response.usage.input_tokens, response.usage.cache_read_tokens) == (105, 100)
