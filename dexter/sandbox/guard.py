"""Before and after every sandboxed command: what the sandbox binds is opened without
following a link, and afterwards nothing protected may have been created, renamed or
replaced.

Before (:func:`prepare`): every folder the sandbox binds (the workspace, granted folders,
each protected path and the folders between it and its writable root) is opened one path
component at a time with ``O_PATH | O_NOFOLLOW``; the runner binds the open descriptor
(``bwrap --bind-fd``, which closes it once mounted, so the command never holds it), and
what is mounted is what was checked, not what a path names a moment later. A protected path that is a link, or has one on its way from the workspace,
is refused with a message saying which link and what to do: it is never bound.
``DEXTER_HOME`` and the scratchpads folder are made first when missing, so they can be
mounted and no command can create them.

After (:func:`after`): each protected path is looked at again without following links. A
link on the way to one, one that exists now but did not, one that is another file than
before, and a ``.git`` that appeared anywhere in the writable folders, is moved into
``DEXTER_HOME/quarantine/<time>/`` (where no command can reach it) and reported: as a
``sandbox_alert`` event and in the result the model reads.

:func:`workspace_lock` keeps two dexter processes from running sandboxed commands in one
workspace at the same time: the check before a command and its mounts must not race with
another command's writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import os
import secrets
import shutil
import stat
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

from dexter.sandbox.policy import Protected, SandboxPolicy
from dexter.sandbox.scan import scanner

_O_PATH = getattr(os, "O_PATH", 0)
LOCK_POLL_SECONDS = 0.05


class ProtectionRefused(Exception):
    """A protected path cannot be protected (a link is in the way); the message says why
    and what to do."""


class _Link(Exception):
    def __init__(self, path: Path, target: str) -> None:
        super().__init__(str(path))
        self.path = path
        self.target = target


def _identity(st: os.stat_result) -> tuple[int, int, int]:
    return st.st_dev, st.st_ino, stat.S_IFMT(st.st_mode)


def open_nofollow(path: Path) -> int:
    """An ``O_PATH`` descriptor of ``path``, opened from ``/`` one component at a time,
    following no link. Raises :class:`_Link` naming the first link, ``OSError`` when a
    component is missing."""
    fd = os.open("/", _O_PATH | os.O_DIRECTORY)
    done = Path("/")
    try:
        for part in path.parts[1:]:
            nxt = os.open(part, _O_PATH | os.O_NOFOLLOW, dir_fd=fd)
            done = done / part
            if stat.S_ISLNK(os.fstat(nxt).st_mode):
                os.close(nxt)
                raise _Link(done, _readlink(part, fd))
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def _readlink(name: str, dir_fd: int) -> str:
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError:
        return "?"


def first_link(path: Path, root: Path) -> tuple[Path, str] | None:
    """The first symbolic link on the way from ``root`` (exclusive) to ``path``
    (inclusive), with its target; None when there is none (missing parts end the walk)."""
    current = root
    for part in path.relative_to(root).parts:
        current = current / part
        try:
            st = os.lstat(current)
        except OSError:
            return None
        if stat.S_ISLNK(st.st_mode):
            try:
                return current, os.readlink(current)
            except OSError:
                return current, "?"
        if not stat.S_ISDIR(st.st_mode):
            return None
    return None


@dataclass
class _Watch:
    protected: Protected
    identity: tuple[int, int, int] | None


@dataclass
class Prepared:
    """What :func:`prepare` opened and noted for one command."""

    sources: dict[Path, int] = field(default_factory=dict)
    """Descriptors of what is bound, by path (the runner binds a duplicate of each with
    ``bwrap --bind-fd``, which closes it once mounted: the command never holds one)."""
    keep: tuple[Path, ...] = ()
    """Folders between a writable root and a protected path: bound over themselves, so
    renaming them is refused."""
    read_only: tuple[Path, ...] = ()
    """Protected paths bound read-only over themselves, shallowest first."""
    hidden: tuple[Path, ...] = ()
    """Protected folders covered by an empty read-only folder."""
    watches: tuple[_Watch, ...] = ()
    git_before: frozenset[Path] = frozenset()
    created: tuple[str, ...] = ()
    """Folders dexter made before the command (``DEXTER_HOME``, the scratchpads)."""

    def close(self) -> None:
        for fd in self.sources.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self.sources.clear()


def _refusal(item: Protected, link: Path, target: str, workspace: Path) -> ProtectionRefused:
    shown = _display(link, workspace)
    return ProtectionRefused(
        f"{_display(item.path, workspace)} ({item.what}) cannot be protected: {shown} is a "
        f"symbolic link (to {target}), and a link there would let the command reach where it "
        f"points. dexter never binds a protected path through a link. Replace the link by a "
        f"real folder or file (for example: rm {shown!r}), then ask again")


def prepare(policy: SandboxPolicy) -> Prepared:
    """Open the bind sources and note the protected paths before a command; raises
    :class:`ProtectionRefused` (nothing is left open) when a link is in the way."""
    prepared = Prepared()
    try:
        _prepare(policy, prepared)
    except BaseException:
        prepared.close()
        raise
    return prepared


def _prepare(policy: SandboxPolicy, prepared: Prepared) -> None:
    created = []
    for item in policy.protected:
        if item.mode in ("hidden", "read-only") and not os.path.lexists(item.path) \
                and first_link(item.path.parent, item.root) is None:
            # dexter's own folders: made now, so they are mounted and cannot be pre-created
            with contextlib.suppress(OSError):
                os.makedirs(item.path, mode=0o700, exist_ok=True)
                created.append(str(item.path))
    prepared.created = tuple(created)
    for root in (*policy.writable_roots, *policy.extra_read):
        try:
            prepared.sources[root] = open_nofollow(root)
        except _Link as moved:
            raise ProtectionRefused(
                f"{root} changed into a path through a symbolic link ({moved.path} -> "
                f"{moved.target}) while the command was being prepared; ask again") from None
        except OSError:
            continue  # gone: not bound
    keep: dict[Path, None] = {}
    watches = []
    bound: list[Protected] = []
    for item in policy.protected:
        link = first_link(item.path, item.root)
        if link is not None:
            raise _refusal(item, link[0], link[1], policy.workspace)
        try:
            st = os.lstat(item.path)
        except OSError:
            watches.append(_Watch(item, None))
            continue
        watches.append(_Watch(item, _identity(st)))
        if item.mode == "absent":
            continue  # created since the policy was built: watched, not bound
        if any(item.path.is_relative_to(b.path) for b in bound):
            continue  # inside a protected folder already bound: covered by it
        bound.append(item)
        try:
            prepared.sources[item.path] = open_nofollow(item.path)
        except _Link as found:
            raise _refusal(item, found.path, found.target, policy.workspace) from None
        for parent in reversed(item.path.parents):
            if parent.is_relative_to(item.root) and parent != item.root:
                keep.setdefault(parent, None)
    for folder in keep:
        if folder not in prepared.sources:
            with contextlib.suppress(OSError, _Link):
                prepared.sources[folder] = open_nofollow(folder)
    for path in policy.reveal:
        with contextlib.suppress(OSError, _Link):
            prepared.sources[path] = open_nofollow(path)
    prepared.keep = tuple(p for p in keep if p in prepared.sources
                          and not any(p.is_relative_to(b.path) for b in bound))
    prepared.read_only = tuple(b.path for b in bound if b.mode == "read-only")
    prepared.hidden = tuple(b.path for b in bound if b.mode == "hidden")
    prepared.watches = tuple(watches)
    prepared.git_before = frozenset(policy.git_entries)


def after(prepared: Prepared, policy: SandboxPolicy, quarantine: Path) -> list[str]:
    """Check the protected paths after a command; move what must not be there into
    ``quarantine`` and return one sentence per finding (empty: nothing happened)."""
    box = quarantine / f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"
    findings: list[str] = []
    handled: set[Path] = set()
    ws = policy.workspace
    for watch in prepared.watches:
        item = watch.protected
        link = first_link(item.path, item.root)
        if link is not None:
            moved = _quarantine(link[0], item.root, box, ws)
            where = "" if link[0] == item.path else \
                f" on the way to {_display(item.path, ws)}"
            findings.append(f"the command made {_display(link[0], ws)} a symbolic link to "
                            f"{link[1]}{where} ({item.what}); {moved}")
            handled.add(link[0])
            continue
        try:
            now: tuple[int, int, int] | None = _identity(os.lstat(item.path))
        except OSError:
            now = None
        if now == watch.identity:
            continue
        handled.add(item.path)
        if watch.identity is None:
            moved = _quarantine(item.path, item.root, box, ws)
            findings.append(f"the command created {_display(item.path, ws)} ({item.what}), "
                            f"which must not be made by a command; {moved}")
        elif now is None:
            findings.append(f"{_display(item.path, ws)} ({item.what}) is gone after the "
                            "command; it could not be put back")
        else:
            moved = _quarantine(item.path, item.root, box, ws)
            findings.append(f"the command replaced {_display(item.path, ws)} ({item.what}); "
                            f"{moved}")
    skip = [policy.dexter_home] if policy.dexter_home is not None else []
    found = scanner().scan(policy.writable_roots, skip=skip)
    for entry in found.git_entries:
        if entry in prepared.git_before or entry in handled:
            continue
        root = next(r for r in policy.writable_roots if entry.is_relative_to(r))
        moved = _quarantine(entry, root, box, ws)
        findings.append(f"the command created {_display(entry, ws)} (a repository's .git, "
                        f"whose config and hooks git would run later); {moved}")
    return findings


def _quarantine(path: Path, root: Path, box: Path, workspace: Path) -> str:
    """Move ``path`` (not following it) out of every command's reach; say where it went."""
    rel = path.relative_to(root)
    target = box / (rel if root == workspace else Path(root.name) / rel)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        os.rename(path, target)
        return f"dexter moved it to {target}"
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return "it is gone again"
    aside = path.with_name(f"{path.name}.dexter-quarantine-{box.name}")
    try:
        os.rename(path, aside)
        return f"dexter renamed it to {_display(aside, workspace)}"
    except OSError:
        pass
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
        return "dexter removed it (it could not be moved)"
    except OSError as exc:
        return f"dexter could not move or remove it ({exc.strerror}): remove it yourself"


def _display(path: Path, workspace: Path) -> str:
    if path.is_relative_to(workspace) and path != workspace:
        return str(path.relative_to(workspace))
    return str(path)


@contextlib.asynccontextmanager
async def workspace_lock(workspace: Path,
                         waiting: Callable[[], None] | None = None) -> AsyncIterator[None]:
    """Hold an exclusive lock on the workspace folder while a command is prepared, runs and
    is checked (``waiting`` is called once when another dexter holds it)."""
    try:
        fd = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        yield
        return
    try:
        told = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not told and waiting is not None:
                    waiting()
                told = True
                await asyncio.sleep(LOCK_POLL_SECONDS)
        yield
    finally:
        os.close(fd)
