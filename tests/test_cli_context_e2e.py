"""End to end: the context defenses through the real ``dexter ask``, both providers.

Each test scripts the fake LLM server, runs the CLI in a subprocess and checks what a user
(and the provider) would see: the request bodies the fake recorded, the ``--json`` events,
the scratchpad, the files under ``DEXTER_HOME`` and the ``--trace`` lines on stderr.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from dexter.testing.fakellm import (
    Dynamic,
    FakeLLM,
    HttpError,
    RecordedRequest,
    Reply,
    Route,
    ToolCallSpec,
    Usage,
)
from tests.cli_helpers import CliResult, cli_env, config_outside, run_cli

pytestmark = pytest.mark.e2e

PROVIDERS = [
    pytest.param("gpt-5.6-sol", "gpt-5-mini", "openai", id="openai"),
    pytest.param("claude-sonnet-4-6", "claude-haiku-4-5", "anthropic", id="anthropic"),
]
QUERY = "How did NVDA's gross margin evolve over the last nine quarters?"
CLEARED = "[Old tool result content cleared]"
# A 40,000-token window gives a 20,000-token threshold (half the window: the design's
# reserves would leave only 7,000), so a reported count of 30,000 is over it.
SMALL_WINDOW = {"DEXTER_CONTEXT_CONTEXT_WINDOW": "40000"}
OVER_THRESHOLD = 30_000


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


# ---------------------------------------------------------------------------------------
# Reading recorded requests the same way for both wire formats
# ---------------------------------------------------------------------------------------

def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(block.get("text", "")) for block in content if isinstance(block, dict))
    return ""


def tool_results(request: RecordedRequest) -> dict[str, str]:
    """Tool result text by call id, in request order."""
    out: dict[str, str] = {}
    for message in request.body["messages"]:
        if message.get("role") == "tool":
            out[message["tool_call_id"]] = _text(message["content"])
        elif isinstance(message.get("content"), list):
            for block in message["content"]:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    out[block["tool_use_id"]] = _text(block["content"])
    return out


def user_texts(request: RecordedRequest) -> list[str]:
    """The text of each user turn (tool results left out)."""
    texts = []
    for message in request.body["messages"]:
        if message.get("role") != "user":
            continue
        content = message["content"]
        if isinstance(content, list):
            content = [b for b in content if isinstance(b, dict) and b.get("type") == "text"]
        texts.append(_text(content))
    return texts


def non_system_messages(request: RecordedRequest) -> list[dict[str, Any]]:
    return [m for m in request.body["messages"] if m.get("role") != "system"]


def assert_compacted_view(request: RecordedRequest, route: Route) -> None:
    """The request right after a compaction: the system prompt, then the query, then the
    summary (two user messages on OpenAI; one user turn of two text blocks on Anthropic)."""
    if route == "openai":
        assert [m["role"] for m in request.body["messages"]] == ["system", "user", "user"]
    else:
        assert _text(request.body["system"]).strip()
        [turn] = request.body["messages"]
        assert turn["role"] == "user" and [b["type"] for b in turn["content"]] == ["text", "text"]
    query, summary = user_texts(request) if route == "openai" else \
        [b["text"] for b in request.body["messages"][0]["content"]]
    assert query == QUERY
    assert summary.count("Summary:") == 1 and QUERY not in summary
    assert not tool_results(request)


def has_tools(request: RecordedRequest) -> bool:
    return bool(request.body.get("tools"))


def call_id(route: Route, name: str) -> str:
    return f"{'toolu' if route == 'anthropic' else 'call'}_{name}"


def read(route: Route, name: str, path: str, **extra: Any) -> ToolCallSpec:
    return ToolCallSpec("read_file", {"path": path, **extra}, id=call_id(route, name))


def ask(fake: FakeLLM, cwd: Path, model: str, *flags: str, code: int = 0,
        env: dict[str, str] | None = None) -> CliResult:
    """``dexter ask FLAGS --model MODEL QUERY`` against ``fake``; checks the exit code and
    that every request the fake saw was well-formed (tool calls paired with results)."""
    result = run_cli(["ask", *flags, "--model", model, QUERY], cwd=cwd,
                     env=cli_env(fake, cwd, **(env or {})))
    assert result.code == code, result.stderr
    fake.assert_no_violations()
    return result


def events_of(result: CliResult, kind: str) -> list[dict[str, Any]]:
    return [e for e in result.events if e["type"] == kind]


def pad_entries(result: CliResult) -> list[dict[str, Any]]:
    pads = result.scratchpads()
    assert len(pads) == 1, pads
    return [json.loads(line) for line in pads[0].read_text(encoding="utf-8").splitlines()]


def write_notes(cwd: Path, count: int) -> dict[int, str]:
    """``data/note_NN.txt`` files, each about 2 KB with one unique number; returns them."""
    (cwd / "data").mkdir(exist_ok=True)
    planted = {}
    for n in range(1, count + 1):
        planted[n] = f"PLANTED-{n:03d}={n * 111.25:.2f}"
        filler = f"Quarter {n}: gross margin commentary, supply and pricing notes.\n" * 30
        (cwd / "data" / f"note_{n:02d}.txt").write_text(
            f"Key figure {planted[n]}\n{filler}", encoding="utf-8")
    return planted


def read_three_notes(route: Route, input_tokens: int, text: str = "") -> Reply:
    """The model's first turn: read ``data/note_01..03.txt`` at once, reporting
    ``input_tokens`` for the request (over the threshold, in these tests)."""
    return Reply(text=text, usage=Usage(input_tokens, 60),
                 tool_calls=[read(route, f"n{n}", f"data/note_{n:02d}.txt") for n in (1, 2, 3)])


# ---------------------------------------------------------------------------------------
# 1. microcompact over a long run
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(("model", "fast_model", "route"), PROVIDERS)
def test_old_results_become_placeholders_while_the_last_four_stay_whole(
    fake: FakeLLM, tmp_path: Path, model: str, fast_model: str, route: Route,
) -> None:
    planted = write_notes(tmp_path, 9)
    fake.enqueue(
        Reply(tool_calls=[read(route, "missing", "data/missing.txt"),
                          *(read(route, f"n{n}", f"data/note_{n:02d}.txt") for n in (1, 2, 3))]),
        Reply(tool_calls=[read(route, f"n{n}", f"data/note_{n:02d}.txt") for n in (4, 5, 6)]),
        Reply(tool_calls=[read(route, f"n{n}", f"data/note_{n:02d}.txt") for n in (7, 8, 9)]),
        Reply(text="Gross margin rose in every one of the nine quarters."),
    )
    result = ask(fake, tmp_path, model, "--json")
    requests = fake.requests_for(route)
    assert len(requests) == 4

    # Six successful results are under the count trigger (more than 8): nothing cleared yet.
    third = tool_results(requests[2])
    assert not any(text.startswith(CLEARED) for text in third.values())

    last = tool_results(requests[3])
    assert len(last) == 10
    placeholders = {cid: text for cid, text in last.items() if text.startswith(CLEARED)}
    whole = {cid: text for cid, text in last.items() if not text.startswith(CLEARED)}
    assert sorted(placeholders) == sorted(call_id(route, f"n{n}") for n in (1, 2, 3, 4, 5))
    for n in (1, 2, 3, 4, 5):
        text = placeholders[call_id(route, f"n{n}")]
        assert f"tool=read_file path=data/note_{n:02d}.txt" in text  # the retrieval clue
        assert planted[n] not in text
    for n in (6, 7, 8, 9):
        assert planted[n] in whole[call_id(route, f"n{n}")]
    # the error is the fifth whole result: errors are never cleared
    assert "not found" in whole[call_id(route, "missing")].lower()
    assert len(whole) == 5

    [event] = events_of(result, "microcompact")
    assert event["cleared"] == 5 and event["trigger"] == "count" and event["tokens_saved"] > 0
    [entry] = [e for e in pad_entries(result) if e["type"] == "microcompact"]
    assert entry["cleared"] == 5
    # the scratchpad still holds every result in full
    logged = "\n".join(json.dumps(e["result"]) for e in pad_entries(result)
                       if e["type"] == "tool_result")
    assert all(p in logged for p in planted.values())

    replay = run_cli(["replay", str(result.scratchpads()[0])], cwd=tmp_path,
                     env=cli_env(None, tmp_path))
    assert replay.code == 0, replay.stderr
    assert "Microcompact: cleared 5 old tool results" in replay.stdout


# ---------------------------------------------------------------------------------------
# 2. a 120 KB result is persisted and read back
# ---------------------------------------------------------------------------------------

SAVED_RE = re.compile(r"Full text saved to (?P<path>.+?)\]")


@pytest.mark.parametrize(("model", "fast_model", "route"), PROVIDERS)
def test_a_120_kb_result_is_saved_with_a_preview_and_read_back(
    fake: FakeLLM, tmp_path: Path, model: str, fast_model: str, route: Route,
) -> None:
    rows = [f"row {n:05d} segment=datacenter value={n * 3.5:.1f} PLANTED-R{n:05d}\n"
            for n in range(1, 2_121)]
    (tmp_path / "big.csv").write_text("".join(rows), encoding="utf-8")
    assert 118_000 < len("".join(rows)) < 122_000  # about 120 KB

    def read_saved(request: RecordedRequest) -> Reply:
        """The model's second step: read the saved file around row 2,000 by path and lines."""
        preview = tool_results(request)[call_id(route, "cat")]
        match = SAVED_RE.search(preview)
        assert match, preview[:300]
        lines = Path(match["path"]).read_text(encoding="utf-8").splitlines()
        line = next(n for n, text in enumerate(lines, 1) if "PLANTED-R02000" in text)
        return Reply(tool_calls=[ToolCallSpec(
            "read_file", {"path": match["path"], "offset": line - 2, "limit": 5},
            id=call_id(route, "back"))])

    fake.enqueue(
        Reply(tool_calls=[ToolCallSpec("bash", {"command": "cat big.csv"},
                                       id=call_id(route, "cat"))]),
        Dynamic(read_saved),
        Reply(text="Row 2,000 holds 7000.0."),
    )
    result = ask(fake, tmp_path, model, "--json")
    assert result.events[-1]["answer"] == "Row 2,000 holds 7000.0."
    requests = fake.requests_for(route)
    assert len(requests) == 3

    preview = tool_results(requests[1])[call_id(route, "cat")]
    assert preview.startswith("[Tool result too large for the context: ")
    assert "KB)" in preview.splitlines()[0]
    assert "Preview (first 2,000 characters):" in preview
    assert "read_file" in preview and "offset/limit" in preview
    assert "PLANTED-R00001" in preview and "PLANTED-R02000" not in preview
    assert len(preview) < 3_000

    saved = Path(SAVED_RE.search(preview)["path"])  # type: ignore[index]
    assert saved.parent == tmp_path / ".dexter" / "tool-results"
    assert "".join(rows).rstrip() in saved.read_text(encoding="utf-8")  # all 2,120 rows

    back = tool_results(requests[2])[call_id(route, "back")]
    assert "PLANTED-R02000" in back  # the model got the part beyond the preview
    assert back.count("PLANTED-R") == 5
    assert not back.startswith("[Tool result too large")


