"""Single-result governance: cap each tool result, then budget the whole turn.

A result too large for the context is written in full to the tool-results folder and
replaced by a preview that names the file, so nothing is lost: the model can page through
it with ``read_file``. A storage failure (disk full, read-only home) falls back to the same
preview without a file and says so; it never turns a successful call into an error.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from dexter.config import ContextSettings
from dexter.messages import ToolResultMessage
from dexter.secrets import scrub

PREVIEW_ALLOWANCE_CHARS = 2_500
"""What a persisted result counts for in the turn budget (its preview and header)."""

_HEADER_PREFIX = "[Tool result too large for the context: "
_SAVED_RE = re.compile(r"Full text saved to (?P<path>.+)\]$")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_MAX_STEM = 80


@dataclass(frozen=True, slots=True)
class PersistInfo:
    """A result that was replaced by a preview."""

    tool_call_id: str
    original_chars: int
    path: Path | None
    """Where the full text was written; None when writing failed."""
    error: str = ""
    """Why the full text could not be saved (empty when it was saved)."""


@dataclass(frozen=True, slots=True)
class BudgetReport:
    """What ``apply_turn_budget`` did to one turn's results."""

    chars_before: int
    chars_after: int
    """The turn's size as the budget counts it (persisted results count as the allowance)."""
    persisted: tuple[PersistInfo, ...] = field(default_factory=tuple)
    errors_persisted: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.persisted)


def cap_tool_result(
    content: str, tool_call_id: str, cfg: ContextSettings, store_dir: Path
) -> tuple[str, PersistInfo | None]:
    """Replace a result longer than ``max_tool_result_chars`` by a saved-file preview.

    Exactly ``max_tool_result_chars`` characters stay as they are (same string, None).
    Otherwise the full text goes to ``store_dir/<sanitized id>.txt`` and the returned text
    names the file, its size in KB, shows the first ``preview_chars`` characters and says
    to use ``read_file`` with ``path`` and ``offset``/``limit`` for the rest.
    """
    if not cfg.enabled or len(content) <= cfg.max_tool_result_chars:
        return content, None
    return persist_result(content, tool_call_id, cfg.preview_chars, store_dir)


def persist_result(
    content: str, tool_call_id: str, preview_chars: int, store_dir: Path
) -> tuple[str, PersistInfo]:
    """Write ``content`` to the store and return its preview text (always, even on failure)."""
    size_kb = max(1, round(len(content.encode("utf-8", "surrogatepass")) / 1024))
    preview = content[:preview_chars]
    rest = len(content) - len(preview)
    header = f"{_HEADER_PREFIX}{len(content):,} characters ({size_kb} KB)."
    try:
        path = _write_unique(store_dir, result_file_stem(tool_call_id), content)
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        text = (
            f"{header} The full result could not be saved ({reason}); only this preview is "
            f"available.]\n\nPreview (first {len(preview):,} characters):\n{preview}\n\n"
            f"[{rest:,} more characters were not shown and not saved. Call the tool again with "
            "a narrower request if you need them.]"
        )
        return text, PersistInfo(tool_call_id, len(content), None, reason)
    text = (
        f"{header} Full text saved to {path}]\n\n"
        f"Preview (first {len(preview):,} characters):\n{preview}\n\n"
        f"[{rest:,} more characters not shown. To read them, call read_file with "
        f'path="{path}" and offset/limit.]'
    )
    return text, PersistInfo(tool_call_id, len(content), path)


def apply_turn_budget(
    results: list[ToolResultMessage], cfg: ContextSettings, store_dir: Path
) -> tuple[list[ToolResultMessage], BudgetReport]:
    """Keep one turn's results within ``max_turn_result_chars`` together.

    Exactly the budget stays. Over it, the largest results are persisted first (each then
    counts as ``PREVIEW_ALLOWANCE_CHARS``) until the total fits. Error results are the
    model's evidence of what went wrong, so they are persisted only when persisting every
    successful result was not enough. Returns the same list when nothing changes.
    """
    total = sum(len(r.content) for r in results)
    if not cfg.enabled or total <= cfg.max_turn_result_chars:
        return results, BudgetReport(total, total)
    before = total
    candidates = sorted(
        (i for i, r in enumerate(results)
         if len(r.content) > PREVIEW_ALLOWANCE_CHARS and not is_persisted_preview(r.content)),
        key=lambda i: (results[i].is_error, -len(results[i].content)),
    )
    out = list(results)
    persisted: list[PersistInfo] = []
    errors = 0
    for i in candidates:
        if total <= cfg.max_turn_result_chars:
            break
        result = results[i]
        text, info = persist_result(result.content, result.tool_call_id, cfg.preview_chars,
                                    store_dir)
        out[i] = ToolResultMessage(result.tool_call_id, result.name, text, result.is_error)
        total += PREVIEW_ALLOWANCE_CHARS - len(result.content)
        persisted.append(info)
        errors += result.is_error
    return out, BudgetReport(before, total, tuple(persisted), errors)


def is_persisted_preview(content: str) -> bool:
    """True when ``content`` is a preview made by this module."""
    return content.startswith(_HEADER_PREFIX)


def persisted_path(content: str) -> str | None:
    """The saved file a preview names, or None (not a preview, or the save failed)."""
    if not is_persisted_preview(content):
        return None
    first_line = content.split("\n", 1)[0]
    match = _SAVED_RE.search(first_line)
    return match.group("path") if match else None


def result_file_stem(tool_call_id: str) -> str:
    """A safe file name stem for a call id: ``[A-Za-z0-9_-]`` only, never empty.

    When the id had to be changed (unsafe characters, too long, empty), a short hash of
    the original is appended so two different ids never share a file.
    """
    safe = _UNSAFE.sub("_", tool_call_id)[:_MAX_STEM]
    if safe == tool_call_id and safe:
        return safe
    digest = hashlib.sha256(tool_call_id.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{safe or 'result'}-{digest}"


def _write_unique(store_dir: Path, stem: str, content: str) -> Path:
    """Create a new file (never overwrite: call ids can repeat across runs)."""
    store_dir.mkdir(parents=True, exist_ok=True)
    for n in range(1, 1000):
        path = store_dir / (f"{stem}.txt" if n == 1 else f"{stem}-{n}.txt")
        try:
            handle = path.open("x", encoding="utf-8", errors="surrogatepass")
        except FileExistsError:
            continue
        try:
            with handle:
                handle.write(scrub(content))
        except OSError:
            path.unlink(missing_ok=True)  # no half-written file for read_file to find
            raise
        return path.resolve()
    raise OSError(f"too many saved results named {stem}")


def fit_question(question: str, max_tokens: int, preview_chars: int,
                 store_dir: Path) -> str:
    """``question`` as the model may receive it: whole when its estimated tokens fit in
    ``max_tokens``; else saved whole to ``store_dir`` and replaced by its start and the
    path to read the rest from (a huge paste must not overflow the first request)."""
    from dexter.context.tokens import estimate_text_tokens

    if max_tokens <= 0 or estimate_text_tokens(question) <= max_tokens:
        return question
    stem = "question-" + hashlib.md5(question.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    preview = question[:preview_chars]
    try:
        path = _write_unique(store_dir, stem, question)
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        return (f"[The question is too long for the context ({len(question):,} characters) and "
                f"could not be saved ({reason}); only its start is below.]\n\n{preview}")
    return (f"[The question is too long for the context ({len(question):,} characters). Its "
            f"full text is saved to {path}: read the parts you need with read_file "
            f"(offset/limit).]\n\nStart of the question:\n{preview}")
