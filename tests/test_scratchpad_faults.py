"""The scratchpad under storage faults: a full disk, a file-size limit, a read-only folder.

A failed write is reported at once (a ``scratchpad_error`` event, one warning line) and at
the end (``done.record_complete`` false), the run goes on with its exit code, and the
file never ends in half a line. A folder no run could write is a configuration error
(exit 2) before any model call. Real limits are used where the system allows them without
privileges: ``RLIMIT_FSIZE`` always, a small tmpfs in a user namespace when ``unshare``
can make one; a fault-injecting writer stands in for a full disk everywhere else.
"""

from __future__ import annotations

import errno
import io
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import dexter.scratchpad as scratchpad_module
from dexter.events import Done, ScratchpadError
from dexter.render.jsonl import JsonRenderer
from dexter.render.plain import PlainRenderer
from dexter.scratchpad import Scratchpad, append_whole, folder_problem
from dexter.testing.fakellm import FakeLLM, Reply, ToolCallSpec
from tests.cli_helpers import CliResult, cli_env, run_cli

pytestmark = pytest.mark.e2e

BIG_PLAN = "Let me work this out step by step. " * 600  # ~21 KB: one line over any limit here
CALC = [ToolCallSpec("calculator", {"expression": "2 + 2"})]


class FullDisk(ModuleType):
    """``os`` for the scratchpad module, whose ``write`` takes ``room`` bytes in all and then
    fails with ``ENOSPC``, after a partial write, as a full disk does."""

    def __init__(self, room: int) -> None:
        super().__init__("os")
        self.room = room
        self.failures = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def write(self, fd: int, data: bytes | memoryview) -> int:
        if self.room <= 0:
            self.failures += 1
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        taken = os.write(fd, bytes(data[: self.room]))
        self.room -= taken
        return taken


@pytest.fixture
def full_disk(monkeypatch: pytest.MonkeyPatch) -> Callable[[int], FullDisk]:
    def make(room: int) -> FullDisk:
        fake = FullDisk(room)
        monkeypatch.setattr(scratchpad_module, "os", fake)
        return fake
    return make


def whole_lines(path: Path) -> list[dict[str, Any]]:
    """Every line of the file as JSON; fails when the file ends in half a line."""
    raw = path.read_bytes()
    assert raw == b"" or raw.endswith(b"\n"), f"{path} ends mid-line: {raw[-80:]!r}"
    return [json.loads(line) for line in raw.decode("utf-8").splitlines()]


# -- the writer -----------------------------------------------------------------------------

def test_a_write_cut_short_is_truncated_back_to_the_last_whole_line(
        tmp_path: Path, full_disk: Callable[[int], FullDisk]) -> None:
    pad = Scratchpad(tmp_path, "NVDA revenue")
    size = pad.path.stat().st_size
    disk = full_disk(100)  # room for part of the next line only
    pad.add_tool_result("web_fetch", {"url": "https://x"}, "r" * 5000, duration_ms=1,
                        is_error=False, tool_call_id="c1")
    assert disk.failures == 1
    assert pad.path.stat().st_size == size
    assert [e["type"] for e in whole_lines(pad.path)] == ["init"]
    assert pad.write_error is not None
    assert str(pad.path) in pad.write_error and "ENOSPC" in pad.write_error
    assert "No space left on device" in pad.write_error
    assert pad.take_write_error() == pad.write_error
    assert pad.take_write_error() is None  # reported once
    assert not pad.complete
    assert "r" * 5000 in pad.tool_results_text()  # the run still has the data in memory


def test_later_lines_that_fit_are_still_written(tmp_path: Path,
                                                full_disk: Callable[[int], FullDisk]) -> None:
    pad = Scratchpad(tmp_path, "q")
    disk = full_disk(0)
    pad.append("note", text="lost")
    disk.room = 10_000  # space came back (a file was deleted)
    pad.append("note", text="kept")
    assert [e.get("text") for e in whole_lines(pad.path)] == [None, "kept"]
    assert pad.write_error is not None and not pad.complete


