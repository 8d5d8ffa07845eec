"""The built-in deny floor for shell commands. No rule, approval or ``--yes`` overrides it.

It runs on the best-effort segments of every command, understood or not, so ``rm -rf /``
hidden in ``$(...)`` or ``bash -c "..."`` is still refused. Command names and arguments are
NFKC-folded first, so fullwidth ``ｒｍ`` counts as ``rm``. Refused:

- reading or naming secrets: ``.env*``, ``.envrc``, ``.ssh/``, ``.aws/``, ``.gnupg/``, key
  files, ``.netrc``, ``credentials*`` (also as glob patterns such as ``.e*`` or ``*.pem``),
  ``/proc/*/environ``, and ``$VARS`` whose names look like keys or tokens;
- printing the environment: ``printenv`` (except harmless names), ``env`` alone, ``set``
  alone, ``export``/``export -p``, ``declare``/``typeset -p|-x``, ``ps e``;
- environment assignments that hijack programs (``LD_PRELOAD``, ``PATH``, ``BASH_ENV``...);
- privilege escalation (``sudo``, ``doas``, ``su``, ``pkexec``);
- destruction outside the workspace: ``rm``/``mv``/``chmod``/``chown``/``shred``... on a
  path outside (or on a variable path, or the workspace root itself), copies and writes
  (``cp``, ``tee``, ``dd of=``, ``>``) landing outside, ``find -delete`` outside,
  ``mkfs``/``wipefs``/``fdisk``/``shutdown``..., ``kill -1``, ``crontab`` edits;
- fork bombs, and downloads piped (or substituted) into a shell or interpreter.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import re
import unicodedata
from collections.abc import Iterator

from dexter.permissions.classify import (
    _PATTERN_FIRST,
    SAFE_ENV_VARS,
    _has_pattern_option,
    operands,
)
from dexter.permissions.shell_parse import ParsedCommand, Segment, parse_command, substitutions
from dexter.permissions.writes import directory_change, write_targets
from dexter.sandbox.paths import Sandbox, secret_path_reason

DANGEROUS_ENV = re.compile(
    r"^(LD_[A-Z_]+|DYLD_[A-Z_]+|PATH|IFS|BASH_ENV|ENV|SHELLOPTS|BASHOPTS|PS4|PROMPT_COMMAND|"
    r"PERL5LIB|PERL5OPT|PERLLIB|PYTHONPATH|PYTHONSTARTUP|PYTHONHOME|PYTHONINSPECT|"
    r"NODE_OPTIONS|NODE_PATH|RUBYOPT|RUBYLIB|GIT_SSH|GIT_SSH_COMMAND|GIT_EXEC_PATH|"
    r"GIT_CONFIG[A-Z_]*|GIT_EXTERNAL_DIFF|GIT_PAGER|PAGER|LESSOPEN|LESSCLOSE|"
    r"JAVA_TOOL_OPTIONS|_JAVA_OPTIONS|HOME|ZDOTDIR|XDG_CONFIG_HOME)="
)
_SECRET_VAR = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")
_SECRET_VAR_NAME = re.compile(r"(?i)(key|token|secret|passw|credential|auth|cookie|session)")
_FORK_BOMB = re.compile(r"([\w:.]+)\s*\(\s*\)\s*\{[^}]*\1\s*\|\s*\1")
_JQ_ENV = re.compile(r"(?<![\w.$])env\b|\$ENV\b|\$__prog_args\b")
# Interpreter code that reads the environment wholesale (python, node, perl, ruby, awk, php).
_CODE_ENV = re.compile(r"os\.environ|environb|process\.env\b|%ENV\b|\$ENV\{|\bENV\[|\bENV\.(?:fetch|to_h|to_a|each|keys|values|inspect)\b|"
                       r"\bENVIRON\b|getenv|\$_ENV\b|\$_SERVER\b")
_PROC_ENVIRON = re.compile(r"/proc/[^/\s]*/+environ")
# Secret names embedded in a longer word, e.g. code passed to an interpreter.
_EMBEDDED_SECRET = re.compile(
    r"(?:^|[^\w.])(\.env(?:\.[\w.-]+)?|\.envrc|\.netrc|\.ssh/|\.aws/|\.gnupg/|"
    r"id_(?:rsa|dsa|ecdsa|ed25519)\w*|credentials\.(?:json|ya?ml|toml|ini|txt|csv))(?=$|[^\w-])"
)

_ESCALATION = frozenset({"sudo", "doas", "su", "pkexec", "run0"})
_ALWAYS_DESTRUCTIVE = frozenset({
    "mkfs", "mke2fs", "wipefs", "fdisk", "sfdisk", "cfdisk", "parted", "mkswap", "swapoff",
    "shutdown", "reboot", "halt", "poweroff", "telinit", "init",
})
_PATH_DESTROYERS = frozenset({
    "rm", "rmdir", "shred", "unlink", "truncate", "chmod", "chown", "chgrp", "mv", "srm",
    "chattr", "setfacl", "tee",
})
_COPIERS = frozenset({"cp", "ln", "install", "rsync"})
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "fish", "csh", "tcsh", "mksh"})
_INTERPRETER = re.compile(r"^(sh|bash|zsh|dash|ksh|fish|csh|tcsh|mksh|python[\d.]*|perl|ruby|"
                          r"node|nodejs|php|lua|source|\.)$")
_DOWNLOADERS = frozenset({"curl", "wget", "fetch", "aria2c", "nc", "ncat", "http", "https",
                          "lwp-download", "ftp", "tftp"})
_SECRET_SAMPLES = (".env", ".env.local", ".envrc", ".netrc", ".ssh", ".aws", ".gnupg",
                   "id_rsa", "id_ed25519", "server.pem", "server.key", "credentials",
                   "credentials.json")
_GLOB_CHARS = frozenset("*?[")
_MAX_DEPTH = 4
_MAX_GLOB_MATCHES = 2_000


def fold(word: str) -> str:
    """NFKC-folded, casefolded form used to compare command names."""
    return unicodedata.normalize("NFKC", word).casefold()


def _base(seg: Segment) -> str:
    return os.path.basename(fold(seg.command)) if seg.command else ""


def _glob_names_secret(piece: str, sandbox: Sandbox) -> bool:
    """True when a glob pattern could expand to a secret name (``.e*``, ``*.pem``).

    Checks typical secret names (a dotfile pattern must start with ``.``, other patterns
    need two literal characters) and what the pattern really expands to in the workspace.
    """
    name = fold(piece).rstrip("/").rsplit("/", 1)[-1]
    literal = sum(ch not in _GLOB_CHARS for ch in re.sub(r"\[[^\]]*\]", "", name))
    for sample in _SECRET_SAMPLES:
        dotted = sample.startswith(".")
        if (name.startswith(".") if dotted else literal >= 2) and fnmatch.fnmatchcase(sample, name):
            return True
    if any(ch in piece for ch in "$`") or piece.startswith("~"):
        return False
    pattern = piece if os.path.isabs(piece) else os.path.join(sandbox.cwd, piece)
    for count, match in enumerate(glob.iglob(pattern, recursive=False)):
        if count >= _MAX_GLOB_MATCHES:
            break
        if secret_path_reason(os.path.relpath(match, sandbox.cwd)):
            return True
    return False


def _pieces(word: str) -> Iterator[str]:
    yield word
    for sep in ("=", ":", ","):
        if sep in word:
            yield from (p for p in word.split(sep) if p)


def secret_reason(seg: Segment, sandbox: Sandbox) -> str | None:
    """Why a segment names a secret file, or None.

    The pattern of ``grep``-like commands is not a file name (``grep -c credentials
    report.txt`` counts a word), unless it is given through ``-f``/``--file``.
    """
    words = [*seg.words, *(e.split("=", 1)[1] for e in seg.env), *(r.target for r in seg.redirects)]
    pattern = _search_pattern(seg)
    if pattern is not None:
        words.remove(pattern)
    for word in words:
        for piece in _pieces(word):
            if _PROC_ENVIRON.search(piece):
                return "reads a process environment (/proc/*/environ)"
            embedded = _EMBEDDED_SECRET.search(fold(piece))
            if embedded:
                return f"mentions the secret file {embedded.group(1)!r}"
            reason = secret_path_reason(piece) or secret_path_reason(fold(piece))
            if reason:
                return f"touches a secret file ({reason})"
            if any(ch in _GLOB_CHARS for ch in piece):
                if _glob_names_secret(piece, sandbox):
                    return f"the pattern {piece!r} can expand to secret files"
            elif "$" not in piece and (target := sandbox.secret_target(piece)):
                return f"{piece!r} links to a secret file ({target})"
    return None


def _search_pattern(seg: Segment) -> str | None:
    """The pattern word of ``grep``/``rg``/``ag`` when it is the first operand, else None."""
    if _base(seg) not in _PATTERN_FIRST or _has_pattern_option(seg.args):
        return None
    found = operands(seg.args)
    return found[0] if found and "/" not in found[0] else None


def _env_print_reason(seg: Segment) -> str | None:
    base, args = _base(seg), seg.args
    if not seg.words and "env" in seg.wrappers and seg.split is None:
        return "'env' without a command prints every environment variable (API keys included)"
    if base == "printenv" and not (args and all(a in SAFE_ENV_VARS for a in args)):
        return "printenv prints environment variables (API keys included)"
    if base in {"set", "export", "readonly"} and (not args or all(a in {"-p"} for a in args)):
        return f"'{base}' without arguments prints environment variables"
    if base in {"declare", "typeset"} and (not args or any(
            a.startswith("-") and ("p" in a or "x" in a) for a in args)):
        return f"'{base}' prints environment variables"
    if base == "jq" and any(_JQ_ENV.search(a) for a in args):
        return "jq's 'env'/'$ENV' prints environment variables (API keys included)"
    if any(_CODE_ENV.search(a) for a in args):
        return "the code reads the whole environment (API keys included)"
    if base == "ps" and any(not a.startswith("-") and "e" in a for a in args):
        return "'ps e' prints the environment of processes"
    if base in {"cat", "strings", "xxd", "od", "less", "more"} and any(
            _PROC_ENVIRON.search(a) for a in args):
        return "reads a process environment"
    return None


def _placed(path: str, where: str | None) -> str | None:
    """``path`` as seen from the folder ``where`` the command runs in (None: unknown)."""
    if path.startswith("~") or os.path.isabs(path):
        return path
    return None if where is None else os.path.join(where, path)


def _outside(sandbox: Sandbox, path: str, where: str | None) -> bool:
    if any(ch in path for ch in "$`"):
        return True
    placed = _placed(path, where)
    return placed is None or not sandbox.contains(placed)


def _move(sandbox: Sandbox, where: str | None, target: str | None) -> str | None:
    """The folder after ``cd target`` from ``where``; None once it is outside or unknown."""
    if target is None or any(ch in target for ch in "$`"):
        return None
    placed = _placed(target, where)
    if placed is None or not sandbox.contains(placed):
        return None
    return os.path.realpath(os.path.expanduser(placed))


def _destructive_reason(seg: Segment, sandbox: Sandbox, where: str | None) -> str | None:
    base, args = _base(seg), seg.args
    if seg.chdir is not None:
        where = _move(sandbox, where, seg.chdir)
    if base in _ALWAYS_DESTRUCTIVE or base.startswith("mkfs."):
        return f"'{base}' can destroy the system"
    if base in _PATH_DESTROYERS:
        for path in operands(args):
            if _outside(sandbox, path, where):
                return f"'{base}' on {path!r}, which is outside the workspace (or not resolvable)"
            placed = _placed(path, where)
            if base in {"rm", "rmdir", "shred", "srm"} and placed and sandbox.is_root(placed):
                return f"'{base}' on {path!r} would remove the whole workspace"
    written = [*write_targets(seg), *(r.target for r in seg.redirects if r.writes_file
                                      and r.op not in {">&", "<&"})]
    if base in _PATH_DESTROYERS:
        written += operands(args)
    if base in _COPIERS:
        written += operands(args)[-1:] + [args[i + 1] for i, a in enumerate(args[:-1]) if a == "-t"]
    for path in written:
        placed = _placed(path, where)
        protected = sandbox.write_protection(placed) if placed and "$" not in path else None
        if protected:
            return f"'{base or 'the redirection'}' would change {path!r}: {protected}"
    for path in write_targets(seg):
        if _outside(sandbox, path, where):
            return (f"'{base}' writes to (or links to) {path!r}, outside the workspace "
                    "(or in a folder dexter cannot check)")
    if base in _COPIERS:
        names = operands(args)
        targets = [a.split("=", 1)[1] for a in args if a.startswith("--target-directory=")]
        targets += [args[i + 1] for i, a in enumerate(args[:-1]) if a == "-t"]
        if len(names) >= 2:
            targets.append(names[-1])
        for path in targets:
            if _outside(sandbox, path, where):
                return f"'{base}' writes to {path!r}, outside the workspace"
    if base == "dd":
        for a in args:
            if a.startswith("of=") and _outside(sandbox, a[3:], where):
                return f"'dd' writes to {a[3:]!r}, outside the workspace"
    if base == "find" and "-delete" in args:
        for path in operands(args[: args.index("-delete")])[:1] or ["."]:
            if _outside(sandbox, path, where):
                return "'find -delete' outside the workspace"
    if base == "kill" and "-1" in args[1:]:
        return "'kill -1' signals every process"
    if base == "crontab" and any(a != "-l" for a in args):
        return "'crontab' changes scheduled jobs outside the workspace"
    for redirect in seg.redirects:
        if redirect.writes_file and redirect.op not in {">&", "<&"} and \
                _outside(sandbox, redirect.target, where):
            return f"writes to {redirect.target!r}, outside the workspace"
    return None


def _segment_reason(seg: Segment, sandbox: Sandbox, depth: int, where: str | None) -> str | None:
    for assignment in seg.env:
        if DANGEROUS_ENV.match(assignment):
            name = assignment.split("=", 1)[0]
            return f"setting {name} can hijack the programs the command runs"
    base = _base(seg)
    if base in _ESCALATION or any(fold(w) in _ESCALATION for w in seg.wrappers):
        return f"'{base}' escalates privileges"
    if base == "export" and any(DANGEROUS_ENV.match(a) for a in seg.args):
        return "exporting a variable that can hijack programs"
    for check in (secret_reason(seg, sandbox), _env_print_reason(seg),
                  _destructive_reason(seg, sandbox, where)):
        if check:
            return check
    for nested in _nested_commands(seg):
        reason = floor_reason(parse_command(nested), sandbox, depth + 1, where)
        if reason:
            return reason
    return None


def _nested_commands(seg: Segment) -> Iterator[str]:
    """Command strings a segment runs itself: ``sh -c``, ``eval``, ``xargs``, ``find -exec``."""
    base, args = _base(seg), list(seg.args)
    if seg.split is not None:
        yield " ".join([seg.split, *args])
    if base in _SHELLS and "-c" in args:
        index = args.index("-c")
        if index + 1 < len(args):
            yield args[index + 1]
    elif base in {"eval", "watch", "xargs", "nohup", "parallel", "flock", "chroot", "unshare"}:
        rest = [a for a in args if not a.startswith("-")]
        if rest:
            yield " ".join(rest)
    if base == "find":
        for i, arg in enumerate(args):
            if arg in {"-exec", "-execdir", "-ok", "-okdir"}:
                command = []
                for word in args[i + 1:]:
                    if word in {";", "+", "\\;"}:
                        break
                    command.append(word)
                if command:
                    yield " ".join(command)


def _pipeline_reason(parsed: ParsedCommand) -> str | None:
    segments = parsed.segments
    for i, seg in enumerate(segments):
        if _base(seg) not in _DOWNLOADERS:
            continue
        for later in segments[i + 1:]:
            if later.operator != "|":
                break
            if _INTERPRETER.match(_base(later)):
                return "pipes a download into a shell or interpreter"
    bodies = substitutions(parsed.raw)
    if bodies:
        bases = {_base(s) for s in segments}
        bases |= {_base(s) for body in bodies for s in parse_command(body).segments}
        if bases & _DOWNLOADERS and any(_INTERPRETER.match(b) for b in bases if b):
            return "runs a download through a shell or interpreter"
    return None


_HERE = "."


def floor_reason(parsed: ParsedCommand, sandbox: Sandbox, depth: int = 0,
                 where: str | None = _HERE) -> str | None:
    """Why the built-in floor denies this command, or None.

    ``where`` is the folder the command starts in (default: the working directory; None:
    unknown, e.g. after ``cd $DIR``). A ``cd`` moves it for the segments after it, so
    ``cd /tmp && rm -rf x`` is judged as ``rm -rf /tmp/x``.
    """
    if where is _HERE:
        where = os.path.realpath(sandbox.cwd)
    if depth > _MAX_DEPTH:
        return "commands nested too deeply"
    raw = parsed.raw
    if _FORK_BOMB.search(raw):
        return "fork bomb"
    for match in _SECRET_VAR.finditer(raw):
        name = match.group(1)
        if _SECRET_VAR_NAME.search(name) and _expanded(raw, match.start()):
            return f"expands ${name}, which looks like a secret"
    reason = _pipeline_reason(parsed)
    if reason:
        return reason
    for body in substitutions(raw):
        reason = floor_reason(parse_command(body), sandbox, depth + 1, where)
        if reason:
            return reason
    for seg in parsed.segments:
        reason = _segment_reason(seg, sandbox, depth, where)
        if reason:
            return reason
        moves, target = directory_change(seg)
        if moves:
            where = _move(sandbox, where, target)
    return None


def _expanded(raw: str, index: int) -> bool:
    """True when the ``$`` at ``index`` is outside single quotes."""
    quote: str | None = None
    i = 0
    while i < index:
        c = raw[i]
        if quote == "'":
            quote = None if c == "'" else quote
        elif c == "\\" and quote is None:
            i += 1
        elif c == "'" and quote is None:
            quote = "'"
        elif c == '"':
            quote = None if quote == '"' else '"'
        i += 1
    return quote != "'"
