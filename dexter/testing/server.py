"""The lifecycle the local fake servers share: serve a stdlib HTTP server from a thread."""

from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer
from types import TracebackType
from typing import Self


class BackgroundServer:
    """Mixin: ``_serve_in_background(server)`` starts serving in a daemon thread, ``_shutdown()`` stops it.

    Subclasses build their ``ThreadingHTTPServer`` (bound to 127.0.0.1) in ``start`` and
    call ``_serve_in_background``; ``stop`` and the context-manager protocol come from here.
    """

    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    def start(self) -> Self:
        raise NotImplementedError

    def _serve_in_background(self, server: ThreadingHTTPServer, name: str) -> None:
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, args=(0.05,), name=name,
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Shut the server down, close its socket and wait for its thread."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
