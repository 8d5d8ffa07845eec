"""``dexter memory list|search|show|reindex`` and ``/memory`` output and exit codes."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
from rich.console import Console

from dexter.config import Settings
from dexter.memory import cli
from dexter.memory.manager import MemoryManager

NOW = datetime(2025, 3, 14, 9, 30)


@pytest.fixture
def mgr(tmp_path: Path) -> MemoryManager:
    m = MemoryManager(Settings(home=str(tmp_path / "home")), env={},
                      clock=lambda: NOW)
    m.update("append", "long_term", "- Risk tolerance: moderate")
    m.update("append", "daily", "- Looked at the KO dividend history")
    return m


def console() -> Console:
    return Console(record=True, width=120, color_system=None)


def test_list_shows_status_mode_and_files(mgr: MemoryManager) -> None:
    out = console()
    assert cli.list_command(mgr, out) == cli.OK
    text = out.export_text()
    assert "Memory: available" in text
    assert "Search: keyword only" in text and "2 files, 2 chunks" in text
    assert "OPENAI_API_KEY" in text
    assert "MEMORY.md" in text and "long-term" in text
    assert "2025-03-14.md" in text and "daily" in text


def test_search_prints_hits_with_location(mgr: MemoryManager) -> None:
    out = console()
    assert cli.search_command(mgr, out, "dividend") == cli.OK
    text = out.export_text()
    assert "2025-03-14.md:1-1" in text and "KO dividend" in text
    empty = console()
    assert cli.search_command(mgr, empty, "unrelated") == cli.OK
    assert "No matches." in empty.export_text()
    assert cli.search_command(mgr, console(), "   ") == cli.BAD_ARGUMENT


def test_show_prints_the_file_and_refuses_bad_names(mgr: MemoryManager) -> None:
    out = console()
    assert cli.show_command(mgr, out, "long_term") == cli.OK
    assert "- Risk tolerance: moderate" in out.export_text()
    bad = console()
    assert cli.show_command(mgr, bad, "../etc/passwd") == cli.BAD_ARGUMENT
    assert "not a plain file name" in bad.export_text()
    assert cli.show_command(mgr, console(), "goals") == cli.BAD_ARGUMENT


def test_reindex_repairs_a_corrupt_index(mgr: MemoryManager) -> None:
    mgr.index_path.parent.mkdir(parents=True, exist_ok=True)
    mgr.index_path.write_bytes(b"garbage" * 100)
    broken = console()
    assert cli.list_command(mgr, broken) == cli.UNAVAILABLE
    assert "unavailable" in broken.export_text()
    out = console()
    assert cli.reindex_command(mgr, out) == cli.OK
    assert "Rebuilt the memory index" in out.export_text()
    assert cli.search_command(mgr, console(), "risk") == cli.OK


def test_disabled_memory_is_reported(tmp_path: Path) -> None:
    settings = Settings(home=str(tmp_path / "home"))
    settings.memory.enabled = False
    out = console()
    assert cli.list_command(MemoryManager(settings, env={}), out) == cli.UNAVAILABLE
    assert "Memory is off" in out.export_text()


async def test_slash_memory_dispatches_inside_a_running_loop(mgr: MemoryManager) -> None:
    out = console()
    assert await cli.memory_slash(mgr, out, "search risk") == cli.OK
    assert "MEMORY.md:1-1" in out.export_text()
    assert await cli.memory_slash(mgr, console(), "") == cli.OK
    bad = console()
    assert await cli.memory_slash(mgr, bad, "frobnicate") == cli.BAD_ARGUMENT
    assert "Unknown /memory command" in bad.export_text()
