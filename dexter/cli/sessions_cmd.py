"""``dexter sessions`` (the saved sessions, newest first) and the saved session of a
``dexter ask`` run (``--continue`` / ``--resume ID`` ask a follow-up in one)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from dexter.frontend import EXIT_OK, EXIT_USAGE, CliError, print_error, print_warning, settings_for

if TYPE_CHECKING:
    from dexter.agent.sessions import SessionRecord, SessionStore
    from dexter.config import Settings
    from dexter.scratchpad import Scratchpad

DEFAULT_LIMIT = 20


def run_sessions(config: Path | None, *, show_all: bool = False) -> int:
    """Print the saved sessions, newest first; unreadable files are skipped with a warning."""
    from rich.table import Table

    from dexter.agent.sessions import SessionStore, first_question, format_when
    from dexter.frontend import stdout_console

    try:
        settings = settings_for(config)
    except CliError as exc:
        print_error(str(exc))
        return EXIT_USAGE
    store = SessionStore(settings.home_path)
    listing = store.listing(limit=None if show_all else DEFAULT_LIMIT)
    for item in listing.skipped:
        print_warning(item.message())
    console = stdout_console()
    if not listing.records:
        console.print(f"No saved sessions yet in {store.directory}. Every 'dexter' session "
                      "and 'dexter ask' run is saved there.", markup=False)
        return EXIT_OK
    table = Table(show_edge=False, pad_edge=False, box=None)
    for column, justify in (("ID", "left"), ("Last used", "left"), ("Model", "left"),
                            ("Turns", "right"), ("First question", "left")):
        table.add_column(column, justify=justify, no_wrap=column != "First question")  # type: ignore[arg-type]
    for record in listing.records:
        table.add_row(record.id, format_when(record.updated), record.model, str(record.turns),
                      first_question(record))
    console.print(table)
    more = listing.total - len(listing.records)
    if more > 0:
        console.print(f"{more} older session{'s' if more != 1 else ''} not shown: "
                      "dexter sessions --all.", markup=False)
    console.print("Reopen: dexter --resume ID (--continue: the newest). Follow up: "
                  "dexter ask --resume ID \"...\".", markup=False)
    return EXIT_OK


class AskSession:
    """The saved session of one ``dexter ask`` run: a new one, or the one it continues."""

    def __init__(self, store: SessionStore, record: SessionRecord, *, resumed: bool) -> None:
        self.store = store
        self.record = record
        self.resumed = resumed

    @classmethod
    def open(cls, settings: Settings, *, latest: bool, prefix: str | None,
             model_flag: str | None) -> AskSession:
        """The session for this run. A resumed session keeps its model unless ``--model``
        was given (``settings.model`` is set to it). Raises ``CliError`` (exit 2) when
        there is nothing to continue or the id matches no session."""
        from dexter.agent.sessions import SessionError, SessionStore

        if latest and prefix is not None:
            raise CliError("Give --continue or --resume ID, not both.")
        store = SessionStore(settings.home_path)
        if not latest and prefix is None:
            return cls(store, store.new(settings.model), resumed=False)
        if prefix is not None and not prefix.strip():
            raise CliError("--resume needs a session id ('dexter sessions' lists them).")
        try:
            if prefix is not None:
                record = store.open(prefix)
            else:
                found, skipped = store.latest()
                for item in skipped:
                    print_warning(item.message())
                if found is None:
                    raise CliError(f"No saved session to continue in {store.directory}. "
                                   "Ask without --continue to start one.")
                record = found
        except SessionError as exc:
            raise CliError(str(exc)) from None
        if not model_flag and record.model:
            settings.model = record.model
        return cls(store, record, resumed=True)

    def announce(self, model: str) -> None:
        """For a resumed session: ``Resumed session ID · N earlier turns · model`` on stderr
        (stdout stays the answer, or JSON lines)."""
        from dexter.agent.sessions import resume_line

        if self.resumed:
            sys.stderr.write(resume_line(self.record, model) + "\n")
            sys.stderr.flush()

    def save(self, *, model: str, scratchpad: Scratchpad | None) -> None:
        """Save the session after the run; a failure is a warning, not a failed run."""
        from dexter.agent.sessions import SessionError

        self.record.note_run(model=model,
                             scratchpad=str(scratchpad.path) if scratchpad is not None else None)
        if not self.record.worth_saving():
            return
        try:
            notice = self.store.save(self.record)
        except SessionError as exc:
            print_warning(str(exc))
            return
        if notice:
            print_warning(notice)
