"""Options given before a command apply to it: ``dexter --config c.toml models``.

The ``dexter`` group's own options (``--model``, ``--config``, ``--no-memory``,
``--continue``, ``--resume``) configure the interactive session when no command follows.
When one does, :class:`GlobalOptionsGroup` moves them to just after the command's name
(after the subcommand's, for ``dexter memory list``), where the command parses them as its
own: ``dexter --config c.toml models`` is exactly ``dexter models --config c.toml``, with
the same checks, errors and precedence (an option also given after the command wins, as
the later of two). A command without that option is a usage error naming both, never an
option silently ignored. A new command gets this by declaring the option itself
(``ConfigOpt``, ``ModelOpt``, ...); nothing else is needed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from typer.core import TyperGroup

_HINTS: dict[str, str] = {}
_HELP = ("--help", "-h")


def option_hint(option: str, text: str) -> None:
    """What to add when a command lacks ``option`` given before it (say where it does
    apply, or what to do instead)."""
    _HINTS[option] = text


class GlobalOptionsGroup(TyperGroup):
    """The root ``dexter`` group: places the options before a command on the command."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """Move the leading options onto the command they precede, then parse as usual."""
        if ctx.parent is None:
            args = place_global_options(ctx, self, args)
        return super().parse_args(ctx, args)


def _match(command: Any, token: str) -> tuple[Any, str, bool] | None:
    """The option of ``command`` that ``token`` names: (param, the option as typed,
    whether the value is in the token, as ``--config=c.toml`` or ``-cc.toml``)."""
    for param in command.params:
        if getattr(param, "param_type_name", "") != "option":
            continue
        for opt in (*param.opts, *param.secondary_opts):
            if token == opt:
                return param, opt, False
            if opt.startswith("--") and token.startswith(opt + "="):
                return param, opt, True
            if (len(opt) == 2 and token.startswith(opt) and len(token) > 2
                    and _takes_value(param)):
                return param, opt, True
    return None


def _takes_value(param: Any) -> bool:
    return not (param.is_flag or param.count)


def _subcommands(command: Any) -> dict[str, Any]:
    found = getattr(command, "commands", None)
    return dict(found) if isinstance(found, dict) else {}


def place_global_options(ctx: Any, root: Any, args: Sequence[str]) -> list[str]:
    """``args`` with the options before the command moved to just after the command's
    name (the deepest subcommand named). Unchanged when no command follows them (the
    interactive session takes them), when one is eager (``--help``, ``--version``) or
    unknown, when the command is unknown, or when it is a group named without one of its
    commands: click then says what is wrong (or shows the group's usage) as usual. A moved
    option the command does not take fails with a usage error (exit 2), unless the
    command's help is asked for, which is shown without it."""
    out = list(args)
    moved: list[tuple[str, list[str]]] = []
    i = 0
    while i < len(out) and out[i].startswith("-") and out[i] not in ("-", "--"):
        found = _match(root, out[i])
        if found is None or found[0].is_eager:
            return out
        param, opt, inline = found
        width = 1 if inline or not _takes_value(param) else 2
        moved.append((opt, out[i:i + width]))
        i += width
    if not moved or i >= len(out) or out[i] == "--":
        return out
    command = _subcommands(root).get(out[i])
    if command is None:
        return out
    path, at = [out[i]], i + 1
    while children := _subcommands(command):
        j = at
        while j < len(out) and out[j].startswith("-") and out[j] not in ("-", "--"):
            own = _match(command, out[j])
            j += 1 if own is None or own[2] or not _takes_value(own[0]) else 2
        if j >= len(out) or out[j] not in children:
            break
        command = children[out[j]]
        path.append(out[j])
        at = j + 1
    if _subcommands(command) and not command.invoke_without_command:
        return out  # 'dexter -c c.toml data' (no subcommand): the group's usage, as typed
    name = " ".join(["dexter", *path])
    asks_help = any(token in _HELP for token in out[at:])
    for opt, _ in moved:
        if _match(command, opt) is None:
            if asks_help:  # 'dexter --model X replay --help': the help, without the option
                return [*out[i:at], *(t for o, given in moved if _match(command, o)
                                      for t in given), *out[at:]]
            hint = f" {_HINTS[opt]}" if opt in _HINTS else ""
            ctx.fail(f"'{name}' has no {opt} option (an option before a command is the "
                     f"command's own; '{name} --help' lists them).{hint}")
    tokens = [token for _, given in moved for token in given]
    return [*out[i:at], *tokens, *out[at:]]
