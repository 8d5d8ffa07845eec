"""What a shell command wants beyond the default sandbox: the network, or paths outside.

This only decides what to *ask*; the operating-system sandbox enforces the answer. A
command whose needs are missed here (a URL built at run time, a path in a variable) is
not let out: it runs contained and fails, and its result says how to ask for more.
"""

from __future__ import annotations

import os
from pathlib import Path

from dexter.permissions.classify import path_arguments
from dexter.permissions.shell_parse import ParsedCommand, Segment
from dexter.permissions.writes import write_targets
from dexter.sandbox.paths import Sandbox, secret_path_reason
from dexter.sandbox.policy import SYSTEM_READ_DIRS, Grants

NETWORK_PROGRAMS = frozenset({
    "curl", "wget", "ssh", "scp", "sftp", "nc", "ncat", "netcat", "telnet", "ftp", "tftp",
    "ping", "ping6", "dig", "nslookup", "host", "http", "https", "aria2c", "lynx", "w3m",
    "links", "whois", "traceroute", "mtr", "socat", "lftp", "yt-dlp", "gh", "aws", "gcloud",
    "az", "kubectl", "docker", "podman",
})
# Programs that go to the network for these subcommands.
_NETWORK_SUBCOMMANDS = {
    "git": frozenset({"clone", "fetch", "pull", "push", "ls-remote", "send-email",
                      "request-pull"}),
    "pip": frozenset({"install", "download", "index", "search"}),
    "pip3": frozenset({"install", "download", "index", "search"}),
    "uv": frozenset({"pip", "add", "sync", "run", "tool", "lock"}),
    "npm": frozenset({"install", "i", "ci", "add", "update", "view", "info", "publish"}),
    "npx": frozenset(), "yarn": frozenset({"add", "install"}), "pnpm": frozenset({"add", "install", "i"}),
    "cargo": frozenset({"install", "fetch", "update", "add", "build", "search"}),
    "go": frozenset({"get", "install", "mod"}),
    "gem": frozenset({"install", "fetch"}), "brew": frozenset(), "apt": frozenset(),
    "apt-get": frozenset(), "conda": frozenset({"install", "create", "update"}),
    "rsync": frozenset(),
}
_NO_SUBCOMMAND_NEEDED = frozenset({"npx", "brew", "apt", "apt-get"})
# git's options before the subcommand that take a value as the next word.
_GIT_VALUE_OPTIONS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace",
                                "--exec-path", "--super-prefix", "--config-env", "--list-cmds"})
# `git remote` and `git submodule` are local but for these (and `git remote show` unless
# -n, `git remote add -f`, which fetches the new remote, `git remote set-head -a`, which
# asks it; `git submodule foreach` runs commands that mostly fetch).
_GIT_REMOTE_NETWORK = frozenset({"update", "prune"})
_GIT_SUBMODULE_NETWORK = frozenset({"update", "add", "foreach"})
# Paths the sandbox gives its own of: /dev and /proc always; /tmp is private, so only a
# path that already exists on the host there needs a grant.
_INSIDE_ANYWAY = ("/dev", "/proc")
_PRIVATE_TMP = ("/tmp", "/var/tmp")


def _wants_network(seg: Segment) -> bool:
    base = seg.base
    if base in NETWORK_PROGRAMS:
        return True
    if base in {"python", "python3"} and seg.args[:2] in (("-m", "pip"), ("-m", "pip3")):
        return "install" in seg.args or "download" in seg.args
    if base == "rsync":
        return any(":" in a and not a.startswith("-") for a in seg.args)
    if base == "git":
        return _git_wants_network(seg.args)
    subs = _NETWORK_SUBCOMMANDS.get(base)
    if subs is None:
        return False
    if base in _NO_SUBCOMMAND_NEEDED:
        return True
    first = next((a for a in seg.args if not a.startswith("-")), "")
    return first in subs


def _git_wants_network(args: tuple[str, ...]) -> bool:
    """Whether a git command line goes to a remote: its subcommand (after git's own
    options, ``-C DIR`` and ``-c NAME=VALUE`` included) is one that does. ``git remote
    -v``, ``git status``, ``git log`` and the like are local and run contained."""
    words = list(args)
    while words and words[0].startswith("-"):
        option = words.pop(0)
        if option in _GIT_VALUE_OPTIONS and words:
            words.pop(0)
    if not words:
        return False
    sub, rest = words[0], words[1:]
    if sub in _NETWORK_SUBCOMMANDS["git"]:
        return True
    action = next((a for a in rest if not a.startswith("-")), "")
    if sub == "remote":
        if action == "show":
            return "-n" not in rest
        if action == "add":
            return "-f" in rest or "--fetch" in rest
        if action == "set-head":
            return "-a" in rest or "--auto" in rest
        return action in _GIT_REMOTE_NETWORK
    if sub == "submodule":
        return action in _GIT_SUBMODULE_NETWORK
    if sub == "archive":
        return any(a == "--remote" or a.startswith("--remote=") for a in rest)
    return False


def _outside(path: str, sandbox: Sandbox) -> Path | None:
    """The real path when ``path`` is a literal path outside the workspace needing a grant."""
    if not path or any(ch in path for ch in "$`*?[") or "\x00" in path:
        return None
    if "://" in path or (":" in path and not path.startswith(("/", "~", "."))):
        return None
    expanded = os.path.expanduser(path)
    if not os.path.isabs(expanded):
        if not expanded.startswith(".."):
            return None
        expanded = os.path.join(os.path.realpath(sandbox.cwd), expanded)
    real = Path(os.path.realpath(os.path.normpath(expanded)))
    if sandbox.contains(str(real)) or _never_granted(real):
        return None
    if any(real == Path(d) or real.is_relative_to(d) for d in (*SYSTEM_READ_DIRS, *_INSIDE_ANYWAY)):
        return None
    if any(real == Path(d) or real.is_relative_to(d) for d in _PRIVATE_TMP) and \
            (real in (Path(d) for d in _PRIVATE_TMP) or not os.path.lexists(real)):
        return None
    return real


def _never_granted(real: Path) -> bool:
    """Paths no approval opens: secrets, the home folder itself or above it, ``/``."""
    home = Path(os.path.realpath(os.path.expanduser("~")))
    if real == Path("/") or home.is_relative_to(real):
        return True
    return secret_path_reason(str(real)) is not None


def needed_grants(parsed: ParsedCommand, sandbox: Sandbox) -> Grants:
    """Network and outside paths that ``parsed`` appears to use (best effort)."""
    network = False
    reads: list[str] = []
    writes: list[str] = []
    for seg in parsed.segments:
        network = network or _wants_network(seg)
        targets = {t for t in write_targets(seg)}
        targets.update(r.target for r in seg.redirects if r.writes_file)
        for name in path_arguments(seg) + sorted(targets):
            real = _outside(name, sandbox)
            if real is None:
                continue
            if name in targets:
                folder = real if real.is_dir() else real.parent
                writes.append(str(folder))
            else:
                reads.append(str(real))
    writes = list(dict.fromkeys(writes))
    reads = [r for r in dict.fromkeys(reads) if r not in writes]
    return Grants(network=network, read=tuple(reads), write=tuple(writes))
