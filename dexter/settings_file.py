"""``DEXTER_HOME/settings.json``: the one module that reads and writes it.

The file holds the permission rules (``permissions``, written by "always allow"), the
trusted workspace files (``trusted_files``) and the REPL's remembered choices (``model``,
``web_search_provider``). Every write locks the folder, reads the whole object, changes it
and replaces the file atomically, so two dexter processes never lose each other's keys and
a crash never leaves half a file.

dexter also remembers, outside every workspace, the SHA-256 of what it last wrote to each
settings file (:func:`own_content`, in the user state folder): a ``DEXTER_HOME`` given as a
relative path (the default ``.dexter``) is a folder of whatever workspace dexter starts
in, so its ``settings.json`` may have come with the folder (a clone) or been written by
something else, and :mod:`dexter.config_trust` uses its allow rules and trust records only
when it is dexter's own writing or the user trusted it. A write keeps the file dexter's
own only when it was before (or did not exist): adding a rule to a file someone else wrote
does not make their rules dexter's.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dexter.filelock import locked, write_atomic

SETTINGS_FILE = "settings.json"
OWN_RECORD = "own-settings.json"
"""In the user state folder: ``{settings.json path: sha256 of what dexter last wrote}``."""


def own_record_path() -> Path:
    """Where dexter records the content it wrote to settings files (the user state folder,
    ``$XDG_STATE_HOME/dexter`` or ``~/.local/state/dexter`` on Linux)."""
    from platformdirs import user_state_dir

    return Path(user_state_dir("dexter")) / OWN_RECORD


def _key(path: Path) -> str:
    return str(Path(os.path.realpath(path.parent)) / path.name)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _records() -> dict[str, str]:
    try:
        data = json.loads(own_record_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, str)} if isinstance(data, dict) else {}


def own_content(path: Path, data: bytes | None = None) -> bool:
    """Whether ``path`` holds what dexter last wrote to it (``data``: its bytes, read once
    by the caller; None: read now). A file that does not exist is nobody's: True."""
    if data is None:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return True
        except OSError:
            return False
    return _records().get(_key(path)) == _digest(data)


def record_own_content(path: Path, data: bytes) -> None:
    """Remember ``data`` as dexter's own content of ``path`` (a write, or the user's
    ``dexter trust``). ``OSError`` when the record cannot be written."""
    record = own_record_path()
    record.parent.mkdir(parents=True, exist_ok=True)
    with locked(record.parent):
        table = _records()
        table[_key(path)] = _digest(data)
        write_atomic(record, (json.dumps(table, indent=2) + "\n").encode("utf-8"),
                     prefix=".own-settings.")


def forget_own_content(path: Path) -> bool:
    """Forget that ``path`` holds dexter's own content (``dexter trust --revoke``): its
    allow rules and trust records count again only once trusted. Whether there was a
    record; ``OSError`` when the record cannot be written."""
    record = own_record_path()
    if not record.exists():
        return False
    with locked(record.parent):
        table = _records()
        if table.pop(_key(path), None) is None:
            return False
        write_atomic(record, (json.dumps(table, indent=2) + "\n").encode("utf-8"),
                     prefix=".own-settings.")
    return True


class SettingsFileError(Exception):
    """settings.json cannot be read or written; the message names the file and the fix."""


def read_settings_file(path: Path) -> dict[str, Any]:
    """The settings object; empty when the file does not exist or is blank.

    Raises ``SettingsFileError`` when it exists but is not a readable JSON object.
    """
    try:
        raw = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return {}
    except UnicodeDecodeError:
        raise SettingsFileError(f"{path} is not valid JSON (it is not UTF-8 text). Fix it or "
                                "move it aside.") from None
    except OSError as exc:
        raise SettingsFileError(f"Cannot read {path}: {exc.strerror}.") from None
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise SettingsFileError(f"{path} is not valid JSON ({exc}). Fix it or move it aside.") from None
    if not isinstance(data, dict):
        raise SettingsFileError(f"{path} must hold a JSON object. Fix it or move it aside.")
    return data


def update_settings_file(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """Apply ``change`` to the settings object and write it back, atomically and under a
    lock (other keys survive, and so do other processes' writes)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with locked(path.parent):  # the folder: no lock file is left behind
            was_own = own_content(path)
            data = read_settings_file(path)
            change(data)
            text = (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
            write_atomic(path, text, prefix=".settings.")
    except OSError as exc:
        raise SettingsFileError(f"Cannot write {path}: {exc.strerror}.") from None
    if was_own:  # unrecorded, the next start asks as about a file dexter did not write
        with contextlib.suppress(OSError):
            record_own_content(path, text)
