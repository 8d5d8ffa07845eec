"""The renderer interface every view implements.

A renderer receives the loop's events one by one. ``close`` is always called at the end (use
``contextlib.closing`` or ``try/finally``), also after an exception or Ctrl-C, so live
displays stop and the terminal is left clean.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from dexter.events import Event


@runtime_checkable
class Renderer(Protocol):
    """Consumes agent events and shows them somewhere."""

    def handle(self, event: Event) -> None:
        """Show one event."""

    def close(self) -> None:
        """Stop any live display and flush output. Safe to call more than once."""
