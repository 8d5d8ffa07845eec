"""Tab completion for the prompt: slash commands, their arguments (model names), file paths."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from prompt_toolkit.completion import CompleteEvent, Completer, Completion, PathCompleter
from prompt_toolkit.document import Document

from dexter.repl.commands import CommandRegistry

ArgumentSource = Callable[[str], Iterable[str]]
"""Given a command name, the values its argument can take (e.g. model names)."""


def _looks_like_path(word: str) -> bool:
    return word.startswith(("~", "./", "../")) or "/" in word


class ReplCompleter(Completer):
    """Completes ``/com`` to commands, ``/model gp`` to models, ``./da`` and ``/export da``
    to paths."""

    def __init__(self, registry: CommandRegistry, arguments: ArgumentSource) -> None:
        self._registry = registry
        self._arguments = arguments
        self._paths = PathCompleter(expanduser=True)

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
        """Completions for the text before the cursor."""
        before = document.text_before_cursor
        if before.startswith("/") and "\n" not in before:
            name, space, arg = before[1:].partition(" ")
            if not space and "/" not in name:
                yield from self._commands(name)
                return
            command = self._registry.get(name) if space else None
            if command is not None and command.path:
                yield from self._paths.get_completions(Document(arg, len(arg)), complete_event)
                return
            if command is not None:
                yield from self._command_arguments(command.name, command.arguments, arg)
                return
        word = document.get_word_before_cursor(WORD=True)
        if word and _looks_like_path(word):
            sub = Document(word, len(word))
            yield from self._paths.get_completions(sub, complete_event)

    def _commands(self, prefix: str) -> Iterable[Completion]:
        for command in self._registry.matching(prefix):
            yield Completion("/" + command.name, start_position=-(len(prefix) + 1),
                             display_meta=command.help)

    def _command_arguments(self, name: str, fixed: tuple[str, ...], arg: str) -> Iterable[Completion]:
        if " " in arg:
            return
        values = list(fixed) + [v for v in self._arguments(name) if v not in fixed]
        lowered = arg.lower()
        for value in values:
            if value.lower().startswith(lowered):
                yield Completion(value, start_position=-len(arg))
