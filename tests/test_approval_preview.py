"""Write approvals show what will change: the diff of an edit, a new file's content, and the
whole of a long change saved to a file the dialog names."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from dexter.agent.executor import PREVIEW_LINES, ApprovalRequest, ToolExecutor, TurnResults
from dexter.config import Settings
from dexter.events import ApprovalChoice
from dexter.messages import ToolCall
from dexter.permissions.engine import build_permission_engine
from dexter.repl.dialogs import ApprovalDialog
from dexter.tools.base import ToolContext
from dexter.tools.files import EditFileTool, WriteFileTool


def executor_for(tmp_path: Path, seen: list[ApprovalRequest],
                 choice: ApprovalChoice = "allow-once") -> ToolExecutor:
    settings = Settings(home=str(tmp_path / "home"))
    ctx = ToolContext(settings=settings, cwd=tmp_path, home=settings.home_path)

    async def approver(request: ApprovalRequest) -> ApprovalChoice:
        seen.append(request)
        return choice

    return ToolExecutor([WriteFileTool(), EditFileTool()], ctx,
                        permissions=build_permission_engine(settings, tmp_path),
                        approver=approver)


async def run(executor: ToolExecutor, name: str, **args: object) -> TurnResults:
    final = None
    async for item in executor.execute([ToolCall("c1", name, dict(args))]):
        if isinstance(item, TurnResults):
            final = item
    assert final is not None
    return final


def shown(request: ApprovalRequest) -> str:
    con = Console(record=True, width=240, file=io.StringIO(), color_system=None)
    con.print(ApprovalDialog(request, width=240).render())
    return con.export_text()


async def test_an_edit_asks_with_its_unified_diff(tmp_path: Path) -> None:
    (tmp_path / "memo.md").write_text("# Memo\nRevenue grew 5%.\nMargins held.\n",
                                      encoding="utf-8")
    seen: list[ApprovalRequest] = []
    await run(executor_for(tmp_path, seen), "edit_file", path="memo.md",
              old_text="Revenue grew 5%.", new_text="Revenue grew 6%.")
    [request] = seen
    assert "-Revenue grew 5%.\n+Revenue grew 6%." in request.preview
    text = shown(request)
    assert "--- a/memo.md" in text and "-Revenue grew 5%." in text and "+Revenue grew 6%." in text
    assert (tmp_path / "memo.md").read_text(encoding="utf-8").count("6%") == 1  # it ran


async def test_a_denied_write_changed_nothing_but_showed_the_content(tmp_path: Path) -> None:
    seen: list[ApprovalRequest] = []
    await run(executor_for(tmp_path, seen, "deny"), "write_file", path="out.md",
              content="# NVDA\nBuy below $100.\n")
    [request] = seen
    assert "+# NVDA\n+Buy below $100." in request.preview
    assert "+Buy below $100." in shown(request)
    assert not (tmp_path / "out.md").exists()  # the preview wrote nothing


async def test_a_long_change_is_cut_with_a_count_and_saved_whole(tmp_path: Path) -> None:
    content = "".join(f"line {n}\n" for n in range(1, 101))
    seen: list[ApprovalRequest] = []
    await run(executor_for(tmp_path, seen), "write_file", path="long.md", content=content)
    [request] = seen
    saved = Path(request.preview_path)
    assert saved.is_file() and saved.read_text(encoding="utf-8").count("+line ") == 100
    text = shown(request)
    rows = request.preview.splitlines()
    assert f"… {len(rows) - PREVIEW_LINES:,} more lines · the whole change: {saved}" in text
    assert "+line 30" in text and "+line 90" not in text


async def test_an_edit_that_cannot_apply_asks_without_a_preview(tmp_path: Path) -> None:
    (tmp_path / "memo.md").write_text("text\n", encoding="utf-8")
    seen: list[ApprovalRequest] = []
    final = await run(executor_for(tmp_path, seen), "edit_file", path="memo.md",
                      old_text="missing", new_text="x")
    assert seen[0].preview == ""
    assert final.results[0].is_error and "not found" in final.results[0].content


async def test_the_dialog_masks_credentials_and_the_call_runs_as_written(tmp_path: Path) -> None:
    line = "DB_PASSWORD=hunter2-Staging-Secret-9\n"
    seen: list[ApprovalRequest] = []
    await run(executor_for(tmp_path, seen), "write_file", path="deploy.env", content=line)
    [request] = seen
    text = shown(request)
    assert "hunter2-Staging-Secret-9" not in text  # neither the call nor the preview shows it
    assert "hunter2-Staging-Secret-9" not in str(request.args) + request.preview
    assert "DB_PASSWORD=" in text
    # the approved call wrote what the model asked for
    assert (tmp_path / "deploy.env").read_text(encoding="utf-8") == line
