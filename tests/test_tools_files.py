"""read_file, write_file, edit_file and the sandbox they share."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from dexter.config import Settings
from dexter.sandbox.paths import SandboxError, sandbox_for
from dexter.tools.base import Tool, ToolContext, ToolFailure
from dexter.tools.files import (
    DEFAULT_LINE_LIMIT,
    MAX_READ_CHARS,
    EditFileTool,
    ReadFileTool,
    WriteFileTool,
    file_tools,
)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / ".dexter" / "tool-results").mkdir(parents=True)
    (root / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    (root / ".env").write_text("OPENAI_API_KEY=sk-secret\n")
    (tmp_path / "outside.txt").write_text("outside secret\n")
    return root


@pytest.fixture
def ctx(ws: Path) -> ToolContext:
    return ToolContext(settings=Settings(), cwd=ws, home=ws / ".dexter")


async def call(tool: Tool[Any], ctx: ToolContext, **arguments: Any) -> str:
    result = await tool.run(tool.parse_args(arguments), ctx)
    return result if isinstance(result, str) else result.content


# -- sandbox -----------------------------------------------------------------------------


@pytest.mark.parametrize("path", [
    "../outside.txt",
    "src/../../outside.txt",
    "/etc/passwd",
    "~/anything",
    "．．/outside.txt",          # fullwidth dots and solidus fold to ../
    "․․/outside.txt",            # one-dot leaders fold to ..
    ".env",
    ".ENV",
    "src/.env.production",
    "．env",                     # fullwidth dot folds to .env
    ".ssh/id_rsa",
    "keys/server.pem",
    "config/credentials.json",
])
def test_sandbox_refuses_escapes_and_secrets(ws: Path, path: str) -> None:
    sandbox = sandbox_for(ws, ws / ".dexter")
    with pytest.raises(SandboxError):
        sandbox.resolve(path)


def test_sandbox_refuses_symlinks_pointing_outside_in_any_component(ws: Path, tmp_path: Path) -> None:
    outside_dir = tmp_path / "elsewhere"
    outside_dir.mkdir()
    (outside_dir / "data.txt").write_text("x")
    os.symlink(outside_dir, ws / "src" / "link_dir")
    os.symlink(tmp_path / "outside.txt", ws / "link_file")
    os.symlink(ws / ".env", ws / "innocent.txt")
    sandbox = sandbox_for(ws, ws / ".dexter")
    for path in ("src/link_dir/data.txt", "link_file", "innocent.txt", "src/link_dir/new.txt"):
        with pytest.raises(SandboxError):
            sandbox.resolve(path)


def test_sandbox_refuses_absolute_case_variant_of_the_workspace(ws: Path) -> None:
    sandbox = sandbox_for(ws, ws / ".dexter")
    variant = str(ws / "notes.txt").upper()
    assert variant != str(ws / "notes.txt")
    with pytest.raises(SandboxError):
        sandbox.resolve(variant)


def test_sandbox_accepts_inside_paths(ws: Path) -> None:
    os.symlink(ws / "notes.txt", ws / "src" / "alias.txt")
    sandbox = sandbox_for(ws, ws / ".dexter")
    assert sandbox.resolve("src/../notes.txt") == (ws / "notes.txt").resolve()
    assert sandbox.resolve(str(ws / "notes.txt")) == (ws / "notes.txt").resolve()
    assert sandbox.resolve("src/alias.txt") == (ws / "notes.txt").resolve()
    assert sandbox.resolve(".dexter/tool-results/x.txt").name == "x.txt"


def test_sandbox_write_protects_settings_and_git(ws: Path) -> None:
    sandbox = sandbox_for(ws, ws / ".dexter")
    assert sandbox.check(".dexter/settings.json") is None
    assert "permission rules" in (sandbox.check(".dexter/settings.json", write=True) or "")
    assert ".git" in (sandbox.check(".git/hooks/pre-commit", write=True) or "")


def test_the_record_of_dexters_own_settings_files_is_never_written(
        ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In a workspace that is the home folder, the user state folder is in it: the file
    tools must not forge the record that makes a settings file's allow rules count."""
    monkeypatch.setenv("XDG_STATE_HOME", str(ws / ".local" / "state"))
    sandbox = sandbox_for(ws, ws / ".dexter")
    for path in (".local/state/dexter/own-settings.json", ".local/state/dexter/x"):
        assert "record of which settings files" in (sandbox.check(path, write=True) or "")
    assert sandbox.check(".local/state/other/x", write=True) is None


