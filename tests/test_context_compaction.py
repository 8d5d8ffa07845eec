"""LLM compaction: the prompt, the summary format, chunking to the fast window, no tools."""

from __future__ import annotations

import re

import pytest

from dexter.context.compaction import (
    ESTIMATE_MARGIN,
    SUMMARY_SECTIONS,
    CompactionError,
    apply_compaction,
    build_compaction_prompt,
    compact,
    continuation_message,
    format_summary,
    input_budget,
    pack_pieces,
)
from dexter.context.tokens import estimate_message_tokens, estimate_text_tokens
from dexter.messages import AssistantMessage, SystemMessage, ToolCall, UserMessage
from dexter.providers.base import ModelRequest
from dexter.providers.errors import ProviderError
from dexter.testing.scripted import ScriptedModel
from tests.context_builders import rounds

REPLY = (
    "<analysis>Draft: call 1 returned revenue.</analysis>\n"
    "<summary>\n## 1. Original Query and Intent\nNVDA growth\n\n\n\n"
    "## 6. Numerical Data\nFY2024 revenue 60.92B USD (get_financials)\n</summary>"
)
PLANTED = re.compile(r"\bN\d{3}=\d+\.\d+\b")


def test_prompt_says_text_only_at_start_and_end_and_lists_the_nine_sections() -> None:
    prompt = build_compaction_prompt("NVDA growth?", "### get_financials(query=x)\nrev 1.5B")
    first, last = prompt.split("\n")[0], prompt.rstrip().split("\n")[-1]
    for line in (first, last):
        assert "text only" in line.lower() and "tool call" in line.lower() and "fail" in line
    assert "<analysis>" in prompt and "<summary>" in prompt
    positions = [prompt.index(title) for title in SUMMARY_SECTIONS]
    assert positions == sorted(positions)
    assert len(SUMMARY_SECTIONS) == 9
    assert "keep EVERY number the tools returned" in prompt
    assert "NVDA growth?" in prompt and "rev 1.5B" in prompt


def test_summary_drops_the_analysis_and_gets_the_prefix() -> None:
    summary = format_summary(REPLY)
    assert summary.startswith("Summary:\n## 1. Original Query and Intent")
    assert "<analysis>" not in summary and "Draft" not in summary and "<summary>" not in summary
    assert "\n\n\n" not in summary
    assert "60.92B" in summary


def test_summary_without_tags_or_with_an_unclosed_analysis() -> None:
    assert format_summary("Just the facts: 1.2B") == "Summary:\nJust the facts: 1.2B"
    assert format_summary("<analysis>thinking<summary>kept 3%</summary>") == "Summary:\nkept 3%"


@pytest.mark.parametrize("reply", ["", "   \n", "<analysis>only a draft</analysis>",
                                   "<summary>  </summary>"])
def test_empty_summary_is_an_error(reply: str) -> None:
    with pytest.raises(CompactionError, match="empty"):
        format_summary(reply)


def test_continuation_message_holds_the_summary_and_says_resume() -> None:
    message = continuation_message("Summary:\nrev 60.92B")
    assert message.kind == "summary"
    assert "Summary:\nrev 60.92B" in message.content
    text = message.content.lower()
    assert "query above" in text  # the query is the message before it
    assert "resume directly" in text and "do not acknowledge or recap" in text
    assert "do not ask the" in text


def test_apply_compaction_keeps_the_system_prompt_and_the_query_objects_then_the_summary() -> None:
    summary = continuation_message("Summary:\nx")
    query = UserMessage("What was NVDA's revenue growth?", kind="query")
    system = SystemMessage("sys")
    view = [system, UserMessage("old", kind="history"), AssistantMessage("a"), query, *rounds(3)]
    compacted = apply_compaction(view, query.content, summary)
    assert compacted == [system, query, summary]
    # the very objects, so the request prefix (and its cache) reaches through the query
    assert compacted[0] is system and compacted[1] is query


def test_a_second_compaction_replaces_the_first_summary_after_the_same_query() -> None:
    query = UserMessage("q", kind="query")
    first, second = continuation_message("Summary:\none"), continuation_message("Summary:\ntwo")
    view = [SystemMessage("sys"), query, first, *rounds(2)]
    assert apply_compaction(view, "q", second) == [SystemMessage("sys"), query, second]
    # a view whose query is gone (or another query) gets the run's query back
    assert apply_compaction([SystemMessage("sys"), first], "q", second) == [
        SystemMessage("sys"), UserMessage("q", kind="query"), second]


async def test_single_call_binds_no_tools_and_returns_the_formatted_summary() -> None:
    model = ScriptedModel([REPLY], model="fast-model")
    result = await compact(model, "NVDA growth?", "### get_financials(q)\nrev 60.92B",
                           fast_window=128_000, max_output_tokens=4_000)
    assert result.summary == format_summary(REPLY)
    assert (result.calls, result.chunks, result.model) == (1, 1, "fast-model")
    assert result.usage.output_tokens > 0
    (request,) = model.requests
    assert request.tools == ()
    assert request.max_tokens == 4_000
    assert "rev 60.92B" in request.messages[0].content  # type: ignore[union-attr]


def _echo_numbers(request: ModelRequest) -> str:
    prompt = request.messages[0].content  # type: ignore[union-attr]
    found = PLANTED.findall(prompt)
    return f"<analysis>checked {len(found)}</analysis><summary>Numerical Data: {' '.join(found)}</summary>"


