"""File tools: ``read_file`` (paged, byte ranges for huge lines), ``write_file``, ``edit_file``.

All three go through :mod:`dexter.sandbox.paths` (working directory and ``DEXTER_HOME``; no
escapes; secrets refused). Writes are atomic (a temp file in the same folder, then
``os.replace``) and report a unified diff.
"""

from __future__ import annotations

import asyncio
import difflib
import os
import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from dexter.evidence.text_tables import tables_from_file
from dexter.sandbox.paths import Sandbox, sandbox_for, secret_component_reason
from dexter.tools.base import Tool, ToolContext, ToolFailure, ToolOutput

DEFAULT_LINE_LIMIT = 2_000
MAX_READ_CHARS = 40_000  # well under the 50,000-character per-result cap, header included
MAX_BYTE_LIMIT = 40_000
BINARY_PROBE_BYTES = 8_192
MAX_DIFF_CHARS = 8_000
_LINE_PROBE_BYTES = 4 * MAX_READ_CHARS


def sandbox_of(ctx: ToolContext) -> Sandbox:
    """The sandbox for a tool call: the run's working directory and ``DEXTER_HOME``."""
    return sandbox_for(ctx.cwd, ctx.home)


# -- read_file ---------------------------------------------------------------------------


class ReadFileParams(BaseModel):
    """Arguments of ``read_file``."""

    path: str = Field(description="File path, relative to the working directory (or inside "
                                  "DEXTER_HOME, e.g. a saved tool result).")
    offset: int | None = Field(default=None, ge=1,
                               description="1-based line number to start at (default 1).")
    limit: int | None = Field(default=None, ge=1, le=DEFAULT_LINE_LIMIT,
                              description=f"Number of lines to return (default and max "
                                          f"{DEFAULT_LINE_LIMIT}).")
    byte_offset: int | None = Field(default=None, ge=0,
                                    description="Byte position to start at, for files with huge "
                                                "lines. Not combined with offset/limit.")
    byte_limit: int | None = Field(default=None, ge=1, le=MAX_BYTE_LIMIT,
                                   description=f"Bytes to return in byte mode (default and max "
                                               f"{MAX_BYTE_LIMIT:,}).")


@dataclass(frozen=True, slots=True)
class _Line:
    number: int
    start: int  # byte offset of the line in the file
    length: int  # bytes, newline included
    head: bytes  # at most _LINE_PROBE_BYTES of the line


def is_binary(head: bytes) -> bool:
    """True for content that is not text (a NUL byte in the first bytes)."""
    return b"\x00" in head


def _count_lines(path: Path) -> int:
    count, last = 0, b""
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            count += chunk.count(b"\n")
            last = chunk
    return count + (1 if last and not last.endswith(b"\n") else 0)


def _iter_lines(path: Path, first: int) -> Any:
    """Yield ``_Line`` from line ``first`` on, without holding a huge line in memory."""
    with path.open("rb") as handle:
        number, position = 0, 0
        while True:
            head = handle.readline(_LINE_PROBE_BYTES)
            if not head:
                return
            length = len(head)
            while not head.endswith(b"\n") and length % _LINE_PROBE_BYTES == 0:
                rest = handle.readline(_LINE_PROBE_BYTES)
                if not rest:
                    break
                length += len(rest)
                if rest.endswith(b"\n"):
                    break
            number += 1
            if number >= first:
                yield _Line(number, position, length, head)
            position += length


def _decode_line(raw: bytes) -> str:
    text = raw.decode("utf-8", errors="replace")
    if text.endswith("\n"):
        text = text[:-1]
    return text[:-1] if text.endswith("\r") else text


def _utf8_window(data: bytes, limit: int) -> tuple[int, int]:
    """(skip, cut): skip continuation bytes at the start, cut before a split character."""
    skip = 0
    while skip < min(3, len(data)) and data[skip] & 0xC0 == 0x80:
        skip += 1
    cut = min(len(data), skip + limit)
    if cut < len(data):
        back = cut
        while back > skip and data[back] & 0xC0 == 0x80:
            back -= 1
        cut = back if back > skip else cut
    return skip, cut


