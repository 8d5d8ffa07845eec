"""Which shell commands only read, and only read inside the workspace.

A segment is *read-only* when its command is on the allowlist below, none of its options
turn it into a writer or a program runner (``sort -o``, ``find -exec``, ``rg --pre``...),
it has no write redirection, and every path-like argument resolves inside the sandbox
(working directory and ``DEXTER_HOME``; see :mod:`dexter.sandbox.paths`). Only then does the
engine run it without asking.

Deliberate choices:

- Recursive content searches (``grep -r``, ``diff -r``, ``rg``/``ag`` on a folder) are not
  auto-allowed: they would print the contents of secret files that happen to sit in the
  tree (``credentials.json``, ``server.pem``). They ask.
- ``printenv``/``env``/``set``/``export -p``/``declare -x`` print keys: the deny floor
  refuses them (``printenv HOME`` and other harmless names are read-only).
- ``cd`` is not read-only: it would make later relative paths unverifiable.
- ``git`` is read-only for a fixed set of subcommands, with no global options except
  ``--no-pager`` (``-c``/``-C``/``--git-dir`` could run code or leave the workspace), and
  never with ``--output``, ``--ext-diff`` or ``-O``. ``git remote -v`` and ``git config``
  ask (URLs and config may hold tokens).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from dexter.permissions.shell_parse import ParsedCommand, Segment
from dexter.sandbox.paths import Sandbox

Classification = Literal["read-only", "mutating", "unknown"]

# Harmless environment variable names ``printenv NAME`` may print.
SAFE_ENV_VARS = frozenset({
    "HOME", "PATH", "PWD", "OLDPWD", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM",
    "TZ", "TMPDIR", "HOSTNAME", "EDITOR", "PAGER", "VIRTUAL_ENV", "CONDA_DEFAULT_ENV",
    "PYTHONIOENCODING", "COLUMNS", "LINES", "SHLVL", "XDG_CONFIG_HOME", "XDG_DATA_HOME",
    "XDG_CACHE_HOME", "LC_ALL", "LC_CTYPE",
})

# Assignments in front of a command that cannot make it read, write or run anything else.
SAFE_ASSIGNMENTS = frozenset({"LANG", "LANGUAGE", "TZ", "COLUMNS", "LINES", "NO_COLOR", "TERM",
                              "POSIXLY_CORRECT"})

# Commands whose arguments are never file paths.
_NO_PATH_ARGS = frozenset({
    "echo", "printf", "date", "pwd", "whoami", "id", "groups", "uname", "uptime", "true",
    "false", "which", "type", "hostname", "basename", "dirname", "printenv", "seq", "expr",
    "sleep", "tr", "command", "free", "nproc", "arch", "locale", "tty",
})
# Commands whose first positional argument is a pattern or program, not a path.
_PATTERN_FIRST = frozenset({"grep", "egrep", "fgrep", "rg", "ag", "jq"})
_PATTERN_FILE_OPTIONS = {"-e", "--regexp", "-f", "--file", "--from-file"}

_SIMPLE_READERS = frozenset({
    "ls", "pwd", "cat", "head", "tail", "wc", "stat", "du", "df", "echo", "printf", "which",
    "type", "basename", "dirname", "realpath", "readlink", "cut", "cmp", "comm", "md5sum",
    "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "b2sum", "cksum", "nl",
    "tac", "rev", "column", "fold", "fmt", "expand", "unexpand", "paste", "join", "tr",
    "true", "false", "whoami", "id", "groups", "uname", "uptime", "free", "nproc", "arch",
    "seq", "expr", "sleep", "od", "hexdump", "strings", "test", "locale", "tty", "jq",
})

_GIT_READ = frozenset({
    "status", "log", "diff", "show", "rev-parse", "ls-files", "blame", "shortlog", "describe",
    "ls-tree", "cat-file", "grep", "rev-list", "name-rev", "whatchanged", "annotate",
    "merge-base", "count-objects", "show-ref", "for-each-ref", "cherry",
})
_GIT_BRANCH_LIST_OPTIONS = frozenset({
    "-a", "-r", "-v", "-vv", "-l", "--list", "--all", "--remotes", "--verbose",
    "--show-current", "--no-color", "--color", "--merged", "--no-merged",
})
_FIND_ACTIONS = frozenset({
    "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls",
})
_HOSTNAME_READ = frozenset({
    "-f", "-s", "-i", "-I", "-d", "-a", "-A", "--fqdn", "--short", "--domain",
    "--ip-address", "--all-ip-addresses", "--long",
})


_SYSTEM_BIN = ("/bin/", "/usr/bin/", "/usr/local/bin/")


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether one segment is read-only, and if not, why."""

    read_only: bool
    reason: str = ""


