"""Side requests as a continuation of the main conversation, so they read its cached prefix.

A provider that caches prompt prefixes bills a repeated prefix at a fraction of its price
(OpenAI and most OpenAI-compatible clouds automatically, Anthropic through the adapter's
cache breakpoints). The memory flush and the compaction are sent here as the request the
loop would send next for the same view, byte for byte (``main_request``: the same system
prompt, tool definitions and messages), plus one final user message with the instruction,
to the main model (a cache belongs to one model). The tools stay bound and no
``tool_choice`` is set, since either would make a different prompt for the cache; the
instruction asks for text only, and a reply that calls a tool is an error of the side
request (``SideRequestError``), never a tool run.

When both are due they go as one request (``flush_and_compact``): the reply holds a
``<memory>`` part and the summary, so a compaction cycle costs one side request. Results
the view shows only in part (cleared by microcompact, cut to a preview, dropped by a
truncation) are added to the instruction in full from the scratchpad
(``restored_pieces``), so the summary's input is the same as the separate form's.

Where the provider caches nothing, or the window cannot hold the continuation
(``Continuation.fits``), the threshold step uses the separate forms of
``dexter.context.compaction`` and ``dexter.context.flush``; a continuation that fails is
followed by the separate form at once.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

from dexter.context.calls import call_model
from dexter.context.compaction import (
    CONTINUATION_OPENING,
    DEFAULT_SUMMARY_OUTPUT_TOKENS,
    ESTIMATE_MARGIN,
    CompactionError,
    CompactionResult,
    build_continuation_prompt,
    format_summary,
)
from dexter.context.flush import (
    CONVERSATION_SOURCES,
    DEFAULT_FLUSH_OUTPUT_TOKENS,
    DURABLE_FACTS,
    FLUSH_TASK,
    NO_MEMORY_TOKEN,
    FlushResult,
    build_flush_instruction,
    keep_reply,
)
from dexter.context.tokens import MESSAGE_OVERHEAD_TOKENS, estimate_text_tokens
from dexter.messages import Message, SystemMessage, ToolResultMessage, UserMessage
from dexter.providers.base import ChatModel, ModelRequest, ModelResponse, ToolSpec
from dexter.providers.errors import ProviderError
from dexter.scratchpad import ToolResultRecord

SideKind = Literal["flush", "compaction", "flush+compaction"]

MEMORY_PART = (
    f"Memory. {FLUSH_TASK} {CONVERSATION_SOURCES} Write them inside a <memory> block.\n"
    f"{DURABLE_FACTS}\nIf nothing is worth keeping, write exactly {NO_MEMORY_TOKEN} inside "
    "the <memory> block."
)
"""The memory flush's part of the combined side request."""

_MEMORY_RE = re.compile(r"<memory>(.*?)(?:</memory>|(?=<analysis>|<summary>)|\Z)", re.S | re.I)


class SideRequestError(Exception):
    """A side request sent as a continuation gave no usable reply: a tool call, an empty
    reply or one without the part asked for, or a provider error. The separate form
    follows."""


def main_request(view: Sequence[Message], tools: tuple[ToolSpec, ...],
                 max_tokens: int) -> ModelRequest:
    """The request the loop sends for ``view`` (the system prompt first, if any)."""
    system = view[0].content if view and isinstance(view[0], SystemMessage) else ""
    return ModelRequest(system=system,
                        messages=tuple(m for m in view if not isinstance(m, SystemMessage)),
                        tools=tools, max_tokens=max_tokens)


def side_request(view: Sequence[Message], tools: tuple[ToolSpec, ...], instruction: str,
                 max_tokens: int) -> ModelRequest:
    """``main_request(view, tools)`` with ``instruction`` as one more user message."""
    main = main_request(view, tools, max_tokens)
    return dataclasses.replace(main, messages=(*main.messages, UserMessage(instruction, kind="note")),
                               continuation=True)


def restored_pieces(view: Sequence[Message], records: Sequence[ToolResultRecord]) -> list[str]:
    """The compaction-input pieces (``### [S3] tool(args)`` and the full text) of the
    ``records`` the view does not hold whole: cleared, cut to a preview, or gone."""
    shown = {m.tool_call_id: m.content for m in view if isinstance(m, ToolResultMessage)}
    pieces = []
    for record in records:
        content = shown.get(record.tool_call_id) if record.tool_call_id else None
        whole = content is not None and content in (
            record.result, f"[{record.source_id}] {record.result}")
        if not whole:
            pieces.append(record.block())
    return pieces


def instruction(kind: SideKind, query: str, restored: Sequence[str] = ()) -> str:
    """The final user message of a side request of ``kind``."""
    if kind == "flush":
        return build_flush_instruction(CONTINUATION_OPENING)
    if kind == "compaction":
        return build_continuation_prompt(query, restored)
    return build_continuation_prompt(query, restored, extra_task=MEMORY_PART,
                                     reply_opening="<memory>\n- ...\n</memory>\n")


