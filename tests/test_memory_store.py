"""Memory files: names and aliases, confinement to the folder, append/edit/delete, listing."""

from __future__ import annotations

import os
from datetime import date
from pathlib import Path

import pytest

from dexter.memory.store import (
    MemoryPathError,
    MemoryStore,
    MemoryTextNotFound,
    daily_file_date,
    list_memory_files,
    resolve_memory_path,
)

TODAY = date(2025, 3, 14)


@pytest.fixture
def store(tmp_path: Path) -> MemoryStore:
    folder = tmp_path / "memory"
    folder.mkdir()
    return MemoryStore(folder)


@pytest.mark.parametrize(("name", "expected"), [
    ("long_term", "MEMORY.md"),
    ("daily", "2025-03-14.md"),
    ("MEMORY.md", "MEMORY.md"),
    ("2025-03-13.md", "2025-03-13.md"),
    ("goals", "goals.md"),
    ("goals.md", "goals.md"),
])
def test_aliases_and_names_resolve_inside_the_folder(store: MemoryStore, name: str, expected: str) -> None:
    path = resolve_memory_path(store.memory_dir, name, TODAY)
    assert path == store.memory_dir.resolve() / expected


@pytest.mark.parametrize("name", [
    "../secrets", "../../etc/passwd", "..", "/etc/passwd", "~/notes", "sub/notes.md",
    "sub\\notes.md", "C:\\Windows\\notes", ".hidden", "", "   ",
])
def test_names_that_could_leave_the_folder_are_rejected(store: MemoryStore, name: str) -> None:
    with pytest.raises(MemoryPathError):
        resolve_memory_path(store.memory_dir, name, TODAY)


def test_absolute_path_error_says_what_to_use_instead(store: MemoryStore) -> None:
    with pytest.raises(MemoryPathError, match=r"absolute path.*long_term, daily"):
        resolve_memory_path(store.memory_dir, "/etc/passwd", TODAY)


