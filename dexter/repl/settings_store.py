"""Choices the REPL remembers between sessions, kept in ``DEXTER_HOME/settings.json``.

The same file holds the permission rules (``permissions``), so every write reads the
whole object, changes one key and replaces the file atomically: other keys survive.
Keys written here: ``model`` (from ``/model``) and ``web_search_provider`` (``/search``).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dexter.config import Settings

SETTINGS_FILE = "settings.json"
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
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise SettingsStoreError(f"Cannot read {path}: {exc.strerror}.") from None
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise SettingsStoreError(
            f"{path} is not valid JSON ({exc}). Fix it or move it aside.") from None
    if not isinstance(data, dict):
        raise SettingsStoreError(f"{path} must hold a JSON object. Fix it or move it aside.")
    return data


def save_setting(path: Path, key: str, value: str) -> None:
    """Set one top-level key, keeping every other key; the file is replaced atomically."""
    data = read_saved(path)
    data[key] = value
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".settings.", suffix=".tmp")
    except OSError as exc:
        raise SettingsStoreError(f"Cannot write {path}: {exc.strerror}.") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2, ensure_ascii=False)
            handle.write("\n")
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise SettingsStoreError(f"Cannot write {path}: {exc.strerror}.") from None


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
