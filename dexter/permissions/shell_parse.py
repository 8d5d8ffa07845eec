"""Split a ``/bin/sh`` command line into simple commands, failing closed.

Words are produced by :class:`shlex.shlex` (POSIX mode, punctuation characters split out).
A quote-aware pre-scan of the raw text finds what ``shlex`` cannot report: constructs the
shell would expand or run in ways a static reading cannot follow. Any of them makes the
command *unknown*, which the engine turns into ``ask`` (never ``allow``):

- ``$`` anywhere outside single quotes (parameters, ``$(...)``, arithmetic), backticks;
- subshells and groups ``(`` ``)`` ``{`` ``}``, process substitution ``<(`` ``>(``;
- heredocs and here-strings ``<<``, ``<<<``; background ``&``; ``|&``; ``;;``;
- redirection to a file (``>``, ``>>``, ``&>``, ``>|``, ``N>`` to a path; reading with
  ``<`` is fine, and so are ``2>&1``, ``>&2`` and ``>/dev/null``);
- unquoted glob characters ``*`` ``?`` ``[`` (the shell would expand them to names we
  cannot see), a word starting with ``#`` (comment) or ``!``;
- control characters, unterminated quotes, a trailing backslash, an empty command
  between operators, a shell operator written inside quotes;
- ``eval``, ``exec``, ``source``, ``.``, shell keywords (``if``, ``for``, ``while``...);
- wrappers that change the directory or re-split their argument (``env -C``, ``env -S``).

Even an unknown command keeps a best-effort list of segments, so the deny floor and deny
rules still see ``rm -rf /`` inside ``$(...)``. Newlines separate commands like ``;``.
Leading ``NAME=value`` words become the segment's environment; the wrappers ``env``,
``nice``, ``timeout``, ``command``, ``nohup``, ``time``, ``stdbuf``, ``ionice`` and
``setsid`` are removed (with their options) so the wrapped command is what gets judged.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field

_OP_CHARS = frozenset("();<>|&")
_SEPARATORS = frozenset({"&&", "||", ";", "|"})
_REDIRECTS = frozenset({">", ">>", "<", "&>", "&>>", ">&", "<&", ">|", "<>"})
# dash (/bin/sh on Debian) reads `cmd &>file` as `cmd &` then `>file`.
_BASH_ONLY_REDIRECTS = frozenset({"&>", "&>>"})
_SAFE_SINKS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_FD_TARGET = re.compile(r"^(\d+|-)$")
_NEVER_STATIC = frozenset({"eval", "exec", "source", ".", "alias", "trap", "function"})
_KEYWORDS = frozenset({
    "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac",
    "in", "select", "[[", "]]", "coproc",
})
WRAPPERS = frozenset({"env", "nice", "timeout", "command", "nohup", "time", "stdbuf", "ionice",
                      "setsid"})


@dataclass(frozen=True, slots=True)
class Redirect:
    """One redirection: operator, the fd written before it (``2`` in ``2>``), and its target."""

    op: str
    fd: str
    target: str

    @property
    def writes_file(self) -> bool:
        """True when it would create or change a file (not a fd copy or /dev/null)."""
        if self.op in {"<", "<&"}:
            return False
        if self.op in {">&", "<&"} and _FD_TARGET.match(self.target):
            return False
        return self.target not in _SAFE_SINKS

    @property
    def reads_file(self) -> str | None:
        """The file read by ``<`` (or ``<>``), if any."""
        return self.target if self.op in {"<", "<>"} else None


@dataclass(frozen=True, slots=True)
class Segment:
    """One simple command: environment, wrappers removed, words, redirections."""

    words: tuple[str, ...]
    env: tuple[str, ...] = ()
    wrappers: tuple[str, ...] = ()
    redirects: tuple[Redirect, ...] = ()
    operator: str = ""  # the operator before this segment ("" for the first)
    unknown: str | None = None  # why this segment alone is not understood
    chdir: str | None = None  # the folder ``env -C DIR`` runs the command in
    split: str | None = None  # the command line ``env -S "..."`` splits and runs

    @property
    def command(self) -> str:
        """The command word as written ('' for a bare assignment)."""
        return self.words[0] if self.words else ""

    @property
    def base(self) -> str:
        """The command's basename (``/usr/bin/git`` -> ``git``)."""
        return os.path.basename(self.command) if self.command else ""

    @property
    def args(self) -> tuple[str, ...]:
        """The words after the command."""
        return self.words[1:]

    @property
    def writes_file(self) -> bool:
        """True when a redirection writes to a file."""
        return any(r.writes_file for r in self.redirects)

    def text(self) -> str:
        """The command and arguments, shell-quoted (the form rules compare against)."""
        return shlex.join(self.words)


