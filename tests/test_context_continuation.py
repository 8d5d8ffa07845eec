"""Side requests as a continuation of the main conversation: their shape, the fit check,
the instructions, and replies that are not usable (a tool call above all)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from dexter.context.compaction import (
    CONTINUATION_OPENING,
    DEFAULT_SUMMARY_OUTPUT_TOKENS,
    ESTIMATE_MARGIN,
    SUMMARY_SECTIONS,
)
from dexter.context.continuation import (
    Continuation,
    SideRequestError,
    instruction,
    main_request,
    output_tokens,
    reply_text,
    restored_pieces,
    side_request,
    split_memory,
)
from dexter.context.flush import DURABLE_FACTS, NO_MEMORY_TOKEN, FlushError
from dexter.context.tokens import MESSAGE_OVERHEAD_TOKENS, estimate_text_tokens
from dexter.messages import AssistantMessage, ToolCall, UserMessage
from dexter.providers.base import ModelResponse, ToolSpec
from dexter.providers.errors import ProviderError
from dexter.scratchpad import ToolResultRecord
from dexter.testing.scripted import ScriptedModel
from tests.context_builders import head, rounds, tool_round

TOOLS = (ToolSpec("read_file", "Read a file", {"type": "object", "properties": {}}),)
NOW = datetime(2025, 3, 14, 9, 26)
COMBINED_REPLY = (
    "<memory>\n- Holds 200 NVDA shares in a Roth IRA\n</memory>\n"
    "<analysis>went through both calls</analysis>\n"
    "<summary>\n## 6. Numerical Data\n- FY2024 revenue 60.92B USD [S1]\n</summary>"
)


def continuation(model: ScriptedModel, tmp_path: Path, window: int = 128_000) -> Continuation:
    return Continuation(model=model, tools=TOOLS, window=window, memory_dir=tmp_path / "memory",
                        now=lambda: NOW)


def record(index: int, call_id: str, result: str, source_id: str = "") -> ToolResultRecord:
    return ToolResultRecord(index=index, tool="read_file", args={"path": f"f{index}.txt"},
                            result=result, duration_ms=1, is_error=False, tool_call_id=call_id,
                            source_id=source_id)


# ---------------------------------------------------------------------------------------
# the request: the main request plus one message
# ---------------------------------------------------------------------------------------

def test_a_side_request_is_the_main_request_plus_one_instruction() -> None:
    view = head() + rounds(3)
    main = main_request(view, TOOLS, 8_192)
    side = side_request(view, TOOLS, "Summarize.", 2_048)
    assert main.system == side.system == "You are dexter."
    assert side.tools == main.tools == TOOLS  # the tools stay bound
    assert side.messages[:-1] == main.messages
    assert all(a is b for a, b in zip(side.messages, main.messages, strict=False))  # same objects
    assert side.messages[-1] == UserMessage("Summarize.", kind="note")
    assert side.continuation and not main.continuation
    assert (side.max_tokens, side.temperature, side.json_output) == (2_048, None, False)


@pytest.mark.parametrize("kind", ["flush", "compaction", "flush+compaction"])
def test_every_instruction_asks_for_text_only_first(kind: str) -> None:
    text = instruction(kind, "NVDA growth?")  # type: ignore[arg-type]
    assert text.startswith(CONTINUATION_OPENING)
    assert "text only" in text.splitlines()[0] and "tool call" in text.splitlines()[0]


@pytest.mark.parametrize("kind", ["compaction", "flush+compaction"])
def test_the_summary_instructions_keep_the_nine_sections_and_the_citations(kind: str) -> None:
    text = instruction(kind, "NVDA growth?", ["### [S4] read_file(path=\"a\")\nrev 9.1B"])  # type: ignore[arg-type]
    positions = [text.index(f"{n}. {title}") for n, title in enumerate(SUMMARY_SECTIONS, 1)]
    assert positions == sorted(positions) and len(positions) == 9
    assert "keep EVERY number the tools returned" in text
    assert "write it as [S3] right after the number" in text
    assert "Original query:\nNVDA growth?" in text
    # results the conversation shows only in part come in full, after a title saying so
    assert "in full from the run's record:\n### [S4] read_file" in text and "rev 9.1B" in text
    last = text.rstrip().splitlines()[-1]
    assert "plain text only" in last and "no tool call" in last


def test_the_flush_instruction_keeps_the_durable_facts_rules() -> None:
    text = instruction("flush", "q")
    assert DURABLE_FACTS in text and f"reply with exactly {NO_MEMORY_TOKEN}" in text
    assert "The tool results above are data for the research, not memory material." in text
    combined = instruction("flush+compaction", "q")
    assert DURABLE_FACTS in combined and "<memory>" in combined
    assert f"write exactly {NO_MEMORY_TOKEN} inside the <memory> block" in combined
    assert combined.index("<memory>") < combined.index("<analysis>") < combined.index("<summary>")
    last = combined.rstrip().splitlines()[-1]
    assert last.index("<memory>") < last.index("<analysis>") < last.index("<summary>")
    assert "<memory>" not in instruction("compaction", "q")


# ---------------------------------------------------------------------------------------
# what does not fit falls back: the boundary
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["flush", "compaction", "flush+compaction"])
def test_fits_exactly_at_the_window_and_not_one_token_more(kind: str, tmp_path: Path) -> None:
    extra = estimate_text_tokens(instruction(kind, "q")) + MESSAGE_OVERHEAD_TOKENS  # type: ignore[arg-type]
    grown = 1_000  # the estimated part of the count
    need = 50_000 + ESTIMATE_MARGIN * (grown + extra) + output_tokens(kind)  # type: ignore[arg-type]
    window = int(need) + (need > int(need))  # the smallest window that holds it
    cont = continuation(ScriptedModel(), tmp_path, window=window)
    assert cont.fits(kind, "q", (), used=50_000 + grown, estimated=grown)  # type: ignore[arg-type]
    tight = continuation(ScriptedModel(), tmp_path, window=window - 1)
    assert not tight.fits(kind, "q", (), used=50_000 + grown, estimated=grown)  # type: ignore[arg-type]


def test_the_margin_is_on_the_estimate_not_on_the_providers_count(tmp_path: Path) -> None:
    cont = continuation(ScriptedModel(), tmp_path, window=400_000)
    # 367,000 reported (a 400K window's threshold) still fits; all of it estimated does not
    assert cont.fits("compaction", "q", (), used=367_000, estimated=0)
    assert not cont.fits("compaction", "q", (), used=367_000, estimated=367_000)
    # restored results count: the instruction carries them
    big = ["### [S1] read_file(path=\"big\")\n" + "revenue 12.5B; " * 8_000]
    assert not cont.fits("compaction", "q", big, used=367_000, estimated=0)


# ---------------------------------------------------------------------------------------
# the results the view shows only in part
# ---------------------------------------------------------------------------------------

def test_restored_pieces_are_the_results_the_view_does_not_hold_whole() -> None:
    view = [*head(),
            *tool_round("c1", "[S1] revenue 60.92B", "read_file"),
            *tool_round("c2", "[Old tool result content cleared] tool=read_file path=b", "read_file"),
            *tool_round("c3", "[Tool result too large for the context: 120 KB] Preview ...", "read_file"),
            *tool_round("c5", "Error: not found", "read_file", is_error=True)]
    records = [record(0, "c1", "revenue 60.92B", "S1"), record(1, "c2", "margin 74.6%", "S2"),
               record(2, "c3", "row 1\nrow 2000 value 7000.0", "S3"),
               record(3, "c4", "truncated away 1.5B", "S4"),
               record(4, "c5", "Error: not found")]
    pieces = restored_pieces(view, records)
    assert pieces == [records[1].block(), records[2].block(), records[3].block()]
    assert pieces[0].startswith('### [S2] read_file(path="f1.txt")\nmargin 74.6%')


# ---------------------------------------------------------------------------------------
# replies
# ---------------------------------------------------------------------------------------

def test_a_tool_call_in_reply_is_an_error_of_the_side_request_not_a_tool_run() -> None:
    reply = ModelResponse(AssistantMessage(
        text="Let me read one more file.",
        tool_calls=(ToolCall("x1", "read_file", {"path": "/etc/passwd"}),
                    ToolCall("x2", "read_file", {"path": "b"}))))
    with pytest.raises(SideRequestError, match=r"tool call \(read_file\) instead of text; no tool was run"):
        reply_text(reply)
    with pytest.raises(SideRequestError, match="empty"):
        reply_text(ModelResponse(AssistantMessage(text="  \n")))
    assert reply_text(ModelResponse(AssistantMessage(text="- fact"))) == "- fact"


def test_split_memory_takes_the_memory_block_out() -> None:
    memory, rest = split_memory(COMBINED_REPLY)
    assert memory is not None and memory.strip() == "- Holds 200 NVDA shares in a Roth IRA"
    assert rest.lstrip().startswith("<analysis>") and "<memory>" not in rest
    assert split_memory("<analysis>x</analysis><summary>y</summary>") == (
        None, "<analysis>x</analysis><summary>y</summary>")
    unclosed, _ = split_memory("<MEMORY>- a fact\n<summary>s</summary>")
    assert unclosed == "- a fact\n"


async def test_flush_and_compact_in_one_request(tmp_path: Path) -> None:
    model = ScriptedModel([COMBINED_REPLY], model="main-model")
    view = head() + rounds(3)
    flushed, compacted = await continuation(model, tmp_path).flush_and_compact(view, "q", [])
    [request] = model.requests
    assert request.continuation and request.tools == TOOLS
    assert request.messages[:-1] == tuple(view[1:])
    assert request.max_tokens == output_tokens("flush+compaction")
    assert not isinstance(flushed, Exception) and flushed.files_written == ["2025-03-14.md"]
    memory = (tmp_path / "memory" / "2025-03-14.md").read_text(encoding="utf-8")
    assert memory == ("## 09:26 — Pre-compaction memory flush\n\n"
                      "- Holds 200 NVDA shares in a Roth IRA\n")
    assert not isinstance(compacted, Exception)
    assert compacted.summary == "Summary:\n## 6. Numerical Data\n- FY2024 revenue 60.92B USD [S1]"
    assert compacted.model == "main-model" and compacted.calls == 1
    assert compacted.usage.input_tokens > 0 and flushed.usage.input_tokens == 0  # counted once


async def test_a_combined_reply_without_one_part_fails_that_part_only(tmp_path: Path) -> None:
    model = ScriptedModel(["<summary>revenue 60.92B [S1]</summary>",
                           f"<memory>{NO_MEMORY_TOKEN}</memory><analysis>only a draft</analysis>"])
    cont = continuation(model, tmp_path)
    flushed, compacted = await cont.flush_and_compact(head() + rounds(3), "q", [])
    assert isinstance(flushed, SideRequestError) and "no <memory> part" in str(flushed)
    assert not isinstance(compacted, Exception) and "60.92B" in compacted.summary
    flushed, compacted = await cont.flush_and_compact(head() + rounds(3), "q", [])
    assert not isinstance(flushed, Exception) and flushed.files_written == []  # nothing to keep
    assert isinstance(compacted, SideRequestError) and "no summary" in str(compacted)
    assert not (tmp_path / "memory").exists()


async def test_a_memory_file_that_cannot_be_written_is_a_flush_error(tmp_path: Path) -> None:
    (tmp_path / "memory").write_text("a file where the folder should be", encoding="utf-8")
    flushed, compacted = await continuation(ScriptedModel([COMBINED_REPLY]), tmp_path) \
        .flush_and_compact(head() + rounds(3), "q", [])
    assert isinstance(flushed, FlushError) and "Could not write the memory file" in str(flushed)
    assert not isinstance(compacted, Exception)


async def test_a_tool_call_or_a_provider_error_fails_the_whole_request(tmp_path: Path) -> None:
    calling = AssistantMessage(tool_calls=(ToolCall("x", "read_file", {"path": "a"}),))
    model = ScriptedModel([calling, ProviderError("bad_request", "prompt is too long"), calling])
    cont = continuation(model, tmp_path)
    with pytest.raises(SideRequestError, match="tool call"):
        await cont.flush_and_compact(head() + rounds(3), "q", [])
    with pytest.raises(SideRequestError, match="prompt is too long"):
        await cont.compact(head() + rounds(3), "q", [])
    with pytest.raises(SideRequestError, match="tool call"):
        await cont.flush(head() + rounds(3), "q")
    assert not (tmp_path / "memory").exists()


async def test_compact_and_flush_alone(tmp_path: Path) -> None:
    model = ScriptedModel(["<analysis>a</analysis><summary>kept 3% [S2]</summary>", "- Prefers ETFs"])
    cont = continuation(model, tmp_path)
    compacted = await cont.compact(head() + rounds(2), "q", ["### [S2] x\nkept 3%"])
    assert compacted.summary == "Summary:\nkept 3% [S2]"
    assert model.requests[0].max_tokens == DEFAULT_SUMMARY_OUTPUT_TOKENS
    assert "### [S2] x\nkept 3%" in model.requests[0].messages[-1].content  # type: ignore[union-attr]
    flushed = await cont.flush(head() + rounds(2), "q")
    assert flushed.text == "- Prefers ETFs" and flushed.files_written == ["2025-03-14.md"]
    assert all(r.tools == TOOLS and r.continuation for r in model.requests)

