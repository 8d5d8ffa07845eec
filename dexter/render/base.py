"""The renderer interface every view implements.

A renderer receives the loop's events one by one. ``close`` is always called at the end (use
``contextlib.closing`` or ``try/finally``), also after an exception or Ctrl-C, so live
displays stop and the terminal is left clean.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from dexter.events import Event
from dexter.secrets import scrub_value
from dexter.text import clean_value


@runtime_checkable
class Renderer(Protocol):
    """Consumes agent events and shows them somewhere."""

    def handle(self, event: Event) -> None:
        """Show one event."""

    def close(self) -> None:
        """Stop any live display and flush output. Safe to call more than once."""


class ScrubbingRenderer:
    """Wraps a view so that no known secret value (see :mod:`dexter.secrets`) and no
    invalid text (a lone surrogate a provider sent: :mod:`dexter.text`) reaches it.

    Events are scrubbed before the view formats them: a live view wraps long lines, which
    would split a key across two lines where a scrub of the printed text could not find it.
    """

    def __init__(self, inner: Renderer) -> None:
        self.inner = inner

    def handle(self, event: Event) -> None:
        """Show the scrubbed event."""
        self.inner.handle(scrub_value(clean_value(event)))

    def close(self) -> None:
        """Close the wrapped view."""
        self.inner.close()

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)
