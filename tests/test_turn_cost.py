"""Per-turn work follows what the turn added, not the transcript's length (issue 18).

The loop re-reads the whole transcript every iteration: repair, token estimates and the
OpenAI request conversion remember earlier messages by identity. Each cache must give
exactly what the uncached function gives, whatever changes between calls (appends,
replaced or removed earlier messages, a broken last span), and must not redo the work
for messages it has seen (counted, not timed).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from dexter.context import repair, tokens
from dexter.context.repair import TranscriptRepairer, repair_transcript
from dexter.context.tokens import MessageTokenCache, estimate_message_tokens
from dexter.messages import (
    AssistantMessage,
    Message,
    ThinkingBlock,
    ToolResultMessage,
    UserMessage,
)
from dexter.providers import openai_chat as oai
from tests.context_builders import call, head, tool_round


def views() -> list[list[Message]]:
    """Successive transcripts as a run produces them, with the edits stages make."""
    base = head() + tool_round("c1") + tool_round("c2", text="reading more")
    grown = [*base, UserMessage("usage note", kind="note"), *tool_round("c3")]
    cleared = list(grown)
    cleared[3] = dataclasses.replace(cleared[3], content="[cleared]")  # microcompact
    dangling = [*cleared, AssistantMessage(tool_calls=(call("c4"), call("c5")))]  # cancelled
    answered = [*dangling, ToolResultMessage("c5", "get_financials", "late")]
    orphan = [*answered, ToolResultMessage("zz", "get_financials", "no call")]
    thinking = [AssistantMessage("t", thinking=(ThinkingBlock("why"),), tool_calls=(call("d1"),))]
    truncated = head() + tool_round("c9") + thinking
    return [base, grown, grown, cleared, dangling, answered, orphan, truncated, base, []]


def test_the_repairer_repairs_every_view_as_a_full_repair_does() -> None:
    repairer = TranscriptRepairer()
    for view in views():
        got, report = repairer(list(view))
        want, want_report = repair_transcript(list(view))
        assert got == want
        assert report == want_report


def test_the_repairer_checks_only_the_last_span_of_a_grown_transcript(
        monkeypatch: pytest.MonkeyPatch) -> None:
    spans: list[int] = []
    real = repair._repair_span

    def counting(assistant: AssistantMessage, span: list[Message]) -> Any:
        spans.append(1)
        return real(assistant, span)

    monkeypatch.setattr(repair, "_repair_span", counting)
    repairer = TranscriptRepairer()
    messages = head()
    for n in range(40):
        messages = messages + tool_round(f"c{n}")
        spans.clear()
        messages, _ = repairer(messages)
        assert len(spans) <= 2, n  # the previous last span and the new one, whatever n is


def test_token_cache_equals_the_plain_estimate_for_every_view() -> None:
    cache = MessageTokenCache()
    for view in views():
        assert cache.estimate(view, "sys prompt") == estimate_message_tokens(view, "sys prompt")
        assert cache.estimate(iter(view)) == estimate_message_tokens(view)
    duplicated = views()[1] + views()[1][2:4]
    assert cache.estimate(duplicated) == estimate_message_tokens(duplicated)


def test_token_cache_estimates_only_new_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    estimated: list[int] = []
    real = tokens.estimate_message_tokens

    def counting(messages: Any, system: str = "") -> int:
        messages = list(messages)
        estimated.append(len(messages))
        return real(messages, system)

    monkeypatch.setattr(tokens, "estimate_message_tokens", counting)
    cache = MessageTokenCache()
    messages = head()
    cache.estimate(messages)
    for n in range(30):
        messages = messages + tool_round(f"c{n}")
        estimated.clear()
        cache.estimate(messages)
        cache.estimate(messages)
        assert sum(estimated) == 2  # the two new messages, once


def test_openai_conversion_with_the_cache_equals_without() -> None:
    cache = oai.OpenAIMessageCache()
    for field in (None, "reasoning_content"):
        for view in views():
            want = oai.to_openai_messages("sys", view, reasoning_field=field)
            got = oai.to_openai_messages("sys", view, reasoning_field=field, cache=cache)
            assert got == want
    view = views()[1]
    assert oai.to_openai_messages("sys", view, cache=cache) == oai.to_openai_messages("sys", view)
    longer = [*view, *tool_round("c7")]  # the cached list is not extended in place
    first = oai.to_openai_messages("sys", view, cache=cache)
    oai.to_openai_messages("sys", longer, cache=cache)
    assert first == oai.to_openai_messages("sys", view)


def test_openai_conversion_encodes_each_tool_call_once(monkeypatch: pytest.MonkeyPatch) -> None:
    encoded: list[object] = []

    class CountingJson:
        @staticmethod
        def dumps(obj: Any, **kwargs: Any) -> str:
            encoded.append(obj)
            return json.dumps(obj, **kwargs)

    monkeypatch.setattr(oai, "json", CountingJson)
    cache = oai.OpenAIMessageCache()
    messages = head()
    for n in range(30):
        messages = messages + tool_round(f"c{n}")
        encoded.clear()
        oai.to_openai_messages("sys", messages, cache=cache)
        assert len(encoded) == 1  # the new assistant message's arguments only


def test_the_encoded_body_is_the_bytes_the_sdk_would_send() -> None:
    from openai._utils._json import openapi_dumps

    cache = oai.OpenAIMessageCache()
    for view in [*views(), [*views()[1], UserMessage("naïve ünïcode 中文 \u2028")]]:
        body = {"model": "gpt-5.6-sol",
                "messages": oai.to_openai_messages("sys", view, cache=cache),
                "max_completion_tokens": 100, "stream": True,
                "stream_options": {"include_usage": True}}
        assert cache.encode(body) == openapi_dumps(body)
