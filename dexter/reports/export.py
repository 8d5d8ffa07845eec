"""Writing a run's report to a file the user named: the checks on the path and the write,
shared by ``dexter ask --output FILE`` and ``/export FILE`` in the REPL."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from dexter.events import Done
from dexter.evidence.ledger import SourceLedger
from dexter.reports import Report, ReportError, build_report, format_problem, write_report


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


def export_report(done: Done, question: str, ledger: SourceLedger | None, path: Path,
                  when: str | None = None) -> str | None:
    """Write the report of a run to ``path`` (format by extension); the error to show, or
    None when it was written. ``when``: the run's date as the report shows it (default:
    now)."""
    return save_report(build_report(done, question, when or report_time(), ledger), path)


def save_report(report: Report, path: Path) -> str | None:
    """Write ``report`` to ``path`` (a path :func:`output_problem` accepted), creating its
    last folder; the error to show, or None when it was written."""
    try:
        path.parent.mkdir(exist_ok=True)  # at most the last folder
    except OSError as exc:
        return f"Could not create the folder {path.parent}: {exc.strerror or exc}."
    try:
        write_report(report, path)
    except ReportError as exc:
        return str(exc)
    return None


def report_time(moment: datetime | None = None) -> str:
    """A moment (default: now) as a report shows it: ``2026-01-30 14:05 CET``."""
    return (moment or datetime.now()).astimezone().strftime("%Y-%m-%d %H:%M %Z")