def _short_cluster_has(args: tuple[str, ...], letters: str) -> bool:
    return any(a.startswith("-") and not a.startswith("--") and len(a) > 1
               and any(ch in a[1:] for ch in letters) for a in args)


def _long_option(args: tuple[str, ...], *names: str) -> bool:
    return any(a == n or a.startswith(n + "=") for a in args for n in names)


def operands(args: tuple[str, ...]) -> list[str]:
    """The arguments that are not options (everything after ``--`` included)."""
    out, after_dashes = [], False
    for a in args:
        if after_dashes or not a.startswith("-") or a == "-":
            out.append(a)
        elif a == "--":
            after_dashes = True
    return out


def _grep_problem(seg: Segment) -> str | None:
    args = seg.args
    if _short_cluster_has(tuple(a for a in args if not a.startswith("--")), "rR") or \
            _long_option(args, "--recursive", "--dereference-recursive") or \
            any(a in {"-d", "--directories"} for a in args) or _long_option(args, "--directories"):
        return "recursive search may print secret files in the tree"
    return None


def _rg_problem(seg: Segment, sandbox: Sandbox) -> str | None:
    args = seg.args
    risky = ("--pre", "--pre-glob", "--hidden", "--no-ignore", "--no-ignore-vcs",
             "--no-ignore-dot", "--follow", "--search-zip", "--unrestricted", "--no-ignore-files")
    if _long_option(args, *risky) or any(a in {"-u", "-uu", "-uuu", "-L", "-z", "-."}
                                         for a in args):
        return f"{seg.base} option that reads hidden files or runs programs"
    files = operands(args)
    if not _has_pattern_option(args):
        files = files[1:]
    if not files:
        return f"{seg.base} without file arguments searches the whole tree recursively"
    for name in files:
        resolved = _resolve(sandbox, name)
        if resolved is None or not resolved.is_file():
            return f"{seg.base} on a folder searches it recursively"
    return None


def _has_pattern_option(args: tuple[str, ...]) -> bool:
    return any(a in _PATTERN_FILE_OPTIONS or a.startswith(("--regexp=", "--file="))
               or (a.startswith("-e") and len(a) > 2 and not a.startswith("--")) for a in args)


def _resolve(sandbox: Sandbox, name: str) -> Path | None:
    return None if sandbox.check(name) is not None else sandbox.resolve(name)


def _git_problem(seg: Segment) -> str | None:
    args = list(seg.args)
    while args and args[0].startswith("-"):
        if args[0] != "--no-pager":
            return f"git global option {args[0]!r} can change what git runs or reads"
        args.pop(0)
    if not args:
        return "bare git"
    sub, rest = args[0], tuple(args[1:])
    if _long_option(rest, "--output", "--ext-diff", "--open-files-in-pager") or "-O" in rest \
            or any(a.startswith("-O") and not a.startswith("--") for a in rest):
        return "git option that writes a file or runs a program"
    if sub == "grep":
        return "'git grep' searches every tracked file and may print committed secrets"
    if sub in _GIT_READ:
        return None
    if sub == "branch" and all(a in _GIT_BRANCH_LIST_OPTIONS for a in rest):
        return None
    if sub == "tag" and all(a in {"-l", "--list", "-n"} for a in rest):
        return None
    if sub == "stash" and rest[:1] in (("list",), ("show",)):
        return None
    if sub == "reflog" and (not rest or rest[0] == "show" or rest[0].startswith("-")):
        return None
    return f"'git {sub}' can change the repository (or show configured secrets)"


