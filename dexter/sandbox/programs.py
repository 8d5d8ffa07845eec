"""Finding the programs dexter starts outside the sandbox (``bwrap``, ``prlimit``, a
``[mcp.servers.*]`` command given by name).

``PATH`` may name folders commands can write: an activated virtual environment of the
project, a ``./bin``, ``node_modules/.bin``, ``~/.local/bin`` when dexter was started in
the home folder. A program a command planted there would run at dexter's next start with
dexter's powers and none of the sandbox's limits. :func:`system_program` looks a name up
on ``PATH`` without those folders (nor relative entries, which name the working
directory), so a planted program is never the one started.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path


def commands_may_write(folder: str, writable: Iterable[Path]) -> bool:
    """Whether ``folder`` (a ``PATH`` entry) is relative or lies, after links, in one of
    the ``writable`` folders."""
    if not folder or not os.path.isabs(folder):
        return True
    real = Path(os.path.realpath(folder))
    return any(real == root or real.is_relative_to(root)
               for root in (Path(os.path.realpath(w)) for w in writable))


def system_program(name: str, writable: Iterable[Path],
                   path: str | None = None) -> str | None:
    """The full path of ``name`` on ``path`` (default: ``PATH``), skipping every entry
    commands may write (:func:`commands_may_write`); None when it is found nowhere else."""
    roots = list(writable)
    entries = (path if path is not None else os.environ.get("PATH", os.defpath)).split(os.pathsep)
    safe = [e for e in entries if not commands_may_write(e, roots)]
    return shutil.which(name, path=os.pathsep.join(safe)) if safe else None


def writable_folders(cwd: Path, allow_write: Iterable[str]) -> list[Path]:
    """The folders commands may write when dexter runs in ``cwd``: it, and every
    ``[bash] allow_write`` folder."""
    out = [cwd]
    for value in allow_write:
        if value.strip():
            folder = Path(os.path.expanduser(value.strip()))
            out.append(folder if folder.is_absolute() else cwd / folder)
    return out
