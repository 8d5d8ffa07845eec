"""``--json`` output: one JSON object per event, one per line, flushed as it happens.

Every event is written except ``stream_progress``, which fires for each streamed chunk and
carries only a character count (too chatty for a log; ``answer_delta`` carries the text).
The last line of a finished run is the ``done`` event. JSON escapes the C0 control
characters itself; DEL and the C1 controls (which ``ensure_ascii=False`` would leave raw) are
written as ``\\u007f``..``\\u009f`` too, so a line is safe to print on a terminal.
"""

from __future__ import annotations

import json
import re
from typing import IO

from dexter.events import Event, StreamProgress
from dexter.secrets import scrub
from dexter.text import clean

_RAW_CONTROLS = re.compile("[\x7f-\x9f]")


def _escape_c1(line: str) -> str:
    # Outside strings JSON has only ASCII, so each match is inside a string: the same value.
    return _RAW_CONTROLS.sub(lambda m: f"\\u{ord(m.group()):04x}", line)


class JsonRenderer:
    """Writes each event's ``to_dict()`` as one JSON line to ``stream``."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream

    def handle(self, event: Event) -> None:
        """Write one event as a JSON line (``stream_progress`` is skipped)."""
        if isinstance(event, StreamProgress):
            return
        line = _escape_c1(clean(scrub(json.dumps(event.to_dict(), ensure_ascii=False,
                                                 default=str))))
        self._stream.write(line + "\n")
        self._stream.flush()

    def close(self) -> None:
        """Flush the stream (it is not closed: it usually is stdout)."""
        self._stream.flush()