def _option_problem(seg: Segment, sandbox: Sandbox) -> str | None:
    """None when the command (by name and options) only reads; else why not."""
    base, args = seg.base, seg.args
    checks: dict[str, Callable[[], str | None]] = {
        "grep": lambda: _grep_problem(seg),
        "egrep": lambda: _grep_problem(seg),
        "fgrep": lambda: _grep_problem(seg),
        "rg": lambda: _rg_problem(seg, sandbox),
        "ag": lambda: _rg_problem(seg, sandbox),
        "git": lambda: _git_problem(seg),
        "find": lambda: ("find action that runs or deletes or writes"
                         if any(a in _FIND_ACTIONS for a in args) else None),
        "sort": lambda: ("sort -o writes a file"
                         if _short_cluster_has(args, "o") or
                         _long_option(args, "--output", "--compress-program") else None),
        "tree": lambda: "tree -o writes a file" if _short_cluster_has(args, "o") else None,
        "file": lambda: ("file -C writes a file"
                         if "-C" in args or _long_option(args, "--compile") else None),
        "date": lambda: ("date can set the clock"
                         if _long_option(args, "--set") or _short_cluster_has(args, "s")
                         or any(not a.startswith(("-", "+")) for a in args) else None),
        "uniq": lambda: ("uniq with two names writes the second"
                         if len(operands(args)) > 1 else None),
        "diff": lambda: ("recursive diff may print secret files"
                         if _short_cluster_has(args, "r") or _long_option(args, "--recursive")
                         else None),
        "hostname": lambda: (None if all(a in _HOSTNAME_READ for a in args)
                             else "hostname with an argument sets the host name"),
        "printenv": lambda: (None if args and all(a in SAFE_ENV_VARS for a in args)
                             else "printenv prints secrets"),
        "command": lambda: (None if args[:1] in (("-v",), ("-V",))
                            else "'command' runs another command"),
    }
    if base in checks:
        return checks[base]()
    if base in _SIMPLE_READERS:
        return None
    return f"'{base}' is not a known read-only command" if base else "no command"


def path_arguments(seg: Segment) -> list[str]:
    """The arguments that may name files (conservatively: more rather than fewer)."""
    if seg.base in _NO_PATH_ARGS:
        return [r.target for r in seg.redirects if r.reads_file]
    candidates: list[str] = []
    skip_pattern = seg.base in _PATTERN_FIRST and not _has_pattern_option(seg.args)
    if seg.base == "git":
        skip_pattern = False
    after_dashes = False
    for arg in seg.args:
        if after_dashes or not arg.startswith("-") or arg == "-":
            if skip_pattern:
                skip_pattern = False
                continue
            candidates.append(arg)
        elif arg == "--":
            after_dashes = True
        elif "=" in arg:
            candidates.append(arg.split("=", 1)[1])
        elif arg.startswith("-") and not arg.startswith("--"):
            cut = min((arg.find(ch) for ch in "/~" if ch in arg), default=-1)
            if cut > 0:
                candidates.append(arg[cut:])
    candidates.extend(r.target for r in seg.redirects if r.reads_file)
    return [c for c in candidates if c and c != "-" and c != "/dev/null"]


def classify_segment(seg: Segment, sandbox: Sandbox) -> Verdict:
    """Read-only, or the reason it is not."""
    if seg.unknown:
        return Verdict(False, seg.unknown)
    if seg.writes_file:
        return Verdict(False, "redirection to a file")
    if not seg.words:
        return Verdict(False, "no command (assignment or redirection only)")
    changed = [e.split("=", 1)[0] for e in seg.env
               if e.split("=", 1)[0] not in SAFE_ASSIGNMENTS and not e.startswith("LC_")]
    if changed:
        return Verdict(False, f"the assignment {changed[0]}= can change what the command reads, "
                              "writes or runs")
    if any(ord(ch) > 127 for ch in seg.command):
        return Verdict(False, "non-ASCII command name")
    if "/" in seg.command and not os.path.normpath(seg.command).startswith(_SYSTEM_BIN):
        return Verdict(False, f"{seg.command!r} is a program outside the system folders")
    problem = _option_problem(seg, sandbox)
    if problem:
        return Verdict(False, problem)
    for name in path_arguments(seg):
        refused = sandbox.check(name)
        if refused:
            return Verdict(False, f"path {name!r} is not inside the workspace")
    return Verdict(True)


def classify(parsed: ParsedCommand, sandbox: Sandbox) -> Classification:
    """``unknown`` if not understood, ``read-only`` if every segment is, else ``mutating``."""
    if not parsed.ok or not parsed.segments:
        return "unknown"
    if all(classify_segment(seg, sandbox).read_only for seg in parsed.segments):
        return "read-only"
    return "mutating"
