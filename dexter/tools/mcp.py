"""MCP server tools as dexter tools: ``mcp__SERVER__TOOL`` with the server's JSON schema.

A read-only tool (annotation ``readOnlyHint``) is concurrency-safe, compactable and runs
without approval; any other needs approval like a write. In search mode (the schemas
would take too much of the context) the tools are not bound: ``mcp_search`` lists the
matching ones and binds the ones the model selects, from its next request on.
"""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from dexter.tools.base import Tool, ToolContext, ToolFailure, ToolOutput
from dexter.tools.mcp_client import McpError, McpManager, McpToolInfo

PREFIX = "mcp__"
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def tool_name(server: str, tool: str) -> str:
    """The name the model sees: ``mcp__SERVER__TOOL`` (characters providers refuse become
    ``_``; at most 64 characters)."""
    return f"{PREFIX}{server}__{_UNSAFE.sub('_', tool)}"[:64]


class McpBinding:
    """Which MCP tools the model has chosen in search mode (shared by a session's tools).
    ``search_mode`` False: every tool is bound."""

    def __init__(self, search_mode: bool) -> None:
        self.search_mode = search_mode
        self.chosen: set[str] = set()

    def is_bound(self, name: str) -> bool:
        """Whether the tool's definition goes to the model."""
        return not self.search_mode or name in self.chosen


class McpArgs(BaseModel):
    """Any arguments: the server's JSON schema checks them (``McpTool.parse_args``)."""

    model_config = ConfigDict(extra="allow")


class McpTool(Tool[McpArgs]):
    """One tool of an MCP server. Subclassed per tool by :func:`make_tool` (the flags are
    class attributes)."""

    params = McpArgs
    info: ClassVar[McpToolInfo]
    manager: ClassVar[McpManager]
    binding: ClassVar[McpBinding]

    def json_schema(self) -> dict[str, Any]:
        """The server's input schema (an object schema; its title dropped)."""
        return _object_schema(self.info.input_schema)

    def bound(self) -> bool:
        """Unbound in search mode until ``mcp_search`` selects it."""
        return self.binding.is_bound(self.name)

    def parse_args(self, arguments: dict[str, Any]) -> McpArgs:
        """Check the arguments against the server's schema; ``ToolFailure`` names each problem."""
        problems = schema_problems(self.info.input_schema, arguments)
        if problems:
            raise ToolFailure(f"Invalid arguments for {self.name}: {'; '.join(problems)}")
        return McpArgs.model_validate(arguments)

    async def run(self, args: McpArgs, ctx: ToolContext) -> ToolOutput:
        """Call the tool on its server; its text (and links) become the result."""
        info = self.info
        try:
            result = await self.manager.call(info.server, info.name, args.model_dump())
        except McpError as exc:
            raise ToolFailure(str(exc)) from None
        text, urls = result_text(result)
        if getattr(result, "is_error", False):
            raise ToolFailure(f"{self.name} failed: {text or 'the server gave no reason'}")
        return ToolOutput(text or "(the tool returned nothing)", source_urls=tuple(urls),
                          title=f"{info.title or info.name} (MCP server {info.server})")


def make_tool(info: McpToolInfo, manager: McpManager, binding: McpBinding) -> McpTool:
    """A tool class for one listed MCP tool, and its instance."""
    description = info.description.strip() or f"{info.name} from MCP server {info.server}."
    attrs: dict[str, Any] = {
        "name": tool_name(info.server, info.name),
        "description": f"[MCP server {info.server}] {description}",
        "concurrency_safe": info.read_only, "compactable": info.read_only,
        "needs_approval": not info.read_only, "source_kind": "data",
        "info": info, "manager": manager, "binding": binding,
    }
    cls = type(f"McpTool_{info.server}_{info.name}", (McpTool,), attrs)
    tool: McpTool = cls()
    return tool


class SearchArgs(BaseModel):
    """Arguments of ``mcp_search``."""

    query: str = Field("", description="Words to look for in the MCP tools' names and "
                                         "descriptions ('' lists them all).")
    select: list[str] = Field(default_factory=list, description=(
        "Full names (mcp__SERVER__TOOL) of tools to make callable from your next step; "
        "their schemas are returned."))


