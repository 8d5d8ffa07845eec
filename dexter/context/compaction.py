"""LLM compaction: summarize the research so far, keeping every number and its source id.

Two forms. As a continuation of the main conversation (``dexter.context.continuation``):
the main model gets the main request itself, byte for byte, plus one final instruction
(``build_continuation_prompt``), so a provider that caches prompt prefixes reads nearly
all of it from its cache. Otherwise, the separate form here: the fast model, no tools
bound, over the scratchpad's tool-results text (disk, not the trimmed view, so numbers
already cleared from the view still reach the summary). When that input would not fit the
fast model's own window, it is summarized in chunks (cut at result boundaries) and the
partial summaries are merged, recursively if needed: the summarizer never overflows.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from dexter.context.calls import call_model
from dexter.context.tokens import estimate_message_tokens, estimate_text_tokens
from dexter.messages import Message, SystemMessage, Usage, UserMessage, head_length
from dexter.providers.base import ChatModel, ModelRequest
from dexter.providers.errors import ProviderError

SUMMARY_SECTIONS: tuple[str, ...] = (
    "Original Query and Intent",
    "Key Concepts",
    "Data Retrieved",
    "Errors and Retries",
    "Analysis Progress",
    "Numerical Data",
    "Pending Data Needs",
    "Current Work State",
    "Recommended Next Steps",
)

COMPACTION_SYSTEM = (
    "You write faithful, complete summaries of financial research sessions so that the "
    "research can continue from them. You reply with plain text only and never call tools."
)

DEFAULT_SUMMARY_OUTPUT_TOKENS = 8_192
"""Default ``max_output_tokens`` of a compaction call (the window keeps 20,000 in reserve)."""

ESTIMATE_MARGIN = 1.10
"""Headroom on the input estimate: a request fits when its estimated input times this
margin, plus ``max_output_tokens``, is within the window. The estimator errs high for code
and JSON and is within a few percent on prose, so 10% of the input covers it; the error
grows with the input, so the margin scales with the input, not with the window (a share of
the whole window, 0.85 before, left 15,000 tokens unused at 100,000 and split inputs that
fit into chunks and a merge)."""

_MAX_MERGE_DEPTH = 4

_TEXT_ONLY_OPENING = (
    "IMPORTANT: reply with plain text only. No tools are available in this step, and any "
    "tool call fails the task."
)
_TEXT_ONLY_CLOSING = (
    "REMEMBER: plain text only. Write the <analysis> block, then the <summary> block, and "
    "nothing else. Any tool call fails the task."
)
CONTINUATION_OPENING = (
    "IMPORTANT: this step is not research. Reply with plain text only: the tools are listed "
    "because this conversation uses them, but any tool call in this step fails the task."
)
"""The first line of every side request sent as a continuation (flush and compaction)."""
_CONTINUATION_CLOSING = (
    "REMEMBER: plain text only, no tool call. Write the <analysis> block, then the <summary> "
    "block, and nothing else."
)

_ANALYSIS_RE = re.compile(r"<analysis>.*?(?:</analysis>|(?=<summary>)|\Z)", re.S | re.I)
_SUMMARY_RE = re.compile(r"<summary>(.*?)(?:</summary>|\Z)", re.S | re.I)
_BLANK_RUNS = re.compile(r"\n{3,}")


class CompactionError(Exception):
    """Compaction did not produce a usable summary; the message says why."""


@dataclass(frozen=True, slots=True)
class CompactionResult:
    """A successful compaction."""

    summary: str
    """The formatted summary, starting ``Summary:``."""
    calls: int
    usage: Usage = field(default_factory=Usage)
    chunks: int = 1
    """How many pieces the input was summarized in (1 = a single call)."""
    model: str = ""


def build_compaction_prompt(query: str, tool_results_text: str) -> str:
    """The user prompt of a (single-call) compaction."""
    return _prompt(
        task=(
            "The research session below ran out of context space. Summarize it so the work "
            "can continue from your summary alone."
        ),
        query=query,
        material_title="Data retrieved by the tool calls so far",
        material=tool_results_text or "[no tool results yet]",
    )


def build_chunk_prompt(query: str, chunk: str, index: int, total: int) -> str:
    """The prompt for one part of an input too large for a single call."""
    return _prompt(
        task=(
            f"The research session below ran out of context space. Its retrieved data is too "
            f"large for one pass, so you are given part {index} of {total}. Summarize this "
            "part; the parts will be merged afterwards."
        ),
        query=query,
        material_title=f"Data retrieved by the tool calls (part {index} of {total})",
        material=chunk,
    )


def build_merge_prompt(query: str, partial_summaries: str) -> str:
    """The prompt that merges partial summaries into one."""
    return _prompt(
        task=(
            "The research session below was summarized in several parts. Merge the partial "
            "summaries into one summary of the whole session. Where parts overlap, keep one "
            "copy; where they differ, keep both values and say where each came from."
        ),
        query=query,
        material_title="Partial summaries to merge",
        material=partial_summaries,
    )


def _prompt(*, task: str, query: str, material_title: str, material: str) -> str:
    return (
        f"{_TEXT_ONLY_OPENING}\n\n"
        f"{task}\n\n"
        f"{summary_instructions()}\n\n"
        f"Original query:\n{query}\n\n"
        f"{material_title}:\n{material}\n\n"
        f"{_TEXT_ONLY_CLOSING}"
    )


def summary_instructions(reply_opening: str = "") -> str:
    """What every compaction prompt asks for: an ``<analysis>`` draft, then a ``<summary>``
    with the nine sections, every number kept with its source id. ``reply_opening`` is
    what the reply starts with before ``<analysis>`` (the combined flush's ``<memory>``)."""
    sections = "\n".join(f"{n}. {title}" for n, title in enumerate(SUMMARY_SECTIONS, 1))
    return (
        "First think in an <analysis> block: go through the tool calls in order and note "
        "what each asked for, the data it returned, any error or empty result, and how it "
        "bears on the query. Then check that every number is carried over exactly.\n\n"
        "Then write a <summary> block with these nine sections, with exactly these titles, "
        f"in this order:\n{sections}\n\n"
        "The Numerical Data section is the most important one: keep EVERY number the tools "
        "returned (values, growth rates, ratios, prices, share counts, dates), each with its "
        "unit, its period and the tool or source it came from, and the source id shown in "
        "its result's header (write it as [S3] right after the number: the answer cites "
        "these ids). Do not round, drop or merge numbers; when in doubt, include it. The "
        "research cannot fetch them again cheaply.\n\n"
        f"Shape of the reply:\n{reply_opening}<analysis>\n...\n</analysis>\n<summary>\n"
        + "\n".join(f"## {n}. {title}\n..." for n, title in enumerate(SUMMARY_SECTIONS, 1))
        + "\n</summary>"
    )


RESTORED_TITLE = ("Results the conversation above shows only in part (cleared or cut to a "
                  "preview), in full from the run's record")


def build_continuation_prompt(query: str, restored: Sequence[str] = (), *,
                              extra_task: str = "", reply_opening: str = "") -> str:
    """The final user message of a compaction sent as a continuation of the conversation.

    The material is the conversation above it; ``restored`` are the scratchpad pieces of
    results the view holds only in part, so their numbers reach the summary too.
    ``extra_task`` and ``reply_opening`` add the memory flush's part (the combined side
    request of ``dexter.context.continuation``).
    """
    summarize = "Summarize it so the work can continue from your summary alone."
    closing = _CONTINUATION_CLOSING
    if extra_task:
        task = ("The research conversation above ran out of context space. Two tasks, in this "
                f"order.\n\nTask 1. {extra_task}\n\nTask 2. The summary. {summarize}")
        closing = closing.replace("Write the <analysis> block",
                                  "Write the <memory> block, then the <analysis> block")
    else:
        task = f"The research conversation above ran out of context space. {summarize}"
    material = ("\n\n" + RESTORED_TITLE + ":\n" + "\n\n".join(restored)) if restored else ""
    return (
        f"{CONTINUATION_OPENING}\n\n"
        f"{task}\n\n"
        f"{summary_instructions(reply_opening)}\n\n"
        f"Original query:\n{query}{material}\n\n"
        f"{closing}"
    )


def format_summary(reply: str) -> str:
    """Strip the ``<analysis>`` draft and return ``Summary:`` plus the summary text.

    Without ``<summary>`` tags the text left after removing the analysis is used. Raises
    ``CompactionError`` when nothing remains.
    """
    without_analysis = _ANALYSIS_RE.sub("", reply)
    match = _SUMMARY_RE.search(without_analysis)
    body = match.group(1) if match else without_analysis
    body = _BLANK_RUNS.sub("\n\n", body).strip()
    if not body:
        raise CompactionError("Compaction returned an empty summary.")
    return f"Summary:\n{body}"


def continuation_message(summary: str) -> UserMessage:
    """The message that follows the query after a compaction, in place of the research."""
    return UserMessage(
        kind="summary",
        content=(
            "The context of this research ran out. The summary below records the data "
            "retrieved and the analysis so far, with every number the tools returned.\n\n"
            f"{summary}\n\n"
            "Continue the research toward answering the query above. Resume directly where "
            "the work stopped: do not acknowledge or recap this summary, and do not ask the "
            "user anything."
        ),
    )


def apply_compaction(messages: list[Message], query: str,
                     summary_message: UserMessage) -> list[Message]:
    """The view after a compaction: the system prompt, the query and the summary message.

    The system prompt and the query are the very messages of the view (unchanged, so the
    cached prefix of the requests before reaches through them), and the summary follows
    as its own message, so later turns only extend this view. A previous compaction's
    summary is replaced (the new one covers it). Earlier-session history is dropped on
    purpose: the summary covers what this run needs, and keeping history would leave the
    view large right after making it small.
    """
    head = [messages[0]] if messages and isinstance(messages[0], SystemMessage) else []
    end = head_length(messages)
    query_message = next(
        (m for m in reversed(messages[:end]) if isinstance(m, UserMessage) and m.kind == "query"),
        None)
    if query_message is None or query_message.content != query:
        query_message = UserMessage(query, kind="query")
    return [*head, query_message, summary_message]


async def compact(
    model: ChatModel,
    query: str,
    material: str | Sequence[str],
    *,
    fast_window: int,
    system: str = COMPACTION_SYSTEM,
    max_output_tokens: int = DEFAULT_SUMMARY_OUTPUT_TOKENS,
) -> CompactionResult:
    """Summarize ``material`` with ``model`` (the fast model), no tools bound.

    ``material`` is the scratchpad's compaction input as pieces, one per record
    (``Scratchpad.compaction_input``), or one text. One call when the request fits
    ``fast_window`` (the estimated request times ``ESTIMATE_MARGIN``, plus
    ``max_output_tokens``, within the window). Otherwise the pieces are packed, in order, into
    chunks that fit (a piece too big for one chunk is cut between lines), each chunk is
    summarized, and the partial summaries are merged with one more call (packed again if
    they still do not fit). Raises ``CompactionError`` on a provider error, an empty
    reply, or a window too small to summarize anything.
    """
    runner = _Runner(model, query, system, max_output_tokens, fast_window)
    pieces = [material] if isinstance(material, str) else list(material)
    reply = await runner.summarize(pieces, depth=0)
    return CompactionResult(format_summary(reply), runner.calls, runner.usage, runner.chunks,
                            model.model)


class _Runner:
    """State of one compaction: the calls made and their usage."""

    def __init__(self, model: ChatModel, query: str, system: str, max_output: int,
                 window: int) -> None:
        self.model = model
        self.query = query
        self.system = system
        self.max_output = max_output
        self.calls = 0
        self.chunks = 1
        self.usage = Usage()
        self.budget = input_budget(window, max_output)
        templates = (build_compaction_prompt(query, ""), build_chunk_prompt(query, "", 99, 99),
                     build_merge_prompt(query, ""))
        overhead = max(estimate_message_tokens([UserMessage(t)], system) for t in templates)
        self.material_budget = self.budget - overhead
        if self.material_budget < 1_000:
            raise CompactionError(
                f"The fast model's context window ({window:,} tokens) is too small to "
                f"summarize with {max_output:,} output tokens; configure a larger "
                "[context_windows] entry for it or a different fast_model."
            )

    async def summarize(self, pieces: list[str], *, depth: int, merging: bool = False) -> str:
        text = "\n\n".join(pieces)
        prompt = (build_merge_prompt(self.query, text) if merging
                  else build_compaction_prompt(self.query, text))
        if self._fits(prompt):
            return await self._call(prompt)
        if depth >= _MAX_MERGE_DEPTH:
            raise CompactionError("Compaction input did not shrink enough after several merge rounds.")
        chunks = pack_pieces(pieces, self.material_budget)
        self.chunks = max(self.chunks, len(chunks))
        partials = []
        for n, chunk in enumerate(chunks, 1):
            prompt = (build_merge_prompt(self.query, chunk) if merging
                      else build_chunk_prompt(self.query, chunk, n, len(chunks)))
            reply = await self._call(prompt)
            partials.append(f"### Partial summary {n} of {len(chunks)}\n{_summary_body(reply)}")
        if estimate_text_tokens("\n\n".join(partials)) >= estimate_text_tokens(text):
            raise CompactionError(
                "Compaction input did not shrink: the partial summaries were as long as the "
                "data they summarized.")
        return await self.summarize(partials, depth=depth + 1, merging=True)

    def _fits(self, prompt: str) -> bool:
        return estimate_message_tokens([UserMessage(prompt)], self.system) <= self.budget

    async def _call(self, prompt: str) -> str:
        request = ModelRequest(system=self.system, messages=(UserMessage(prompt),), tools=(),
                               max_tokens=self.max_output)
        try:
            response = await call_model(self.model, request)
        except ProviderError as exc:
            raise CompactionError(f"Compaction call failed: {exc}") from exc
        self.calls += 1
        self.usage = self.usage + response.usage
        text = response.message.text
        if not text.strip():
            raise CompactionError("Compaction returned an empty response.")
        return text


def input_budget(window: int, max_output: int) -> int:
    """The largest estimated input (tokens) of a compaction request on ``window``."""
    return int((window - max_output) / ESTIMATE_MARGIN)


def _summary_body(reply: str) -> str:
    """The summary text of a partial reply (without the ``Summary:`` prefix)."""
    return format_summary(reply).removeprefix("Summary:\n")


def pack_pieces(pieces: Sequence[str], max_tokens: int) -> list[str]:
    """Pack ``pieces`` (one per record), in order, into chunks of at most ``max_tokens``
    estimated tokens, joined by blank lines. A piece larger than the budget is cut between
    lines, and a single over-long line by characters."""
    parts: list[str] = []
    for piece in pieces:
        parts.extend(_split_oversized(piece, max_tokens))
    chunks: list[str] = []
    current: list[str] = []
    current_tokens = 0
    for part in parts:
        tokens = estimate_text_tokens(part) + 1
        if current and current_tokens + tokens > max_tokens:
            chunks.append("\n\n".join(current))
            current, current_tokens = [], 0
        current.append(part)
        current_tokens += tokens
    if current:
        chunks.append("\n\n".join(current))
    return chunks


def _split_oversized(part: str, max_tokens: int) -> list[str]:
    """``part`` itself when it fits, else line groups (or character slices) that fit."""
    if estimate_text_tokens(part) <= max_tokens:
        return [part]
    out: list[str] = []
    for line in part.splitlines(keepends=True):
        if estimate_text_tokens(line) <= max_tokens:
            out.append(line)
            continue
        # No text estimates above one token per character, so this slice always fits.
        step = max(max_tokens, 1)
        out.extend(line[i : i + step] for i in range(0, len(line), step))
    return out
