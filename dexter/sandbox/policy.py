"""What one sandboxed shell command may see and do.

A :class:`SandboxPolicy` is plain data: the workspace (read-write), the folders inside it
that stay read-only (``.git/config``, ``.git/hooks``, dexter's settings and records), what
is hidden (``DEXTER_HOME``, secret files), extra read or write paths, whether the network is
on, the child's environment and its resource limits. :func:`build_policy` derives it from
the settings, the working directory and the :class:`Grants` of the command's approval.
Runners (:mod:`dexter.sandbox.runner`) turn a policy into an ``argv``.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from dexter.sandbox.paths import SECRET_DIR_PATHS, secret_component_reason

if TYPE_CHECKING:
    from dexter.config import Settings

# Folders of the host that every command may read (never write). /etc is masked below.
SYSTEM_READ_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc",
                    "/opt", "/nix/store", "/gnu/store", "/run/current-system",
                    "/System", "/Library", "/Applications", "/private/etc", "/private/var/db/timezone")
# Files and folders under /etc that hold credentials; replaced by empty ones inside.
ETC_SECRETS = ("/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-",
               "/etc/security/opasswd", "/etc/ssl/private", "/etc/krb5.keytab",
               "/etc/NetworkManager/system-connections", "/etc/wireguard", "/etc/sudoers",
               "/etc/sudoers.d", "/etc/master.passwd")
# The environment a command gets: these names (and LC_*), never dexter's whole environment.
ENV_ALLOWLIST = ("PATH", "LANG", "LANGUAGE", "TERM", "TZ", "USER", "LOGNAME", "COLUMNS",
                 "LINES", "NO_COLOR", "PYTHONIOENCODING")
# Folders not worth scanning for secret files (large, and never holding the user's keys).
_SCAN_SKIP = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache",
                        ".ruff_cache", ".pytest_cache", ".tox", "site-packages", "dist", "build"})
SCAN_DEPTH = 3
SCAN_MAX_ENTRIES = 5_000
# Folders of DEXTER_HOME a command may read: the spilled tool results it is pointed to.
HOME_READABLE = ("tool-results",)


class SandboxPolicyError(Exception):
    """The workspace cannot be contained (for example it is ``/``); the message says why."""


@dataclass(frozen=True, slots=True)
class Grants:
    """What an approval adds to the default policy for one command."""

    network: bool = False
    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return self.network or bool(self.read) or bool(self.write)

    def describe(self) -> str:
        """A short phrase for approval dialogs: 'network, read /data'."""
        parts = ["network"] if self.network else []
        if self.read:
            parts.append("read " + ", ".join(self.read))
        if self.write:
            parts.append("write " + ", ".join(self.write))
        return "; ".join(parts) or "nothing extra"

    def merged(self, other: Grants) -> Grants:
        """Both grants together."""
        return Grants(self.network or other.network,
                      tuple(dict.fromkeys((*self.read, *other.read))),
                      tuple(dict.fromkeys((*self.write, *other.write))))


@dataclass(frozen=True, slots=True)
class Limits:
    """Resource limits of one command (0 means no limit)."""

    memory_bytes: int = 4096 * 1024 * 1024
    max_processes: int = 512
    max_file_bytes: int = 2048 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class SandboxPolicy:
    """Everything a runner needs to contain one command."""

    workspace: Path
    home: Path
    read_only_inside: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()
    reveal: tuple[Path, ...] = ()
    extra_read: tuple[Path, ...] = ()
    extra_write: tuple[Path, ...] = ()
    masked_files: tuple[Path, ...] = ()
    masked_dirs: tuple[Path, ...] = ()
    network: bool = False
    env: Mapping[str, str] = field(default_factory=dict)
    limits: Limits = field(default_factory=Limits)

    def summary(self) -> str:
        """One line for results and status output."""
        net = "network on" if self.network else "no network"
        more = f", {', '.join(str(p) for p in self.extra_write)}" if self.extra_write else ""
        return (f"sandboxed: {net}; writable: the workspace{more} and a private /tmp; "
                "HOME is empty and private; paths outside the workspace are not visible")


def child_environment(names: Iterable[str] = (), home: str | None = None,
                      source: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a shell command: an allowlist, never "everything minus secrets".

    ``names`` are extra variables the user listed in ``[bash] env``; ``home`` replaces
    ``HOME`` (the sandbox's private one).
    """
    source = os.environ if source is None else source
    wanted = set(ENV_ALLOWLIST) | {n.strip() for n in names if n.strip()}
    env = {k: v for k, v in source.items() if k in wanted or k.startswith("LC_")}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env["HOME"] = home if home is not None else source.get("HOME", "/")
    env["TMPDIR"] = "/tmp"
    return env


