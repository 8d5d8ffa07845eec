"""dexter.rerun: reading a scratchpad as a recording, and tools answered from it (through
the real executor, so the texts are what the model would read)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel

from dexter.agent.executor import ToolExecutor, TurnResults
from dexter.config import Settings
from dexter.events import Event, ToolEnd, ToolError
from dexter.evidence.ledger import SourceLedger
from dexter.messages import ToolCall, ToolResultMessage
from dexter.permissions.base import DefaultPermissions
from dexter.rerun import (
    Recording,
    RecordingError,
    call_key,
    load_recording,
    recorded_tools,
)
from dexter.scratchpad import Scratchpad
from dexter.tools.base import Tool, ToolContext, ToolFailure, ToolOutput
from dexter.tools.registry import build_tools


class LookupArgs(BaseModel):
    ticker: str
    period: str = "annual"


class LookupTool(Tool[LookupArgs]):
    """A data tool that counts its real runs."""

    name: ClassVar[str] = "lookup"
    description: ClassVar[str] = "Look a ticker up. Returns figures."
    params: ClassVar[type[BaseModel]] = LookupArgs
    concurrency_safe: ClassVar[bool] = True
    compactable: ClassVar[bool] = True

    def __init__(self) -> None:
        self.runs: list[str] = []

    async def run(self, args: LookupArgs, ctx: ToolContext) -> str | ToolOutput:
        self.runs.append(args.ticker)
        if args.ticker == "BAD":
            raise ToolFailure("no such ticker")
        return ToolOutput(f"live {args.ticker}", source_urls=(f"https://x/{args.ticker}",))

    def evidence(self, content: str) -> str:
        return content.upper()

    def bound(self) -> bool:
        return False

    def preview(self, args: LookupArgs, ctx: ToolContext) -> str | None:
        return f"would look {args.ticker} up"


def write_pad(tmp_path: Path, results: list[tuple[str, dict[str, Any], str, bool]],
              **init: Any) -> Path:
    pad = Scratchpad(tmp_path / "pads", "NVDA revenue?", model="gpt-5.6-sol",
                     provider="openai", **init)
    for i, (tool, args, text, is_error) in enumerate(results):
        pad.add_tool_result(tool, args, text, duration_ms=1, is_error=is_error,
                            tool_call_id=f"c{i}", source_urls=("https://sec/1",) if not is_error else (),
                            source_id="" if is_error else f"S{i + 1}",
                            title="" if is_error else f"title {i}")
    return pad.path


def ctx(tmp_path: Path) -> ToolContext:
    settings = Settings(home=str(tmp_path / "home"), scratchpad_dir=str(tmp_path / "pads"))
    return ToolContext(settings=settings, cwd=tmp_path, home=tmp_path / "home")


async def execute(tools: list[Tool[Any]], tmp_path: Path, *calls: tuple[str, dict[str, Any]],
                  ledger: SourceLedger | None = None) -> tuple[list[Event], list[ToolResultMessage]]:
    executor = ToolExecutor(tools, ctx(tmp_path), permissions=DefaultPermissions(),
                            ledger=ledger if ledger is not None else SourceLedger())
    events: list[Event] = []
    final: TurnResults | None = None
    async for item in executor.execute([ToolCall(f"id{i}", name, args)
                                        for i, (name, args) in enumerate(calls)]):
        if isinstance(item, TurnResults):
            final = item
        else:
            events.append(item)
    assert final is not None
    return events, final.results


# -- load_recording ------------------------------------------------------------------------

def test_a_scratchpad_loads_with_its_question_model_and_results(tmp_path: Path) -> None:
    path = write_pad(tmp_path, [("lookup", {"ticker": "NVDA"}, '{"data": {"revenue": 130.5}}', False),
                                ("lookup", {"ticker": "BAD"}, "Error: no such ticker", True)])
    recording = load_recording(path)
    assert recording.path == path.absolute()
    assert (recording.question, recording.model, recording.provider) == (
        "NVDA revenue?", "gpt-5.6-sol", "openai")
    assert recording.model_name == "openai:gpt-5.6-sol"
    assert recording.tool_names == ("lookup",)
    first, second = recording.results
    assert first.text == '{"data": {"revenue": 130.5}}' and not first.is_error
    assert first.source_urls == ("https://sec/1",) and first.title == "title 0"
    assert first.source_id == "S1" and first.tool_call_id == "c0"
    assert second.is_error and second.text == "Error: no such ticker"
    assert recording.results_for("lookup", {"ticker": "BAD"}) == [second]
    assert recording.skipped == 0 and recording.rerun_of == ""


def test_damaged_lines_and_entries_are_skipped_and_counted(tmp_path: Path) -> None:
    path = write_pad(tmp_path, [("lookup", {"ticker": "NVDA"}, "one", False)],
                     rerun_of=tmp_path / "first.jsonl")
    with path.open("a", encoding="utf-8") as handle:
        handle.write("not json\n")
        handle.write(json.dumps({"type": "tool_result", "timestamp": "t", "tool": 3}) + "\n")
        handle.write(json.dumps({"type": "tool_result", "timestamp": "t", "tool": "x",
                                 "args": "bad"}) + "\n")
    recording = load_recording(path)
    assert len(recording.results) == 1 and recording.skipped == 3
    assert recording.rerun_of == str(tmp_path / "first.jsonl")


@pytest.mark.parametrize(("content", "problem"), [
    (None, "there is no such file"),
    ("", "it holds no scratchpad entries"),
    ("\n\n", "it holds no scratchpad entries"),
    ("{oops\n", "it holds no scratchpad entries (1 line corrupt)"),
    ('{"type": "done", "timestamp": "t"}\n',
     "its init line is missing or damaged, so there is no question to ask again"),
    ('{"type": "init", "timestamp": "t", "query": " "}\n',
     "its init line has no question, so there is no question to ask again"),
])
def test_an_unusable_scratchpad_raises_naming_the_file_and_the_problem(
        tmp_path: Path, content: str | None, problem: str) -> None:
    path = tmp_path / "run.jsonl"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(RecordingError) as caught:
        load_recording(path)
    assert str(caught.value) == f"Cannot rerun {path}: {problem}"
    assert caught.value.path == path and caught.value.problem == problem


def test_a_directory_is_not_a_recording(tmp_path: Path) -> None:
    with pytest.raises(RecordingError, match="it is a directory"):
        load_recording(tmp_path)


def test_the_model_name_keeps_an_explicit_or_missing_provider() -> None:
    assert Recording(Path("x"), "q", "ollama:qwen3", "ollama").model_name == "ollama:qwen3"
    assert Recording(Path("x"), "q", "gpt-4.1").model_name == "gpt-4.1"
    assert Recording(Path("x"), "q", "").model_name == ""


def test_a_call_is_identified_by_its_tool_and_canonical_arguments() -> None:
    assert call_key("t", {"a": 1, "b": [1, 2]}) == call_key("t", {"b": [1, 2], "a": 1})
    assert call_key("t", {"a": 1}) != call_key("t", {"a": 1.0})
    assert call_key("t", {"a": 1}) != call_key("u", {"a": 1})


# -- recorded_tools --------------------------------------------------------------------------

def test_wrapped_tools_keep_everything_the_model_and_the_engine_see(tmp_path: Path) -> None:
    settings = Settings(home=str(tmp_path / "home"))
    tools = build_tools(settings, interactive=True)
    recording = Recording(tmp_path / "r.jsonl", "q", "m")
    wrapped = recorded_tools(recording, tools)
    assert [t.name for t in wrapped] == [t.name for t in tools]
    for real, copy in zip(tools, wrapped, strict=True):
        assert copy.description == real.description
        assert copy.json_schema() == real.json_schema()
        assert copy.params is real.params
        assert (copy.concurrency_safe, copy.compactable, copy.needs_approval, copy.source_kind) \
            == (real.concurrency_safe, real.compactable, real.needs_approval, real.source_kind)
        assert copy.evidence("a 1") == real.evidence("a 1")
        assert copy.bound() == real.bound()


def test_wrapped_tools_answer_bound_and_preview_as_the_real_tool(tmp_path: Path) -> None:
    [copy] = recorded_tools(Recording(tmp_path / "r.jsonl", "q", "m"), [LookupTool()])
    assert copy.bound() is False
    assert copy.preview(LookupArgs(ticker="NVDA"), ctx(tmp_path)) == "would look NVDA up"


async def test_recorded_calls_are_answered_in_order_then_the_last_again(tmp_path: Path) -> None:
    path = write_pad(tmp_path, [("lookup", {"ticker": "NVDA", "period": "q"}, "first", False),
                                ("lookup", {"ticker": "AMD"}, "amd", False),
                                ("lookup", {"period": "q", "ticker": "NVDA"}, "second", False)])
    real = LookupTool()
    tools = recorded_tools(load_recording(path), [real])
    nvda = {"period": "q", "ticker": "NVDA"}
    events, results = await execute(tools, tmp_path, ("lookup", nvda), ("lookup", {"ticker": "AMD"}),
                                    ("lookup", nvda), ("lookup", nvda))
    assert [r.content for r in results] == ["[S1] first", "[S2] amd", "[S3] second", "[S4] second"]
    assert real.runs == []
    ends = [e for e in events if isinstance(e, ToolEnd)]
    assert ends[0].source_urls == ("https://sec/1",) and ends[0].title == "title 0"


async def test_a_recorded_result_comes_back_exactly_and_joins_the_ledger_as_before(
        tmp_path: Path) -> None:
    text = json.dumps({"data": {"rev": 1.5, "name": "é"}}, ensure_ascii=False)
    path = write_pad(tmp_path, [("lookup", {"ticker": "NVDA"}, text, False)])
    ledger = SourceLedger()
    _events, [result] = await execute(recorded_tools(load_recording(path), [LookupTool()]),
                                      tmp_path, ("lookup", {"ticker": "NVDA"}), ledger=ledger)
    assert result.content == f"[S1] {text}" and not result.is_error
    [source] = ledger.sources
    assert source.title == "title 0" and source.urls == ("https://sec/1",)


async def test_recorded_errors_are_errors_again_with_the_same_text(tmp_path: Path) -> None:
    path = write_pad(tmp_path, [("lookup", {"ticker": "BAD"}, "Error: no such ticker", True)])
    events, [result] = await execute(recorded_tools(load_recording(path), [LookupTool()]),
                                     tmp_path, ("lookup", {"ticker": "BAD"}))
    assert result.is_error and result.content == "Error: no such ticker"
    assert any(isinstance(e, ToolError) for e in events)


async def test_a_call_not_recorded_gets_an_error_saying_so(tmp_path: Path) -> None:
    path = write_pad(tmp_path, [("lookup", {"ticker": "NVDA"}, "nvda", False)])
    real = LookupTool()
    _events, [result] = await execute(recorded_tools(load_recording(path), [real]), tmp_path,
                                      ("lookup", {"ticker": "AAPL"}))
    assert result.is_error
    assert result.content.startswith(f"Error: not recorded in {path.absolute()}: ")
    assert 'lookup({"ticker": "AAPL"})' in result.content
    assert 'had these arguments: {"ticker": "NVDA"}' in result.content
    assert real.runs == []


async def test_invalid_arguments_fail_as_the_real_tool_fails(tmp_path: Path) -> None:
    path = write_pad(tmp_path, [])
    real = LookupTool()
    _e, [wrapped] = await execute(recorded_tools(load_recording(path), [real]), tmp_path,
                                  ("lookup", {"period": "q"}))
    _e, [direct] = await execute([real], tmp_path, ("lookup", {"period": "q"}))
    assert wrapped.is_error and wrapped.content == direct.content


async def test_live_runs_the_real_tool_for_calls_not_recorded(tmp_path: Path) -> None:
    path = write_pad(tmp_path, [("lookup", {"ticker": "NVDA"}, "nvda", False)])
    real = LookupTool()
    tools = recorded_tools(load_recording(path), [real], live=True)
    _events, results = await execute(tools, tmp_path, ("lookup", {"ticker": "NVDA"}),
                                     ("lookup", {"ticker": "AAPL"}), ("lookup", {"ticker": "BAD"}))
    assert [r.content for r in results] == ["[S1] nvda", "[S2] live AAPL",
                                            "Error: no such ticker"]
    assert real.runs == ["AAPL", "BAD"]


async def test_tools_the_session_lacks_still_answer_from_the_recording(tmp_path: Path) -> None:
    path = write_pad(tmp_path, [
        ("memory_search", {"query": "risk"}, "you hold NVDA", False),
        ("gone_tool", {"x": 1}, "Error: Unknown tool 'gone_tool'. Available tools: lookup.", True),
    ])
    for live in (False, True):
        tools = recorded_tools(load_recording(path), [LookupTool()], live=live)
        assert [t.name for t in tools] == ["lookup", "memory_search"]  # gone_tool was never there
        stub = tools[1]
        assert "not available in this session" in stub.description
        assert stub.json_schema()["type"] == "object" and not stub.needs_approval
        assert stub.source_kind == "data"
        _events, results = await execute(tools, tmp_path, ("memory_search", {"query": "risk"}),
                                         ("memory_search", {"query": "other"}))
        assert results[0].content == "[S1] you hold NVDA"
        assert results[1].is_error and "This session has no 'memory_search' tool" in results[1].content


async def test_each_set_of_wrapped_tools_counts_its_own_answers(tmp_path: Path) -> None:
    path = write_pad(tmp_path, [("lookup", {"ticker": "NVDA"}, "one", False),
                                ("lookup", {"ticker": "NVDA"}, "two", False)])
    recording = load_recording(path)
    for _run in range(2):
        _events, results = await execute(recorded_tools(recording, [LookupTool()]), tmp_path,
                                         ("lookup", {"ticker": "NVDA"}), ("lookup", {"ticker": "NVDA"}))
        assert [r.content for r in results] == ["[S1] one", "[S2] two"]
