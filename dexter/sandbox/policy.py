"""What one sandboxed shell command may see and do.

A :class:`SandboxPolicy` is plain data: the workspace (read-write), what in the folders a
command may write stays out of its reach (:class:`Protected`: every repository's ``.git``,
``DEXTER_HOME``, the scratchpads, the files dexter reads its configuration from, and the
places where such a thing does not exist yet and must not be created), what is masked
(secret-named files and folders at any depth), extra read or write paths, whether the
network is on, the child's environment and its resource limits. :func:`build_policy`
derives it from the settings, the working directory and the :class:`Grants` of the
command's approval. :mod:`dexter.sandbox.guard` opens what it names without following
links and checks after the command that nothing protected changed; runners
(:mod:`dexter.sandbox.runner`) turn it into an ``argv``.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from dexter.sandbox.paths import secret_component_reason
from dexter.sandbox.scan import ScanResult, only_certificates, scanner

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
TOOL_ROOT_DEPTH = 3
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
    tmp_bytes: int = 1024 * 1024 * 1024


ProtectMode = Literal["read-only", "hidden", "absent"]


@dataclass(frozen=True, slots=True)
class Protected:
    """A path in a folder the command may write that the command must not change.

    ``read-only``: bound read-only over itself (it cannot be written, renamed, removed or
    replaced, and the folders above it up to ``root`` cannot be renamed either);
    ``hidden``: an empty read-only folder over it (``DEXTER_HOME``, made first when missing);
    ``absent``: it does not exist and the command must not create it (checked after the
    command and rolled back). ``what`` names it for messages.
    """

    path: Path
    what: str
    mode: ProtectMode
    root: Path


@dataclass(frozen=True, slots=True)
class SandboxPolicy:
    """Everything a runner needs to contain one command."""

    workspace: Path
    home: Path
    dexter_home: Path | None = None
    """``DEXTER_HOME`` when a command could reach it (it is then hidden); None otherwise."""
    protected: tuple[Protected, ...] = ()
    reveal: tuple[Path, ...] = ()
    extra_read: tuple[Path, ...] = ()
    extra_write: tuple[Path, ...] = ()
    masked_files: tuple[Path, ...] = ()
    masked_dirs: tuple[Path, ...] = ()
    network: bool = False
    env: Mapping[str, str] = field(default_factory=dict)
    limits: Limits = field(default_factory=Limits)
    git_entries: tuple[Path, ...] = ()
    """Every ``.git`` the scan found in the writable folders (to tell a new one after)."""

    @property
    def writable_roots(self) -> tuple[Path, ...]:
        """The folders the command may write: the workspace and the granted ones."""
        return (self.workspace, *self.extra_write)

    def protected_as(self, *modes: ProtectMode) -> tuple[Path, ...]:
        """The protected paths of the given modes."""
        return tuple(p.path for p in self.protected if p.mode in modes)

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
    nothing). A home folder inside the workspace is covered by the private one. The
    writable folders are scanned whole for secret names and repositories on every call
    (the scan caches unchanged folders).
    """
    source_env = os.environ if source_env is None else source_env
    grants = grants or Grants()
    workspace = Path(os.path.realpath(cwd))
    user_home = Path(os.path.realpath(source_env.get("HOME") or os.path.expanduser("~")))
    if workspace == Path("/"):
        raise SandboxPolicyError(
            "the working directory is /, the whole system; start dexter in a project folder "
            "so the sandbox has a workspace to contain")
    home = lexical(settings.home)
    bash = settings.bash
    tool_roots = [*_tool_roots(source_env, user_home), *_python_roots()]
    chosen = [*_paths(bash.allow_read, workspace), *_paths(grants.read, workspace)]
    extra_read = [*tool_roots, *chosen]
    extra_write = _unique([*_paths(bash.allow_write, workspace), *_paths(grants.write, workspace)])
    writable = (workspace, *extra_write)
    visible_home = _under(home, [workspace, *extra_read, *extra_write])
    found = scanner().scan([*writable, *chosen], skip=[home] if visible_home else [])
    static_files, static_dirs = _tool_root_secrets(tuple(tool_roots))
    return SandboxPolicy(
        workspace=workspace, home=user_home,
        dexter_home=home if visible_home else None,
        protected=protected_paths(settings, workspace, writable, found),
        reveal=tuple(home / name for name in HOME_READABLE) if visible_home else (),
        extra_read=_unique(extra_read), extra_write=extra_write,
        masked_files=tuple(p for p in dict.fromkeys((*found.secret_files, *static_files))
                           if not only_certificates(p)),
        masked_dirs=tuple(dict.fromkeys((*found.secret_dirs, *static_dirs))),
        network=bash.network or grants.network,
        env=child_environment(bash.env, home=str(user_home), source=source_env),
        limits=Limits(memory_bytes=bash.memory_mb * 1024 * 1024,
                      max_processes=bash.max_processes,
                      max_file_bytes=bash.max_file_mb * 1024 * 1024,
                      tmp_bytes=bash.tmp_mb * 1024 * 1024),
        git_entries=tuple(found.git_entries),
    )