# ---------------------------------------------------------------------------------------
# 3. over the threshold, separate side requests (side_requests = "separate", as for a
#    provider without prompt caching): memory flush, then compaction with no tools
# ---------------------------------------------------------------------------------------

SEPARATE = {"DEXTER_CONTEXT_SIDE_REQUESTS": "separate"}


@pytest.mark.parametrize(("model", "fast_model", "route"), PROVIDERS)
def test_over_the_threshold_flushes_memory_then_compacts(
    fake: FakeLLM, tmp_path: Path, model: str, fast_model: str, route: Route,
) -> None:
    planted = write_notes(tmp_path, 3)
    fake.enqueue(
        read_three_notes(route, OVER_THRESHOLD),
        Reply(text="- The user follows NVDA's gross margin for a long-term position."),
        Reply(text="<analysis>DRAFT-ANALYSIS walking through three notes</analysis>\n"
                   "<summary>\n## 1. Original Query and Intent\nNVDA gross margin.\n"
                   "## 6. Numerical Data\n" + "\n".join(f"- {p}" for p in planted.values())
                   + "\n</summary>"),
        Reply(text="Margins rose.", usage=Usage(2_000, 10)),
    )
    result = ask(fake, tmp_path, model, "--json", "--trace",
                 env={"DEXTER_MEMORY_ENABLED": "true", **SMALL_WINDOW, **SEPARATE})
    requests = fake.requests_for(route)
    assert len(requests) == 4
    first, flush_call, compaction_call, after = requests

    assert has_tools(first)
    # the flush asks the main model, with no tools, and sees the conversation (the query
    # and the calls made), not the raw tool results
    assert flush_call.body["model"] == model and not has_tools(flush_call)
    flush_sent = json.dumps(flush_call.body)
    assert "note_01.txt" in flush_sent and json.dumps(QUERY)[1:-1] in flush_sent
    assert not any(p in flush_sent for p in planted.values())
    # the compaction asks the fast model, with no tools bound, over the full results
    assert compaction_call.body["model"] == fast_model
    assert "tools" not in compaction_call.body or compaction_call.body["tools"] == []
    sent = json.dumps(compaction_call.body)
    assert all(p in sent for p in planted.values())
    assert "Numerical Data" in sent

    # afterwards: the system prompt, the query and the summary after it
    assert_compacted_view(after, route)
    summary = user_texts(after)[-1]
    assert "Summary:" in summary
    assert all(p in summary for p in planted.values())
    assert "<analysis>" not in summary and "DRAFT-ANALYSIS" not in summary
    assert not tool_results(after)

    memory_file = tmp_path / ".dexter" / "memory" / f"{datetime.now():%Y-%m-%d}.md"
    memory = memory_file.read_text(encoding="utf-8")
    assert "Pre-compaction memory flush" in memory
    assert "- The user follows NVDA's gross margin for a long-term position." in memory

    flushes = events_of(result, "memory_flush")
    assert [e["phase"] for e in flushes] == ["start", "end"]
    assert flushes[1]["files_written"] == [memory_file.name] and not flushes[1]["error"]
    compactions = events_of(result, "compaction")
    assert [e["phase"] for e in compactions] == ["start", "end"]
    end = compactions[1]
    assert end["success"] is True and end["model"] == fast_model
    assert end["pre_tokens"] > OVER_THRESHOLD and 0 < end["post_tokens"] < end["pre_tokens"]
    types = [e["type"] for e in result.events]
    assert types.index("memory_flush") < types.index("compaction")
    assert result.events[-1]["context_threshold"] == 20_000

    trace = result.stderr
    assert re.search(r"\[context\] flush\s+[\d,]+ -> [\d,]+ tokens", trace)
    assert re.search(r"\[context\] compact\s+[\d,]+ -> [\d,]+ tokens", trace)
    kinds = [e["type"] for e in pad_entries(result)]
    assert "memory_flush" in kinds and "compaction" in kinds


