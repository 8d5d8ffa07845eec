"""Single-result governance: the 50,000-character cap and the 200,000-character turn budget."""

from __future__ import annotations

from pathlib import Path

from dexter.config import ContextSettings
from dexter.context.results import (
    PREVIEW_ALLOWANCE_CHARS,
    apply_turn_budget,
    cap_tool_result,
    is_persisted_preview,
    persisted_path,
    result_file_stem,
)
from dexter.messages import ToolResultMessage

CFG = ContextSettings()


def _text(n: int, seed: str = "0123456789") -> str:
    return (seed * (n // len(seed) + 1))[:n]


def test_exactly_50000_characters_stay(tmp_path: Path) -> None:
    content = _text(50_000)
    capped, info = cap_tool_result(content, "call_1", CFG, tmp_path)
    assert capped is content
    assert info is None
    assert not any(tmp_path.iterdir())


def test_50001_characters_are_saved_and_previewed(tmp_path: Path) -> None:
    content = _text(50_001)
    capped, info = cap_tool_result(content, "call_1", CFG, tmp_path)
    assert info is not None and info.path is not None
    assert info.path == (tmp_path / "call_1.txt").resolve()
    assert info.path.read_text(encoding="utf-8") == content
    first_line = capped.split("\n", 1)[0]
    assert str(info.path) in first_line and "(49 KB)" in first_line
    assert content[:2_000] in capped
    assert content[:2_001] not in capped
    assert f'read_file with path="{info.path}" and offset/limit' in capped
    assert persisted_path(capped) == str(info.path)
    assert len(capped) < PREVIEW_ALLOWANCE_CHARS


def test_call_ids_become_safe_distinct_file_names(tmp_path: Path) -> None:
    assert result_file_stem("toolu_01ABC-x") == "toolu_01ABC-x"
    unsafe = result_file_stem("../../etc/passwd")
    assert set(unsafe) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
    assert result_file_stem("a.b") != result_file_stem("a_b")
    assert result_file_stem("").startswith("result-")
    _, info = cap_tool_result(_text(60_000), "../../escape", CFG, tmp_path)
    assert info is not None and info.path is not None
    assert info.path.parent == tmp_path.resolve()


def test_a_repeated_call_id_never_overwrites_an_earlier_file(tmp_path: Path) -> None:
    _, first = cap_tool_result(_text(60_000, "a"), "call_1", CFG, tmp_path)
    _, second = cap_tool_result(_text(60_000, "b"), "call_1", CFG, tmp_path)
    assert first is not None and second is not None
    assert first.path != second.path
    assert first.path is not None and first.path.read_text()[0] == "a"


def test_storage_failure_still_gives_a_preview_not_an_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    content = _text(70_000)
    capped, info = cap_tool_result(content, "call_1", CFG, blocker / "tool-results")
    assert info is not None and info.path is None and info.error
    assert "could not be saved" in capped
    assert content[:2_000] in capped
    assert persisted_path(capped) is None
    assert is_persisted_preview(capped)


def _result(call_id: str, size: int, *, is_error: bool = False) -> ToolResultMessage:
    return ToolResultMessage(call_id, "web_fetch", _text(size), is_error=is_error)


def test_turn_of_exactly_200000_characters_stays(tmp_path: Path) -> None:
    results = [_result("a", 50_000), _result("b", 50_000), _result("c", 50_000),
               _result("d", 50_000)]
    out, report = apply_turn_budget(results, CFG, tmp_path)
    assert out is results
    assert not report.changed


def test_turn_of_200001_characters_persists_the_largest_first(tmp_path: Path) -> None:
    results = [_result("a", 40_000), _result("b", 50_000), _result("c", 49_999),
               _result("d", 40_000), _result("e", 20_002)]
    assert sum(len(r.content) for r in results) == 200_001
    out, report = apply_turn_budget(results, CFG, tmp_path)
    assert [i.tool_call_id for i in report.persisted] == ["b"]
    assert report.chars_after == 200_001 - 50_000 + PREVIEW_ALLOWANCE_CHARS
    assert is_persisted_preview(out[1].content)
    assert [r.content for i, r in enumerate(out) if i != 1] == [
        r.content for i, r in enumerate(results) if i != 1]
    assert [r.tool_call_id for r in out] == ["a", "b", "c", "d", "e"]


def test_error_results_are_persisted_only_when_nothing_else_fits(tmp_path: Path) -> None:
    results = [_result("err", 150_000, is_error=True), _result("ok", 60_000)]
    out, report = apply_turn_budget(results, CFG, tmp_path)
    assert [i.tool_call_id for i in report.persisted] == ["ok"]
    assert out[0] is results[0]

    errors_only = [_result("e1", 190_000, is_error=True), _result("e2", 20_000, is_error=True)]
    out, report = apply_turn_budget(errors_only, CFG, tmp_path)
    assert [i.tool_call_id for i in report.persisted] == ["e1"]
    assert report.errors_persisted == 1
    assert out[0].is_error


def test_disabled_defenses_keep_everything(tmp_path: Path) -> None:
    off = ContextSettings(enabled=False)
    content = _text(80_000)
    assert cap_tool_result(content, "x", off, tmp_path) == (content, None)
    results = [_result("a", 300_000)]
    assert apply_turn_budget(results, off, tmp_path)[0] is results