def output_tokens(kind: SideKind) -> int:
    """The ``max_tokens`` of a side request of ``kind``."""
    return {"flush": DEFAULT_FLUSH_OUTPUT_TOKENS, "compaction": DEFAULT_SUMMARY_OUTPUT_TOKENS,
            "flush+compaction": DEFAULT_FLUSH_OUTPUT_TOKENS + DEFAULT_SUMMARY_OUTPUT_TOKENS}[kind]


def reply_text(response: ModelResponse) -> str:
    """The text of a side request's reply. Raises ``SideRequestError`` for a tool call
    (which is not run) or an empty reply."""
    calls = response.message.tool_calls
    if calls:
        names = ", ".join(dict.fromkeys(call.name or "?" for call in calls))
        raise SideRequestError(
            f"the model answered with a tool call ({names}) instead of text; no tool was run")
    if not response.message.text.strip():
        raise SideRequestError("the model returned an empty reply")
    return response.message.text


def split_memory(reply: str) -> tuple[str | None, str]:
    """``(the <memory> part or None when there is none, the rest of the reply)``."""
    match = _MEMORY_RE.search(reply)
    if match is None:
        return None, reply
    return match.group(1), reply[:match.start()] + reply[match.end():]


@dataclass(frozen=True)
class Continuation:
    """What the side requests need to continue the main conversation: the main model (its
    cache holds the prefix), the tool definitions the next main request binds, the
    model's window, and the memory folder the flush writes to (None: memory off)."""

    model: ChatModel
    tools: tuple[ToolSpec, ...]
    window: int
    memory_dir: Path | None = None
    now: Callable[[], datetime] = datetime.now
    """The clock of the memory file's date and heading."""

    def fits(self, kind: SideKind, query: str, restored: Sequence[str], used: int,
             estimated: int) -> bool:
        """Whether the side request of ``kind`` fits the window.

        ``used`` is the view's size as the threshold step counts it (with the tool
        definitions); ``estimated`` of it is an estimate (all of it without a provider's
        count, else what the view grew since the last call). The estimated part and the
        instruction get ``ESTIMATE_MARGIN``; the output allowance is added whole.
        """
        extra = estimate_text_tokens(instruction(kind, query, restored)) + MESSAGE_OVERHEAD_TOKENS
        exact = max(used - estimated, 0)
        need = exact + ESTIMATE_MARGIN * (min(estimated, used) + extra) + output_tokens(kind)
        return need <= self.window

    async def flush(self, view: Sequence[Message], query: str) -> FlushResult:
        """The memory flush as a continuation. Raises ``SideRequestError`` (the separate
        form should follow) or ``FlushError`` (the memory file could not be written)."""
        response = await self._send(view, "flush", query, ())
        assert self.memory_dir is not None, "a flush needs the memory folder"
        return keep_reply(reply_text(response), self.memory_dir, self.now(),
                          usage=response.usage)

    async def compact(self, view: Sequence[Message], query: str,
                      restored: Sequence[str]) -> CompactionResult:
        """The compaction as a continuation. Raises ``SideRequestError``."""
        response = await self._send(view, "compaction", query, restored)
        return CompactionResult(_summary(reply_text(response)), calls=1, usage=response.usage,
                                model=self.model.model)

    async def flush_and_compact(self, view: Sequence[Message], query: str,
                                restored: Sequence[str]) -> tuple[FlushResult | Exception,
                                                                  CompactionResult | Exception]:
        """Both in one request; each part is its result or why it failed (a
        ``SideRequestError`` when the reply lacks it, the ``FlushError`` of a memory file
        that could not be written). Raises ``SideRequestError`` when the request itself
        gave nothing usable."""
        response = await self._send(view, "flush+compaction", query, restored)
        memory, rest = split_memory(reply_text(response))
        flushed: FlushResult | Exception
        if memory is None:
            flushed = SideRequestError("the reply had no <memory> part")
        else:
            assert self.memory_dir is not None, "a flush needs the memory folder"
            try:
                flushed = keep_reply(memory, self.memory_dir, self.now())
            except Exception as exc:
                flushed = exc
        summary: CompactionResult | Exception
        try:
            summary = CompactionResult(_summary(rest), calls=1, usage=response.usage,
                                       model=self.model.model)
        except SideRequestError as exc:
            summary = exc
        return flushed, summary

    async def _send(self, view: Sequence[Message], kind: SideKind, query: str,
                    restored: Sequence[str]) -> ModelResponse:
        request = side_request(view, self.tools, instruction(kind, query, restored),
                               output_tokens(kind))
        try:
            return await call_model(self.model, request)
        except ProviderError as exc:
            raise SideRequestError(f"the request failed: {exc}") from exc


def _summary(reply: str) -> str:
    try:
        return format_summary(reply)
    except CompactionError as exc:
        raise SideRequestError("the reply held no summary") from exc