@pytest.mark.parametrize("path", [
    ".DEXTER/settings.json",    # the same file on a case-insensitive file system (macOS)
    ".dexter/SETTINGS.JSON",
    ".dexter/settings.json.",   # Windows drops trailing dots
    ".GIT/hooks/pre-commit",
    ".git./config",
    ".Git /config",
])
def test_write_protection_ignores_case_and_trailing_dots(ws: Path, path: str) -> None:
    assert sandbox_for(ws, ws / ".dexter").check(path, write=True) is not None


@pytest.mark.parametrize("path", [
    "~/.bash_history", ".zsh_history", "home/.config/gh/hosts.yml", ".config/GCloud/x.db",
    ".vault-token",
])
def test_history_files_and_token_folders_are_secret(ws: Path, path: str) -> None:
    reason = sandbox_for(ws, ws / ".dexter").check(path)
    assert reason is not None


async def test_a_hard_link_to_an_outside_file_is_refused_for_reads_and_writes(
        ctx: ToolContext, ws: Path, tmp_path: Path) -> None:
    os.link(tmp_path / "outside.txt", ws / "hard.txt")
    for tool, args in ((ReadFileTool(), {"path": "hard.txt"}),
                       (WriteFileTool(), {"path": "hard.txt", "content": "new\n"}),
                       (EditFileTool(), {"path": "hard.txt", "old_text": "outside", "new_text": "x"})):
        with pytest.raises(ToolFailure, match="2 hard links"):
            await call(tool, ctx, **args)
    assert (tmp_path / "outside.txt").read_text() == "outside secret\n"


async def test_hard_links_inside_dexter_home_data_are_read(ctx: ToolContext, ws: Path) -> None:
    (ws / ".dexter" / "tool-results" / "a.txt").write_text("cached\n")
    os.link(ws / ".dexter" / "tool-results" / "a.txt", ws / ".dexter" / "tool-results" / "b.txt")
    assert "cached" in await call(ReadFileTool(), ctx, path=".dexter/tool-results/b.txt")


def test_secret_refusal_says_why(ws: Path) -> None:
    reason = sandbox_for(ws, ws / ".dexter").check(".env")
    assert reason is not None and "secret" in reason and "'.env'" in reason


# -- read_file ---------------------------------------------------------------------------


async def test_read_numbers_lines_with_a_header(ctx: ToolContext) -> None:
    out = await call(ReadFileTool(), ctx, path="notes.txt")
    assert out.splitlines() == ["File: notes.txt (lines 1-3 of 3)", "1:alpha", "2:beta",
                                "3:gamma"]


async def test_read_pages_with_offset_and_limit(ctx: ToolContext, ws: Path) -> None:
    (ws / "big.txt").write_text("".join(f"line {i}\n" for i in range(1, 5433)))
    out = await call(ReadFileTool(), ctx, path="big.txt", offset=201, limit=200)
    assert out.startswith("File: big.txt (lines 201-400 of 5,432)")
    assert "\n201:line 201\n" in out and "\n400:line 400\n" in out and "line 401" not in out
    assert out.endswith("[5,032 more lines. Call read_file again with offset=401 to continue.]")


@pytest.mark.parametrize(("lines", "hint"), [(DEFAULT_LINE_LIMIT, False), (DEFAULT_LINE_LIMIT + 1, True)])
async def test_default_page_is_2000_lines(ctx: ToolContext, ws: Path, lines: int, hint: bool) -> None:
    (ws / "n.txt").write_text("x\n" * lines)
    out = await call(ReadFileTool(), ctx, path="n.txt")
    assert ("offset=2001" in out) is hint


async def test_read_stops_at_the_character_cap(ctx: ToolContext, ws: Path) -> None:
    (ws / "wide.txt").write_text(("y" * 999 + "\n") * 100)
    out = await call(ReadFileTool(), ctx, path="wide.txt")
    assert len(out) <= MAX_READ_CHARS + 300
    shown = re.findall(r"^(\d+):", out, flags=re.M)
    next_offset = int(shown[-1]) + 1
    assert "Stopped at 40,000 characters" in out and f"offset={next_offset}" in out


async def test_offset_past_the_end_is_a_clear_error(ctx: ToolContext) -> None:
    with pytest.raises(ToolFailure, match=r"offset 4 is past the end of notes.txt \(3 lines\)"):
        await call(ReadFileTool(), ctx, path="notes.txt", offset=4)