def read_byte_range(path: Path, shown: str, byte_offset: int, byte_limit: int,
                    note: str = "") -> str:
    """Bytes ``[byte_offset, byte_offset+byte_limit)`` as text, on UTF-8 character boundaries."""
    size = path.stat().st_size
    if size and byte_offset >= size:
        raise ToolFailure(f"byte_offset {byte_offset:,} is past the end of {shown} "
                          f"({size:,} bytes). Use a smaller byte_offset.")
    with path.open("rb") as handle:
        handle.seek(byte_offset)
        data = handle.read(byte_limit + 4)
    skip, cut = _utf8_window(data, byte_limit)
    start, end = byte_offset + skip, byte_offset + cut
    text = data[skip:cut].decode("utf-8", errors="replace")
    header = f"File: {shown} (bytes {start:,}-{end:,} of {size:,})"
    parts = [header + (f"\n{note}" if note else ""), text]
    if end < size:
        parts.append(f"[{size - end:,} more bytes. Call read_file again with byte_offset={end} "
                     f"to continue.]")
    else:
        parts.append("[End of file.]")
    return "\n".join(parts)


_HEADER = re.compile(r"\AFile: [^\n]*\((?:lines [\d,]+-[\d,]+ of [\d,]+|bytes [\d,]+-[\d,]+ of "
                     r"[\d,]+|empty, 0 bytes)\)\n?")
_HINT = re.compile(r"\n\[(?:Stopped at [\d,]+ characters\. )?[\d,]+ more (?:lines|bytes)\. Call "
                   r"read_file again with [^\]]*\]\Z|\n\[End of file\.\]\Z")
_NUMBERED = re.compile(r"^\d+:", re.MULTILINE)


def file_text_of(content: str) -> str:
    """What :func:`read_lines` or :func:`read_byte_range` showed of the file itself: the
    header line, the ``<number>:`` gutter and the paging hint removed."""
    header = _HEADER.match(content)
    if header is None:
        return content
    body = _HINT.sub("", content[header.end():])
    if "(lines " in header.group():
        body = _NUMBERED.sub("", body)
    return body


LINE_NUMBER_SEPARATOR = ":"
"""Between a line's number and its text in ``read_file`` output (one character in JSON)."""


def read_lines(path: Path, shown: str, offset: int, limit: int) -> str:
    """Numbered lines from ``offset``, at most ``limit`` lines and ``MAX_READ_CHARS`` characters.

    Each line is ``<number>:<text>``: no padding (a padded ``{n:>6}\\t`` column cost about
    3,000 characters per 30,000-character file, and every character is resent each turn).
    """
    size = path.stat().st_size
    if size == 0:
        if offset > 1:
            raise ToolFailure(f"offset {offset} is past the end of {shown} (the file is empty).")
        return f"File: {shown} (empty, 0 bytes)"
    total = _count_lines(path)
    if offset > total:
        raise ToolFailure(f"offset {offset:,} is past the end of {shown} ({total:,} lines). "
                          f"Use an offset between 1 and {total:,}.")
    rendered: list[str] = []
    used, last, stopped_by_chars = 0, offset - 1, False
    for line in _iter_lines(path, offset):
        if len(rendered) >= limit:
            break
        text = _decode_line(line.head) if line.length == len(line.head) else None
        row = f"{line.number}{LINE_NUMBER_SEPARATOR}{text}\n" if text is not None else None
        if row is None or used + len(row) > MAX_READ_CHARS:
            if not rendered:
                note = (f"Line {line.number:,} is {line.length:,} bytes long, too long to show "
                        f"whole; showing it by byte range (the line spans bytes "
                        f"{line.start:,}-{line.start + line.length:,}).")
                return read_byte_range(path, shown, line.start, MAX_BYTE_LIMIT, note)
            stopped_by_chars = True
            break
        rendered.append(row)
        used += len(row)
        last = line.number
    header = f"File: {shown} (lines {offset:,}-{last:,} of {total:,})"
    body = "".join(rendered).rstrip("\n")
    if last < total:
        why = f"Stopped at {MAX_READ_CHARS:,} characters. " if stopped_by_chars else ""
        hint = (f"[{why}{total - last:,} more lines. Call read_file again with "
                f"offset={last + 1} to continue.]")
        return f"{header}\n{body}\n{hint}"
    return f"{header}\n{body}"


