"""``dexter trust``: which options of the workspace's ``.env`` and config widen what dexter
may do, and trusting (or forgetting) them. See :mod:`dexter.config_trust`."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from dexter.config import ConfigError, read_small_file
from dexter.config_trust import Resolved, TrustStore, WorkspaceFile, digest_of, resolve_settings
from dexter.frontend import EXIT_OK, EXIT_USAGE, confirm_on_terminal, print_error, print_warning
from dexter.settings_file import SettingsFileError, forget_own_content
from dexter.text import escape_controls


def run_trust(config: Path | None, *, yes: bool = False, revoke: bool = False,
              show_all: bool = False) -> int:
    """Show the workspace files and trust them (asking on a terminal, or ``yes``); forget
    them (``revoke``); or list every record (``show_all``). Returns the exit code."""
    def say(line: str) -> None:
        sys.stdout.write(escape_controls(line) + "\n")

    def agree(file: WorkspaceFile) -> bool:
        say(file.describe())
        return True

    interactive = sys.stdin.isatty() and sys.stdout.isatty()
    confirm = None if revoke or show_all else agree if yes else \
        confirm_on_terminal if interactive else None
    try:
        resolved = resolve_settings(config, confirm=confirm)
    except ConfigError as exc:
        print_error(str(exc))
        return EXIT_USAGE
    for notice in resolved.notices:
        print_warning(notice)
    assert resolved.trust_home is not None
    store = TrustStore(resolved.trust_home)
    if show_all:
        return _list(store, say)
    if revoke:
        return _revoke(resolved, store, say)
    if not resolved.files:
        say("Nothing to trust: no .env here, and the config file (if any) is outside the "
            "folders commands may write. Options from the environment, the flags and a config "
            "file outside the workspace are always used.")
        return EXIT_OK
    for file in resolved.files:
        say(_status(file, interactive or yes))
    return EXIT_OK


def _status(file: WorkspaceFile, asked: bool) -> str:
    if not file.widening:
        return f"{file.path}: widens nothing; every option in it is used."
    keys = ", ".join(dict.fromkeys(w.key for w in file.widening))
    if file.how == "stored":
        return (f"{file.path}: trusted (this content was confirmed before); dexter uses "
                f"{keys}. `dexter trust --revoke` forgets it.")
    if file.how == "confirmed":
        return f"{file.path}: trusted; dexter uses {keys} until the file changes."
    if file.how == "declined":
        return f"{file.path}: not trusted; dexter ignores {keys}."
    where = "" if asked else (" Run `dexter trust` in a terminal to be asked, or "
                              "`dexter trust --yes` to trust it as it is now.")
    return f"{file.describe()}\n{file.path}: not trusted; dexter ignores {keys}.{where}"


def _revoke(resolved: Resolved, store: TrustStore, say: Callable[[str], None]) -> int:
    forgot = False
    for file in resolved.files:
        if file.kind != "settings":
            continue
        try:
            if forget_own_content(file.path):
                say(f"Forgot the trust of {file.path}: its allow rules and trust records are "
                    "ignored until you trust it again (`dexter trust`).")
                forgot = True
        except OSError as exc:
            print_error(f"Cannot forget the trust of {file.path}: {exc.strerror or exc}.")
            return EXIT_USAGE
    for path in resolved.watched:
        try:
            if store.revoke(path):
                say(f"Forgot the trust of {path}: its widening options are ignored again "
                    "until you confirm them.")
                forgot = True
        except SettingsFileError as exc:
            print_error(str(exc))
            return EXIT_USAGE
    if not forgot:
        say("No trusted file here to forget.")
    return EXIT_OK


def _list(store: TrustStore, say: Callable[[str], None]) -> int:
    entries = store.entries()
    if not entries:
        say(f"No trusted files are recorded in {store.path}.")
        return EXIT_OK
    say(f"Trusted files recorded in {store.path}:")
    for name, digest in sorted(entries.items()):
        try:
            now = "matches the file now" if digest_of(read_small_file(Path(name))) == digest \
                else "the file changed since: not trusted until confirmed again"
        except (OSError, ValueError):
            now = "the file is gone or unreadable"
        say(f"  {name}  (sha256 {digest[:12]}..., {now})")
    return EXIT_OK
