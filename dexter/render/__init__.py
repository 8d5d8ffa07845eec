"""Views of a run: the live terminal view, plain lines, JSON lines, and replay of a scratchpad.

Every view implements :class:`~dexter.render.base.Renderer` (``handle(event)``, ``close()``).
``choose_renderer`` picks the right one for where the output goes. Importing this package
does not import rich; ``choose_renderer`` and the live view do.
"""

from __future__ import annotations

from typing import IO, TYPE_CHECKING

from dexter.render.base import Renderer, ScrubbingRenderer
from dexter.render.jsonl import JsonRenderer
from dexter.render.plain import PlainRenderer

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["JsonRenderer", "PlainRenderer", "Renderer", "ScrubbingRenderer", "choose_renderer"]


def choose_renderer(
    console_or_stream: Console | IO[str], *, json: bool, is_terminal: bool
) -> Renderer:
    """The view for this output.

    ``json``: one JSON object per event (:class:`JsonRenderer`). Otherwise, on a terminal,
    the rich live view (:class:`~dexter.render.live.LiveRenderer`); else plain lines
    (:class:`PlainRenderer`). A rich ``Console`` or a text stream may be given either way.
    Every view is wrapped in :class:`ScrubbingRenderer`: no secret value reaches it, and
    no control character from outside reaches the live or plain view (JSON escapes them).
    """
    from rich.console import Console

    if isinstance(console_or_stream, Console):
        console, stream = console_or_stream, console_or_stream.file
    else:
        console, stream = None, console_or_stream
    if json:
        return ScrubbingRenderer(JsonRenderer(stream))
    if is_terminal:
        from dexter.render.live import LiveRenderer

        return ScrubbingRenderer(LiveRenderer(console or Console(file=stream)), terminal=True)
    return ScrubbingRenderer(PlainRenderer(stream), terminal=True)