def _not_found(path: Path, user_path: str) -> ToolFailure:
    parent = path.parent
    hint = ""
    if parent.is_dir():
        names = [n for n in os.listdir(parent) if secret_component_reason(n) is None]
        close = difflib.get_close_matches(path.name, names, n=3, cutoff=0.6)
        if close:
            hint = " Did you mean: " + ", ".join(close) + "?"
        else:
            hint = " Check the name, or list the folder with bash `ls`."
    else:
        hint = f" The folder {parent.name or str(parent)!r} does not exist either."
    return ToolFailure(f"File not found: {user_path}.{hint}")


def _directory_listing(path: Path, shown: str) -> ToolFailure:
    names = sorted(n + ("/" if (path / n).is_dir() else "") for n in os.listdir(path)
                   if secret_component_reason(n) is None)
    listed = ", ".join(names[:100]) + (f", ... ({len(names) - 100} more)" if len(names) > 100 else "")
    return ToolFailure(f"{shown} is a directory, not a file. It contains: {listed or '(nothing)'}. "
                       "Call read_file with one of these paths.")


def read_file_text(sandbox: Sandbox, params: ReadFileParams) -> str:
    """The whole read: resolve, refuse directories and binaries, then lines or bytes."""
    if params.byte_offset is not None and (params.offset is not None or params.limit is not None):
        raise ToolFailure("Use either offset/limit (lines) or byte_offset/byte_limit (bytes), "
                          "not both.")
    path = sandbox.resolve(params.path)
    shown = sandbox.display(path)
    if not path.exists():
        raise _not_found(path, params.path)
    if path.is_dir():
        raise _directory_listing(path, shown)
    if not path.is_file():
        raise ToolFailure(f"{shown} is not a regular file (a device, socket or pipe).")
    try:
        with path.open("rb") as handle:
            head = handle.read(BINARY_PROBE_BYTES)
        if is_binary(head):
            kind = " (looks like a PDF)" if head.startswith(b"%PDF") else ""
            raise ToolFailure(f"{shown} is a binary file{kind}, {path.stat().st_size:,} bytes. "
                              "read_file reads text files only.")
        if params.byte_offset is not None or params.byte_limit is not None:
            return read_byte_range(path, shown, params.byte_offset or 0,
                                   params.byte_limit or MAX_BYTE_LIMIT)
        return read_lines(path, shown, params.offset or 1, params.limit or DEFAULT_LINE_LIMIT)
    except PermissionError:
        raise ToolFailure(f"{shown} is not readable (permission denied).") from None


class ReadFileTool(Tool[ReadFileParams]):
    """Read a text file in pages of numbered lines."""

    name: ClassVar[str] = "read_file"
    description: ClassVar[str] = (
        "Read a text file from the working directory or DEXTER_HOME (including saved tool "
        "results). Returns numbered lines (each starts with its number and a colon, `12:`, "
        "which is not part of the file), up to 2,000 lines or 40,000 characters per call, "
        "with a hint for the next offset. Files with huge lines can be read by byte range "
        "(byte_offset/byte_limit). Secret files (.env, keys) are refused. Also reads the "
        "resource files of skills (the paths the skill tool lists)."
    )
    params: ClassVar[type[BaseModel]] = ReadFileParams
    concurrency_safe: ClassVar[bool] = True
    compactable: ClassVar[bool] = True

    def __init__(self, read_roots: Sequence[Path] = ()) -> None:
        # Folders readable besides the working directory and DEXTER_HOME: the skill
        # folders (only readable: the write tools keep the plain sandbox).
        self.read_roots = tuple(read_roots)

    async def run(self, args: ReadFileParams, ctx: ToolContext) -> ToolOutput:
        sandbox = sandbox_for(ctx.cwd, ctx.home, self.read_roots)
        text = await asyncio.to_thread(read_file_text, sandbox, args)
        # the tables in what was read (a CSV, a JSON file, markdown tables), for reports
        name = Path(args.path).name
        return ToolOutput(text, tables=tuple(tables_from_file(name, lines_read(text))))

    def evidence(self, content: str) -> str:
        """The file's own text: without the ``File: ...`` header, the line numbers and the
        paging hint, whose numbers are not the file's (``141:`` is no figure)."""
        return file_text_of(content)


