"""The scratchpad: file naming, append-only writes, tolerant reading, soft limits, compaction state."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from dexter import __version__
from dexter.events import (
    AnswerDelta,
    Compaction,
    ContextCleared,
    Done,
    Microcompact,
    RunStart,
    StreamProgress,
    Thinking,
    ToolEnd,
    ToolLimit,
    ToolStart,
)
from dexter.scratchpad import Scratchpad, jaccard, query_words, recorded_text

NOON = datetime(2025, 3, 14, 12, 30, 45, tzinfo=timezone(timedelta(hours=2)))


def make(tmp_path: Path, query: str = "NVDA revenue", **kwargs: object) -> Scratchpad:
    return Scratchpad(tmp_path / "pads", query, now=NOON, **kwargs)  # type: ignore[arg-type]


def lines(pad: Scratchpad) -> list[dict[str, object]]:
    return [json.loads(line) for line in pad.path.read_text(encoding="utf-8").splitlines()]


def add(pad: Scratchpad, tool: str, result: str, call_id: str, **args: object) -> int:
    return pad.add_tool_result(
        tool, dict(args), result, duration_ms=5, is_error=False, tool_call_id=call_id
    )


# -- naming and init ----------------------------------------------------------------------

def test_file_name_is_local_time_and_md5_prefix_and_directory_is_created(tmp_path: Path) -> None:
    pad = make(tmp_path, "What is NVDA's revenue?")
    digest = hashlib.md5(b"What is NVDA's revenue?").hexdigest()[:12]
    local = NOON.astimezone()
    assert pad.path.parent == tmp_path / "pads"
    assert pad.path.name == f"{local:%Y-%m-%d-%H%M%S}_{digest}.jsonl"


def test_same_query_in_the_same_second_gets_its_own_file(tmp_path: Path) -> None:
    first = make(tmp_path)
    second = make(tmp_path)
    third = make(tmp_path)
    assert second.path.name == first.path.stem + "-2.jsonl"
    assert third.path.name == first.path.stem + "-3.jsonl"
    assert [e["type"] for e in lines(first)] == ["init"]


def test_init_entry_names_query_model_provider_and_version(tmp_path: Path) -> None:
    pad = make(tmp_path, "q1", model="gpt-x", provider="openai")
    (init,) = lines(pad)
    assert init["type"] == "init"
    assert init["query"] == "q1"
    assert init["model"] == "gpt-x"
    assert init["provider"] == "openai"
    assert init["version"] == __version__
    assert datetime.fromisoformat(str(init["timestamp"])) == NOON


def test_every_timestamp_is_iso_with_a_timezone(tmp_path: Path) -> None:
    pad = make(tmp_path)
    pad.append("note", text="x")
    add(pad, "calculator", "42", "c1", expression="6*7")
    for entry in lines(pad):
        assert datetime.fromisoformat(str(entry["timestamp"])).tzinfo is not None


# -- writing --------------------------------------------------------------------------------

def test_append_keeps_unicode_and_stringifies_unknown_objects(tmp_path: Path) -> None:
    pad = make(tmp_path)
    pad.append("note", text="营收 €5", where=tmp_path)
    raw = pad.path.read_text(encoding="utf-8")
    assert "营收 €5" in raw
    assert lines(pad)[-1]["where"] == str(tmp_path)


def test_tool_result_keeps_full_text_and_parses_json_objects(tmp_path: Path) -> None:
    pad = make(tmp_path)
    big = "x" * 120_000
    assert add(pad, "web_fetch", big, "c1", url="https://a") == 0
    assert add(pad, "get_financials", '{"data": {"revenue": 1}}', "c2", ticker="NVDA") == 1
    pad.add_tool_result(
        "read_file", {"path": "a"}, "Error: no such file", duration_ms=3, is_error=True,
        tool_call_id="c3",
    )
    entries = lines(pad)[1:]
    assert entries[0]["result"] == big
    assert entries[1]["result"] == {"data": {"revenue": 1}}
    assert entries[2] == {
        **entries[2], "type": "tool_result", "tool": "read_file", "args": {"path": "a"},
        "result": "Error: no such file", "duration_ms": 3, "is_error": True, "tool_call_id": "c3",
    }


def test_json_scalars_stay_strings(tmp_path: Path) -> None:
    pad = make(tmp_path)
    add(pad, "calculator", "42", "c1")
    assert lines(pad)[-1]["result"] == "42"


ROUND_TRIP_TEXTS = [
    '{"data": {"revenue": 1}}',
    json.dumps({"data": {"name": "营收 €5", "x": [1.5, -0.0, 1e300, None, True]}},
               ensure_ascii=False),
    '{\n  "pretty": 1\n}',                 # another spacing: stays text
    '{"a":1}',                               # compact separators: stays text
    '{"e": "\\u00e9", "n": 1e3, "z": 1.50}',  # escapes and number forms: stay text
    '{"k": 1, "k": 2}',                      # duplicate keys
    ' [1, 2]', '[1, 2] ', '[1, 2]', '[]', '{}', '[1, 2', "42", "", "plain\ntext",
    '{"nan": NaN, "big": 123456789012345678901234567890}',
]


@pytest.mark.parametrize("text", ROUND_TRIP_TEXTS)
def test_a_recorded_result_reads_back_as_exactly_the_text_the_tool_returned(
        tmp_path: Path, text: str) -> None:
    pad = make(tmp_path)
    add(pad, "get_financials", text, "c1", ticker="NVDA")
    [entry] = Scratchpad.read(pad.path).of_type("tool_result")
    assert recorded_text(entry["result"]) == text
    assert isinstance(entry["result"], str) == (text not in {
        ROUND_TRIP_TEXTS[0], ROUND_TRIP_TEXTS[1], "[1, 2]", "[]", "{}", ROUND_TRIP_TEXTS[-1]})


def test_recorded_text_of_a_missing_result_is_empty() -> None:
    assert recorded_text(None) == ""
    assert recorded_text({"a": [1, "é"]}) == '{"a": [1, "é"]}'


def test_the_init_line_names_the_run_a_rerun_repeats(tmp_path: Path) -> None:
    plain = make(tmp_path)
    assert "rerun_of" not in lines(plain)[0]
    assert Scratchpad.read(plain.path).rerun_of == ""
    original = tmp_path / "pads" / "original.jsonl"
    pad = make(tmp_path, rerun_of=original)
    assert lines(pad)[0]["rerun_of"] == str(original)
    log = Scratchpad.read(pad.path)
    assert log.rerun_of == str(original)
    assert log.init is not None and log.init["query"] == "NVDA revenue"


def test_record_event_writes_replay_events_and_ignores_streaming_ones(tmp_path: Path) -> None:
    pad = make(tmp_path)
    pad.record_event(RunStart(query="q", model="m", provider="p"))
    pad.record_event(StreamProgress(char_delta=3, mode="responding"))
    pad.record_event(AnswerDelta(text="par"))
    pad.record_event(ToolStart(tool="t", args={}, tool_call_id="c"))
    pad.record_event(ToolEnd(tool="t", args={}, result="r", duration_ms=1, tool_call_id="c"))
    pad.record_event(Thinking(message="Let me look up revenue."))
    pad.record_event(ToolLimit(tool="web_search", warning="near limit"))
    pad.record_event(Microcompact(cleared=5, tokens_saved=900, trigger="count"))
    pad.record_event(Compaction(phase="end", success=True, pre_tokens=9, post_tokens=2))
    pad.record_event(ContextCleared(cleared_count=4, kept_count=5))
    pad.record_event(Done(answer="Revenue was $60.9B", token_usage={"input_tokens": 10}))
    entries = lines(pad)
    assert [e["type"] for e in entries] == [
        "init", "thinking", "tool_limit", "microcompact", "compaction", "context_cleared", "done",
    ]
    assert entries[1]["message"] == "Let me look up revenue."
    assert entries[3]["tokens_saved"] == 900
    assert entries[-1]["answer"] == "Revenue was $60.9B"
    assert entries[-1]["token_usage"] == {"input_tokens": 10}


def test_killed_process_leaves_every_written_line_intact(tmp_path: Path) -> None:
    script = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from dexter.scratchpad import Scratchpad\n"
        "pad = Scratchpad(Path(sys.argv[1]), 'q')\n"
        "for i in range(20):\n"
        "    pad.add_tool_result('t', {'i': i}, 'r' * 5000, duration_ms=1, is_error=False,"
        " tool_call_id=str(i))\n"
        "print(pad.path, flush=True)\n"
        "os._exit(9)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True,
        check=False, timeout=30,
    )
    assert done.returncode == 9, done.stderr
    log = Scratchpad.read(Path(done.stdout.strip()))
    assert log.skipped == 0
    assert len(log.of_type("tool_result")) == 20


# -- secrets --------------------------------------------------------------------------------

def test_secret_env_values_never_reach_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-live-abcdef123456")
    monkeypatch.setenv("GITHUB_TOKEN", 'ghp_"quoted"9999')
    monkeypatch.setenv("MY_SECRET", "short")  # under 8 characters: too short to be a secret
    pad = make(tmp_path, "query mentioning sk-live-abcdef123456")
    add(pad, "web_fetch", "page shows key sk-live-abcdef123456 and ghp_\"quoted\"9999", "c1",
        url="https://x?key=sk-live-abcdef123456")
    pad.append("note", text="short")
    raw = pad.path.read_text(encoding="utf-8")
    assert "sk-live-abcdef123456" not in raw
    assert "9999" not in raw
    assert raw.count("***") == 4
    assert "short" in raw
    assert "sk-live" not in pad.tool_results_text()


# -- reading --------------------------------------------------------------------------------

def test_reader_skips_bad_lines_and_counts_them(tmp_path: Path) -> None:
    pad = make(tmp_path)
    add(pad, "t", "one", "c1")
    with pad.path.open("ab") as handle:
        handle.write(b"not json\n")
        handle.write(b"[1, 2]\n")
        handle.write(b'{"type": "x"}\n')
        handle.write(b'{"timestamp": "2025-01-01T00:00:00+00:00"}\n')
        handle.write(b'{"type": 3, "timestamp": "t"}\n')
        handle.write(b"\n   \n")
        handle.write(b'{"type": "tool_result", "timestamp": "2025-01-01T00:00:00+00:00", "res')
    log = Scratchpad.read(pad.path)
    assert [e["type"] for e in log.entries] == ["init", "tool_result"]
    assert log.skipped == 6
    assert log.query == "NVDA revenue"
    assert log.path == pad.path


def test_reader_survives_invalid_utf8_and_keeps_line_separators_inside_strings(
    tmp_path: Path,
) -> None:
    pad = make(tmp_path)
    add(pad, "t", "para\u2028graph\x85end", "c1")
    with pad.path.open("ab") as handle:
        handle.write(b'{"type": "note", "timestamp": "t", "text": "caf\xe9"}\n')
        handle.write(b"\xff\xfe garbage\n")
    log = Scratchpad.read(pad.path)
    assert log.skipped == 1
    assert log.of_type("tool_result")[0]["result"] == "para\u2028graph\x85end"
    assert log.of_type("note")[0]["text"] == "caf\ufffd"


def test_reader_on_missing_init_reports_empty_query(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('{"type": "done", "timestamp": "t", "answer": "a"}\n', encoding="utf-8")
    log = Scratchpad.read(path)
    assert log.query == ""
    assert log.skipped == 0


# -- soft tool limits -------------------------------------------------------------------------

def test_word_sets_and_jaccard() -> None:
    assert query_words("NVDA's Q3-2024 revenue, by segment!") == frozenset(
        {"nvda", "2024", "revenue", "segment"}
    )
    assert jaccard(frozenset({"a1a", "b2b"}), frozenset()) == 0.0
    assert jaccard(frozenset(), frozenset()) == 0.0


def call(pad: Scratchpad, tool: str, **args: object) -> str | None:
    warning = pad.check_tool_limit(tool, dict(args))
    pad.note_tool_call(tool, dict(args))
    return warning


def test_count_warnings_third_call_near_limit_fourth_over(tmp_path: Path) -> None:
    pad = make(tmp_path)
    assert call(pad, "web_search", query="nvidia revenue 2024") is None
    assert call(pad, "web_search", query="amd gross margin") is None
    third = call(pad, "web_search", query="intel capex guidance")
    assert third is not None and "last 'web_search' call" in third
    fourth = call(pad, "web_search", query="tsmc wafer pricing")
    assert fourth is not None and "called 3 times (suggested limit: 3)" in fourth
    assert pad.tool_call_count("web_search") == 4
    assert call(pad, "get_financials", ticker="NVDA") is None


def test_custom_limit(tmp_path: Path) -> None:
    pad = make(tmp_path, max_calls_per_tool=1)
    first = call(pad, "t", query="alpha beta gamma")
    assert first is not None and "last 't' call" in first
    second = call(pad, "t", query="delta epsilon zeta")
    assert second is not None and "called once" in second


def test_near_duplicate_at_and_below_threshold(tmp_path: Path) -> None:
    pad = make(tmp_path, max_calls_per_tool=10)
    ten = "alpha bravo charlie delta echo foxtrot golf hotel india juliet"
    call(pad, "web_search", query=ten)
    seven = "alpha bravo charlie delta echo foxtrot golf"
    # 7 shared words of 10 in the union: Jaccard exactly 0.7 -> warned, naming the earlier query.
    at = pad.check_tool_limit("web_search", {"query": seven})
    assert at is not None and "very similar" in at and "hotel india juliet" in at
    # 7 shared of 11: 0.636 -> not a duplicate.
    assert pad.check_tool_limit("web_search", {"query": seven + " kilo"}) is None
    # Similarity is per tool.
    assert pad.check_tool_limit("web_fetch", {"query": seven}) is None


def test_short_words_and_punctuation_do_not_count(tmp_path: Path) -> None:
    pad = make(tmp_path, max_calls_per_tool=10)
    call(pad, "web_search", query="AMD revenue Q3 2024")
    warning = pad.check_tool_limit("web_search", {"query": "amd, revenue (q4) of 2024?"})
    assert warning is not None and "very similar" in warning


def test_query_argument_preference_and_identical_args(tmp_path: Path) -> None:
    pad = make(tmp_path, max_calls_per_tool=10)
    call(pad, "read_file", path="reports/nvda annual report.txt", offset=0)
    # The next page of the same file, or another file with a similar name, is new data.
    assert pad.check_tool_limit(
        "read_file", {"path": "reports/nvda annual report.txt", "offset": 200}) is None
    assert pad.check_tool_limit("read_file", {"path": "reports/amd annual report.txt"}) is None
    call(pad, "read_file", path="f0.txt")
    assert pad.check_tool_limit("read_file", {"path": "f1.txt"}) is None
    call(pad, "web_fetch", url="https://www.sec.gov/Archives/edgar/data/1045810/nvda-20240128.htm")
    assert pad.check_tool_limit(
        "web_fetch", {"url": "https://www.sec.gov/Archives/edgar/data/1045810/nvda-20230129.htm"},
    ) is None
    repeat = pad.check_tool_limit("read_file", {"path": "f0.txt"})
    assert repeat is not None and "exactly the same arguments" in repeat
    call(pad, "web_search", query="nvda annual report revenue", path="ignored")
    warning = pad.check_tool_limit("web_search", {"query": "NVDA annual-report revenue!"})
    assert warning is not None and "very similar" in warning
    call(pad, "get_financials", ticker="NVDA", period="annual")
    again = pad.check_tool_limit("get_financials", {"period": "annual", "ticker": "NVDA"})
    assert again is not None and "exactly the same arguments" in again
    assert pad.check_tool_limit("get_financials", {"ticker": "AMD", "period": "annual"}) is None


def test_usage_note_only_after_a_warning_and_only_once(tmp_path: Path) -> None:
    pad = make(tmp_path)
    call(pad, "web_search", query="one alpha")
    call(pad, "get_financials", ticker="NVDA")
    assert pad.usage_note() is None
    call(pad, "web_search", query="two beta")
    warning = call(pad, "web_search", query="three gamma")
    note = pad.usage_note()
    assert note is not None and warning is not None
    assert "- web_search: 3/3 calls" in note
    assert "- get_financials: 1/3 calls" in note
    assert warning in note
    assert pad.usage_note() is None
    call(pad, "web_search", query="four delta")
    later = pad.usage_note()
    assert later is not None and "4/3 calls (over the suggested limit)" in later


def test_bad_limits_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_calls_per_tool"):
        make(tmp_path, max_calls_per_tool=0)
    with pytest.raises(ValueError, match="similarity_threshold"):
        make(tmp_path, similarity_threshold=1.5)


# -- compaction state ---------------------------------------------------------------------------

def three_results(pad: Scratchpad) -> None:
    add(pad, "get_financials", "revenue 60.9B", "c1", ticker="NVDA", period="annual")
    add(pad, "web_search", "margin 74.6%", "c2", query="nvda margin")
    pad.add_tool_result("read_file", {"path": "x"}, "Error: missing", duration_ms=2,
                        is_error=True, tool_call_id="c3")


def test_results_text_has_headers_and_full_text_of_cleared_results(tmp_path: Path) -> None:
    pad = make(tmp_path)
    three_results(pad)
    pad.mark_cleared(["c1", "unknown"])
    assert pad.tool_results_text() == (
        '### get_financials(ticker="NVDA", period="annual")\nrevenue 60.9B\n\n'
        '### web_search(query="nvda margin")\nmargin 74.6%\n\n'
        '### read_file(path="x") [error]\nError: missing'
    )
    placeholder = pad.tool_results_text(include_cleared=False)
    assert "[Tool result #1 cleared from context]" in placeholder
    assert "60.9B" not in placeholder
    assert "74.6%" in placeholder


def test_compaction_moves_boundary_and_resets_cleared(tmp_path: Path) -> None:
    pad = make(tmp_path)
    three_results(pad)
    assert pad.active_tool_result_count() == 3
    assert pad.compaction_summary is None
    pad.mark_cleared(["c2"])
    pad.set_compaction_summary("Summary: revenue 60.9B")
    assert pad.compaction_summary == "Summary: revenue 60.9B"
    assert pad.active_tool_result_count() == 0
    assert pad.tool_results_text() == "Summary: revenue 60.9B"
    add(pad, "web_search", "capex 10B", "c4", query="nvda capex")
    pad.mark_cleared(["c2"])  # from before the boundary: nothing to show
    assert pad.active_tool_result_count() == 1
    assert pad.tool_results_text(include_cleared=False) == (
        "Summary: revenue 60.9B\n\n---\n\nNew data retrieved after compaction:\n\n"
        '### web_search(query="nvda capex")\ncapex 10B'
    )
    pad.mark_cleared(["c4"])
    assert "[Tool result #4 cleared from context]" in pad.tool_results_text(include_cleared=False)
    assert len(pad.tool_results) == 4


def test_chunks_split_at_result_boundaries(tmp_path: Path) -> None:
    pad = make(tmp_path)
    for i in range(6):
        add(pad, "web_search", f"result {i} " + "n" * 80, f"c{i}", query=f"q{i}")
    text = pad.tool_results_text()
    chunks = pad.tool_results_chunks(250)
    assert all(len(chunk) <= 250 for chunk in chunks)
    assert len(chunks) == 3
    assert "\n\n".join(chunks) == text
    assert all(chunk.startswith("### web_search") for chunk in chunks)
    assert pad.tool_results_chunks(len(text)) == [text]
    assert pad.tool_results_chunks(len(text) - 1) != [text]


def test_oversized_result_is_split_with_repeated_header(tmp_path: Path) -> None:
    pad = make(tmp_path)
    add(pad, "web_fetch", "small", "c0", url="u0")
    body = "".join(f"{i:05d}" for i in range(400))  # 2,000 characters of ordered digits
    add(pad, "web_fetch", body, "c1", url="u1")
    chunks = pad.tool_results_chunks(500)
    assert all(len(chunk) <= 500 for chunk in chunks)
    assert chunks[0] == '### web_fetch(url="u0")\nsmall'
    parts = chunks[1:]
    assert parts[0].startswith('### web_fetch(url="u1") (part 1/')
    assert "".join(part.split("\n", 1)[1] for part in parts) == body


def test_tiny_chunk_size_still_keeps_every_character(tmp_path: Path) -> None:
    pad = make(tmp_path)
    add(pad, "t", "abcdefghij", "c1")
    chunks = pad.tool_results_chunks(4)
    assert all(len(chunk) <= 4 for chunk in chunks)
    assert "".join(chunks) == pad.tool_results_text()
    with pytest.raises(ValueError, match="max_chars"):
        pad.tool_results_chunks(0)


def test_chunks_in_compaction_mode_start_with_the_summary(tmp_path: Path) -> None:
    pad = make(tmp_path)
    three_results(pad)
    pad.set_compaction_summary("S" * 100)
    add(pad, "web_search", "after", "c9", query="later")
    chunks = pad.tool_results_chunks(120)
    assert chunks[0] == "S" * 100
    assert "\n\n".join(chunks) == pad.tool_results_text()


def test_tool_call_records_for_done(tmp_path: Path) -> None:
    pad = make(tmp_path)
    three_results(pad)
    records = pad.tool_call_records()
    assert records[0] == {
        "tool": "get_financials", "args": {"ticker": "NVDA", "period": "annual"},
        "duration_ms": 5, "is_error": False,
    }
    assert [r["is_error"] for r in records] == [False, False, True]


def test_written_run_replays_as_the_same_events(tmp_path: Path) -> None:
    from dexter.render.replay import replay_events

    pad = make(tmp_path, "NVDA margin", model="gpt-x", provider="openai")
    pad.record_event(Thinking(message="Fetching financials."))
    add(pad, "get_financials", '{"data": {"gross_margin": 0.746}}', "c1", ticker="NVDA")
    pad.add_tool_result("read_file", {"path": "x"}, "Error: missing", duration_ms=2,
                        is_error=True, tool_call_id="c2")
    pad.record_event(Done(answer="Gross margin was 74.6%.", iterations=2))
    log = Scratchpad.read(pad.path)
    events = list(replay_events(log.entries, scratchpad=str(pad.path)))
    assert [e.type for e in events] == [
        "run_start", "thinking", "tool_start", "tool_end", "tool_start", "tool_error", "done",
    ]
    assert events[0].to_dict()["query"] == "NVDA margin"
    assert json.loads(events[3].to_dict()["result"]) == {"data": {"gross_margin": 0.746}}
    assert events[-1].to_dict()["answer"] == "Gross margin was 74.6%."


def test_a_failing_disk_does_not_end_the_run(tmp_path: Path) -> None:
    pad = make(tmp_path)
    assert pad.write_error is None
    pad.path.unlink()
    pad.path.parent.rmdir()
    assert add(pad, "web_search", "revenue 60.9B", "c1", query="nvda") == 0
    pad.append("note", text="still running")
    assert pad.write_error is not None and str(pad.path) in pad.write_error
    assert "60.9B" in pad.tool_results_text()
