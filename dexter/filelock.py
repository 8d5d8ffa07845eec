"""Locks and whole writes for the files several dexter processes share (under ``DEXTER_HOME``).

Two runs on one ``DEXTER_HOME`` (a REPL and a ``dexter ask``, two terminals) write the same
memory files, sessions log and ``settings.json``. A change that reads a file, edits it and
renames a new copy into place loses whatever another process appended in between, unless
every writer of that file holds the same lock:

- :func:`locked` holds an exclusive ``fcntl.flock`` for a block: on a lock file (created
  when missing and left in place, so every process locks the same inode) or on a folder.
- :func:`write_atomic` replaces a file through a temporary file in its folder and
  ``os.replace``, so a reader or a crash never sees half of it.
- :func:`append_locked` appends bytes in one ``os.write`` under a lock on the file itself,
  so lines of two writers never interleave, however long they are.

These are advisory locks: an editor that ignores them is not stopped, only dexter's own
writers are serialised.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def locked(target: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``target`` for the block: a folder, or a lock file that
    is created when missing (its parent must exist). Blocks until the lock is free;
    closing the descriptor releases it, also when the process dies."""
    if target.is_dir():
        fd = os.open(target, os.O_RDONLY)
    else:
        fd = os.open(target, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes, *, prefix: str = ".tmp-") -> None:
    """Replace ``path`` with ``data`` through a temporary file in the same folder.

    The temporary file is removed when anything fails; ``OSError`` is raised to the caller.
    Hold the file's lock around the read that ``data`` came from and this write.
    """
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=prefix, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def append_locked(path: Path, data: bytes) -> None:
    """Append ``data`` to ``path`` (created when missing) in one ``os.write``, under an
    exclusive lock on the file itself. A write that fails part way is cut back, so the file
    keeps only whole records; ``OSError`` is raised to the caller."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        start = os.fstat(fd).st_size
        view = memoryview(data)
        written = 0
        try:
            while written < len(data):
                written += os.write(fd, view[written:])
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, start)
            raise
    finally:
        os.close(fd)