# ---------------------------------------------------------------------------------------
# 3b. the side requests as a continuation of the main conversation (a provider that caches
#     prompt prefixes: the default for both)
# ---------------------------------------------------------------------------------------

# 60,000 tokens: a 30,000 threshold (half the window) with room for the continuation
CONTINUE_WINDOW = {"DEXTER_CONTEXT_CONTEXT_WINDOW": "60000"}
OVER_CONTINUE = 31_000


def raw_value(request: RecordedRequest, key: str) -> str:
    """The exact JSON text of ``key``'s value in the body as it went over the wire."""
    text = request.raw.decode("utf-8")
    start = text.index(f'"{key}":') + len(key) + 3
    return text[start:json.JSONDecoder().raw_decode(text, start)[1]]


def assert_continues(side: RecordedRequest, main: RecordedRequest) -> str:
    """``side`` is ``main`` byte for byte (messages, tools, system) plus more messages;
    returns the text of its final instruction."""
    main_messages, side_messages = raw_value(main, "messages"), raw_value(side, "messages")
    assert side_messages.startswith(main_messages[:-1] + ","), "the prefix differs"
    assert raw_value(side, "tools") == raw_value(main, "tools")
    if "system" in main.body:
        assert raw_value(side, "system") == raw_value(main, "system")
    assert side.body["model"] == main.body["model"] and "tool_choice" not in side.body
    last = side.body["messages"][-1]
    assert last["role"] == "user"
    content = last["content"]
    return content if isinstance(content, str) else content[-1]["text"]