def test_a_folder_that_cannot_be_created_leaves_the_run_in_memory(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    pad = Scratchpad(blocker / "scratchpads", "q")
    pad.add_tool_result("t", {}, "data", duration_ms=1, is_error=False, tool_call_id="c1")
    assert pad.write_error is not None and "Could not create the scratchpad" in pad.write_error
    assert str(blocker / "scratchpads") in pad.write_error
    assert pad.tool_results_text().endswith("data")


def test_append_whole_never_creates_the_file(tmp_path: Path) -> None:
    error = append_whole(tmp_path / "missing.jsonl", b"{}\n")
    assert error is not None and error.errno == errno.ENOENT
    assert not (tmp_path / "missing.jsonl").exists()


def test_folder_problem_names_what_is_wrong(tmp_path: Path) -> None:
    assert folder_problem(tmp_path) is None
    assert folder_problem(tmp_path / "not" / "yet") is None  # made by the first run
    (tmp_path / "f").write_text("x")
    assert folder_problem(tmp_path / "f") == f"{tmp_path / 'f'} is not a folder"
    assert folder_problem(tmp_path / "f" / "sub") == f"{tmp_path / 'f'} is not a folder"


# -- the views ------------------------------------------------------------------------------

ERROR = ScratchpadError("pads/a.jsonl", "Could not write the scratchpad pads/a.jsonl: "
                                        "No space left on device (ENOSPC)")
INCOMPLETE = Done("4", record_complete=False, record_error=ERROR.message)


def test_plain_view_warns_at_once_and_at_the_end() -> None:
    stream = io.StringIO()
    view = PlainRenderer(stream)
    view.handle(ERROR)
    view.handle(INCOMPLETE)
    lines = stream.getvalue().splitlines()
    assert lines[0] == ("⚠ Could not write the scratchpad pads/a.jsonl: No space left on device "
                        "(ENOSPC). The run goes on, but its record will be incomplete.")
    assert lines[-1] == ("⚠ The record of this run is incomplete: Could not write the "
                         "scratchpad pads/a.jsonl: No space left on device (ENOSPC)")


def test_plain_view_says_nothing_of_a_complete_record() -> None:
    stream = io.StringIO()
    PlainRenderer(stream).handle(Done("4"))
    assert "record" not in stream.getvalue()


def test_json_view_writes_the_event_and_the_flag() -> None:
    stream = io.StringIO()
    view = JsonRenderer(stream)
    view.handle(ERROR)
    view.handle(INCOMPLETE)
    first, last = (json.loads(line) for line in stream.getvalue().splitlines())
    assert first == {"type": "scratchpad_error", "path": "pads/a.jsonl", "message": ERROR.message}
    assert last["record_complete"] is False and last["record_error"] == ERROR.message


def test_live_view_shows_a_notice() -> None:
    from rich.console import Console

    from dexter.render.live import LiveRenderer

    out = io.StringIO()
    view = LiveRenderer(Console(file=out, width=200, force_terminal=False, color_system=None),
                        live=False)
    view.handle(ERROR)
    view.handle(INCOMPLETE)
    view.close()
    text = out.getvalue()
    assert "No space left on device (ENOSPC). The run goes on" in text
    assert "The record of this run is incomplete" in text


# -- dexter ask under real limits -----------------------------------------------------------

@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


def _ask(cwd: Path, env: dict[str, str], *, prefix: list[str] | None = None,
         preexec: Callable[[], None] | None = None, code: str | None = None) -> CliResult:
    """``dexter ask --json`` (or ``code`` run with ``python -c``), in ``cwd``: a new
    interpreter under ``prefix`` or ``preexec`` or for ``code`` (the fault is set up before
    it starts), else a fork-server run (:func:`tests.cli_helpers.run_cli`)."""
    ask = ["ask", "--json", "--model", "gpt-5.6-sol", "What is 2 + 2?"]
    if prefix is None and preexec is None and code is None:
        return run_cli(ask, cwd=cwd, env=env, timeout=120)
    command = ([sys.executable, "-c", code] if code is not None else
               [sys.executable, "-m", "dexter"])
    args = [*command, *ask]
    # No bytecode: under a file-size limit the interpreter would leave truncated .pyc files.
    env = {**env, "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run([*(prefix or []), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, preexec_fn=preexec)
    return CliResult(proc.returncode, proc.stdout, proc.stderr, cwd)


def _assert_reported(result: CliResult, pads: list[Path], why: str) -> None:
    assert result.code == 0, result.stderr  # the run itself answered
    assert "Traceback" not in result.stderr
    events = result.events
    errors = [e for e in events if e["type"] == "scratchpad_error"]
    assert len(errors) == 1, events
    assert len(pads) == 1
    assert pads[0].name in errors[0]["message"] and why in errors[0]["message"]
    done = events[-1]
    assert done["type"] == "done" and done["status"] == "ok" and "4" in done["answer"]
    assert done["record_complete"] is False and why in done["record_error"]
    entries = whole_lines(pads[0])
    assert entries[0]["type"] == "init"
    assert entries[-1]["type"] == "done" and entries[-1]["record_complete"] is False
    assert "thinking" not in [e["type"] for e in entries]  # the line that did not fit


def _limit_file_size(limit: int) -> Callable[[], None]:
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def test_ask_under_a_file_size_limit_warns_and_flags_done(fake: FakeLLM, tmp_path: Path) -> None:
    fake.enqueue(Reply(text=BIG_PLAN, tool_calls=CALC), Reply(text="2 + 2 is 4."))
    result = _ask(tmp_path, cli_env(fake, tmp_path), preexec=_limit_file_size(8192))
    _assert_reported(result, result.scratchpads(), "EFBIG")
    assert len(fake.requests_for("openai")) == 2


def test_ask_on_a_full_disk_warns_and_flags_done(fake: FakeLLM, tmp_path: Path) -> None:
    """A fault-injecting writer: the disk has room for 4 KB of scratchpad, then none; the
    failing write stores half its bytes before it fails (as some file systems do)."""
    fake.enqueue(Reply(text=BIG_PLAN, tool_calls=CALC), Reply(text="2 + 2 is 4."))
    code = (
        "import errno, os, sys\n"
        "import dexter.scratchpad as pad\n"
        "class Full:\n"
        "    room = 4096\n"
        "    def __getattr__(self, name): return getattr(os, name)\n"
        "    def write(self, fd, data):\n"
        "        data = bytes(data)\n"
        "        if len(data) > Full.room:\n"
        "            os.write(fd, data[:Full.room // 2])\n"
        "            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))\n"
        "        Full.room -= len(data)\n"
        "        return os.write(fd, data)\n"
        "pad.os = Full()\n"
        "sys.argv[0] = 'dexter'\n"
        "from dexter.cli.app import main\n"
        "main()\n"
    )
    result = _ask(tmp_path, cli_env(fake, tmp_path), code=code)
    _assert_reported(result, result.scratchpads(), "ENOSPC")


def _unshare_works() -> bool:
    if shutil.which("unshare") is None or not sys.platform.startswith("linux"):
        return False
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs none /mnt || "
                            "mount -t tmpfs none /tmp"], capture_output=True, timeout=30)
    return probe.returncode == 0