def build_policy(settings: Settings, cwd: Path, grants: Grants | None = None,
                 *, source_env: Mapping[str, str] | None = None) -> SandboxPolicy:
    """The policy for one command run from ``cwd`` with ``grants``.

    Raises :class:`SandboxPolicyError` when the workspace is ``/`` (containing it would mean
    nothing). A home folder inside the workspace is covered by the private one.
    """
    source_env = os.environ if source_env is None else source_env
    grants = grants or Grants()
    workspace = Path(os.path.realpath(cwd))
    user_home = Path(os.path.realpath(source_env.get("HOME") or os.path.expanduser("~")))
    if workspace == Path("/"):
        raise SandboxPolicyError(
            "the working directory is /, the whole system; start dexter in a project folder "
            "so the sandbox has a workspace to contain")
    home = settings.home_path
    bash = settings.bash
    tool_roots = [*_tool_roots(source_env, user_home), *_python_roots()]
    chosen = [*_paths(bash.allow_read, workspace), *_paths(grants.read, workspace)]
    extra_read = [*tool_roots, *chosen]
    extra_write = [*_paths(bash.allow_write, workspace), *_paths(grants.write, workspace)]
    mounted = [workspace, *extra_read, *extra_write]
    writable = [workspace, *extra_write]
    inside = [workspace / ".git" / "config", workspace / ".git" / "hooks",
              home / "settings.json", workspace / ".dexter" / "settings.json",
              settings.scratchpad_path]
    hidden = [home] if _under(home, mounted) else []
    reveal = [home / name for name in HOME_READABLE]
    files, dirs = secret_entries([workspace, *chosen, *extra_write])
    static_files, static_dirs = _tool_root_secrets(tuple(tool_roots))
    files, dirs = [*files, *static_files], [*dirs, *static_dirs]
    return SandboxPolicy(
        workspace=workspace, home=user_home,
        read_only_inside=tuple(p for p in dict.fromkeys(inside)
                               if _exists(p) and _under(p, writable)),
        hidden=tuple(hidden), reveal=tuple(p for p in reveal if p.is_dir()),
        extra_read=_unique(extra_read), extra_write=_unique(extra_write),
        masked_files=tuple(files), masked_dirs=tuple(dirs),
        network=bash.network or grants.network,
        env=child_environment(bash.env, home=str(user_home), source=source_env),
        limits=Limits(memory_bytes=bash.memory_mb * 1024 * 1024,
                      max_processes=bash.max_processes,
                      max_file_bytes=bash.max_file_mb * 1024 * 1024),
    )


def secret_entries(roots: Iterable[Path]) -> tuple[list[Path], list[Path]]:
    """Secret files and folders found in the top levels of ``roots`` (to be masked).

    Bounded: :data:`SCAN_DEPTH` levels and :data:`SCAN_MAX_ENTRIES` entries in all; large
    tool folders are skipped. The scrubber still removes known secret values from output.
    """
    files: list[Path] = []
    dirs: list[Path] = []
    budget = SCAN_MAX_ENTRIES
    stack = [(Path(r), 0) for r in roots if Path(r).is_dir()]
    seen: set[Path] = set()
    while stack and budget > 0:
        folder, depth = stack.pop()
        if folder in seen:
            continue
        seen.add(folder)
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            budget -= 1
            path = Path(entry.path)
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            pair = f"{folder.name}/{entry.name}".casefold()
            if secret_component_reason(entry.name) or pair in SECRET_DIR_PATHS:
                (dirs if is_dir else files).append(path)
            elif is_dir and depth + 1 < SCAN_DEPTH and entry.name not in _SCAN_SKIP:
                stack.append((path, depth + 1))
    return files, dirs


@functools.lru_cache(maxsize=16)
def _tool_root_secrets(roots: tuple[Path, ...]) -> tuple[list[Path], list[Path]]:
    """Secret files in the program folders (``~/.cargo/credentials.toml``...), scanned once
    per process: they are installations, not the user's working files."""
    return secret_entries(roots)


def _exists(path: Path) -> bool:
    return os.path.lexists(path)


def _unique(paths: Iterable[Path]) -> tuple[Path, ...]:
    return tuple(dict.fromkeys(p for p in paths if p.exists()))


def _under(path: Path, roots: Iterable[Path]) -> bool:
    return any(path.is_relative_to(root) for root in roots)


def _paths(values: Iterable[str], cwd: Path) -> list[Path]:
    out = []
    for value in values:
        path = Path(os.path.expanduser(value.strip()))
        if value.strip():
            out.append(Path(os.path.realpath(path if path.is_absolute() else cwd / path)))
    return out


def _tool_roots(env: Mapping[str, str], user_home: Path) -> list[Path]:
    """Folders of programs on ``PATH`` that live in the home folder (``~/.pyenv``...).

    The private HOME would hide them; each is exposed read-only as its top folder under
    the home (a version manager needs more than its ``bin``), except shared folders such
    as ``~/.local`` and ``~/.config`` (only the entry itself) and secret folders (never).
    """
    roots: list[Path] = []
    for entry in env.get("PATH", "").split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue
        real = Path(os.path.realpath(entry))
        if not real.is_relative_to(user_home) or real == user_home:
            continue
        top = user_home / real.relative_to(user_home).parts[0]
        if secret_component_reason(top.name):
            continue
        roots.append(real if top.name in {".local", ".config", "bin"} else top)
        if top.name == ".local":
            roots.append(top / "lib")
    return roots


def _python_roots() -> list[Path]:
    """The Python installation dexter runs on, so ``python3`` works inside."""
    return [Path(os.path.realpath(p)) for p in {sys.base_prefix, sys.prefix}
            if not any(Path(p).is_relative_to(d) for d in ("/usr", "/opt"))]
