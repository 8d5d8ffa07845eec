"""The workspace scan's watched folders (inotify): a folder taken from the cache without
being looked at must never hide a change, whoever makes it, however it is made.

Folders are cached at once here (``STABLE_NS`` = 0) so that every scan after the first
relies on the watches; each test checks what a scan finds after a change, and
``looked`` (folders whose times were read) shows which path the scan took.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from dexter.config import Settings
from dexter.sandbox import scan as scan_module
from dexter.sandbox import watch as watch_module
from dexter.sandbox.scan import TreeScanner

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or not
                                watch_module.FolderWatch().active,
                                reason="inotify is Linux's")


@pytest.fixture(autouse=True)
def _cache_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scan_module, "STABLE_NS", 0)


def _tree(root: Path) -> None:
    for sub in ("a/b/c", "a/d", "e/f/g/h", "node_modules/pkg/lib"):
        (root / sub).mkdir(parents=True)


def test_an_unchanged_watched_tree_is_not_looked_at_but_still_found(tmp_path: Path) -> None:
    _tree(tmp_path)
    (tmp_path / "e" / "f" / "g" / "h" / "id_rsa").write_text("k")
    scanner = TreeScanner()
    first = scanner.scan([tmp_path])
    (tmp_path / "a" / "d" / "notes.txt").write_text("x")  # a change elsewhere: a walk
    second = scanner.scan([tmp_path])
    assert first.looked == first.folders == second.folders == 12 and not second.reused
    assert second.looked == 2 and second.listed == 1  # the root, and the folder changed
    assert second.secret_files == first.secret_files == [tmp_path / "e/f/g/h/id_rsa"]


@pytest.mark.parametrize("change", ["file", "folder", "git", "rename-in", "exchange"])
def test_a_change_deep_in_a_watched_tree_is_found(tmp_path: Path, change: str) -> None:
    _tree(tmp_path)
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    scanner = TreeScanner()
    scanner.scan([tmp_path])
    scanner.scan([tmp_path])
    deep = tmp_path / "node_modules" / "pkg" / "lib"
    if change == "file":
        (deep / ".env").write_text("TOKEN=x")
        expected = [deep / ".env"]
    elif change == "folder":
        (deep / "x" / "y").mkdir(parents=True)
        (deep / "x" / "y" / "credentials.json").write_text("{}")
        expected = [deep / "x" / "y" / "credentials.json"]
    elif change == "git":
        (deep / ".git").mkdir()
        expected = []
    elif change == "rename-in":  # a folder made elsewhere, renamed into the tree
        (outside / "sub").mkdir()
        (outside / "sub" / "server.pem").write_text("key")
        os.rename(outside / "sub", deep / "sub")
        expected = [deep / "sub" / "server.pem"]
    else:  # two folders exchanged in one call
        (outside / "lib").mkdir()
        (outside / "lib" / "id_ed25519").write_text("key")
        _exchange(outside / "lib", deep)
        expected = [deep / "id_ed25519"]
    found = scanner.scan([tmp_path])
    assert found.secret_files == expected
    assert found.git_entries == ([deep / ".git"] if change == "git" else [])
    assert found.looked < found.folders  # the rest of the tree stayed unlooked at


def _exchange(a: Path, b: Path) -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    at_fdcwd, rename_exchange = -100, 2
    if libc.renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange):
        pytest.skip(f"renameat2(RENAME_EXCHANGE) failed: {os.strerror(ctypes.get_errno())}")


def test_a_folder_moved_away_and_replaced_is_not_taken_for_the_old_one(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    scanner = TreeScanner()
    scanner.scan([tmp_path])
    scanner.scan([tmp_path])
    os.rename(tmp_path / "a", tmp_path / "x")  # b's watch goes with it, to x/b
    assert scanner.scan([tmp_path]).folders == 3  # the root, x and x/b
    (tmp_path / "a" / "b").mkdir(parents=True)  # a new folder at the old path
    scanner.scan([tmp_path])
    (tmp_path / "a" / "b" / "id_rsa").write_text("k")
    (tmp_path / "x" / "b" / "id_dsa").write_text("k")
    found = scanner.scan([tmp_path])
    assert sorted(found.secret_files) == [tmp_path / "a/b/id_rsa", tmp_path / "x/b/id_dsa"]


def test_a_folder_a_scan_skipped_is_looked_at_after_its_parent_changed(tmp_path: Path) -> None:
    (tmp_path / "h" / "sub").mkdir(parents=True)
    scanner = TreeScanner()
    scanner.scan([tmp_path])
    scanner.scan([tmp_path])
    os.rename(tmp_path / "h", tmp_path / "h2")
    (tmp_path / "h" / "sub").mkdir(parents=True)
    scanner.scan([tmp_path], skip=[tmp_path / "h"])  # the root is read again, h is not
    (tmp_path / "h" / "sub" / ".env").write_text("x")
    assert scanner.scan([tmp_path]).secret_files == [tmp_path / "h" / "sub" / ".env"]


def test_an_overflowing_queue_makes_every_folder_be_looked_at(tmp_path: Path) -> None:
    _tree(tmp_path)
    busy = tmp_path / "a" / "d"
    scanner = TreeScanner()
    scanner.scan([tmp_path])
    scanner.scan([tmp_path])
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    if limit > 100_000:
        pytest.skip(f"the queue holds {limit:,} events")
    for i in range(limit + 10):  # distinct names: no two events are merged
        os.close(os.open(busy / f"f{i}", os.O_CREAT | os.O_WRONLY, 0o600))
    (tmp_path / "e" / "f" / "g" / "h" / "x.key").write_text("k")
    found = scanner.scan([tmp_path])
    assert found.looked == found.folders == 12
    assert found.secret_files == [tmp_path / "e/f/g/h/x.key"]


def test_a_changed_mount_table_makes_every_folder_be_looked_at(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _tree(tmp_path)
    scanner = TreeScanner()
    scanner.scan([tmp_path])
    assert scanner.scan([tmp_path]).looked == 0
    table = watch_module._mount_table()
    monkeypatch.setattr(watch_module, "_mount_table", lambda: table + "99 1 0:999 / /x rw - tmpfs t rw\n")
    found = scanner.scan([tmp_path])
    assert found.looked == found.folders == 12


def test_folders_on_a_file_system_that_is_not_local_are_always_looked_at(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watch_module, "LOCAL_FS", frozenset())
    _tree(tmp_path)
    scanner = TreeScanner()
    scanner.scan([tmp_path])
    found = scanner.scan([tmp_path])
    assert found.looked == found.folders == 12 and found.listed == 0


def test_without_watches_the_scan_finds_the_same(tmp_path: Path) -> None:
    _tree(tmp_path)
    watched, plain = TreeScanner(), TreeScanner(watch=False)
    for scanner in (watched, plain):
        scanner.scan([tmp_path])
    (tmp_path / "a" / "b" / "c" / ".netrc").write_text("x")
    (tmp_path / "e" / "f" / ".git").mkdir()
    a, b = watched.scan([tmp_path]), plain.scan([tmp_path])
    assert (a.secret_files, a.git_entries) == (b.secret_files, b.git_entries)
    assert b.looked == b.folders and a.looked < a.folders


async def test_what_a_sandboxed_command_did_in_a_watched_folder_is_found_after_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The command writes through the sandbox's bind mount; the check after it (the same
    scanner, watching) sees the new ``.git`` deep in a cached folder and rolls it back."""
    from dexter.sandbox.policy import build_policy
    from dexter.sandbox.process import run_command
    from dexter.sandbox.runner import detect_runner

    settings = Settings()
    settings.home = str(tmp_path / "ws" / ".dexter")
    settings.scratchpad_dir = str(tmp_path / "ws" / "scratchpads")
    runner = detect_runner(settings)
    if not runner.status.active:
        pytest.skip(runner.status.reason)
    ws = tmp_path / "ws"
    deep = ws / "data" / "2024" / "q1"
    deep.mkdir(parents=True)
    scanner = TreeScanner()
    monkeypatch.setattr(scan_module, "_SCANNER", scanner)
    build_policy(settings, ws)
    policy = build_policy(settings, ws)
    assert scanner.scan([ws], skip=[ws / ".dexter"]).looked <= 1  # the root at most
    result = await run_command("mkdir -p data/2024/q1/.git/hooks && echo key > data/2024/q1/.env",
                               ws, 30, runner=runner, policy=policy)
    assert any("data/2024/q1/.git" in f for f in result.findings), result.findings
    assert not (deep / ".git").exists()
    assert build_policy(settings, ws).masked_files == (deep / ".env",)
    await asyncio.sleep(0)


