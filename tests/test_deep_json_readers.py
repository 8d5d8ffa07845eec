"""Files nested deeper than the JSON parser takes (a corrupt or hostile file) are reported
as unreadable by every reader that meets them, never as a crash."""

from __future__ import annotations

from pathlib import Path

import pytest

from dexter.agent.sessions import SessionStore
from dexter.evals.dataset import DatasetError, load_dataset
from dexter.evals.outputs import OutputError, ResultsFile, read_json

DEEP = "[" * 200_000


def test_a_deep_summary_json_is_an_output_error(tmp_path: Path) -> None:
    path = tmp_path / "summary.json"
    path.write_text(DEEP, encoding="utf-8")
    with pytest.raises(OutputError, match="nested too deeply"):
        read_json(path)


def test_a_deep_results_line_is_skipped_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text(DEEP + "\n", encoding="utf-8")
    results = ResultsFile(path)
    assert results.read() == {}
    assert results.skipped_lines == 1


def test_a_deep_dataset_line_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "questions.jsonl"
    path.write_text(DEEP + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="line 1: not valid JSON"):
        load_dataset(path)


def test_a_deep_session_file_is_skipped_with_its_reason(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    store.directory.mkdir(parents=True, exist_ok=True)
    (store.directory / "abc.json").write_text(DEEP, encoding="utf-8")
    listing = store.listing()
    assert listing.records == []
    [skipped] = listing.skipped
    assert "nested too deeply" in skipped.reason
