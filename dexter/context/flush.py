"""Memory flush: before compaction, keep the durable facts of the session in memory files.

One model call (the main model) asks for facts about the user and decisions worth
remembering; the reply is appended under a dated heading to the day's file
``<memory dir>/YYYY-MM-DD.md`` (local date), which the memory index reads. A reply saying
there is nothing to keep writes nothing. Two forms:

- As a continuation of the main conversation (``dexter.context.continuation``): the main
  request itself plus one final instruction (``build_flush_instruction``). The model
  then has the tool results in view, as in every research turn; they are billed at the
  cached rate, and the instruction says they are not memory material.
- Separate (a provider without prompt caching, or a window that cannot hold the
  continuation): ``build_flush_prompt`` over ``conversation_text``, the user's messages,
  earlier summaries and the model's own notes and conclusions, not the raw tool results:
  resending every result made each flush request larger than the largest main request.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from dexter.context.calls import call_model
from dexter.context.tokens import estimate_message_tokens, estimate_text_tokens
from dexter.memory.store import memory_lock
from dexter.messages import AssistantMessage, Message, Usage, UserMessage
from dexter.providers.base import ChatModel, ModelRequest
from dexter.providers.errors import ProviderError
from dexter.secrets import scrub

NO_MEMORY_TOKEN = "NO_MEMORY_TO_FLUSH"

FLUSH_SYSTEM = (
    "You keep a research assistant's long-term memory about its user. You reply with "
    "concise markdown bullets or with NO_MEMORY_TO_FLUSH, never with tool calls."
)

FLUSH_HEADING = "Pre-compaction memory flush"

DEFAULT_FLUSH_OUTPUT_TOKENS = 2_048
REQUEST_SAFETY = 0.85
"""Share of the window a flush request may fill (the estimate is approximate)."""

_OMITTED_NOTE = "[Earlier conversation omitted to fit the model's context window: {chars:,} characters]\n\n"
_NOTHING_RE = re.compile(
    r"^(?:no|nothing|none)\b.{0,80}\b(?:memor(?:y|ies)|remember|keep|store|save|flush|"
    r"durable|facts?|worth)\b", re.I | re.S,
)
_FENCE_RE = re.compile(r"^```[a-zA-Z]*\n(?P<body>.*?)\n?```$", re.S)
_RESULT_START = re.compile(r"(?m)^### ")
_CALL_ARGS_CHARS = 200
_SPEAKERS = {"query": "The user (this query)", "history": "The user (earlier in the session)",
             "queued": "The user (while the agent worked)", "summary": "Summary of the research so far"}


class FlushError(Exception):
    """The memory flush failed; the message says why (no API keys in it)."""


@dataclass(frozen=True, slots=True)
class FlushResult:
    """What a flush kept."""

    files_written: list[str]
    """Names of the memory files written, relative to the memory folder."""
    text: str
    """The bullets written (empty when there was nothing to keep)."""
    omitted_chars: int = 0
    """Characters of the older conversation left out so the request fit the window."""
    usage: Usage = field(default_factory=Usage)


def conversation_text(messages: list[Message]) -> str:
    """The flush's material: the conversation without the raw tool results.

    One ``### `` block per message: the user's messages (the query, earlier-session turns,
    messages typed while the agent worked, a compaction summary) and the assistant's text
    (its notes and conclusions), with each tool call as one line (tool name and
    arguments, cut short). Tool results, the system prompt and dexter's own notes to the
    model are left out.
    """
    blocks: list[str] = []
    for message in messages:
        if isinstance(message, UserMessage):
            speaker = _SPEAKERS.get(message.kind)
            if speaker and message.content.strip():
                blocks.append(f"### {speaker}\n{message.content.strip()}")
        elif isinstance(message, AssistantMessage):
            lines = [message.text.strip()] if message.text.strip() else []
            for call in message.tool_calls:
                args = json.dumps(call.arguments, ensure_ascii=False, sort_keys=True)
                if len(args) > _CALL_ARGS_CHARS:
                    args = args[:_CALL_ARGS_CHARS] + "…"
                lines.append(f"[called {call.name} {args}]")
            if lines:
                blocks.append("### The assistant\n" + "\n".join(lines))
    return "\n\n".join(blocks)


DURABLE_FACTS = (
    "Write concise markdown bullets (\"- ...\") of durable facts only:\n"
    "- the user's financial goals, time horizon and liquidity needs;\n"
    "- holdings, accounts (brokerage, 401k, IRA) and allocation changes;\n"
    "- risk tolerance and investing philosophy, and stated preferences;\n"
    "- decisions the user made and their reasons;\n"
    "- findings of lasting value to the user (not figures that will change).\n"
    "Do not include temporary tool output, market data, prices or quotes."
)
"""The rules of every flush prompt: what counts as memory material and what does not."""

NOTHING_TO_KEEP = f"If nothing is worth keeping, reply with exactly {NO_MEMORY_TOKEN} and nothing else."

FLUSH_TASK = (
    "This research session is about to be compacted: older context will be replaced "
    "by a summary. Before that happens, pick out what is worth remembering about the "
    "user for future sessions."
)


def build_flush_prompt(query: str, conversation: str) -> str:
    """The user prompt of the separate flush call; ``conversation`` is ``conversation_text``."""
    return (
        f"{FLUSH_TASK}\n\n"
        f"The user's query:\n{query}\n\n"
        "The conversation so far (the user's messages and the assistant's notes; raw tool "
        f"output is left out):\n{conversation or '[nothing yet]'}\n\n"
        f"{DURABLE_FACTS}\n{NOTHING_TO_KEEP}"
    )


CONVERSATION_SOURCES = (
    "Take them from the conversation above: the user's messages and your own notes and "
    "conclusions. The tool results above are data for the research, not memory material."
)


def build_flush_instruction(opening: str) -> str:
    """The final user message of a flush sent as a continuation of the conversation;
    ``opening`` is the side requests' text-only line."""
    return (f"{opening}\n\n{FLUSH_TASK} {CONVERSATION_SOURCES}\n\n"
            f"{DURABLE_FACTS}\n{NOTHING_TO_KEEP}")