def lines_read(output: str) -> str:
    """The file's text in a :func:`read_lines` output: the numbered lines without their
    numbers (the header, notes and a byte-range read give '')."""
    lines = []
    for line in output.splitlines()[1:]:
        number, separator, text = line.partition(LINE_NUMBER_SEPARATOR)
        if not separator or not number.isdigit():
            break
        lines.append(text)
    return "\n".join(lines)


# -- writing helpers ---------------------------------------------------------------------


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temp file in the same folder and ``os.replace``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o7777 if path.exists() else None
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def unified_diff(before: str, after: str, shown: str,
                 limit: int | None = MAX_DIFF_CHARS) -> str:
    """A unified diff between two texts, cut at ``limit`` characters (None: whole)."""
    diff = "".join(difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True),
        fromfile=f"a/{shown}", tofile=f"b/{shown}", n=3,
    ))
    if limit is not None and len(diff) > limit:
        diff = diff[:limit] + f"\n[diff cut at {limit:,} characters]\n"
    return diff


def _read_existing_text(path: Path, shown: str) -> str | None:
    if not path.exists():
        return None
    if path.is_dir():
        raise ToolFailure(f"{shown} is a directory; give a file path.")
    data = path.read_bytes()
    if is_binary(data[:BINARY_PROBE_BYTES]):
        return ""
    return data.decode("utf-8", errors="replace")


# -- write_file --------------------------------------------------------------------------


class WriteFileParams(BaseModel):
    """Arguments of ``write_file``."""

    path: str = Field(description="File path inside the working directory (or DEXTER_HOME).")
    content: str = Field(description="The complete new content of the file.")


def write_preview(sandbox: Sandbox, params: WriteFileParams) -> str:
    """What ``write_file`` would do: the diff against the file, or a new file's content
    (every line marked ``+``)."""
    path = sandbox.resolve(params.path, write=True)
    shown = sandbox.display(path)
    before = _read_existing_text(path, shown)
    if before is None:
        return unified_diff("", params.content, shown, None) or f"(new empty file {shown})"
    return unified_diff(before, params.content, shown, None) or "(content unchanged)"


def write_file_text(sandbox: Sandbox, params: WriteFileParams) -> str:
    """Create or replace a file; report what changed."""
    path = sandbox.resolve(params.path, write=True)
    shown = sandbox.display(path)
    before = _read_existing_text(path, shown)
    atomic_write(path, params.content.encode("utf-8"))
    lines = params.content.count("\n") + (0 if params.content.endswith("\n") or not params.content else 1)
    chars = len(params.content)
    summary = (f"{lines:,} {'line' if lines == 1 else 'lines'}, "
               f"{chars:,} {'character' if chars == 1 else 'characters'}")
    if before is None:
        return f"Created {shown} ({summary})."
    diff = unified_diff(before, params.content, shown)
    return f"Overwrote {shown} ({summary}).\n{diff or '(content unchanged)'}".rstrip()


class WriteFileTool(Tool[WriteFileParams]):
    """Create or overwrite a file (asks for approval)."""

    name: ClassVar[str] = "write_file"
    source_kind: ClassVar[None] = None  # it echoes what the model wrote
    description: ClassVar[str] = (
        "Create or overwrite a text file in the working directory (parent folders are created). "
        "Requires user approval. Prefer edit_file to change part of an existing file."
    )
    params: ClassVar[type[BaseModel]] = WriteFileParams
    needs_approval: ClassVar[bool] = True

    async def run(self, args: WriteFileParams, ctx: ToolContext) -> str:
        return await asyncio.to_thread(write_file_text, sandbox_of(ctx), args)

    def preview(self, args: WriteFileParams, ctx: ToolContext) -> str | None:
        return write_preview(sandbox_of(ctx), args)


# -- edit_file ---------------------------------------------------------------------------


