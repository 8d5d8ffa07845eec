"""Two dexter processes on one ``DEXTER_HOME`` never lose each other's writes.

Real processes, started together: each appends 150 memory lines and edits (and sometimes
deletes) its own, in one file, while the other does the same; each appends 150 long turns
to the sessions log. Nothing may go missing or be torn. Repeated a few times, since a race
does not show on every run.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dexter.filelock import append_locked, locked, write_atomic
from tests.cli_helpers import script_argv

LINES = 150
TRIALS = 3

MEMORY_WORKER = """
import sys, time
from pathlib import Path
from dexter.memory.store import MemoryStore
folder, me, go, lines = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
while not go.exists():
    time.sleep(0.001)
store = MemoryStore(folder)
for n in range(lines):
    store.append("NOTES.md", f"- {me} {n} draft")
    store.edit("NOTES.md", f"- {me} {n} draft", f"- {me} {n} final")
    if n % 10 == 9:
        store.delete("NOTES.md", f"- {me} {n} final")
"""

SESSIONS_WORKER = """
import sys, time
from pathlib import Path
from dexter.agent.conversation import Turn, append_session_log
home, me, go, lines = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
while not go.exists():
    time.sleep(0.001)
for n in range(lines):
    problem = append_session_log(home, Turn(query=f"{me} {n}", answer=me * 100_000,
                                            status="ok", timestamp="2026-01-01T00:00:00"))
    assert problem is None, problem
"""


HISTORY_WORKER = """
import sys, time
from pathlib import Path
from dexter.repl.terminal import ScrubbedFileHistory
path, me, go, lines = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
path.parent.mkdir(parents=True, exist_ok=True)
while not go.exists():
    time.sleep(0.001)
history = ScrubbedFileHistory(str(path))
for n in range(lines):
    history.store_string(f"{me} {n} first line\\n" + me * 20_000)
"""

RULES_WORKER = """
import sys, time
from pathlib import Path
from dexter.repl.handlers import append_rule
path, me, go, lines = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
while not go.exists():
    time.sleep(0.001)
for n in range(lines):
    append_rule(path, f"{me} rule {n}")
"""


def _race(code: str, target: Path, go: Path) -> None:
    """Run two workers of ``code`` on ``target``, released together, and wait for both.
    Each is a process of its own started through the warm launcher (a cold interpreter spent
    up to 0.7 CPU-s importing dexter's modules, twice a test)."""
    script = go.with_name("worker.py")
    script.write_text(code, encoding="utf-8")
    workers = [subprocess.Popen([sys.executable, *script_argv(script, str(target), name,
                                                              str(go), str(LINES))],
                                stderr=subprocess.PIPE, text=True) for name in ("a", "b")]
    time.sleep(0.3)  # both workers up and waiting (a late one only races less)
    go.touch()
    for worker in workers:
        _, err = worker.communicate(timeout=300)
        assert worker.returncode == 0, err


@pytest.mark.parametrize("trial", range(TRIALS))
def test_two_processes_editing_one_memory_file_lose_nothing(tmp_path: Path, trial: int) -> None:
    folder = tmp_path / "memory"
    _race(MEMORY_WORKER, folder, tmp_path / "go")
    lines = (folder / "NOTES.md").read_text(encoding="utf-8").split("\n")
    kept = [line for line in lines if line.strip()]
    expected = {f"- {me} {n} final" for me in "ab" for n in range(LINES) if n % 10 != 9}
    assert not [line for line in kept if "draft" in line]
    assert len(kept) == len(expected) == 270
    assert set(kept) == expected
    assert sorted(p.name for p in folder.iterdir()) == [".lock", "NOTES.md"]  # no temp left


@pytest.mark.parametrize("trial", range(TRIALS))
def test_two_processes_appending_long_turns_to_the_sessions_log_tear_nothing(
        tmp_path: Path, trial: int) -> None:
    _race(SESSIONS_WORKER, tmp_path, tmp_path / "go")
    log = tmp_path / "history" / "sessions.jsonl"
    rows = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 2 * LINES
    assert {row["query"] for row in rows} == {f"{me} {n}" for me in "ab" for n in range(LINES)}
    assert all(row["answer"] == row["query"][0] * 100_000 for row in rows)


def test_append_locked_creates_the_file_and_writes_whole_records(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    append_locked(path, b"one\n")
    append_locked(path, b"two\n")
    assert path.read_bytes() == b"one\ntwo\n"


def test_write_atomic_leaves_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "f.json"
    write_atomic(path, b"{}")
    with locked(tmp_path / ".lock"):
        write_atomic(path, b'{"a": 1}')
    assert path.read_bytes() == b'{"a": 1}'
    assert sorted(p.name for p in tmp_path.iterdir()) == [".lock", "f.json"]


@pytest.mark.parametrize("trial", range(TRIALS))
def test_two_repls_sharing_the_input_history_tear_no_entry(tmp_path: Path, trial: int) -> None:
    from prompt_toolkit.history import FileHistory

    path = tmp_path / "history" / "repl_history"
    _race(HISTORY_WORKER, path, tmp_path / "go")
    entries = list(FileHistory(str(path)).load_history_strings())
    assert len(entries) == 2 * LINES
    expected = {f"{me} {n} first line\n" + me * 20_000 for me in "ab" for n in range(LINES)}
    assert set(entries) == expected


@pytest.mark.parametrize("trial", range(TRIALS))
def test_two_repls_adding_rules_keep_every_rule(tmp_path: Path, trial: int) -> None:
    path = tmp_path / "home" / "RULES.md"
    _race(RULES_WORKER, path, tmp_path / "go")
    lines = path.read_text(encoding="utf-8").splitlines()
    assert sorted(lines) == sorted(f"- {me} rule {n}" for me in "ab" for n in range(LINES))
