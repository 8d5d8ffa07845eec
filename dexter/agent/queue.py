"""Follow-up messages typed while the agent works, drained into the run between rounds."""

from __future__ import annotations

import threading
from collections import deque


class MessageQueue:
    """A small thread-safe FIFO of follow-up texts (the REPL's input thread pushes)."""

    def __init__(self) -> None:
        self._items: deque[str] = deque()
        self._lock = threading.Lock()

    def push(self, text: str) -> None:
        """Queue one message (blank text is ignored)."""
        if text.strip():
            with self._lock:
                self._items.append(text.strip())

    def drain(self) -> list[str]:
        """Take every queued message, oldest first."""
        with self._lock:
            items = list(self._items)
            self._items.clear()
        return items

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