def combined_reply(planted: dict[int, str]) -> Reply:
    numbers = "\n".join(f"- {p} [S{n}]" for n, p in planted.items())
    return Reply(text="<memory>\n- The user follows NVDA's gross margin for a long-term "
                      "position.\n</memory>\n<analysis>DRAFT-ANALYSIS</analysis>\n<summary>\n"
                      "## 1. Original Query and Intent\nNVDA gross margin.\n"
                      f"## 6. Numerical Data\n{numbers}\n</summary>")


@pytest.mark.parametrize(("model", "fast_model", "route"), PROVIDERS)
def test_flush_and_compaction_continue_the_main_conversation(
    fake: FakeLLM, tmp_path: Path, model: str, fast_model: str, route: Route,
) -> None:
    planted = write_notes(tmp_path, 3)
    fake.enqueue(
        read_three_notes(route, OVER_CONTINUE, "Reading the three notes."),
        combined_reply(planted),
        Reply(text="Margins rose.", usage=Usage(2_000, 10)),
    )
    result = ask(fake, tmp_path, model, "--json", "--trace",
                 env={"DEXTER_MEMORY_ENABLED": "true", **CONTINUE_WINDOW})
    requests = fake.requests_for(route)
    assert len(requests) == 3  # one side request for the flush and the compaction
    first, side, after = requests

    # the side request: the main request byte for byte, the turn's new round, then the
    # instruction; to the main model (whose cache holds the prefix), tools bound
    instruction = assert_continues(side, first)
    assert has_tools(side) and side.body["model"] == model
    assert set(tool_results(side)) == {call_id(route, f"n{n}") for n in (1, 2, 3)}
    assert instruction.startswith("IMPORTANT: this step is not research.")
    assert "<memory>" in instruction and "Numerical Data" in instruction
    assert all(title in instruction for title in ("Original Query and Intent",
                                                  "Recommended Next Steps"))
    if route == "anthropic":
        for request in requests:
            assert json.dumps(request.body).count('"cache_control"') <= 4

    # the memory file got the <memory> part; the view got the summary, not the memory
    memory_file = tmp_path / ".dexter" / "memory" / f"{datetime.now():%Y-%m-%d}.md"
    assert "- The user follows NVDA's gross margin" in memory_file.read_text(encoding="utf-8")
    assert_compacted_view(after, route)
    summary = user_texts(after)[-1] if route == "openai" else \
        after.body["messages"][0]["content"][-1]["text"]
    assert all(f"{p} [S{n}]" in summary for n, p in planted.items())  # numbers and citations
    assert "<memory>" not in summary and "long-term position" not in summary
    assert "DRAFT-ANALYSIS" not in summary
    # the request after the compaction starts with the very prefix the ones before had
    if route == "openai":
        assert after.body["messages"][:2] == first.body["messages"][:2]

    assert [(e["type"], e["phase"]) for e in result.events
            if e["type"] in ("memory_flush", "compaction")] == [
        ("memory_flush", "start"), ("compaction", "start"), ("memory_flush", "end"),
        ("compaction", "end")]
    [end] = [e for e in events_of(result, "compaction") if e["phase"] == "end"]
    assert end["success"] is True and end["model"] == model
    [flush_end] = [e for e in events_of(result, "memory_flush") if e["phase"] == "end"]
    assert flush_end["files_written"] == [memory_file.name] and not flush_end["error"]
    assert re.search(r"\[context\] compact\s+[\d,]+ -> [\d,]+ tokens", result.stderr)

    # the events render: live (plain lines) and replayed from the scratchpad
    replay = run_cli(["replay", str(result.scratchpads()[0])], cwd=tmp_path,
                     env=cli_env(None, tmp_path))
    assert replay.code == 0, replay.stderr
    assert f"Memory flush: wrote {memory_file.name}" in replay.stdout
    assert "Context compacted:" in replay.stdout and f"with {model}" in replay.stdout