async def memory_flush(
    model: ChatModel,
    query: str,
    conversation: str,
    *,
    window: int,
    memory_dir: Path,
    now: datetime | None = None,
    system: str = FLUSH_SYSTEM,
    max_output_tokens: int = DEFAULT_FLUSH_OUTPUT_TOKENS,
) -> FlushResult:
    """Ask ``model`` for durable facts and append them to today's memory file.

    ``conversation`` is ``conversation_text`` of the view. The request never exceeds
    ``window``: when the conversation does not fit, the MOST RECENT part that fits is sent
    (cut at a message boundary when possible) with a note saying how much was left out. One call, no chunking: a flush is a best-effort
    safety net, and the newest messages are the likeliest to hold what is not yet in memory.

    Raises ``FlushError`` when the call fails, the window is too small, or the file cannot
    be written.
    """
    budget = int(window * REQUEST_SAFETY) - max_output_tokens
    overhead = estimate_message_tokens([UserMessage(build_flush_prompt(query, ""))], system)
    room = budget - overhead - estimate_text_tokens(_OMITTED_NOTE.format(chars=10**12))
    if room < 500:
        raise FlushError(
            f"The model's context window ({window:,} tokens) is too small for a memory flush."
        )
    material, omitted = fit_recent(conversation, room)
    if omitted:
        material = _OMITTED_NOTE.format(chars=omitted) + material
    request = ModelRequest(
        system=system,
        messages=(UserMessage(build_flush_prompt(query, material)),),
        tools=(),
        max_tokens=max_output_tokens,
    )
    try:
        response = await call_model(model, request)
    except ProviderError as exc:
        raise FlushError(f"Memory flush call failed: {exc}") from exc
    return keep_reply(response.message.text, memory_dir, now, usage=response.usage,
                      omitted=omitted)


def keep_reply(reply: str, memory_dir: Path, now: datetime | None = None, *,
               usage: Usage | None = None, omitted: int = 0) -> FlushResult:
    """Append the durable facts of a flush ``reply`` to today's memory file (nothing when
    the reply says there is nothing to keep). Raises ``FlushError`` when the file cannot be
    written."""
    text = clean_reply(reply)
    usage = usage or Usage()
    if is_nothing_to_keep(text):
        return FlushResult([], "", omitted, usage)
    try:
        path = append_memory(memory_dir, text, now or datetime.now())
    except OSError as exc:
        raise FlushError(
            f"Could not write the memory file in {memory_dir}: {exc.strerror or exc}"
        ) from exc
    return FlushResult([path.name], text, omitted, usage)


def fit_recent(text: str, max_tokens: int) -> tuple[str, int]:
    """The most recent part of ``text`` within ``max_tokens``, and how many chars were cut.

    Cuts at the first block boundary (a line starting ``### ``) inside the kept part when
    there is one, so the model never sees half a block header.
    """
    if estimate_text_tokens(text) <= max_tokens:
        return text, 0
    # No text estimates above one token per character, so this many characters always fit;
    # grow towards the largest tail that still fits.
    low, high = max_tokens, len(text)
    while low < high:
        mid = (low + high + 1) // 2
        if estimate_text_tokens(text[-mid:]) <= max_tokens:
            low = mid
        else:
            high = mid - 1
    tail = text[-low:] if low else ""
    at_boundary = tail.startswith("### ") and text[-low - 1] == "\n"
    boundary = None if at_boundary else _RESULT_START.search(tail, 1)
    if boundary:
        tail = tail[boundary.start():]
    return tail, len(text) - len(tail)


def clean_reply(reply: str) -> str:
    """The reply without surrounding whitespace or a wrapping code fence."""
    text = reply.strip()
    fenced = _FENCE_RE.match(text)
    if fenced:
        text = fenced.group("body").strip()
    return text


def is_nothing_to_keep(text: str) -> bool:
    """True for an empty reply, the token (in backticks, quotes or with a full stop), or a
    short one-line "nothing to keep" phrasing. A reply with bullets is never "nothing"."""
    bare = text.strip().strip("`'\"*_ .").strip()
    if not bare or bare.upper() == NO_MEMORY_TOKEN:
        return True
    if "\n" in bare or bare.lstrip().startswith(("-", "*")) or len(bare) > 160:
        return False
    return NO_MEMORY_TOKEN in bare.upper() or bool(_NOTHING_RE.match(bare))


def append_memory(memory_dir: Path, text: str, now: datetime) -> Path:
    """Append ``text`` under ``## HH:MM — Pre-compaction memory flush`` to the day's file."""
    local = now.astimezone() if now.tzinfo else now
    path = memory_dir / f"{local:%Y-%m-%d}.md"
    with memory_lock(memory_dir):  # another dexter may be editing the same file
        existing = path.stat().st_size if path.exists() else 0
        separator = ""
        if existing:
            with path.open("rb") as handle:
                handle.seek(-1, 2)
                separator = "\n" if handle.read(1) == b"\n" else "\n\n"
        with path.open("a", encoding="utf-8") as handle:
            handle.write(scrub(f"{separator}## {local:%H:%M} — {FLUSH_HEADING}\n\n{text}\n"))
    return path
