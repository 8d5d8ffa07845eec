"""``--json`` output: one JSON object per event, one per line, flushed as it happens.

Every event is written except ``stream_progress``, which fires for each streamed chunk and
carries only a character count (too chatty for a log; ``answer_delta`` carries the text).
The last line of a finished run is the ``done`` event.
"""

from __future__ import annotations

import json
from typing import IO

from dexter.events import Event, StreamProgress
from dexter.secrets import scrub
from dexter.text import clean


class JsonRenderer:
    """Writes each event's ``to_dict()`` as one JSON line to ``stream``."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream

    def handle(self, event: Event) -> None:
        """Write one event as a JSON line (``stream_progress`` is skipped)."""
        if isinstance(event, StreamProgress):
            return
        line = clean(scrub(json.dumps(event.to_dict(), ensure_ascii=False, default=str)))
        self._stream.write(line + "\n")
        self._stream.flush()

    def close(self) -> None:
        """Flush the stream (it is not closed: it usually is stdout)."""
        self._stream.flush()
