"""The shared text helpers: titles, argument and result summaries, durations, token counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dexter.context.results import persist_result
from dexter.events import Done
from dexter.render.format import (
    args_summary,
    error_summary,
    format_duration,
    format_elapsed,
    format_rate,
    format_tokens,
    progress_text,
    result_summary,
    stats_line,
    thinking_text,
    tokens_per_second,
    tool_title,
    truncate_words,
)


@pytest.mark.parametrize(("name", "title"), [
    ("get_financials", "Financials"),
    ("get_market_data", "Market Data"),
    ("read_file", "Read File"),
    ("web_search", "Web Search"),
    ("calculator", "Calculator"),
    ("ask_user_question", "Ask"),
])
def test_tool_title(name: str, title: str) -> None:
    assert tool_title(name) == title


def test_query_argument_is_quoted_and_kept_whole_up_to_60_chars() -> None:
    query = "a" * 9 + (" word" * 10)  # 59 chars
    assert len(query + "s") == 60
    assert args_summary({"query": query + "s", "limit": 5}) == f'"{query}s"'


def test_query_over_60_chars_is_cut_at_a_word_boundary() -> None:
    query = "NVIDIA quarterly revenue and gross margin for every quarter since 2019"
    shown = args_summary({"query": query})
    assert shown.startswith('"NVIDIA quarterly revenue')
    assert shown.endswith('…"')
    inner = shown[1:-1]
    assert len(inner) <= 60
    assert query.startswith(inner[:-1])
    assert inner[:-1].endswith(("every", "quarter", "for", "margin"))


def test_other_arguments_are_key_value_with_newlines_escaped_and_values_cut() -> None:
    shown = args_summary({"path": "notes.md", "content": "line one\nline two", "n": 3})
    assert shown == "path=notes.md, content=line one\\nline two, n=3"
    long = args_summary({"content": "x" * 200})
    assert long == "content=" + "x" * 59 + "…"


def test_truncate_words_boundaries() -> None:
    assert truncate_words("exactly ten", 11) == "exactly ten"
    assert truncate_words("exactly ten!", 11) == "exactly…"
    assert truncate_words("supercalifragilistic", 8) == "superca…"


@pytest.mark.parametrize(("result", "urls", "summary"), [
    ('{"data": [1, 2, 3, 4]}', (), "Received 4 items"),
    ('{"data": [1]}', (), "Received 1 item"),
    ('{"data": {"revenue": 1, "income": 2, "_meta": 3}}', (), "Received 2 fields"),
    ('{"data": [1, 2]}', ("https://a", "https://b", "https://c"), "Received 2 items · 3 sources"),
    ('{"data": {"a": 1}}', ("https://a",), "Received 1 field · 1 source"),
    # the count comes from the tool's structured source URLs, not from digging in the text
    ('{"data": [1, 2], "source_urls": ["https://a"]}', (), "Received 2 items"),
    ("[1, 2, 3]", (), "Received 3 items"),
    ("first line of plain text\nsecond line", (), "first line of plain text"),
    ("", (), "No output"),
    ("{not json at all", (), "{not json at all"),
])
def test_result_summary(result: str, urls: tuple[str, ...], summary: str) -> None:
    assert result_summary("get_financials", result, urls) == summary


@pytest.mark.parametrize(("tool", "data", "summary"), [
    ("memory_search", {"results": [{"path": "MEMORY.md"}] * 2, "mode": "hybrid"},
     "Found 2 memories"),
    ("memory_search", {"results": [{"path": "MEMORY.md"}], "mode": "keyword"},
     "Found 1 memory (keyword search)"),
    ("memory_search", {"results": [], "mode": "hybrid"}, "No matching memories"),
    ("memory_search", {"results": [], "mode": "keyword", "disabled": True,
                       "error": "the index is damaged; run dexter memory reindex"},
     "Memory unavailable: the index is damaged; run dexter memory reindex"),
    ("memory_get", {"path": "MEMORY.md", "from": 3, "to": 9, "total_lines": 20, "text": "x"},
     "Read lines 3-9 of MEMORY.md"),
    ("memory_get", {"path": "2025-01-02.md", "from": 1, "to": 0, "total_lines": 0, "text": "",
                    "note": "2025-01-02.md does not exist yet."},
     "2025-01-02.md does not exist yet"),
    ("memory_update", {"success": True, "file": "MEMORY.md",
                       "message": "Appended 77 characters to MEMORY.md"},
     "Appended 77 characters to MEMORY.md"),
])
def test_memory_tool_results_say_what_happened(tool: str, data: dict[str, object],
                                               summary: str) -> None:
    assert result_summary(tool, json.dumps({"data": data})) == summary


def test_plain_text_result_cut_at_word_boundary_to_60() -> None:
    text = "The filing says revenue grew strongly across all segments in the fiscal year"
    summary = result_summary("read_file", text)
    assert len(summary) <= 60
    assert summary.endswith("…")
    assert text.startswith(summary[:-1])


@pytest.mark.parametrize(("value", "shown"), [
    (1.258545, "= 1.258545"),
    (1234567, "= 1,234,567"),
    (2.5, "= 2.5"),
    (0.1 + 0.2, "= 0.3"),
    ("1/3", "= 1/3"),
])
def test_calculator_result_shows_the_value(value: object, shown: str) -> None:
    result = json.dumps({"data": {"expression": "x", "result": value}})
    assert result_summary("calculator", result) == shown


def test_calculator_prefers_its_own_formatted_value() -> None:
    result = json.dumps({"data": {"expression": "2**40", "result": 1099511627776,
                                  "formatted": "1,099,511,627,776"}})
    assert result_summary("calculator", result) == "= 1,099,511,627,776"


def test_persisted_result_reports_saved_size() -> None:
    result = ("[Result persisted to .dexter/tool-results/call_1.txt (120.5 KB)]\n"
              "first 2,000 characters...")
    assert result_summary("web_fetch", result) == "Saved 120.5 KB to file"
    assert result_summary("web_fetch", "[Result persisted to x.txt]") == "Saved to file"


def test_context_preview_of_a_large_result_reports_the_file_or_the_failed_save(
    tmp_path: Path,
) -> None:
    big = "x" * 120_000
    saved, _ = persist_result(big, "call_1", 2_000, tmp_path / "tool-results")
    assert result_summary("web_fetch", saved) == "Saved 117 KB to file"
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the folder should be")
    failed, _ = persist_result(big, "call_2", 2_000, blocker)
    assert result_summary("web_fetch", failed) == "Too large (117 KB): preview only, not saved"


def test_error_summary_is_one_line_and_cut_to_80() -> None:
    assert error_summary("HTTP 404\nnot found") == "Error: HTTP 404 not found"
    assert error_summary("Error: already prefixed") == "Error: already prefixed"
    long = error_summary("x" * 200)
    assert len(long) == 80
    assert long.endswith("…")
    assert len(error_summary("y" * 73)) == 80  # "Error: " + 73 fits exactly
    assert not error_summary("y" * 73).endswith("…")


def test_subagent_status_reads_as_text() -> None:
    from dexter.events import SubagentStatus

    status = SubagentStatus("Reading 10-K", tool_use_count=3, tokens=3200)
    assert progress_text("Reading 10-K", status) == "Reading 10-K · 3 tool uses · 3.2k tokens"
    assert progress_text("Fetching page 2") == "Fetching page 2"


def test_thinking_text_is_one_line_cut_to_200() -> None:
    assert thinking_text("  plan:\n step one  ") == "plan: step one"
    cut = thinking_text("word " * 100)
    assert len(cut) <= 200
    assert cut.endswith("…")


@pytest.mark.parametrize(("ms", "shown"), [
    (0, "0ms"), (850, "850ms"), (999, "999ms"), (1000, "1.0s"), (4200, "4.2s"),
    (59_949, "59.9s"), (59_950, "1m 00s"), (65_000, "1m 05s"), (600_000, "10m 00s"),
])
def test_format_duration(ms: int, shown: str) -> None:
    assert format_duration(ms) == shown


@pytest.mark.parametrize(("seconds", "shown"), [
    (0, "0s"), (22, "22s"), (59.9, "59s"), (60, "1m 0s"), (246, "4m 6s"), (3725, "1h 2m"),
])
def test_format_elapsed(seconds: float, shown: str) -> None:
    assert format_elapsed(seconds) == shown


@pytest.mark.parametrize(("count", "shown"), [
    (0, "0"), (880, "880"), (999, "999"), (1000, "1k"), (3200, "3.2k"), (9_949, "9.9k"),
    (9_950, "10k"), (14_000, "14k"), (999_499, "999k"), (999_500, "1m"),
    (1_500_000, "1.5m"), (25_000_000, "25m"),
])
def test_format_tokens(count: int, shown: str) -> None:
    assert format_tokens(count) == shown


def test_tokens_per_second() -> None:
    assert tokens_per_second(900, 20_000) == 45.0
    assert tokens_per_second(900, 0) == 0.0
    assert format_rate(45.2) == "45 tok/s"
    assert format_rate(9.46) == "9.5 tok/s"


def test_stats_line_has_every_part() -> None:
    done = Done("answer", tool_calls=[{}, {}, {}], iterations=2, total_time_ms=12_400,
                token_usage={"input_tokens": 12_300, "output_tokens": 1_100},
                tokens_per_second=45.0, context_tokens=20_000, context_threshold=95_000)
    assert stats_line(done) == (
        "✻ 12s · 3 tool calls · 2 iterations · 12k in / 1.1k out · 45 tok/s · context 20k/95k"
    )


def test_stats_line_leaves_out_what_is_unknown() -> None:
    assert stats_line(Done("a", total_time_ms=850)) == "✻ 850ms"
    one = Done("a", tool_calls=[{}], iterations=1, total_time_ms=246_000)
    assert stats_line(one) == "✻ 4m 6s · 1 tool call · 1 iteration"


def test_stats_line_computes_rate_when_missing() -> None:
    done = Done("a", total_time_ms=10_000, token_usage={"input_tokens": 5, "output_tokens": 500})
    assert "50 tok/s" in stats_line(done)


def test_plain_result_summary_drops_the_closing_period_only() -> None:
    from dexter.render.format import result_summary

    assert result_summary("write_file", "Created memo.md (2 lines).\nmore") == "Created memo.md (2 lines)"
    assert result_summary("bash", "v1.2") == "v1.2"