@dataclass(frozen=True, slots=True)
class ParsedCommand:
    """The result of parsing: segments (best effort) and why it is not understood, if so."""

    raw: str
    segments: tuple[Segment, ...]
    unknown: str | None = None
    operators: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        """True when every part of the command was understood."""
        return self.unknown is None


@dataclass
class _Scan:
    text: str
    reasons: list[str]
    ops: list[tuple[str, str]]  # (operator run, fd digits written right before it)


def _prescan(raw: str) -> _Scan:
    """Quote-aware pass over the raw text: features shlex hides, operators, fd prefixes."""
    out: list[str] = []
    reasons: list[str] = []
    ops: list[tuple[str, str]] = []
    quote: str | None = None
    word = ""  # the current unquoted word so far (for fd digits and word-start checks)
    i, n = 0, len(raw)

    def note(reason: str) -> None:
        if reason not in reasons:
            reasons.append(reason)

    while i < n:
        c = raw[i]
        if quote == "'":
            out.append(c)
            quote = None if c == "'" else quote
            i += 1
            continue
        if quote == '"':
            if c == "\\" and i + 1 < n and raw[i + 1] in '$`"\\\n':
                out.append(raw[i:i + 2])
                i += 2
                continue
            if c in "$`":
                note("variable or command substitution")
            quote = None if c == '"' else quote
            out.append(c)
            i += 1
            continue
        if c == "\\":
            if i + 1 >= n:
                note("trailing backslash")
                i += 1
                continue
            if raw[i + 1] == "\n":
                i += 2
                continue
            out.append(raw[i:i + 2])
            word += "\\"
            i += 2
            continue
        if c in "'\"":
            quote = c
            out.append(c)
            word += c
            i += 1
            continue
        if c == "\n":
            out.append(" ; ")
            ops.append((";", ""))
            word = ""
            i += 1
            continue
        if c in " \t":
            out.append(c)
            word = ""
            i += 1
            continue
        if ord(c) < 32 or c == "\x7f":
            note("control character")
            out.append(" ")
            word = ""
            i += 1
            continue
        if c in _OP_CHARS:
            j = i
            while j < n and raw[j] in _OP_CHARS:
                j += 1
            ops.append((raw[i:j], word if word.isdigit() else ""))
            out.append(raw[i:j])
            word = ""
            i = j
            continue
        if c == "`":
            note("variable or command substitution")
            out.append(" ; ")
            ops.append((";", ""))
            word = ""
            i += 1
            continue
        if c == "$":
            note("variable or command substitution")
        elif c in "*?[":
            note("unquoted glob pattern")
        elif c in "{}":
            note("braces (group or brace expansion)")
        elif c == "#" and not word:
            note("comment")
        elif c == "!" and not word:
            note("'!' (negation or history)")
        out.append(c)
        word += c
        i += 1
    if quote is not None:
        note("unterminated quote")
    return _Scan("".join(out), reasons, ops)


def _tokens(text: str) -> list[str]:
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    return list(lexer)


def _is_op(token: str) -> bool:
    return bool(token) and all(ch in _OP_CHARS for ch in token)