def test_past_its_share_of_watches_a_scan_looks_at_the_rest(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watch_module, "watch_cap", lambda: 4)
    _tree(tmp_path)
    scanner = TreeScanner()
    scanner.scan([tmp_path])
    found = scanner.scan([tmp_path])
    assert found.folders == 12 and found.looked >= 8  # at most 4 watched
    (tmp_path / "node_modules" / "pkg" / "lib" / ".env").write_text("x")
    assert scanner.scan([tmp_path]).secret_files == [tmp_path / "node_modules/pkg/lib/.env"]


def test_a_scan_after_no_change_at_all_reuses_the_last_findings(tmp_path: Path) -> None:
    _tree(tmp_path)
    (tmp_path / "a" / "d" / ".env").write_text("x")
    scanner = TreeScanner()
    walked = scanner.scan([tmp_path])
    again = scanner.scan([tmp_path])
    assert not walked.reused and again.reused and again.looked == 0
    assert (again.secret_files, again.folders) == (walked.secret_files, walked.folders)
    again.secret_files.append(tmp_path / "x")  # a caller's change is its own
    assert scanner.scan([tmp_path]).secret_files == [tmp_path / "a/d/.env"]
    assert not scanner.scan([tmp_path], skip=[tmp_path / "e"]).reused  # other arguments
    (tmp_path / "e" / "f" / "id_rsa").write_text("k")
    found = scanner.scan([tmp_path])
    assert not found.reused and tmp_path / "e/f/id_rsa" in found.secret_files