def protected_paths(settings: Settings, workspace: Path, writable: tuple[Path, ...],
                    found: ScanResult) -> tuple[Protected, ...]:
    """What in the ``writable`` folders a command must not change or create, shallowest
    first.

    Every repository's ``.git`` (and, for a ``.git`` file, the folder its ``gitdir:``
    names; a git folder's ``commondir``; a hooks folder or included config file that the
    repository's config points to); each writable folder's own ``.git`` where there is
    none; ``DEXTER_HOME``; the scratchpads; the configuration files dexter reads at start
    (:func:`dexter.config.files_read_at_start`); dexter's own program (:func:`own_code`).
    """
    from dexter.config import files_read_at_start

    out: dict[Path, Protected] = {}

    def add(path: Path, what: str, mode: ProtectMode | None = None) -> None:
        path = Path(os.path.abspath(path))
        root = _root_of(path, writable)
        if root is None or path == root or path in out:
            return
        exists = os.path.lexists(path)
        out[path] = Protected(path, what, mode or ("read-only" if exists else "absent"), root)

    add(lexical(settings.home), "DEXTER_HOME (dexter's settings, memory and records)", "hidden")
    add(lexical(settings.scratchpad_dir), "the scratchpads folder (dexter's run records)",
        "read-only")
    for root in writable:
        add(root / ".git", "a repository's .git")
    for entry in found.git_entries:
        add(entry, "a repository's .git")
        for path, what in _git_links(entry):
            add(path, what)
    for path in files_read_at_start(settings, workspace):
        add(path, "dexter's configuration")
    for path in own_code():
        add(path, "dexter's own program (what its next start runs)", "read-only")
    return tuple(sorted(out.values(), key=lambda p: (len(p.path.parts), str(p.path))))


def _git_links(entry: Path) -> list[tuple[Path, str]]:
    """Paths a repository's ``.git`` leads git to: the ``gitdir:`` of a ``.git`` file, the
    ``commondir`` of a git folder, and the ``core.hooksPath`` and ``include.path`` values
    of its config (the hooks git runs and the config it reads)."""
    out: list[tuple[Path, str]] = []
    gitdirs = [entry]
    if os.path.isfile(entry) and not os.path.islink(entry):
        target = _first_line(entry, "gitdir:")
        if not target:
            return out
        gitdirs = [Path(os.path.normpath(entry.parent / target))]
        out.append((gitdirs[0], "the git folder a .git file points to"))
    common = _first_line(gitdirs[0] / "commondir", "")
    if common:
        gitdirs.append(Path(os.path.normpath(gitdirs[0] / common)))
        out.append((gitdirs[1], "a repository's common git folder"))
    for gitdir in gitdirs:
        for key, value in _config_paths(gitdir / "config"):
            path = Path(os.path.expanduser(value))
            base = entry.parent if key == "hookspath" else gitdir
            path = Path(os.path.normpath(path if path.is_absolute() else base / path))
            out.append((path, "a repository's hooks folder" if key == "hookspath"
                        else "a config file git includes"))
    return out


def _first_line(path: Path, prefix: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            line = handle.readline(4096).strip()
    except OSError:
        return ""
    return line[len(prefix):].strip() if line.startswith(prefix) else ""


def _config_paths(config: Path) -> list[tuple[str, str]]:
    """``core.hooksPath`` and every ``path`` of an ``[include]``/``[includeIf]`` section of a
    git config file (enough of git's format for these keys)."""
    try:
        text = config.read_text(encoding="utf-8", errors="replace")[:1_000_000]
    except OSError:
        return []
    section = ""
    out = []
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("[") and "]" in line:
            section = line[1:line.index("]")].strip().split(" ", 1)[0].split('"')[0].casefold()
            line = line[line.index("]") + 1:].strip()
        key, eq, value = line.partition("=")
        key = key.strip().casefold()
        value = value.split(" #")[0].split(" ;")[0].strip().strip('"')
        if not eq or not value:
            continue
        if section == "core" and key == "hookspath":
            out.append(("hookspath", value))
        elif section in ("include", "includeif") and key == "path":
            out.append(("include", value))
    return out


def lexical(value: str | Path) -> Path:
    """An absolute path for a setting's folder without following links (unlike
    ``Settings.home_path``): a link in the way must be seen, not resolved away."""
    return Path(os.path.abspath(os.path.expanduser(value)))


def _root_of(path: Path, roots: Iterable[Path]) -> Path | None:
    for root in roots:
        if path == root or path.is_relative_to(root):
            return root
    return None


@functools.lru_cache(maxsize=16)
def _tool_root_secrets(roots: tuple[Path, ...]) -> tuple[list[Path], list[Path]]:
    """Secret files in the program folders (``~/.cargo/credentials.toml``...), scanned once
    per process and :data:`TOOL_ROOT_DEPTH` levels deep: they are installations, read-only
    inside, so no command can move a secret into them."""
    found = scanner().scan(roots, max_depth=TOOL_ROOT_DEPTH)
    return found.secret_files, found.secret_dirs


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


@functools.lru_cache(maxsize=1)
def own_code() -> tuple[Path, ...]:
    """What dexter's next start runs outside the sandbox: its Python installation (the
    prefixes, with their ``site-packages`` and ``.pth`` files), every folder on its module
    path, and the ``dexter`` package itself (an editable install's source checkout). In a
    workspace (dexter started in its own checkout, as ``make run`` does) each is bound
    read-only, so no command can change the code dexter runs next."""
    import dexter

    folders = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(dexter.__file__),
               *(p for p in sys.path if p and os.path.isabs(p))}
    return tuple(sorted({Path(os.path.realpath(p)) for p in folders if os.path.isdir(p)}))


def _python_roots() -> list[Path]:
    """The Python installation dexter runs on, so ``python3`` works inside."""
    return [Path(os.path.realpath(p)) for p in {sys.base_prefix, sys.prefix}
            if not any(Path(p).is_relative_to(d) for d in ("/usr", "/opt"))]