def parse_command(raw: str) -> ParsedCommand:
    """Parse one command line. Never raises; ``unknown`` says why it is not understood."""
    if not raw.strip():
        return ParsedCommand(raw, (), "empty command")
    scan = _prescan(raw)
    reasons = list(scan.reasons)
    try:
        tokens = _tokens(scan.text)
    except ValueError:
        reasons.append("unterminated quote")
        tokens = _tokens_best_effort(scan.text)
    op_tokens = [t for t in tokens if _is_op(t)]
    fds: list[str] = [fd for _, fd in scan.ops]
    if [t for t, _ in scan.ops] != op_tokens:
        reasons.append("shell operator inside quotes or escaped")
        fds = [""] * len(op_tokens)
    segments, operators, seg_reasons = _split(tokens, fds)
    reasons.extend(r for r in seg_reasons if r not in reasons)
    unknown = "; ".join(dict.fromkeys(reasons)) or None
    return ParsedCommand(raw, tuple(segments), unknown, tuple(operators))


def _tokens_best_effort(text: str) -> list[str]:
    for closer in ("'", '"'):
        try:
            return _tokens(text + closer)
        except ValueError:
            continue
    return text.split()


def _split(tokens: list[str], fds: list[str]) -> tuple[list[Segment], list[str], list[str]]:
    segments: list[Segment] = []
    operators: list[str] = []
    reasons: list[str] = []
    words: list[str] = []
    redirects: list[Redirect] = []
    before = ""
    op_index = 0
    i = 0

    def close(op: str) -> None:
        nonlocal words, redirects, before
        if words or redirects:
            segments.append(_segment(words, redirects, before))
        elif (op or before) and not (before == ";" and op == ""):
            reasons.append("empty command between operators")
        words, redirects, before = [], [], op

    while i < len(tokens):
        token = tokens[i]
        if not _is_op(token):
            words.append(token)
            i += 1
            continue
        fd = fds[op_index] if op_index < len(fds) else ""
        op_index += 1
        if token in _SEPARATORS:
            operators.append(token)
            close(token)
        elif token in _REDIRECTS:
            if fd and words and words[-1] == fd:
                words.pop()
            target = tokens[i + 1] if i + 1 < len(tokens) else ""
            if token in _BASH_ONLY_REDIRECTS:
                reasons.append(f"'{token}' means a background job in /bin/sh")
            if not target or _is_op(target):
                reasons.append(f"redirection '{token}' without a target")
            else:
                redirects.append(Redirect(token, fd, target))
                i += 1
        else:
            operators.append(token)
            reasons.append(_operator_reason(token))
            close(token)
        i += 1
    close("")
    for seg in segments:
        if seg.unknown:
            reasons.append(seg.unknown)
        if any(r.writes_file for r in seg.redirects):
            reasons.append("redirection to a file")
    return segments, operators, reasons


def _operator_reason(token: str) -> str:
    if token == "&":
        return "background job '&'"
    if token in {"<<", "<<-", "<<<"}:
        return "heredoc or here-string"
    if "(" in token or ")" in token:
        return "subshell or process substitution"
    return f"shell operator {token!r}"


def _segment(words: list[str], redirects: list[Redirect], operator: str) -> Segment:
    env: list[str] = []
    index = 0
    while index < len(words) and _ASSIGNMENT.match(words[index]):
        env.append(words[index])
        index += 1
    rest, wrappers, unknown, extras = _unwrap(words[index:], env)
    if rest:
        base = os.path.basename(rest[0])
        if base in _NEVER_STATIC:
            unknown = unknown or f"'{base}' runs code the parser cannot see"
        elif base in _KEYWORDS:
            unknown = unknown or f"shell keyword '{base}'"
    return Segment(tuple(rest), tuple(env), tuple(wrappers), tuple(redirects), operator, unknown,
                   extras.get("chdir"), extras.get("split"))