needs_userns = pytest.mark.skipif(not _unshare_works(),
                                  reason="no unprivileged user namespace to mount a tmpfs in")


def _in_namespace(setup: str, after: str = "") -> list[str]:
    """A prefix that runs the command in a user and mount namespace after ``setup`` (shell),
    then ``after``, keeping the command's exit code."""
    script = f'set -e; {setup}; set +e; "$@"; rc=$?; {after or ":"}; exit $rc'
    return ["unshare", "-rm", "sh", "-c", script, "sh"]


@needs_userns
def test_ask_on_a_really_full_tmpfs(fake: FakeLLM, tmp_path: Path) -> None:
    fake.enqueue(Reply(text=BIG_PLAN, tool_calls=CALC), Reply(text="2 + 2 is 4."))
    small, out = tmp_path / "small", tmp_path / "out"
    small.mkdir()
    out.mkdir()
    # 64 KiB of tmpfs with 8 KiB left: the first lines fit, the 21 KB plan does not
    setup = (f"mount -t tmpfs -o size=64k tmpfs {small}; mkdir {small}/pads; "
             f"head -c 57344 /dev/zero > {small}/filler")
    prefix = _in_namespace(setup, after=f"cp {small}/pads/*.jsonl {out}/")
    env = cli_env(fake, tmp_path, DEXTER_SCRATCHPAD_DIR=str(small / "pads"))
    result = _ask(tmp_path, env, prefix=prefix)
    _assert_reported(result, sorted(out.glob("*.jsonl")), "ENOSPC")