@pytest.mark.parametrize(("model", "fast_model", "route"), PROVIDERS)
def test_a_tool_call_in_reply_to_the_side_request_runs_no_tool(
    fake: FakeLLM, tmp_path: Path, model: str, fast_model: str, route: Route,
) -> None:
    planted = write_notes(tmp_path, 3)
    (tmp_path / "data" / "secret.txt").write_text("SECRET-NOT-FOR-THE-MODEL", encoding="utf-8")
    fake.enqueue(
        read_three_notes(route, OVER_CONTINUE),
        Reply(text="One more file first.",
              tool_calls=[read(route, "sneaky", "data/secret.txt")]),   # the side request
        Reply(text="- The user follows NVDA's gross margin."),         # the separate flush
        Reply(text="<summary>\n## 6. Numerical Data\n"                   # the separate compaction
                   + "\n".join(f"- {p}" for p in planted.values()) + "\n</summary>"),
        Reply(text="Margins rose.", usage=Usage(2_000, 10)),
    )
    result = ask(fake, tmp_path, model, "--json",
                 env={"DEXTER_MEMORY_ENABLED": "true", **CONTINUE_WINDOW})
    fake.assert_all_consumed()
    first, side, flush_call, compaction_call, after = fake.requests_for(route)
    assert_continues(side, first)
    # nothing ran: no tool event, no record, and no request ever carried its result
    assert [e["args"]["path"] for e in events_of(result, "tool_start")] == [
        f"data/note_{n:02d}.txt" for n in (1, 2, 3)]
    assert sum(e["type"] == "tool_result" for e in pad_entries(result)) == 3
    for request in (flush_call, compaction_call, after):
        assert call_id(route, "sneaky") not in json.dumps(request.body)
        assert "SECRET-NOT-FOR-THE-MODEL" not in json.dumps(request.body)
    # the separate forms followed: no tools bound, the fast model for the summary
    assert not has_tools(flush_call) and flush_call.body["model"] == model
    assert not has_tools(compaction_call) and compaction_call.body["model"] == fast_model
    [end] = [e for e in events_of(result, "compaction") if e["phase"] == "end"]
    assert end["success"] is True and end["model"] == fast_model
    assert_compacted_view(after, route)
    assert result.events[-1]["answer"] == "Margins rose."


