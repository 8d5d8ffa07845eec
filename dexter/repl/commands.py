"""The slash-command registry: names, help, handlers, and the nearest match for typos."""

from __future__ import annotations

import difflib
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

Handler = Callable[[Any, str], Awaitable[None]]
"""``handler(repl, argument_text)``."""


@dataclass(frozen=True, slots=True)
class Command:
    """One slash command. ``read_only`` commands may run while the agent is working."""

    name: str
    help: str
    handler: Handler
    usage: str = ""
    read_only: bool = False
    arguments: tuple[str, ...] = field(default=())
    """Fixed first words the argument may start with (offered by completion)."""
    path: bool = False
    """The argument is a file name (completion offers paths)."""


def split_command(text: str) -> tuple[str, str] | None:
    """``("model", "gpt-4.1")`` for ``/model gpt-4.1``; None when ``text`` is not a command.

    A first word with a second ``/`` (``/usr/local/x``) is a path, not a command.
    """
    stripped = text.strip()
    if not stripped.startswith("/") or len(stripped) < 2:
        return None
    word, _, rest = stripped[1:].partition(" ")
    if "/" in word or not word or word[0].isspace():
        return None
    return word.lower(), rest.strip()


class CommandRegistry:
    """Commands by name, in registration order (the order ``/help`` shows)."""

    def __init__(self) -> None:
        self._commands: dict[str, Command] = {}

    def add(self, command: Command) -> None:
        """Register a command (a second one with the same name replaces the first)."""
        self._commands[command.name] = command

    def get(self, name: str) -> Command | None:
        """The command called ``name`` (without the slash), if any."""
        return self._commands.get(name.lower().lstrip("/"))

    def __iter__(self) -> Iterator[Command]:
        return iter(self._commands.values())

    def __len__(self) -> int:
        return len(self._commands)

    def names(self) -> list[str]:
        """Every command name, without slashes."""
        return list(self._commands)

    def matching(self, prefix: str) -> list[Command]:
        """Commands whose name starts with ``prefix`` (slash optional)."""
        wanted = prefix.lower().lstrip("/")
        return [c for c in self._commands.values() if c.name.startswith(wanted)]

    def suggest(self, name: str) -> str | None:
        """The closest known name to a mistyped one (prefix matches first), or None."""
        wanted = name.lower().lstrip("/")
        prefixed = [c.name for c in self.matching(wanted)] if wanted else []
        if len(prefixed) == 1:
            return prefixed[0]
        close = difflib.get_close_matches(wanted, self.names(), n=1, cutoff=0.5)
        return close[0] if close else (prefixed[0] if prefixed else None)