@needs_userns
def test_a_read_only_scratchpad_folder_is_a_configuration_error(fake: FakeLLM,
                                                                tmp_path: Path) -> None:
    mount = tmp_path / "ro"
    mount.mkdir()
    setup = (f"mount -t tmpfs tmpfs {mount}; mkdir {mount}/pads; "
             f"mount -o remount,ro {mount}")
    env = cli_env(fake, tmp_path, DEXTER_SCRATCHPAD_DIR=str(mount / "pads"))
    result = _ask(tmp_path, env, prefix=_in_namespace(setup))
    assert result.code == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert f"The scratchpad folder {mount / 'pads'} cannot be written" in result.stderr
    assert "read-only file system" in result.stderr
    assert "scratchpad_dir" in result.stderr and "DEXTER_SCRATCHPAD_DIR" in result.stderr
    assert fake.requests == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through folder permissions")
def test_a_folder_without_write_permission_is_a_configuration_error(fake: FakeLLM,
                                                                    tmp_path: Path) -> None:
    pads = tmp_path / "pads"
    pads.mkdir()
    pads.chmod(0o555)
    try:
        result = _ask(tmp_path, cli_env(fake, tmp_path, DEXTER_SCRATCHPAD_DIR=str(pads)))
    finally:
        pads.chmod(0o755)
    assert result.code == 2 and "not writable" in result.stderr and fake.requests == []


def test_a_file_in_place_of_the_folder_is_a_configuration_error(fake: FakeLLM,
                                                                tmp_path: Path) -> None:
    (tmp_path / "scratchpads").write_text("a file where the folder should be")
    result = _ask(tmp_path, cli_env(fake, tmp_path))
    assert result.code == 2, result.stderr
    assert "Traceback" not in result.stderr
    folder = tmp_path.resolve() / "scratchpads"
    assert f"The scratchpad folder {folder} cannot be written: {folder} is not a folder" \
        in result.stderr
    assert "scratchpad_dir" in result.stderr and "DEXTER_SCRATCHPAD_DIR" in result.stderr
    assert fake.requests == []
    assert (tmp_path / "scratchpads").read_text() == "a file where the folder should be"


def test_a_lone_surrogate_from_the_model_reaches_every_writer(fake: FakeLLM,
                                                              tmp_path: Path) -> None:
    half = "\ud83d"  # half of a split emoji, as JSON escapes can carry it
    fake.enqueue(Reply(text=f"Checking {half}", tool_calls=[
        ToolCallSpec("calculator", {"expression": "2 + 2", "note": half})]),
        Reply(text=f"2 + 2 is 4 {half}"))
    result = _ask(tmp_path, cli_env(fake, tmp_path))
    assert result.code == 0, result.stderr
    done = result.events[-1]
    assert done["type"] == "done" and done["record_complete"] is True
    assert "\ufffd" in done["answer"]
    entries = whole_lines(result.scratchpads()[0])
    assert entries[-1]["type"] == "done" and "\ufffd" in entries[-1]["answer"]
