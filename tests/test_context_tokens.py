"""The token estimator: CJK-aware, denser for numbers and JSON, fast on megabytes."""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest

from dexter.context import tokens
from dexter.context.tokens import (
    MESSAGE_OVERHEAD_TOKENS,
    TOOL_CALL_OVERHEAD_TOKENS,
    count_tokens_exact,
    estimate_message_tokens,
    estimate_text_tokens,
)
from dexter.messages import AssistantMessage, Message, ToolCall, UserMessage


def test_plain_text_is_four_characters_per_token_rounded_up() -> None:
    assert estimate_text_tokens("") == 0
    assert estimate_text_tokens("a" * 400) == 100
    assert estimate_text_tokens("a" * 401) == 101
    assert estimate_text_tokens("Revenue grew strongly this year") == 8  # 31 chars


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("中文字符", 4),               # Han
        ("ひらがなカタカナ", 8),        # Hiragana + Katakana
        ("한국어", 3),                 # Hangul
        ("ＡＢＣ１２３", 6),            # fullwidth forms
        ("。「」", 3),                 # CJK punctuation
        ("𠀀𠀁", 2),                   # Han extension B (4-byte UTF-8)
        ("abcd中文", 3),               # 1 token for abcd + 2 CJK
    ],
)
def test_cjk_characters_count_one_token_each(text: str, expected: int) -> None:
    assert estimate_text_tokens(text) == expected


def test_accented_latin_is_not_counted_as_cjk() -> None:
    assert estimate_text_tokens("é" * 400) == 100


def test_json_and_numbers_count_denser_than_prose() -> None:
    prose = "The company reported strong growth in its data center segment again " * 20
    data = json.dumps([{"revenue": 60922000000 + i, "eps": 11.93} for i in range(40)])
    prose_rate = len(prose) / estimate_text_tokens(prose)
    data_rate = len(data) / estimate_text_tokens(data)
    assert prose_rate > 3.8
    assert data_rate <= 3.5


def test_numeric_json_is_not_underestimated_against_the_real_tokenizer() -> None:
    data = json.dumps(
        [{"ticker": "NVDA", "revenue": 60922000000 + 7919 * i, "net_income": 29760000000 - 31 * i,
          "period": "2024-01-28", "eps": round(11.93 + i / 7, 2)} for i in range(300)]
    )
    exact = count_tokens_exact(data)
    assert exact is not None
    assert estimate_text_tokens(data) >= 0.9 * exact


def test_three_megabytes_are_estimated_without_the_tokenizer(monkeypatch: pytest.MonkeyPatch) -> None:
    """The estimate of a huge result never runs the exact tokenizer (its speed is in
    benchmarks/context_stages.py)."""
    import tiktoken

    blob = json.dumps([{"revenue": 123456789 + i, "name": "segment"} for i in range(90_000)])
    assert len(blob) > 3_000_000

    def refuse(*_args: object, **_kwargs: object) -> object:
        raise AssertionError("the exact tokenizer ran on a 3 MB blob")

    monkeypatch.setattr(tiktoken, "get_encoding", refuse)
    monkeypatch.setattr(tiktoken, "encoding_for_model", refuse)
    assert 0 < estimate_text_tokens(blob) < len(blob)


def test_sampled_estimate_of_long_uniform_text_is_exact() -> None:
    assert estimate_text_tokens("a" * 3_000_000) == 750_000
    assert estimate_text_tokens("中" * 300_000) == 300_000


def test_message_estimate_adds_overhead_per_message_and_tool_call() -> None:
    messages: list[Message] = [
        UserMessage("a" * 40),
        AssistantMessage(tool_calls=(ToolCall("1", "calc", {}), ToolCall("2", "calc", {}))),
    ]
    body = sum(estimate_text_tokens(t) for t in ("a" * 40, "calc {}\ncalc {}"))
    system = "s" * 8
    assert estimate_message_tokens(messages, system) == (
        body + 2 + 3 * MESSAGE_OVERHEAD_TOKENS + 2 * TOOL_CALL_OVERHEAD_TOKENS
    )


def test_exact_count_uses_the_offline_encoding_without_network(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_network(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the tokenizer tried to open a socket")

    tokens._offline_encoding.cache_clear()
    monkeypatch.setattr(socket, "socket", no_network)
    assert count_tokens_exact("hello world") == 2
    tokens._offline_encoding.cache_clear()


def test_exact_count_is_none_when_the_tokenizer_is_unavailable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tokens._offline_encoding.cache_clear()
    monkeypatch.setattr("tiktoken.get_encoding", lambda _name: (_ for _ in ()).throw(ValueError()))
    assert count_tokens_exact("hello") is None
    tokens._offline_encoding.cache_clear()


def test_message_token_cache_equals_the_estimator_and_estimates_only_new_messages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    view: list[Message] = [
        UserMessage("What was NVDA's revenue growth?"),
        AssistantMessage(text="Checking.", tool_calls=(ToolCall("c1", "get_financials",
                                                                {"ticker": "NVDA"}),)),
        UserMessage("中文字符 and 60,922 million " * 50, kind="note"),
    ]
    cache = tokens.MessageTokenCache()
    assert cache.estimate(view, "You are dexter.") == estimate_message_tokens(view, "You are dexter.")

    estimated: list[int] = []
    real = tokens.estimate_message_tokens

    def counting(messages: Any, system: str = "") -> int:
        estimated.append(len(list(messages)))
        return real(messages, system)

    monkeypatch.setattr(tokens, "estimate_message_tokens", counting)
    grown = [*view[:2], UserMessage("replaced note", kind="note"), UserMessage("queued")]
    assert cache.estimate(grown) == real(grown)
    assert estimated == [1, 1]  # only the two messages the previous view did not hold
    assert cache.estimate(grown) == real(grown)
    assert estimated == [1, 1]