def _unwrap(words: list[str], env: list[str]) -> tuple[list[str], list[str], str | None, dict[str, str]]:
    """Remove wrapper commands and their options.

    Returns (words, wrappers, unknown reason, ``env -C``/``env -S`` values as ``chdir``/``split``).
    """
    wrappers: list[str] = []
    unknown: str | None = None
    extras: dict[str, str] = {}
    while words and os.path.basename(words[0]) in WRAPPERS:
        name = os.path.basename(words[0])
        args = words[1:]
        if name == "command" and args and args[0] in {"-v", "-V"}:
            break  # `command -v x` looks a name up; it is its own (read-only) command
        consumed, problem = _wrapper_options(name, args, env)
        if problem:
            unknown = unknown or problem
        if name == "env":
            extras.update(_env_extras(args[:consumed]))
        wrappers.append(name)
        words = args[consumed:]
        if name == "env":
            while words and _ASSIGNMENT.match(words[0]):
                env.append(words.pop(0))
    return words, wrappers, unknown, extras


def _env_extras(options: list[str]) -> dict[str, str]:
    """The folder of ``env -C DIR`` and the command line of ``env -S "..."``."""
    found: dict[str, str] = {}
    names = {"-C": "chdir", "--chdir": "chdir", "-S": "split", "--split-string": "split"}
    for i, option in enumerate(options):
        name, eq, value = option.partition("=")
        if name in names and eq:
            found[names[name]] = value
        elif option in names and i + 1 < len(options):
            found[names[option]] = options[i + 1]
        elif option[:2] in {"-C", "-S"} and len(option) > 2:
            found[names[option[:2]]] = option[2:]
    return found


_VALUE_OPTIONS = {
    "env": {"-u", "--unset", "-C", "--chdir", "-S", "--split-string"},
    "nice": {"-n", "--adjustment"},
    "timeout": {"-s", "--signal", "-k", "--kill-after"},
    "stdbuf": {"-i", "-o", "-e", "--input", "--output", "--error"},
    "ionice": {"-c", "-n", "-p", "-P", "-u", "--class", "--classdata"},
    "time": {"-f", "--format", "-o", "--output"},
}


def _wrapper_options(name: str, args: list[str], env: list[str]) -> tuple[int, str | None]:
    """How many words after the wrapper are its own options (and the timeout duration)."""
    takes_value = _VALUE_OPTIONS.get(name, set())
    i = 0
    problem: str | None = None
    while i < len(args) and args[i].startswith("-") and args[i] != "-":
        option = args[i]
        if option == "--":
            i += 1
            break
        if name == "env" and (option in {"-C", "-S", "--split-string", "--chdir"}
                              or option.startswith(("--chdir=", "--split-string=", "-S", "-C"))):
            problem = f"'env {option}' changes how the command runs"
        if name == "time" and (option in {"-o", "--output"} or option.startswith("--output=")):
            problem = "'time -o' writes a file"
        i += 2 if option in takes_value else 1
    if name == "timeout" and i < len(args):
        i += 1  # the duration
    if name == "nice" and i < len(args) and re.fullmatch(r"-?\d+", args[i] or ""):
        i += 1
    return min(i, len(args)), problem


def substitutions(raw: str) -> list[str]:
    """Bodies of ``$(...)``, ``<(...)``, ``>(...)`` and backticks outside single quotes.

    Best effort, for the deny floor: a substitution inside double quotes is one word to
    ``shlex`` but still runs.
    """
    bodies: list[str] = []
    quote: str | None = None
    i, n = 0, len(raw)
    while i < n:
        c = raw[i]
        if quote == "'":
            quote = None if c == "'" else quote
            i += 1
            continue
        if c == "\\":
            i += 2
            continue
        if c == "'" and quote is None:
            quote = "'"
        elif c == '"':
            quote = None if quote == '"' else '"'
        elif c == "`":
            end = raw.find("`", i + 1)
            end = n if end == -1 else end
            bodies.append(raw[i + 1:end])
            i = end + 1
            continue
        elif c in "$<>" and i + 1 < n and raw[i + 1] == "(":
            depth, j = 1, i + 2
            while j < n and depth:
                depth += {"(": 1, ")": -1}.get(raw[j], 0)
                j += 1
            bodies.append(raw[i + 2:j - 1 if depth == 0 else j])
            i = j
            continue
        i += 1
    return bodies
