"""What a tool is: a name, a pydantic parameter model, flags, and an async ``run``.

The parameter model is the one schema source for both providers: adapters turn
``Tool.json_schema()`` into OpenAI ``function`` tools or Anthropic ``input_schema`` tools.
"""

from __future__ import annotations

import dataclasses
import json
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from dexter.evidence.documents import Document
from dexter.evidence.tables import DataTable
from dexter.failures import ToolFailure as ToolFailure

if TYPE_CHECKING:
    from dexter.config import Settings
    from dexter.events import Event, SubagentStatus
    from dexter.providers.base import ChatModel
    from dexter.sandbox.policy import Grants
    from dexter.sandbox.runner import SandboxRunner

P = TypeVar("P", bound=BaseModel)

ProgressFn = Callable[["str | SubagentStatus"], None]
"""Reports a running tool's progress: a line of text, or a worker agent's status."""
# Asks the user 1-4 questions; returns the formatted answer text, or None when no user is present.
UserInputFn = Callable[[list[dict[str, Any]]], Awaitable[dict[str, Any] | None]]


@dataclass(frozen=True)
class WorkerSpec:
    """A worker agent to run for ``spawn_subagent``: its models, tools, prompt and query."""

    settings: Settings
    model: ChatModel
    fast_model: ChatModel
    context_window: int
    fast_context_window: int
    tools: tuple[Tool[Any], ...]
    system_prompt: str
    query: str


WorkerRunner = Callable[[WorkerSpec], AsyncGenerator["Event", None]]
"""Runs a worker agent and streams its events; the agent layer provides it (tools never
import the loop)."""


@dataclass
class ToolContext:
    """What a running tool may use. Built once per run by the agent."""

    settings: Settings
    cwd: Path
    home: Path
    progress: ProgressFn = lambda _msg: None
    fast_model: ChatModel | None = None
    model: ChatModel | None = None
    request_user_input: UserInputFn | None = None
    interactive: bool = False
    context_window: int | None = None
    fast_context_window: int | None = None
    run_worker: WorkerRunner | None = None
    shell_sandbox: SandboxRunner | None = None
    grants: Grants | None = None

    def with_progress(self, progress: ProgressFn, grants: Grants | None = None) -> ToolContext:
        """A copy for one call: its progress goes to ``progress``; ``grants`` are what its
        approval added to the sandbox (network, extra paths)."""
        return dataclasses.replace(self, progress=progress, grants=grants)


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """A tool's result: text for the model, plus what the source ledger keeps of it.

    ``title`` says what the data is (default: the tool and its main argument);
    ``source_urls`` are its links (SEC filing, web page; default: a ``path`` or ``url``
    argument); ``tables`` are the records it fetched, as numbers (default: those of a JSON
    result); ``documents`` the filings whose text it read; ``alerts`` are what the user
    must be told about the call (the sandbox rolled back what a command did to a protected
    path), shown as a ``sandbox_alert`` event.
    """

    content: str
    source_urls: tuple[str, ...] = ()
    is_error: bool = False
    title: str = ""
    tables: tuple[DataTable, ...] = ()
    documents: tuple[Document, ...] = ()
    alerts: tuple[str, ...] = ()


class Tool(ABC, Generic[P]):
    """Base class for every tool.

    Subclasses set the class attributes and implement ``run``.

    - ``concurrency_safe``: may run in parallel with other safe calls (read-only tools).
    - ``compactable``: its old results may be cleared from the context later, because
      the model can fetch them again.
    - ``needs_approval``: the permission engine asks before it runs (writes, shell).
    """

    name: ClassVar[str]
    description: ClassVar[str]
    params: ClassVar[type[BaseModel]]
    concurrency_safe: ClassVar[bool] = False
    compactable: ClassVar[bool] = False
    needs_approval: ClassVar[bool] = False
    source_kind: ClassVar[Literal["data", "calculation", "user"] | None] = "data"
    """What a successful result is in the source ledger: fetched data, a calculation (its
    result counts once its inputs are supported), the user's words, or None: not a source
    (a tool that echoes what the model wrote, such as write_file)."""

    @abstractmethod
    async def run(self, args: P, ctx: ToolContext) -> str | ToolOutput:
        """Do the work. Raise ``ToolFailure`` for an expected error the model should see."""

    def preview(self, args: P, ctx: ToolContext) -> str | None:
        """What the call would change, shown when it asks for approval (a diff, the new
        content), computed without changing anything; None: nothing to show."""
        return None

    def bound(self) -> bool:
        """Whether the tool's definition is sent with the next request (True; an MCP tool
        in search mode is not until ``mcp_search`` selects it). It can be called either way."""
        return True

    def evidence(self, content: str) -> str:
        """The part of a successful result whose numbers count as evidence (all of it)."""
        return content

    def json_schema(self) -> dict[str, Any]:
        """The JSON schema of the parameters, without pydantic's title noise."""
        schema = self.params.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            if isinstance(prop, dict):
                prop.pop("title", None)
        schema.setdefault("properties", {})
        return schema

    def parse_args(self, arguments: dict[str, Any]) -> P:
        """Validate raw arguments; raises ``ToolFailure`` naming each bad field."""
        try:
            return self.params.model_validate(arguments)  # type: ignore[return-value]
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
                for err in exc.errors()
            )
            raise ToolFailure(f"Invalid arguments for {self.name}: {problems}") from None


def format_result(data: Any, source_urls: list[str] | None = None) -> str:
    """The common JSON envelope tools return: ``{"data": ..., "source_urls": [...]}``."""
    payload: dict[str, Any] = {"data": data}
    if source_urls:
        payload["source_urls"] = list(dict.fromkeys(source_urls))
    return json.dumps(payload, ensure_ascii=False, default=str)