async def test_empty_file(ctx: ToolContext, ws: Path) -> None:
    (ws / "empty.txt").write_text("")
    assert await call(ReadFileTool(), ctx, path="empty.txt") == "File: empty.txt (empty, 0 bytes)"


async def test_huge_single_line_switches_to_byte_ranges_on_utf8_boundaries(ctx: ToolContext, ws: Path) -> None:
    line = "é€" * 30_000  # 2- and 3-byte characters: cuts would split them
    (ws / "huge.json").write_text("short first line\n" + line + "\n")
    first = await call(ReadFileTool(), ctx, path="huge.json", offset=2)
    assert "too long to show whole" in first
    pieces, out = [], first
    while True:
        body = out.split("\n", 2)[2] if out.startswith("File") and "too long" in out else out.split("\n", 1)[1]
        pieces.append(body.rsplit("\n[", 1)[0])
        match = re.search(r"byte_offset=(\d+)", out)
        assert "\ufffd" not in out
        if not match:
            break
        out = await call(ReadFileTool(), ctx, path="huge.json", byte_offset=int(match.group(1)))
    assert "".join(pieces).rstrip("\n") == line


async def test_byte_range_needs_no_line_arguments(ctx: ToolContext) -> None:
    with pytest.raises(ToolFailure, match="not both"):
        await call(ReadFileTool(), ctx, path="notes.txt", offset=1, byte_offset=0)
    out = await call(ReadFileTool(), ctx, path="notes.txt", byte_offset=6, byte_limit=4)
    assert out.splitlines()[:2] == ["File: notes.txt (bytes 6-10 of 17)", "beta"]


async def test_binary_files_are_refused(ctx: ToolContext, ws: Path) -> None:
    (ws / "doc.pdf").write_bytes(b"%PDF-1.4\n\x00\x01\x02binary")
    with pytest.raises(ToolFailure, match=r"binary file \(looks like a PDF\)"):
        await call(ReadFileTool(), ctx, path="doc.pdf")


async def test_missing_file_suggests_close_names(ctx: ToolContext) -> None:
    with pytest.raises(ToolFailure, match=r"File not found: note.txt. Did you mean: notes.txt\?"):
        await call(ReadFileTool(), ctx, path="note.txt")


async def test_directory_lists_entries_without_secrets(ctx: ToolContext) -> None:
    with pytest.raises(ToolFailure) as info:
        await call(ReadFileTool(), ctx, path=".")
    assert "notes.txt" in str(info.value) and "src/" in str(info.value)
    assert ".env" not in str(info.value)


async def test_reads_spilled_tool_results_in_dexter_home(ctx: ToolContext, ws: Path) -> None:
    (ws / ".dexter" / "tool-results" / "call_1.txt").write_text("saved result\n")
    out = await call(ReadFileTool(), ctx, path=".dexter/tool-results/call_1.txt")
    assert "saved result" in out


async def test_home_outside_the_workspace_is_also_a_root(tmp_path: Path, ws: Path) -> None:
    home = tmp_path / "state"
    (home / "tool-results").mkdir(parents=True)
    (home / "tool-results" / "c.txt").write_text("spilled\n")
    ctx = ToolContext(settings=Settings(), cwd=ws, home=home)
    out = await call(ReadFileTool(), ctx, path=str(home / "tool-results" / "c.txt"))
    assert "spilled" in out


async def test_read_refuses_secrets_and_escapes(ctx: ToolContext) -> None:
    for path in (".env", "../outside.txt"):
        with pytest.raises(ToolFailure):
            await call(ReadFileTool(), ctx, path=path)


def test_tool_flags() -> None:
    read, write, edit = file_tools()
    assert (read.name, read.concurrency_safe, read.compactable, read.needs_approval) == \
        ("read_file", True, True, False)
    assert (write.name, write.concurrency_safe, write.needs_approval) == ("write_file", False, True)
    assert (edit.name, edit.concurrency_safe, edit.needs_approval) == ("edit_file", False, True)


# -- write_file --------------------------------------------------------------------------


async def test_write_creates_parents_and_reports(ctx: ToolContext, ws: Path) -> None:
    out = await call(WriteFileTool(), ctx, path="reports/q1/memo.md", content="# Memo\nbody\n")
    assert out == "Created reports/q1/memo.md (2 lines, 12 characters)."
    assert (ws / "reports" / "q1" / "memo.md").read_text() == "# Memo\nbody\n"


