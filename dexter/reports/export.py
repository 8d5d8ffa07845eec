"""Writing a run's report to a file the user named: the checks on the path and the write,
shared by ``dexter ask --output FILE`` and ``/export FILE`` in the REPL.

The folder is opened once, when the path is checked (:func:`open_output`): every part of its
real path with ``O_DIRECTORY | O_NOFOLLOW``, and any symbolic link on the way inside a
folder commands may write (the workspace, ``[bash] allow_write``) is refused, since a
command may have made it. The report is written relative to that open folder (a temporary
file created with ``O_EXCL | O_NOFOLLOW``, renamed into place), after checking that the
path still leads to the same folder: a folder a command swapped for a symlink, moved or
replaced during the run is refused with a clear message, and the report is kept in
``DEXTER_HOME/reports/`` instead, so nothing lands outside and nothing is lost.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from dexter.events import Done
from dexter.evidence.ledger import SourceLedger
from dexter.reports import Report, ReportError, build_report, encode_report, format_problem

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FALLBACK_FOLDER = "reports"
"""Under DEXTER_HOME: where a report goes when its folder changed during the run."""


class OutputRefused(Exception):
    """The report cannot be written where asked; the message says why and what to do."""


def output_problem(path: Path, cwd: Path, home: Path, flag: str = "--output") -> str | None:
    """Why writing a report to ``path`` is refused, or None (``flag``: how the message names
    the option, ``--output`` or ``/export``). A relative path must stay inside the working
    directory or ``DEXTER_HOME`` (an absolute path is the user's own choice); only the last
    folder of it may be missing (it is created); its extension says the format."""
    target = (cwd / path).resolve() if not path.is_absolute() else path.resolve()
    if not path.is_absolute() and not any(target.is_relative_to(root.resolve())
                                          for root in (cwd, home)):
        return (f"{flag} {path} points outside the working directory ({cwd}) and "
                f"DEXTER_HOME; give an absolute path if you mean it.")
    if ".." in path.parts:
        return f"{flag} {path}: give the path without '..' (the folder as it is named)."
    if target.is_dir():
        return f"{flag} {path} is a folder; give a file name, e.g. {path}/answer.md."
    unknown = format_problem(path)
    if unknown is not None:
        return f"{flag} {unknown}"
    folder = target.parent
    if not folder.exists() and not folder.parent.is_dir():
        return (f"{flag} {path}: the folder {folder.parent} does not exist (dexter creates "
                "at most the last folder); create it first.")
    return None


class OutputTarget:
    """A report file's place, checked and opened: its folder (or, when the last folder is
    still to be created, that folder's parent) held open until :meth:`write`."""

    def __init__(self, path: Path, cwd: Path, roots: tuple[Path, ...], flag: str) -> None:
        self.path, self.flag, self.roots = path, flag, roots
        self.named = Path(os.path.abspath(cwd / path))
        self._check_links()
        folder = Path(os.path.realpath(self.named.parent))
        self.create = None if os.path.lexists(self.named.parent) else folder.name
        self.folder = folder.parent if self.create else folder
        try:
            self._fd = _open_folder(self.folder)
        except OSError as exc:
            raise OutputRefused(f"{flag} {path}: cannot open the folder {self.folder} "
                                f"({exc.strerror or exc}).") from None
        self._identity = _identity(self._fd)

    def close(self) -> None:
        """Let go of the open folder (idempotent)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def write(self, data: bytes) -> None:
        """Write ``data`` as the file, whole or not at all. ``OutputRefused`` when the
        folder changed since the check (nothing written); ``OSError`` for a failed write."""
        self._check_links()
        try:
            again = _open_folder(self.folder)
        except OSError as exc:
            raise self._changed(f"it cannot be opened as it was ({exc.strerror or exc})") \
                from None
        try:
            if _identity(again) != self._identity:
                raise self._changed("another folder is there now")
        finally:
            os.close(again)
        folder_fd = self._fd
        if self.create is not None:
            with contextlib.suppress(FileExistsError):
                os.mkdir(self.create, 0o755, dir_fd=self._fd)
            try:
                folder_fd = os.open(self.create, _DIR_FLAGS, dir_fd=self._fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise self._changed(f"{self.create} is not a plain folder now") from None
                raise
        try:
            _write_in(folder_fd, self.named.name, data)
        finally:
            if folder_fd != self._fd:
                os.close(folder_fd)

    def _changed(self, what: str) -> OutputRefused:
        return OutputRefused(f"{self.flag} {self.path}: the folder {self.named.parent} was "
                             f"replaced or moved during the run ({what}); nothing was "
                             "written there.")

    def _check_links(self) -> None:
        """Refuse a symbolic link on the way to the file inside a folder commands may write."""
        for part in _inside(self.named.parent, self.roots):
            if os.path.islink(part):
                raise OutputRefused(
                    f"{self.flag} {self.path}: {part} is a symbolic link inside a folder "
                    "commands may write (one of them may have made it); give the real "
                    f"folder ({os.path.realpath(part)}) if that is where you mean.")


def open_output(path: Path, cwd: Path, home: Path, *, flag: str = "--output",
                writable: Iterable[str | Path] = ()) -> OutputTarget:
    """Check ``path`` (:func:`output_problem`) and open its folder; ``OutputRefused`` says
    why not. ``writable``: the ``[bash] allow_write`` folders (the working directory is one
    anyway), where a symbolic link on the way is refused."""
    problem = output_problem(path, cwd, home, flag)
    if problem is not None:
        raise OutputRefused(problem)
    roots = (cwd, *(cwd / Path(p).expanduser() for p in writable if str(p).strip()))
    return OutputTarget(path, cwd, tuple(roots), flag)


def export_report(done: Done, question: str, ledger: SourceLedger | None,
                  target: OutputTarget, when: str | None = None,
                  home: Path | None = None) -> str | None:
    """Write the report of a run to ``target`` (format by extension); the error to show, or
    None when it was written. ``when``: the run's date as the report shows it (default:
    now); ``home``: DEXTER_HOME, where the report is kept when its folder changed."""
    return save_report(build_report(done, question, when or report_time(), ledger), target,
                       home=home)


def save_report(report: Report, target: OutputTarget, *, home: Path | None = None) -> str | None:
    """Write ``report`` to ``target`` (creating its last folder) and let the folder go; the
    error to show, or None when it was written."""
    try:
        try:
            data = encode_report(report, target.path)
        except ReportError as exc:
            return str(exc)
        try:
            target.write(data)
        except OutputRefused as exc:
            return str(exc) + _kept(data, target.path.name, home)
        except OSError as exc:
            return f"Could not write {target.path}: {exc.strerror or exc}."
        return None
    finally:
        target.close()


def report_time(moment: datetime | None = None) -> str:
    """A moment (default: now) as a report shows it: ``2026-01-30 14:05 CET``."""
    return (moment or datetime.now()).astimezone().strftime("%Y-%m-%d %H:%M %Z")


def _kept(data: bytes, name: str, home: Path | None) -> str:
    """Keep a refused report under DEXTER_HOME (which commands cannot write); what to add to
    the message."""
    if home is None:
        return ""
    folder = Path(os.path.realpath(home)) / FALLBACK_FOLDER
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = _open_folder(folder)
        try:
            stem, dot, ext = name.rpartition(".")
            kept = name
            if os.path.lexists(folder / kept):
                kept = f"{stem}-{datetime.now():%Y%m%d-%H%M%S}{dot}{ext}"
            _write_in(fd, kept, data)
        finally:
            os.close(fd)
    except OSError:
        return ""
    return f" The report is in {folder / kept} instead."


def _open_folder(folder: Path) -> int:
    """An fd of the absolute ``folder``, every part opened without following a symlink."""
    fd = os.open("/", _DIR_FLAGS)
    try:
        for part in folder.parts[1:]:
            nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def _identity(fd: int) -> tuple[int, int]:
    info = os.fstat(fd)
    return info.st_dev, info.st_ino


def _write_in(folder_fd: int, name: str, data: bytes) -> None:
    """``data`` as ``name`` in the open folder: a new temporary file renamed over it (a
    symlink of that name is replaced, never followed)."""
    tmp = f".{name}.{secrets.token_hex(6)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o600, dir_fd=folder_fd)
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), 0o644)  # a document to share, whatever the umask
            handle.write(data)
        os.rename(tmp, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=folder_fd)
        raise


def _inside(folder: Path, roots: Iterable[Path]) -> list[Path]:
    """The leading parts of ``folder`` (itself included) that lie inside one of ``roots``."""
    bases = {Path(os.path.abspath(r)) for r in roots} | {Path(os.path.realpath(r)) for r in roots}
    parts = [Path(*folder.parts[:i]) for i in range(2, len(folder.parts) + 1)]
    return [p for p in parts if any(p != b and p.is_relative_to(b) for b in bases)]