class EditFileParams(BaseModel):
    """Arguments of ``edit_file``."""

    path: str = Field(description="File to edit, inside the working directory.")
    old_text: str = Field(description="The exact text to replace (copy it from read_file, "
                                      "without line numbers). Must be unique unless replace_all.")
    new_text: str = Field(description="The replacement text.")
    replace_all: bool = Field(default=False, description="Replace every occurrence.")


# One character in, one character out: folded text keeps the original's indices.
_FOLD = str.maketrans({
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"',
    "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2015": "-",
    "\u2212": "-", "\u00a0": " ", "\u2007": " ", "\u202f": " ", "\u3000": " ",
    **{chr(c): " " for c in range(0x2000, 0x200B)},
})
_INDENT = re.compile(r"^[ \t]*")


def fold_chars(text: str) -> str:
    """Curly quotes, Unicode dashes and spaces as ASCII; same length as ``text``."""
    return text.translate(_FOLD)


@dataclass(frozen=True, slots=True)
class _Match:
    start: int
    end: int
    replacement: str


def _find_all(haystack: str, needle: str) -> list[int]:
    found, at = [], haystack.find(needle)
    while at != -1:
        found.append(at)
        at = haystack.find(needle, at + len(needle))
    return found


def _char_matches(text: str, old: str, new: str, fold: bool) -> list[_Match]:
    hay, needle = (fold_chars(text), fold_chars(old)) if fold else (text, old)
    return [_Match(i, i + len(old), new) for i in _find_all(hay, needle)]


def _line_norm(line: str) -> str:
    return fold_chars(line).strip()


def _line_matches(text: str, old: str, new: str) -> list[_Match]:
    """Whole-line matches ignoring indentation, trailing space and quote style."""
    old_lines = old.strip("\n").split("\n")
    if not any(line.strip() for line in old_lines):
        return []
    wanted = [_line_norm(line) for line in old_lines]
    lines = text.split("\n")
    starts, offset = [], 0
    for line in lines:
        starts.append(offset)
        offset += len(line) + 1
    new_lines = new.strip("\n").split("\n")
    old_indent = _INDENT.match(old_lines[0]).group(0)  # type: ignore[union-attr]
    matches: list[_Match] = []
    i = 0
    while i + len(wanted) <= len(lines):
        if [_line_norm(line) for line in lines[i:i + len(wanted)]] == wanted:
            file_indent = _INDENT.match(lines[i]).group(0)  # type: ignore[union-attr]
            replaced = [
                file_indent + line[len(old_indent):] if line.startswith(old_indent) and line.strip()
                else line
                for line in new_lines
            ] if file_indent != old_indent else new_lines
            last = i + len(wanted) - 1
            end = starts[last] + len(lines[last])
            matches.append(_Match(starts[i], end, "\n".join(replaced) if new.strip("\n") else ""))
            i += len(wanted)
        else:
            i += 1
    return matches


def _closest_hint(text: str, old: str) -> str:
    first = next((line.strip() for line in old.split("\n") if line.strip()), "")
    lines = text.split("\n")
    close = difflib.get_close_matches(first, [line.strip() for line in lines], n=1, cutoff=0.5)
    if not close:
        return ""
    number = next(i for i, line in enumerate(lines, 1) if line.strip() == close[0])
    return f" The closest line is {number}: {close[0][:200]!r}."


def apply_edit(text: str, old: str, new: str, replace_all: bool, shown: str) -> tuple[str, str, int]:
    """The edited text, how it matched, and the count. Raises ``ToolFailure`` when ambiguous."""
    strategies: tuple[tuple[str, Callable[[], list[_Match]]], ...] = (
        ("exact match", lambda: _char_matches(text, old, new, fold=False)),
        ("match ignoring quote and dash style", lambda: _char_matches(text, old, new, fold=True)),
        ("match ignoring indentation, trailing spaces and quote style",
         lambda: _line_matches(text, old, new)),
    )
    for how, find in strategies:
        matches = find()
        if not matches:
            continue
        if len(matches) > 1 and not replace_all:
            where = ", ".join(str(text.count("\n", 0, m.start) + 1) for m in matches[:10])
            raise ToolFailure(f"old_text matches {len(matches)} places in {shown} (lines {where}). "
                              "Include more surrounding lines to pick one, or set "
                              "replace_all=true.")
        out, last = [], 0
        for match in matches:
            out.append(text[last:match.start])
            out.append(match.replacement)
            last = match.end
        out.append(text[last:])
        return "".join(out), how, len(matches)
    raise ToolFailure(f"old_text was not found in {shown} (also tried ignoring quote style, "
                      f"indentation and trailing spaces).{_closest_hint(text, old)} Read the file "
                      "again and copy the text exactly, without line numbers.")


