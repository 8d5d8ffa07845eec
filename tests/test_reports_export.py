"""The report file's place (``reports.export.OutputTarget``): its folder is opened when the
path is checked and written relative to that, so a folder swapped, moved or replaced by the
time of the write is refused, never followed out of the workspace."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from dexter.reports import Report, ReportSource
from dexter.reports.export import OutputRefused, OutputTarget, open_output, save_report


def sample_report() -> Report:
    return Report("What does XYZ hold?", "2026-12-01 10:00 UTC", "gpt-5", "Assets grew [S1].",
                  (ReportSource("S1", "balance sheets", "https://example.com/x", "t", True),),
                  "", (), ())


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / "reports").mkdir(parents=True)
    outside.mkdir()
    return ws, outside


def _open(ws: Path, path: str, **kwargs: object) -> OutputTarget:
    return open_output(Path(path), ws, ws / ".dexter", **kwargs)  # type: ignore[arg-type]


def test_a_checked_folder_is_written(world: tuple[Path, Path]) -> None:
    ws, _ = world
    target = _open(ws, "reports/a.md")
    target.write(b"# report\n")
    target.close()
    assert (ws / "reports" / "a.md").read_bytes() == b"# report\n"
    assert oct((ws / "reports" / "a.md").stat().st_mode & 0o777) == "0o644"
    assert os.listdir(ws / "reports") == ["a.md"]


def test_a_folder_swapped_for_a_symlink_after_the_check_is_refused(
        world: tuple[Path, Path]) -> None:
    ws, outside = world
    target = _open(ws, "reports/a.md")
    shutil.rmtree(ws / "reports")
    (ws / "reports").symlink_to(outside)
    with pytest.raises(OutputRefused, match="symbolic link"):
        target.write(b"x")
    assert list(outside.iterdir()) == []


def test_a_folder_moved_and_replaced_after_the_check_is_refused(
        world: tuple[Path, Path]) -> None:
    ws, _ = world
    target = _open(ws, "reports/a.md")
    (ws / "reports").rename(ws / "old")
    (ws / "reports").mkdir()
    with pytest.raises(OutputRefused, match="replaced or moved during the run"):
        target.write(b"x")
    assert list((ws / "reports").iterdir()) == [] and list((ws / "old").iterdir()) == []


def test_the_last_folder_made_a_symlink_before_it_is_created_is_refused(
        world: tuple[Path, Path]) -> None:
    ws, outside = world
    target = _open(ws, "fresh/a.md")
    (ws / "fresh").symlink_to(outside)
    with pytest.raises(OutputRefused):
        target.write(b"x")
    assert list(outside.iterdir()) == []


def test_the_last_folder_is_created_at_the_write(world: tuple[Path, Path]) -> None:
    ws, _ = world
    target = _open(ws, "fresh/a.md")
    assert not (ws / "fresh").exists()
    target.write(b"x")
    assert (ws / "fresh" / "a.md").read_bytes() == b"x"


def test_a_symlink_at_the_file_name_is_replaced_not_followed(world: tuple[Path, Path]) -> None:
    ws, outside = world
    (outside / "victim.md").write_text("keep")
    target = _open(ws, "reports/a.md")
    (ws / "reports" / "a.md").symlink_to(outside / "victim.md")
    target.write(b"report")
    assert (outside / "victim.md").read_text() == "keep"
    assert not (ws / "reports" / "a.md").is_symlink()


def test_a_symlink_on_the_way_in_the_workspace_or_an_allowed_folder_is_refused(
        world: tuple[Path, Path], tmp_path: Path) -> None:
    ws, outside = world
    (ws / "link").symlink_to(outside)
    with pytest.raises(OutputRefused, match="give the real folder"):
        _open(ws, str(ws / "link" / "a.md"))
    shared = tmp_path / "shared"
    (shared / "real").mkdir(parents=True)
    (shared / "link").symlink_to(shared / "real")
    with pytest.raises(OutputRefused, match="symbolic link inside a folder commands may write"):
        _open(ws, str(shared / "link" / "a.md"), writable=[str(shared)])


def test_a_symlink_outside_the_folders_commands_write_is_the_users_own(
        world: tuple[Path, Path], tmp_path: Path) -> None:
    ws, outside = world
    (tmp_path / "mine").symlink_to(outside)
    target = _open(ws, str(tmp_path / "mine" / "a.md"))
    target.write(b"x")
    assert (outside / "a.md").read_bytes() == b"x"


def test_dot_dot_in_the_path_is_refused(world: tuple[Path, Path]) -> None:
    ws, _ = world
    with pytest.raises(OutputRefused, match=r"without '\.\.'"):
        _open(ws, str(ws / "reports" / ".." / "reports" / "a.md"))


def test_a_refused_report_is_kept_under_dexter_home(world: tuple[Path, Path]) -> None:
    ws, outside = world
    home = ws / ".dexter"
    target = _open(ws, "reports/a.md")
    shutil.rmtree(ws / "reports")
    (ws / "reports").symlink_to(outside)
    problem = save_report(sample_report(), target, home=home)
    assert problem is not None and f"The report is in {home / 'reports' / 'a.md'} instead." in problem
    assert (home / "reports" / "a.md").read_text().startswith("# ")
    again = _open(ws, str(home / "reports" / "b.md"))  # DEXTER_HOME itself: fine
    again.close()
