"""Memory tools: ``memory_search``, ``memory_get`` and ``memory_update``.

They work on the files of ``DEXTER_HOME/memory`` through a ``MemoryManager`` and never leave
that folder (see ``dexter.memory.store``), so ``memory_update`` needs no approval. Results use
the common ``{"data": ...}`` envelope.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from dexter.memory.manager import MemoryManager, MemoryOff
from dexter.memory.store import MemoryPathError, MemoryTextNotFound
from dexter.tools.base import Tool, ToolContext, ToolFailure, format_result

SEARCH_DESCRIPTION = (
    "Search the user's persistent memory: long-term facts (MEMORY.md), daily notes and past "
    "conversations. ALWAYS call it before personalised advice or when the user refers to "
    "something from before (their goals, holdings, risk tolerance, past decisions or "
    "findings). Returns the best matching snippets with their file and line range; read more "
    "with memory_get. Do not use it for market data: memory holds notes, not prices."
)
GET_DESCRIPTION = (
    "Read a memory file (or part of it) by the path memory_search returned, e.g. MEMORY.md, "
    "2025-03-14.md or history/sessions.jsonl. 'from' is the first line (1-based) and "
    "'lines' how many; omit both for the whole file. Aliases: long_term (MEMORY.md), daily "
    "(today's notes). A file that does not exist returns empty text."
)
UPDATE_DESCRIPTION = (
    "Save, correct or remove durable facts about the user in memory. Use this, never "
    "write_file, for memory files. file: long_term (MEMORY.md: goals, holdings, risk "
    "tolerance, preferences, lasting decisions), daily (today's notes: findings and events "
    "of this session) or a NAME for a topic file. action: append (content = markdown bullets "
    "to add), edit (old_text = exact text to replace, new_text = its replacement) or delete "
    "(old_text = exact text to remove). For edit and delete, copy old_text exactly from "
    "memory_get. Store facts, not market data or prices."
)


class MemorySearchParams(BaseModel):
    query: str = Field(min_length=1, description="What to look for, in plain words.")


class MemoryGetParams(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    path: str = Field(min_length=1, description="File path from memory_search, or long_term/daily.")
    from_: int = Field(1, alias="from", ge=1, description="First line to read (1-based).")
    lines: int | None = Field(None, ge=1, description="Number of lines to read (default: all).")


class MemoryUpdateParams(BaseModel):
    content: str | None = Field(None, description="Text to append (markdown bullets).")
    action: Literal["append", "edit", "delete"] = Field("append", description="What to do.")
    file: str = Field("long_term", description="long_term, daily or a NAME in the memory folder.")
    old_text: str | None = Field(None, description="Exact existing text (edit and delete).")
    new_text: str | None = Field(None, description="Replacement text (edit).")


P = TypeVar("P", bound=BaseModel)


class _MemoryTool(Tool[P]):
    """A tool bound to one ``MemoryManager``."""

    def __init__(self, manager: MemoryManager) -> None:
        self.manager = manager


class MemorySearchTool(_MemoryTool[MemorySearchParams]):
    """Hybrid search over memory files and past conversations."""

    name: ClassVar[str] = "memory_search"
    source_kind: ClassVar[Literal["user"]] = "user"  # the user's own notes
    description: ClassVar[str] = SEARCH_DESCRIPTION
    params: ClassVar[type[BaseModel]] = MemorySearchParams
    concurrency_safe: ClassVar[bool] = True
    compactable: ClassVar[bool] = True

    async def run(self, args: MemorySearchParams, ctx: ToolContext) -> str:
        """``{"results": [...], "mode": ...}``; when memory is off or broken, says why."""
        outcome = await self.manager.search(args.query)
        return format_result(outcome.to_dict())


class MemoryGetTool(_MemoryTool[MemoryGetParams]):
    """Read lines of a memory file."""

    name: ClassVar[str] = "memory_get"
    source_kind: ClassVar[Literal["user"]] = "user"
    description: ClassVar[str] = GET_DESCRIPTION
    params: ClassVar[type[BaseModel]] = MemoryGetParams
    concurrency_safe: ClassVar[bool] = True
    compactable: ClassVar[bool] = True

    async def run(self, args: MemoryGetParams, ctx: ToolContext) -> str:
        """``{path, from, to, total_lines, text}`` (plus a note when the file is missing)."""
        try:
            got = self.manager.get(args.path, args.from_, args.lines)
        except (MemoryOff, MemoryPathError, ValueError) as exc:
            raise ToolFailure(str(exc)) from None
        except OSError as exc:
            raise ToolFailure(f"Could not read the memory file: {exc.strerror or exc}.") from None
        data: dict[str, Any] = {"path": got.path, "from": got.from_line, "to": got.to_line,
                                "total_lines": got.total_lines, "text": got.text}
        if not got.exists:
            data["note"] = f"{got.path} does not exist yet."
        return format_result(data)


class MemoryUpdateTool(_MemoryTool[MemoryUpdateParams]):
    """Append to, edit or delete from a memory file."""

    name: ClassVar[str] = "memory_update"
    source_kind: ClassVar[None] = None  # it stores what the model wrote
    description: ClassVar[str] = UPDATE_DESCRIPTION
    params: ClassVar[type[BaseModel]] = MemoryUpdateParams
    concurrency_safe: ClassVar[bool] = False
    compactable: ClassVar[bool] = False
    needs_approval: ClassVar[bool] = False

    async def run(self, args: MemoryUpdateParams, ctx: ToolContext) -> str:
        """``{success, file, message}``; errors (text not found, bad file) are ToolFailures."""
        try:
            result = self.manager.update(args.action, args.file, args.content, args.old_text,
                                         args.new_text)
        except (MemoryOff, MemoryPathError, MemoryTextNotFound, ValueError) as exc:
            raise ToolFailure(str(exc)) from None
        except OSError as exc:
            raise ToolFailure(f"Could not write the memory file: {exc.strerror or exc}.") from None
        return format_result({"success": True, "file": result.file, "message": result.message})


MEMORY_TOOLS = (MemorySearchTool, MemoryGetTool, MemoryUpdateTool)


def memory_tools(manager: MemoryManager) -> list[Tool[Any]]:
    """The three memory tools bound to ``manager``."""
    return [cls(manager) for cls in MEMORY_TOOLS]