@pytest.mark.parametrize(("model", "fast_model", "route"), PROVIDERS)
def test_a_window_that_cannot_hold_the_continuation_gets_the_separate_compaction(
    fake: FakeLLM, tmp_path: Path, model: str, fast_model: str, route: Route,
) -> None:
    # 30,000 of a 40,000 window in use: the summary's 8,192 output tokens do not fit on top
    planted = write_notes(tmp_path, 3)
    fake.enqueue(
        read_three_notes(route, OVER_THRESHOLD),
        Reply(text="<summary>" + " ".join(planted.values()) + "</summary>"),
        Reply(text="Margins rose.", usage=Usage(2_000, 10)),
    )
    ask(fake, tmp_path, model, "--json", env=SMALL_WINDOW)
    _first, compaction_call, after = fake.requests_for(route)
    assert compaction_call.body["model"] == fast_model and not has_tools(compaction_call)
    assert all(p in json.dumps(compaction_call.body) for p in planted.values())
    assert_compacted_view(after, route)


@pytest.mark.parametrize(("model", "fast_model", "route"), PROVIDERS)
def test_a_long_run_sends_every_side_request_as_the_main_requests_continuation(
    fake: FakeLLM, tmp_path: Path, model: str, fast_model: str, route: Route,
) -> None:
    """Fourteen 12 KB extracts read one a turn at a 40,000-token window, memory on: every
    compaction cycle is one side request that repeats the last main request byte for byte,
    every planted number reaches the model, and no request is larger than the window."""
    from dexter.context.tokens import estimate_text_tokens

    (tmp_path / "data").mkdir()
    planted = []
    for n in range(14):
        planted.append(f"PLANTED-{n:03d}={n * 37.25 + 1:.2f}")
        rows = "".join(f"row {k}: segment {n} revenue {k * 13.7 + n:.1f}M margin {k % 60}%\n"
                       for k in range(260))
        (tmp_path / "data" / f"x{n:02d}.txt").write_text(f"Key figure {planted[n]}\n{rows}",
                                                          encoding="utf-8")
    turn = 0

    def respond(request: RecordedRequest) -> Reply:
        nonlocal turn
        body = json.dumps(request.body)
        tokens = estimate_text_tokens(body)
        assert tokens <= 40_000, f"request of {tokens:,} tokens above the window"
        if "IMPORTANT: this step is not research." in body:
            found = sorted(set(re.findall(r"PLANTED-\d{3}=[\d.]+", body)))
            return Reply(text="<memory>\n- The user studies segment margins.\n</memory>\n"
                              "<summary>\n## 6. Numerical Data\n" + "\n".join(found)
                              + "\n</summary>", usage=Usage(tokens, 40))
        if turn == 14:
            return Reply(text="Margins held.", usage=Usage(tokens, 10))
        turn += 1
        return Reply(text=f"Reading extract {turn - 1}.", usage=Usage(tokens, 20),
                     tool_calls=[read(route, f"x{turn - 1}", f"data/x{turn - 1:02d}.txt")])

    fake.set_default(Dynamic(respond))
    result = ask(fake, tmp_path, model, "--json", "--max-iterations", "20",
                 env={"DEXTER_MEMORY_ENABLED": "true", **SMALL_WINDOW})
    assert result.events[-1]["status"] == "ok"
    requests = fake.requests_for(route)
    sides = [i for i, r in enumerate(requests) if "this step is not research" in json.dumps(r.body)]
    assert len(sides) >= 2  # several compaction cycles, one side request each
    assert len(requests) == 15 + len(sides)
    for i in sides:
        assert_continues(requests[i], requests[i - 1])
    seen = " ".join(json.dumps(r.body) for i, r in enumerate(requests) if i not in sides)
    assert all(p in seen for p in planted)
    compactions = [e for e in events_of(result, "compaction") if e["phase"] == "end"]
    assert len(compactions) == len(sides) and all(e["success"] for e in compactions)


