"""The renderer interface every view implements.

A renderer receives the loop's events one by one. ``close`` is always called at the end (use
``contextlib.closing`` or ``try/finally``), also after an exception or Ctrl-C, so live
displays stop and the terminal is left clean.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol, runtime_checkable

from dexter.events import Done, Event
from dexter.secrets import scrub_value
from dexter.text import CONTROL_CHARACTERS, clean_value, escape_controls, escape_controls_value


@runtime_checkable
class Renderer(Protocol):
    """Consumes agent events and shows them somewhere."""

    def handle(self, event: Event) -> None:
        """Show one event."""

    def close(self) -> None:
        """Stop any live display and flush output. Safe to call more than once."""


def _escaped_offset(text: str, offset: Any) -> Any:
    """Where ``offset`` into ``text`` lands in ``escape_controls(text)`` (other values as they are)."""
    if not isinstance(offset, int) or isinstance(offset, bool) or not 0 <= offset <= len(text):
        return offset
    return len(escape_controls(text[:offset]))


def for_terminal(event: Event) -> Event:
    """``event`` with every control character in its text made visible (see
    :func:`dexter.text.escape_controls`), for a view that prints to a terminal.

    The offsets of a ``done`` event's figures (``verification.unsupported`` and
    ``verification.figures``: ``start``/``end`` into the answer) are moved with the answer's
    text, so the marks still land after their figures.
    """
    escaped: Event = escape_controls_value(event)
    if not isinstance(event, Done) or not CONTROL_CHARACTERS.search(event.answer) \
            or not isinstance(event.verification, dict):
        return escaped
    assert isinstance(escaped, Done)
    answer = event.answer
    verification = dict(escaped.verification or {})
    for key in ("unsupported", "figures"):
        listed = event.verification.get(key)
        if isinstance(listed, list):
            verification[key] = [
                {**u, **{k: _escaped_offset(answer, u.get(k)) for k in ("start", "end")
                         if k in u}} if isinstance(u, dict) else u
                for u in escape_controls_value(listed)]
    return dataclasses.replace(escaped, verification=verification)


class ScrubbingRenderer:
    """Wraps a view so that no known secret value (see :mod:`dexter.secrets`) and no
    invalid text (a lone surrogate a provider sent: :mod:`dexter.text`) reaches it; with
    ``terminal`` (a view that prints text: live or plain lines) no control character from
    outside either (:func:`for_terminal`).

    Events are scrubbed before the view formats them: a live view wraps long lines, which
    would split a key across two lines where a scrub of the printed text could not find it.
    """

    def __init__(self, inner: Renderer, *, terminal: bool = False) -> None:
        self.inner = inner
        self.terminal = terminal

    def handle(self, event: Event) -> None:
        """Show the scrubbed event."""
        safe = scrub_value(clean_value(event))
        self.inner.handle(for_terminal(safe) if self.terminal else safe)

    def close(self) -> None:
        """Close the wrapped view."""
        self.inner.close()

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)
