"""Choices the REPL remembers between sessions, kept in ``DEXTER_HOME/settings.json``.

The same file holds the permission rules (``permissions``); :mod:`dexter.settings_file`
owns reading and writing it (one key changed at a time, atomically, under a lock).
Keys written here: ``model`` (from ``/model``) and ``web_search_provider`` (``/search``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dexter.config import Settings

# The saved choices are read below the REPL (every command applies them).
from dexter.frontend import MODEL_KEY as MODEL_KEY
from dexter.frontend import SEARCH_KEY as SEARCH_KEY
from dexter.frontend import apply_saved_choices as apply_saved_choices
from dexter.frontend import load_saved_model as load_saved_model
from dexter.frontend import load_saved_search_provider as load_saved_search_provider
from dexter.settings_file import (
    SETTINGS_FILE,
    SettingsFileError,
    read_settings_file,
    update_settings_file,
)


class SettingsStoreError(Exception):
    """The settings file cannot be read or written; the message says which and how to fix."""


def settings_file(settings: Settings) -> Path:
    """``DEXTER_HOME/settings.json``."""
    return settings.home_path / SETTINGS_FILE


def read_saved(path: Path) -> dict[str, Any]:
    """The saved object; empty when the file does not exist.

    Raises ``SettingsStoreError`` when it exists but is not a JSON object.
    """
    try:
        return read_settings_file(path)
    except SettingsFileError as exc:
        raise SettingsStoreError(str(exc)) from None


def save_setting(path: Path, key: str, value: str) -> None:
    """Set one top-level key, keeping every other key (through :mod:`dexter.settings_file`)."""
    try:
        update_settings_file(path, lambda data: data.__setitem__(key, value))
    except SettingsFileError as exc:
        raise SettingsStoreError(str(exc)) from None