def test_a_provider_without_prompt_caching_keeps_the_separate_side_requests(
    fake: FakeLLM, tmp_path: Path,
) -> None:
    config = config_outside(tmp_path)
    config.write_text(f'[providers.plain]\nbase_url = "{fake.openai_base_url}"\n'
                      'api_key_env = "PLAIN_API_KEY"\n', encoding="utf-8")
    planted = write_notes(tmp_path, 3)
    fake.enqueue(
        read_three_notes("openai", OVER_CONTINUE),
        Reply(text="- The user follows NVDA's gross margin."),
        Reply(text="<summary>" + " ".join(planted.values()) + "</summary>"),
        Reply(text="Margins rose.", usage=Usage(2_000, 10)),
    )
    result = ask(fake, tmp_path, "plain:local-model", "--json",
                 env={"DEXTER_MEMORY_ENABLED": "true", "DEXTER_CONFIG": str(config),
                      "PLAIN_API_KEY": "sk-plain-0000", **CONTINUE_WINDOW})
    first, flush_call, compaction_call, after = fake.requests_for("openai")
    assert has_tools(first)
    # the separate forms: smaller requests, no tools, the flush without the raw results
    assert not has_tools(flush_call) and not has_tools(compaction_call)
    assert not any(p in json.dumps(flush_call.body) for p in planted.values())
    assert all(p in json.dumps(compaction_call.body) for p in planted.values())
    sizes = [len(r.raw) for r in (first, flush_call, compaction_call)]
    assert sizes[1] < sizes[0]
    assert_compacted_view(after, "openai")
    assert [(e["type"], e["phase"]) for e in result.events
            if e["type"] in ("memory_flush", "compaction")] == [
        ("memory_flush", "start"), ("memory_flush", "end"), ("compaction", "start"),
        ("compaction", "end")]