@dataclass(frozen=True, slots=True)
class _Edit:
    path: Path
    shown: str
    text: str
    edited: str
    how: str
    count: int
    bom: bool
    crlf: bool


def edit_preview(sandbox: Sandbox, params: EditFileParams) -> str:
    """The unified diff ``edit_file`` would apply (raises ``ToolFailure`` as the edit would)."""
    edit = _plan_edit(sandbox, params)
    return unified_diff(edit.text, edit.edited, edit.shown, None)


def edit_file_text(sandbox: Sandbox, params: EditFileParams) -> str:
    """Replace ``old_text`` with ``new_text``; keeps BOM and line endings; returns a diff."""
    edit = _plan_edit(sandbox, params)
    result = edit.edited.replace("\n", "\r\n") if edit.crlf else edit.edited
    atomic_write(edit.path, (("\ufeff" if edit.bom else "") + result).encode("utf-8"))
    plural = "occurrence" if edit.count == 1 else "occurrences"
    return (f"Edited {edit.shown}: replaced {edit.count} {plural} ({edit.how}).\n"
            f"{unified_diff(edit.text, edit.edited, edit.shown)}").rstrip()


def _plan_edit(sandbox: Sandbox, params: EditFileParams) -> _Edit:
    if not params.old_text:
        raise ToolFailure("old_text is empty. To create a file use write_file.")
    if params.old_text == params.new_text:
        raise ToolFailure("old_text and new_text are identical; there is nothing to change.")
    path = sandbox.resolve(params.path, write=True)
    shown = sandbox.display(path)
    if not path.is_file():
        raise ToolFailure(f"File not found: {params.path}. To create it use write_file.")
    data = path.read_bytes()
    if is_binary(data[:BINARY_PROBE_BYTES]):
        raise ToolFailure(f"{shown} is a binary file; edit_file edits text only.")
    try:
        original = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolFailure(f"{shown} is not UTF-8 text; editing it could corrupt it.") from None
    bom = original.startswith("\ufeff")
    body = original[1:] if bom else original
    crlf = "\r\n" in body
    text = body.replace("\r\n", "\n") if crlf else body
    old = params.old_text.replace("\r\n", "\n")
    new = params.new_text.replace("\r\n", "\n")
    edited, how, count = apply_edit(text, old, new, params.replace_all, shown)
    if edited == text:
        raise ToolFailure("The edit would not change the file.")
    return _Edit(path, shown, text, edited, how, count, bom, crlf)


class EditFileTool(Tool[EditFileParams]):
    """Replace text in a file (asks for approval)."""

    name: ClassVar[str] = "edit_file"
    source_kind: ClassVar[None] = None  # it echoes what the model wrote
    description: ClassVar[str] = (
        "Replace old_text with new_text in a file. Exact match first; if none, a match that "
        "ignores quote style, indentation and trailing spaces (only the matched lines change). "
        "old_text must be unique unless replace_all=true. Requires user approval. Returns a "
        "unified diff."
    )
    params: ClassVar[type[BaseModel]] = EditFileParams
    needs_approval: ClassVar[bool] = True

    async def run(self, args: EditFileParams, ctx: ToolContext) -> str:
        return await asyncio.to_thread(edit_file_text, sandbox_of(ctx), args)

    def preview(self, args: EditFileParams, ctx: ToolContext) -> str | None:
        return edit_preview(sandbox_of(ctx), args)


def file_tools(read_roots: Sequence[Path] = ()) -> list[Tool[Any]]:
    """``read_file``, ``write_file`` and ``edit_file``, for the tool registry;
    ``read_roots`` are extra folders only ``read_file`` may read (skill folders)."""
    return [ReadFileTool(read_roots), WriteFileTool(), EditFileTool()]
