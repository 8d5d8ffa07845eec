"""Which saved session ``dexter --continue`` and ``dexter --resume [ID]`` reopen.

``--continue`` takes the most recently used session; ``--resume ID`` the one whose id
starts with ``ID``; ``--resume`` alone shows a picker of the recent sessions (on a
terminal; elsewhere an id is needed). What cannot be found is a :class:`ResumeError`
whose message the caller prints (exit 2).
"""

from __future__ import annotations

import os
import sys

from rich.text import Text

from dexter.agent.sessions import (
    SessionError,
    SessionRecord,
    SessionStore,
    first_question,
    format_when,
)
from dexter.config import Settings
from dexter.frontend import print_warning

PICKER_SIZE = 20
"""How many recent sessions the picker offers."""


class ResumeError(Exception):
    """No session to reopen: none saved, the id matches none, or no terminal to pick on."""


def choose_session(settings: Settings, *, latest: bool, prefix: str | None,
                   model_flag: str | None) -> SessionRecord | None:
    """The session to reopen (None when the picker was cancelled); a resumed session keeps
    its model unless ``--model`` was given. Unreadable session files are warned about.

    ``prefix`` is the ``--resume`` value: an id or its start, or ``""`` for the picker.
    Raises :class:`ResumeError`.
    """
    store = SessionStore(settings.home_path)
    try:
        if latest:
            record, skipped = store.latest()
            for item in skipped:
                print_warning(item.message())
            if record is None:
                raise ResumeError(f"No saved session to continue in {store.directory}. "
                                  "Start one with 'dexter'.")
        elif prefix:
            record = store.open(prefix)
        else:
            record = pick_session(store)
    except SessionError as exc:
        raise ResumeError(str(exc)) from None
    if record is not None and not model_flag and record.model:
        settings.model = record.model
    return record


def picker_label(record: SessionRecord) -> str:
    """``3f9a01bc · 2025-01-02 14:03 · gpt-4.1 · 2 turns``."""
    turns = record.turns
    return (f"{record.id} · {format_when(record.updated)} · {record.model} · "
            f"{turns} turn{'s' if turns != 1 else ''}")


def pick_session(store: SessionStore) -> SessionRecord | None:
    """Let the user pick one of the recent sessions on the terminal (None: cancelled)."""
    import asyncio

    from dexter.repl.dialog_app import run_dialog
    from dexter.repl.dialogs import Option, SelectDialog

    listing = store.listing(limit=PICKER_SIZE)
    for item in listing.skipped:
        print_warning(item.message())
    if not listing.records:
        raise ResumeError(f"No saved sessions in {store.directory}. Start one with 'dexter'.")
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise ResumeError("Which session? Input is not a terminal, so give its id: "
                          "dexter --resume ID ('dexter sessions' lists them).")
    options = [Option(picker_label(r), r.id, first_question(r, 100)) for r in listing.records]
    more = listing.total - len(listing.records)
    header = [Text("Resume which session?", style="bold")]
    if more > 0:
        header.append(Text(f"The {len(options)} most recent; {more} older ones are in "
                           "'dexter sessions'.", style="#a6a6a6"))
    dialog = SelectDialog(header, options, escape_value=None)
    asyncio.run(run_dialog(dialog, color=not os.environ.get("NO_COLOR")))
    chosen = dialog.result
    if not isinstance(chosen, str) or chosen == "abort":
        return None
    return next(r for r in listing.records if r.id == chosen)
