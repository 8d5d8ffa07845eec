"""The memory tools as the model uses them: arguments, results and errors."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from dexter.config import Settings
from dexter.memory.manager import MemoryManager
from dexter.tools.base import Tool, ToolContext, ToolFailure
from dexter.tools.memory import memory_tools

NOW = datetime(2025, 3, 14, 9, 30)


@pytest.fixture
def mgr(tmp_path: Path) -> MemoryManager:
    return MemoryManager(Settings(home=str(tmp_path / "home")), env={}, embedder=None,
                         clock=lambda: NOW)


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(settings=Settings(home=str(tmp_path / "home")), cwd=tmp_path,
                       home=tmp_path / "home")


def tool(mgr: MemoryManager, name: str) -> Tool[Any]:
    return {t.name: t for t in memory_tools(mgr)}[name]


async def call(mgr: MemoryManager, ctx: ToolContext, name: str, **args: Any) -> Any:
    t = tool(mgr, name)
    out = await t.run(t.parse_args(args), ctx)
    assert isinstance(out, str)
    return json.loads(out)["data"]


def test_flags_and_schema(mgr: MemoryManager) -> None:
    tools = {t.name: t for t in memory_tools(mgr)}
    assert list(tools) == ["memory_search", "memory_get", "memory_update"]
    assert tools["memory_search"].concurrency_safe and tools["memory_search"].compactable
    assert tools["memory_get"].concurrency_safe and tools["memory_get"].compactable
    assert not tools["memory_update"].concurrency_safe
    assert not tools["memory_update"].needs_approval
    props = tools["memory_get"].json_schema()["properties"]
    assert set(props) == {"path", "from", "lines"}
    update = tools["memory_update"].json_schema()["properties"]
    assert update["action"]["enum"] == ["append", "edit", "delete"]


async def test_append_then_search_then_get(mgr: MemoryManager, ctx: ToolContext) -> None:
    data = await call(mgr, ctx, "memory_update", content="- Goal: buy a house in 2027")
    assert data == {"success": True, "file": "MEMORY.md",
                    "message": "Appended 27 characters to MEMORY.md"}
    found = await call(mgr, ctx, "memory_search", query="house goal")
    assert found["mode"] == "keyword"
    hit = found["results"][0]
    assert (hit["path"], hit["start_line"], hit["end_line"], hit["match"]) == ("MEMORY.md", 1, 1, "keyword")
    got = await call(mgr, ctx, "memory_get", path=hit["path"], **{"from": 1, "lines": 1})
    assert got == {"path": "MEMORY.md", "from": 1, "to": 1, "total_lines": 1,
                   "text": "- Goal: buy a house in 2027"}


async def test_append_to_daily_writes_todays_file(mgr: MemoryManager, ctx: ToolContext) -> None:
    data = await call(mgr, ctx, "memory_update", content="- Reviewed NVDA", file="daily")
    assert data["file"] == "2025-03-14.md"
    assert (mgr.memory_dir / "2025-03-14.md").read_text() == "- Reviewed NVDA\n"


async def test_edit_and_delete(mgr: MemoryManager, ctx: ToolContext) -> None:
    await call(mgr, ctx, "memory_update", content="- Risk: high\n- Horizon: 10 years")
    edited = await call(mgr, ctx, "memory_update", action="edit", old_text="Risk: high",
                        new_text="Risk: moderate")
    assert edited["message"] == "Updated entry in MEMORY.md"
    deleted = await call(mgr, ctx, "memory_update", action="delete", old_text="- Horizon: 10 years\n")
    assert deleted["message"] == "Removed entry from MEMORY.md"
    assert (mgr.memory_dir / "MEMORY.md").read_text() == "- Risk: moderate\n"


async def test_text_not_found_is_an_error_pointing_to_memory_get(mgr: MemoryManager, ctx: ToolContext) -> None:
    await call(mgr, ctx, "memory_update", content="- Holds AAPL")
    with pytest.raises(ToolFailure, match=r"Could not find the specified text in MEMORY\.md.*memory_get"):
        await call(mgr, ctx, "memory_update", action="edit", old_text="NVDA", new_text="AMD")
    with pytest.raises(ToolFailure, match="Could not find"):
        await call(mgr, ctx, "memory_update", action="delete", old_text="NVDA")


async def test_missing_arguments_are_named(mgr: MemoryManager, ctx: ToolContext) -> None:
    with pytest.raises(ToolFailure, match="append needs 'content'"):
        await call(mgr, ctx, "memory_update")
    with pytest.raises(ToolFailure, match="edit needs 'old_text'"):
        await call(mgr, ctx, "memory_update", action="edit", new_text="x")
    with pytest.raises(ToolFailure, match="Invalid arguments for memory_update: action"):
        await call(mgr, ctx, "memory_update", action="replace", content="x")


async def test_paths_outside_the_memory_folder_are_refused(mgr: MemoryManager, ctx: ToolContext,
                                                           tmp_path: Path) -> None:
    (tmp_path / "secret.md").write_text("do not read")
    with pytest.raises(ToolFailure, match="not a plain file name"):
        await call(mgr, ctx, "memory_get", path="../../secret.md")
    with pytest.raises(ToolFailure, match="absolute path"):
        await call(mgr, ctx, "memory_update", content="x", file=str(tmp_path / "secret.md"))
    assert (tmp_path / "secret.md").read_text() == "do not read"


async def test_get_of_a_missing_file_is_empty_with_a_note(mgr: MemoryManager, ctx: ToolContext) -> None:
    got = await call(mgr, ctx, "memory_get", path="daily")
    assert (got["text"], got["note"]) == ("", "2025-03-14.md does not exist yet.")


async def test_tools_say_memory_is_off(tmp_path: Path, ctx: ToolContext) -> None:
    settings = Settings(home=str(tmp_path / "home"))
    settings.memory.enabled = False
    off = MemoryManager(settings, env={})
    found = await call(off, ctx, "memory_search", query="anything")
    assert found["results"] == [] and found["disabled"] is True and "Memory is off" in found["error"]
    with pytest.raises(ToolFailure, match="Memory is off"):
        await call(off, ctx, "memory_update", content="x")
    with pytest.raises(ToolFailure, match="Memory is off"):
        await call(off, ctx, "memory_get", path="long_term")


async def test_search_on_a_corrupt_index_reports_it_without_failing(mgr: MemoryManager,
                                                                   ctx: ToolContext) -> None:
    await call(mgr, ctx, "memory_update", content="- Holds AAPL")
    mgr.close()
    mgr.index_path.write_bytes(b"garbage" * 500)
    for suffix in ("-wal", "-shm"):
        Path(str(mgr.index_path) + suffix).unlink(missing_ok=True)
    found = await call(mgr, ctx, "memory_search", query="AAPL")
    assert found["disabled"] is True and "dexter memory reindex" in found["error"]
    # Writing still works: the files are the source of truth.
    await call(mgr, ctx, "memory_update", content="- Holds MSFT")
    assert "MSFT" in (mgr.memory_dir / "MEMORY.md").read_text()