def test_a_change_seen_by_a_scan_of_other_folders_is_not_lost(tmp_path: Path) -> None:
    _tree(tmp_path)
    scanner = TreeScanner()
    scanner.scan([tmp_path])
    scanner.scan([tmp_path])
    (tmp_path / "a" / "b" / "c" / "id_rsa").write_text("k")
    scanner.scan([tmp_path / "e"])  # takes the event from the queue
    found = scanner.scan([tmp_path])
    assert not found.reused and found.secret_files == [tmp_path / "a/b/c/id_rsa"]


def test_a_root_replaced_by_renaming_its_parent_is_walked_again(tmp_path: Path) -> None:
    ws = tmp_path / "p" / "ws"
    (ws / "sub").mkdir(parents=True)
    scanner = TreeScanner()
    scanner.scan([ws])
    assert scanner.scan([ws]).reused
    os.rename(tmp_path / "p", tmp_path / "p-old")  # no watch sees this: ws itself stays put
    (ws / "sub").mkdir(parents=True)
    (ws / "sub" / "server.pem").write_text("key")
    found = scanner.scan([ws])
    assert not found.reused and found.secret_files == [ws / "sub" / "server.pem"]


def test_findings_are_not_reused_while_a_folder_is_not_watched(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scan_module, "STABLE_NS", 10**18)  # every folder "just changed"
    _tree(tmp_path)
    scanner = TreeScanner()
    first = scanner.scan([tmp_path])
    assert first.untrusted == 12 and not scanner.scan([tmp_path]).reused


def test_a_forked_process_watches_with_its_own_queue(tmp_path: Path) -> None:
    """A child forked from a process that has scanned (a fork server) must not read, or
    trust, the parent's queue: the parent would miss the events the child took."""
    _tree(tmp_path)
    scanner = TreeScanner()
    scanner.scan([tmp_path])
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its first scan looks at every folder again
        try:
            found = scanner.scan([tmp_path])
            os.write(write, f"{found.looked}".encode())
        finally:
            os._exit(0)
    os.close(write)
    child_looked = int(os.read(read, 100) or b"-1")
    os.close(read)
    os.waitpid(pid, 0)
    (tmp_path / "a" / "b" / "c" / ".env").write_text("x")
    assert child_looked == 12
    assert scanner.scan([tmp_path]).secret_files == [tmp_path / "a/b/c/.env"]