class McpSearchTool(Tool[SearchArgs]):
    """Lists MCP tools whose definitions are not bound, and binds the chosen ones."""

    name = "mcp_search"
    description = (
        "Find tools offered by the configured MCP servers (their definitions are not loaded "
        "to save context). Pass query to list matching tools (name and description); pass "
        "select with the names you want to call, then call them by name in your next step.")
    params = SearchArgs
    concurrency_safe = True
    source_kind = None

    def __init__(self, tools: list[McpTool], binding: McpBinding) -> None:
        self._tools = {t.name: t for t in tools}
        self._binding = binding

    async def run(self, args: SearchArgs, ctx: ToolContext) -> str:
        """Match, then bind what was selected."""
        unknown = [n for n in args.select if n not in self._tools]
        chosen = [self._tools[n] for n in args.select if n in self._tools]
        for tool in chosen:
            self._binding.chosen.add(tool.name)
        payload: dict[str, Any] = {}
        if chosen:
            payload["bound"] = [{"name": t.name, "description": t.description,
                                 "input_schema": t.json_schema()} for t in chosen]
            payload["note"] = "These tools are callable from your next step."
        if unknown:
            payload["unknown"] = unknown
        if args.query or not args.select:
            words = [w for w in args.query.lower().split() if w]
            matches = [t for t in self._tools.values()
                       if all(w in f"{t.name} {t.description}".lower() for w in words)]
            payload["matches"] = [{"name": t.name, "description": _short(t.description)}
                                  for t in matches[:20]]
            payload["total_matches"] = len(matches)
        return json.dumps(payload, ensure_ascii=False)


def mcp_tools(manager: McpManager, *, search_mode: bool) -> list[Tool[Any]]:
    """The running servers' tools (and ``mcp_search`` in search mode)."""
    binding = McpBinding(search_mode)
    tools = [make_tool(info, manager, binding) for info in manager.tools]
    seen: set[str] = set()
    unique = [t for t in tools if not (t.name in seen or seen.add(t.name))]  # type: ignore[func-returns-value]
    out: list[Tool[Any]] = list(unique)
    if search_mode and unique:
        out.insert(0, McpSearchTool(unique, binding))
    return out


def result_text(result: Any) -> tuple[str, list[str]]:
    """The text of a ``CallToolResult`` (text blocks, embedded text resources, structured
    content when there is no text) and the links it names."""
    parts: list[str] = []
    urls: list[str] = []
    for block in getattr(result, "content", None) or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(str(block.text))
        elif kind == "resource":
            resource = block.resource
            urls.append(str(resource.uri))
            parts.append(str(getattr(resource, "text", "") or f"[resource {resource.uri}]"))
        elif kind == "resource_link":
            urls.append(str(block.uri))
            parts.append(f"[link {block.uri}]")
        else:
            parts.append(f"[{kind or 'content'} {getattr(block, 'mime_type', '') or ''}]".strip())
    structured = getattr(result, "structured_content", None)
    if not parts and structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False, default=str))
    return "\n".join(parts), [u for u in urls if u.startswith(("http://", "https://"))]


def schema_problems(schema: dict[str, Any], arguments: dict[str, Any]) -> list[str]:
    """What is wrong with ``arguments`` under the JSON schema (empty when they fit, or when
    the schema itself is unusable: the server then decides)."""
    import jsonschema  # type: ignore[import-untyped]  # no stubs; mcp depends on it

    try:
        cls = jsonschema.validators.validator_for(schema)
        validator = cls(schema)
        errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.path))
    except Exception:  # a schema jsonschema cannot read: leave the check to the server
        return []
    return [f"{'.'.join(str(p) for p in err.path) or 'arguments'}: {err.message}"
            for err in errors[:10]]


def _object_schema(schema: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in schema.items() if k != "title"}
    out.setdefault("type", "object")
    out.setdefault("properties", {})
    return out


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"
