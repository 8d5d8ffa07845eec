"""Choices the REPL remembers between sessions, kept in ``DEXTER_HOME/settings.json``.

The same file holds the permission rules (``permissions``); :mod:`dexter.settings_file`
owns reading and writing it (one key changed at a time, atomically, under a lock).
Keys written here: ``model`` (from ``/model``) and ``web_search_provider`` (``/search``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dexter.config import Settings
from dexter.settings_file import (
    SETTINGS_FILE,
    SettingsFileError,
    read_settings_file,
    update_settings_file,
)

MODEL_KEY = "model"
SEARCH_KEY = "web_search_provider"


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


def _saved_string(settings: Settings, key: str) -> str | None:
    try:
        value = read_saved(settings_file(settings)).get(key)
    except SettingsStoreError:
        return None
    return value.strip() if isinstance(value, str) and value.strip() else None


def load_saved_model(settings: Settings) -> str | None:
    """The model picked with ``/model`` in an earlier session, if any (unreadable file: None)."""
    return _saved_string(settings, MODEL_KEY)


def load_saved_search_provider(settings: Settings) -> str | None:
    """The web search provider picked with ``/search``, if any."""
    return _saved_string(settings, SEARCH_KEY)


def apply_saved_choices(settings: Settings, *, model_flag: str | None,
                        env: Mapping[str, str] | None = None) -> None:
    """Start with the saved model and search provider.

    An explicit choice for this invocation wins: ``--model`` or ``DEXTER_MODEL`` for the
    model, ``DEXTER_TOOLS_WEB_SEARCH_PROVIDER`` for the search provider.
    """
    env = os.environ if env is None else env
    model = load_saved_model(settings)
    if model and not model_flag and not env.get("DEXTER_MODEL"):
        settings.model = model
    search = load_saved_search_provider(settings)
    if search and not env.get("DEXTER_TOOLS_WEB_SEARCH_PROVIDER"):
        settings.tools.web_search_provider = search