# ---------------------------------------------------------------------------------------
# 4. compaction fails three times: truncation instead, then no more attempts
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(("model", "fast_model", "route"), PROVIDERS)
def test_three_failed_compactions_fall_back_to_truncation_and_stop_trying(
    fake: FakeLLM, tmp_path: Path, model: str, fast_model: str, route: Route,
) -> None:
    write_notes(tmp_path, 6)

    def turn(*notes: int) -> Reply:
        return Reply(tool_calls=[read(route, f"n{n}", f"data/note_{n:02d}.txt") for n in notes],
                     usage=Usage(OVER_THRESHOLD, 40))

    fake.enqueue(
        turn(1, 2, 3),
        HttpError(400, message="summarizer refused the request"),  # failure 1
        turn(4),
        Reply(text=""),                                              # failure 2: empty reply
        turn(5),
        HttpError(400, message="summarizer refused the request"),  # failure 3
        turn(6),                                                     # no 4th attempt
        Reply(text="Done with what is left."),
    )
    result = ask(fake, tmp_path, model, "--json",
                 env={"DEXTER_CONTEXT_TRUNCATE_KEEP_ROUNDS": "1", **SMALL_WINDOW, **SEPARATE})
    fake.assert_all_consumed()
    requests = fake.requests_for(route)
    assert [r.body["model"] for r in requests] == [
        model, fast_model, model, fast_model, model, fast_model, model, model]
    assert not any(has_tools(r) for r in requests if r.body["model"] == fast_model)

    compactions = events_of(result, "compaction")
    ends = [e for e in compactions if e["phase"] == "end"]
    assert len(ends) == 3 and all(e["success"] is False for e in ends)
    assert "summarizer refused" in ends[0]["error"]
    assert "empty" in ends[1]["error"].lower()
    cleared = events_of(result, "context_cleared")
    assert len(cleared) == 3 and {e["reason"] for e in cleared} == {"threshold"}
    assert all(e["kept_count"] == 1 and e["cleared_count"] > 0 for e in cleared)
    # the last truncation came after the third failure, with no compaction in between
    types = [e["type"] for e in result.events]
    last_compaction = max(i for i, t in enumerate(types) if t == "compaction")
    assert types[last_compaction + 1:].count("context_cleared") == 2

    final = requests[-1]
    assert set(tool_results(final)) == {call_id(route, "n6")}
    assert any(QUERY in text for text in user_texts(final))
    assert sum(e["type"] == "tool_result" for e in pad_entries(result)) == 6


# ---------------------------------------------------------------------------------------
# 5. the provider says the request is too long
# ---------------------------------------------------------------------------------------

def overflow_error(route: Route) -> HttpError:
    if route == "anthropic":
        return HttpError.anthropic_prompt_too_long()
    return HttpError.openai_context_overflow()


@pytest.mark.parametrize(("model", "fast_model", "route"), PROVIDERS)
def test_an_overflow_truncates_and_retries_then_answers(
    fake: FakeLLM, tmp_path: Path, model: str, fast_model: str, route: Route,
) -> None:
    write_notes(tmp_path, 4)
    fake.enqueue(
        *(Reply(tool_calls=[read(route, f"n{n}", f"data/note_{n:02d}.txt")]) for n in (1, 2, 3, 4)),
        overflow_error(route),
        Reply(text="Answered after trimming."),
    )
    result = ask(fake, tmp_path, model, "--json")
    requests = fake.requests_for(route)
    assert len(requests) == 6
    assert requests[4].body["messages"] != requests[5].body["messages"]
    assert set(tool_results(requests[4])) == {call_id(route, f"n{n}") for n in (1, 2, 3, 4)}
    assert set(tool_results(requests[5])) == {call_id(route, f"n{n}") for n in (2, 3, 4)}
    assert any(QUERY in text for text in user_texts(requests[5]))
    [cleared] = events_of(result, "context_cleared")
    assert cleared["reason"] == "overflow" and cleared["kept_count"] == 3
    assert cleared["cleared_count"] > 0
    assert result.events[-1]["answer"] == "Answered after trimming."


@pytest.mark.parametrize(("model", "fast_model", "route"), PROVIDERS)
def test_a_third_overflow_ends_the_run_with_a_clear_message(
    fake: FakeLLM, tmp_path: Path, model: str, fast_model: str, route: Route,
) -> None:
    write_notes(tmp_path, 4)
    fake.enqueue(
        *(Reply(tool_calls=[read(route, f"n{n}", f"data/note_{n:02d}.txt")]) for n in (1, 2, 3, 4)),
        overflow_error(route), overflow_error(route), overflow_error(route),
    )
    result = ask(fake, tmp_path, model, code=1)
    fake.assert_all_consumed()
    requests = fake.requests_for(route)
    assert len(requests) == 7
    # each retry kept one round fewer: 4 results, then 3, then 2
    assert [len(tool_results(r)) for r in requests[4:]] == [4, 3, 2]
    output = result.stdout + result.stderr
    assert "too long for the context window" in output
    entries = pad_entries(result)
    assert [e["reason"] for e in entries if e["type"] == "context_cleared"] == ["overflow"] * 2
    assert entries[-1]["type"] == "done" and entries[-1]["error_kind"] == "context_overflow"