def _big_results(count: int, size: int) -> tuple[list[str], list[str]]:
    """One piece per result, as ``Scratchpad.compaction_input`` gives them."""
    blocks, planted = [], []
    for n in range(count):
        number = f"N{n:03d}={n * 7 + 0.25:.2f}"
        planted.append(number)
        filler = ("revenue by segment and quarter, " * (size // 32 + 1))[:size]
        blocks.append(f"### get_financials(query=segment {n})\n{filler}\n{number}\n{filler}")
    return blocks, planted


async def test_input_larger_than_the_fast_window_is_chunked_and_merged() -> None:
    text, planted = _big_results(count=40, size=6_000)  # ~120,000 tokens
    window, output = 30_000, 2_000
    assert estimate_text_tokens("\n\n".join(text)) > window
    model = ScriptedModel([_echo_numbers] * 20)
    result = await compact(model, "Segment trends?", text, fast_window=window,
                           max_output_tokens=output)
    assert result.chunks > 1
    assert result.calls == len(model.requests) == result.chunks + 1
    for request in model.requests:
        assert request.tools == ()
        assert estimate_message_tokens(request.messages, request.system) + output <= window
    chunk_prompts = [r.messages[0].content for r in model.requests[:-1]]  # type: ignore[union-attr]
    for prompt in chunk_prompts:
        material = prompt.split("(part ", 1)[1].split("):\n", 1)[1]
        assert material.startswith("### get_financials")  # cut at a result boundary
    assert "Partial summaries to merge" in model.requests[-1].messages[0].content  # type: ignore[union-attr]
    assert PLANTED.findall(result.summary) == planted


def test_packing_keeps_records_whole_and_slices_a_single_huge_one() -> None:
    small = ["### a(x)\n" + "y" * 400, "### b(x)\n" + "z" * 400, "### c(x)\n" + "w" * 400]
    assert pack_pieces(small, 10_000) == ["\n\n".join(small)]
    one = max(estimate_text_tokens(piece) for piece in small) + 1
    assert pack_pieces(small, one + 2) == small  # a record is never cut when it fits alone
    huge = ["### a(x)\n" + "y" * 4_000, "### b(x)\n" + "z" * 4_000]
    chunks = pack_pieces(huge, 600)
    assert all(estimate_text_tokens(c) <= 600 for c in chunks)
    assert "".join(chunks).replace("\n", "") == "".join(huge).replace("\n", "")


async def test_provider_error_and_empty_reply_are_compaction_errors() -> None:
    failing = ScriptedModel([ProviderError("bad_request", "The request was rejected.")])
    with pytest.raises(CompactionError, match="rejected"):
        await compact(failing, "q", "### t()\ndata", fast_window=128_000)
    empty = ScriptedModel([""])
    with pytest.raises(CompactionError, match="empty"):
        await compact(empty, "q", "### t()\ndata", fast_window=128_000)
    tool_only = ScriptedModel([AssistantMessage(tool_calls=(ToolCall("1", "web_search", {}),))])
    with pytest.raises(CompactionError, match="empty"):
        await compact(tool_only, "q", "### t()\ndata", fast_window=128_000)


async def test_a_window_too_small_to_summarize_is_a_clear_error() -> None:
    with pytest.raises(CompactionError, match="too small"):
        await compact(ScriptedModel([REPLY]), "q", "data", fast_window=8_000,
                      max_output_tokens=8_000)


async def test_partial_summaries_too_big_to_merge_at_once_are_merged_in_groups() -> None:
    text, planted = _big_results(count=120, size=3_000)  # ~190,000 tokens

    def verbose(request: ModelRequest) -> str:
        found = PLANTED.findall(request.messages[0].content)  # type: ignore[union-attr]
        padding = "detail " * 2_200  # ~3,900 tokens per partial summary (within the output)
        return f"<summary>Numerical Data: {' '.join(found)}\n{padding}</summary>"

    window, output = 30_000, 5_000
    model = ScriptedModel([verbose] * 200)
    result = await compact(model, "Segment trends?", text, fast_window=window,
                           max_output_tokens=output)
    merges = [r for r in model.requests
              if "Partial summaries to merge" in r.messages[0].content]  # type: ignore[union-attr]
    assert len(merges) > 1  # the partials did not fit one merge call
    for request in model.requests:
        assert estimate_message_tokens(request.messages, request.system) + output <= window
    assert PLANTED.findall(result.summary) == planted


async def test_a_summarizer_that_never_shrinks_fails_clearly() -> None:
    text, _ = _big_results(count=40, size=6_000)
    bloated = "<summary>" + "words " * 40_000 + "</summary>"
    model = ScriptedModel([bloated] * 500)
    with pytest.raises(CompactionError, match="did not shrink"):
        await compact(model, "q", text, fast_window=30_000, max_output_tokens=2_000)


async def test_an_input_that_fits_the_fast_window_is_one_call_not_chunks() -> None:
    """Issue 18: a 76.7K-token input at a 100K window went to 2 chunks and a merge under
    the old budget (0.85 of the window minus the output, 76.8K with 8,192 output tokens,
    less the prompt). Now the margin is on the input: one call while it truly fits."""
    window, output = 100_000, 8_192
    text, planted = _big_results(count=52, size=2_900)
    tokens = estimate_text_tokens("\n\n".join(text))
    assert int(window * 0.85) - output < tokens < input_budget(window, output) - 1_000
    model = ScriptedModel([_echo_numbers] * 5)
    result = await compact(model, "Segment trends?", text, fast_window=window,
                           max_output_tokens=output)
    assert (result.calls, result.chunks) == (1, 1)
    (request,) = model.requests
    sent = estimate_message_tokens(request.messages, request.system)
    assert sent * ESTIMATE_MARGIN + output <= window
    assert PLANTED.findall(result.summary) == planted