def test_symlinks_are_rejected_even_when_they_point_inside(store: MemoryStore, tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("secret")
    (store.memory_dir / "escape.md").symlink_to(outside)
    (store.memory_dir / "MEMORY.md").write_text("- fact\n")
    (store.memory_dir / "alias.md").symlink_to(store.memory_dir / "MEMORY.md")
    for name in ("escape", "alias.md"):
        with pytest.raises(MemoryPathError, match="symbolic link"):
            store.append(name, "- more")
    assert outside.read_text() == "secret"
    assert [f.name for f in store.list_files()] == ["MEMORY.md"]


def test_append_creates_the_file_and_separates_with_a_newline(store: MemoryStore) -> None:
    result = store.append("long_term", "- Risk tolerance: moderate", TODAY)
    assert result.file == "MEMORY.md"
    assert result.message == "Appended 26 characters to MEMORY.md"
    (store.memory_dir / "MEMORY.md").write_text("- no trailing newline")
    store.append("long_term", "- second")
    assert (store.memory_dir / "MEMORY.md").read_text() == "- no trailing newline\n- second\n"


def test_append_to_daily_uses_todays_local_date(store: MemoryStore) -> None:
    store.append("daily", "- looked at TSLA", TODAY)
    assert (store.memory_dir / "2025-03-14.md").read_text() == "- looked at TSLA\n"


def test_append_rejects_empty_content(store: MemoryStore) -> None:
    with pytest.raises(ValueError, match="empty"):
        store.append("long_term", "  \n")


def test_append_section_writes_a_heading_after_a_blank_line(store: MemoryStore) -> None:
    store.append("daily", "- earlier note", TODAY)
    store.append_section("Pre-compaction memory flush", "- Prefers dividend stocks", today=TODAY)
    assert (store.memory_dir / "2025-03-14.md").read_text() == (
        "- earlier note\n\n## Pre-compaction memory flush\n- Prefers dividend stocks\n")


def test_edit_replaces_only_the_first_occurrence(store: MemoryStore) -> None:
    (store.memory_dir / "MEMORY.md").write_text("- Holds AAPL\n- Watching AAPL\n")
    result = store.edit("long_term", "AAPL", "MSFT")
    assert result.message == "Updated entry in MEMORY.md"
    assert (store.memory_dir / "MEMORY.md").read_text() == "- Holds MSFT\n- Watching AAPL\n"


def test_edit_of_missing_text_tells_the_model_to_use_memory_get(store: MemoryStore) -> None:
    (store.memory_dir / "MEMORY.md").write_text("- Holds AAPL\n")
    with pytest.raises(MemoryTextNotFound, match=r"Could not find the specified text in MEMORY\.md.*memory_get"):
        store.edit("long_term", "NVDA", "AMD")
    assert (store.memory_dir / "MEMORY.md").read_text() == "- Holds AAPL\n"


def test_edit_of_a_missing_file_is_not_found(store: MemoryStore) -> None:
    with pytest.raises(MemoryTextNotFound, match="does not exist"):
        store.edit("goals", "x", "y")


def test_delete_removes_first_occurrence_and_collapses_blank_runs(store: MemoryStore) -> None:
    (store.memory_dir / "MEMORY.md").write_text("- one\n\n- two\n\n- three\n\n- two\n")
    result = store.delete("long_term", "- two\n")
    assert result.message == "Removed entry from MEMORY.md"
    assert (store.memory_dir / "MEMORY.md").read_text() == "- one\n\n- three\n\n- two\n"


def test_list_files_only_shows_markdown_files(store: MemoryStore) -> None:
    for name in ("MEMORY.md", "2025-03-14.md", "goals.md", "index.sqlite", "notes.txt", ".draft.md"):
        (store.memory_dir / name).write_text("x")
    (store.memory_dir / "folder.md").mkdir()
    names = [f.name for f in list_memory_files(store.memory_dir)]
    assert names == ["2025-03-14.md", "MEMORY.md", "goals.md"]


def test_daily_file_date_only_accepts_real_dates() -> None:
    assert daily_file_date("2025-03-14.md") == date(2025, 3, 14)
    assert daily_file_date("2025-02-30.md") is None
    assert daily_file_date("MEMORY.md") is None


def test_edit_is_atomic_and_leaves_no_temporary_files(store: MemoryStore) -> None:
    (store.memory_dir / "MEMORY.md").write_text("- a\n")
    store.edit("long_term", "- a", "- b")
    assert sorted(os.listdir(store.memory_dir)) == [".lock", "MEMORY.md"]  # the writers' lock


# -- containment: links out of the memory folder, and secrets -----------------------------


def test_a_hard_linked_memory_file_is_refused(tmp_path: Path) -> None:
    from dexter.memory.store import MemoryPathError, MemoryStore

    outside = tmp_path / "id_rsa"
    outside.write_text("PRIVATE KEY\n")
    memory = tmp_path / "home" / "memory"
    memory.mkdir(parents=True)
    os.link(outside, memory / "MEMORY.md")
    store = MemoryStore(memory, tmp_path / "home")
    with pytest.raises(MemoryPathError, match="hard links"):
        store.read("long_term")
    with pytest.raises(MemoryPathError, match="hard links"):
        store.append("long_term", "- a fact")
    assert outside.read_text() == "PRIVATE KEY\n"


def test_a_memory_folder_linked_out_of_dexter_home_is_refused(tmp_path: Path) -> None:
    from dexter.memory.store import MemoryPathError, MemoryStore

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    (home / "memory").symlink_to(elsewhere, target_is_directory=True)
    store = MemoryStore(home / "memory", home)
    with pytest.raises(MemoryPathError, match="outside DEXTER_HOME"):
        store.append("long_term", "- a fact")
    assert list(elsewhere.iterdir()) == []


def test_memory_text_with_a_secret_value_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dexter.memory.store import MemorySecretError, MemoryStore

    monkeypatch.setenv("VENDOR_APIKEY", "Xk29dLq8Zp4Rw7Nv3Ty6Hb1")
    store = MemoryStore(tmp_path / "home" / "memory", tmp_path / "home")
    with pytest.raises(MemorySecretError, match="secret value"):
        store.append("long_term", "- the vendor key is Xk29dLq8Zp4Rw7Nv3Ty6Hb1")
    store.append("long_term", "- the vendor key lives in VENDOR_APIKEY")
    assert "Xk29" not in (store.read("long_term") or "")