async def test_overwrite_shows_a_diff_and_keeps_the_mode(ctx: ToolContext, ws: Path) -> None:
    target = ws / "notes.txt"
    target.chmod(0o640)
    out = await call(WriteFileTool(), ctx, path="notes.txt", content="alpha\nBETA\ngamma\n")
    assert out.startswith("Overwrote notes.txt")
    assert "-beta\n+BETA" in out and "--- a/notes.txt" in out
    assert target.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in ws.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.parametrize("path", [".dexter/settings.json", ".git/config", ".env", "../x.txt"])
async def test_write_refuses_protected_paths(ctx: ToolContext, ws: Path, path: str) -> None:
    with pytest.raises(ToolFailure, match="Refused"):
        await call(WriteFileTool(), ctx, path=path, content="x")
    assert not (ws / ".dexter" / "settings.json").exists()


# -- edit_file ---------------------------------------------------------------------------


async def test_exact_edit_with_diff(ctx: ToolContext, ws: Path) -> None:
    out = await call(EditFileTool(), ctx, path="notes.txt", old_text="beta", new_text="BETA")
    assert out.startswith("Edited notes.txt: replaced 1 occurrence (exact match).")
    assert "-beta\n+BETA" in out
    assert (ws / "notes.txt").read_text() == "alpha\nBETA\ngamma\n"


async def test_ambiguous_edit_names_the_lines(ctx: ToolContext, ws: Path) -> None:
    (ws / "dup.txt").write_text("x = 1\ny = 2\nx = 1\n")
    with pytest.raises(ToolFailure, match=r"matches 2 places in dup.txt \(lines 1, 3\)"):
        await call(EditFileTool(), ctx, path="dup.txt", old_text="x = 1", new_text="x = 3")
    out = await call(EditFileTool(), ctx, path="dup.txt", old_text="x = 1", new_text="x = 3",
                     replace_all=True)
    assert "replaced 2 occurrences" in out
    assert (ws / "dup.txt").read_text() == "x = 3\ny = 2\nx = 3\n"


async def test_quote_tolerant_edit_rewrites_only_the_match(ctx: ToolContext, ws: Path) -> None:
    original = "title = “Q1 report”\nnote = ‘keep me’ — as is\n"
    (ws / "q.txt").write_text(original)
    out = await call(EditFileTool(), ctx, path="q.txt", old_text='title = "Q1 report"',
                     new_text='title = "Q2 report"')
    assert "ignoring quote and dash style" in out
    assert (ws / "q.txt").read_text() == 'title = "Q2 report"\nnote = ‘keep me’ — as is\n'


async def test_indentation_tolerant_edit_reindents_the_replacement(ctx: ToolContext, ws: Path) -> None:
    (ws / "src" / "m.py").write_text("def f():\n    if x:   \n        return 1\n    return 2\n")
    out = await call(EditFileTool(), ctx, path="src/m.py", old_text="if x:\n    return 1",
                     new_text="if x:\n    return 10")
    assert "ignoring indentation" in out
    assert (ws / "src" / "m.py").read_text() == "def f():\n    if x:\n        return 10\n    return 2\n"


async def test_edit_not_found_points_at_the_closest_line(ctx: ToolContext) -> None:
    with pytest.raises(ToolFailure, match=r"was not found .* closest line is 2: 'beta'"):
        await call(EditFileTool(), ctx, path="notes.txt", old_text="betta", new_text="b")


async def test_edit_keeps_crlf_and_bom(ctx: ToolContext, ws: Path) -> None:
    (ws / "win.txt").write_bytes("\ufeffone\r\ntwo\r\nthree\r\n".encode())
    await call(EditFileTool(), ctx, path="win.txt", old_text="one\ntwo", new_text="one\n2")
    assert (ws / "win.txt").read_bytes() == "\ufeffone\r\n2\r\nthree\r\n".encode()


async def test_edit_rejects_no_ops_and_missing_files(ctx: ToolContext) -> None:
    with pytest.raises(ToolFailure, match="identical"):
        await call(EditFileTool(), ctx, path="notes.txt", old_text="beta", new_text="beta")
    with pytest.raises(ToolFailure, match="write_file"):
        await call(EditFileTool(), ctx, path="nope.txt", old_text="a", new_text="b")
    with pytest.raises(ToolFailure, match="Refused"):
        await call(EditFileTool(), ctx, path=".env", old_text="sk", new_text="x")
