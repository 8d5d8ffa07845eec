"""``DEXTER_HOME/settings.json``: the one module that reads and writes it.

The file holds the permission rules (``permissions``, written by "always allow") and the
REPL's remembered choices (``model``, ``web_search_provider``). Every write locks the
folder, reads the whole object, changes it and replaces the file atomically, so two
dexter processes never lose each other's keys and a crash never leaves half a file.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dexter.filelock import locked, write_atomic

SETTINGS_FILE = "settings.json"


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
            data = read_settings_file(path)
            change(data)
            text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
            write_atomic(path, text.encode("utf-8"), prefix=".settings.")
    except OSError as exc:
        raise SettingsFileError(f"Cannot write {path}: {exc.strerror}.") from None
