"""A control group per sandboxed command: the process limit and the memory limit that
rlimits cannot give.

``RLIMIT_NPROC`` does not bind a process whose user is the host's root, even inside a
user namespace (the kernel exempts the root user), and ``RLIMIT_DATA`` does not count
shared memory or tmpfs pages (``/dev/shm``, ``memfd``, SysV segments). A cgroup's
``pids`` and ``memory`` controllers count all of it, whoever runs it.

:class:`CgroupPool` keeps a few cgroups under dexter's own (``dexter-<pid>-<n>``, one per
command running at once), sets the limits before each command and removes them when
dexter exits; leftovers of a dexter that died are removed by the next one. A command joins
its cgroup through a one-line ``/bin/sh`` wrapper that writes its pid to ``cgroup.procs``
and execs ``bwrap`` (so ``bwrap`` and everything it starts are inside, and dexter is not): once, for a helper
that then starts every command of that cgroup (:mod:`dexter.sandbox.spawner`), since
moving a process into a cgroup costs an RCU grace period.
cgroup v1 (a hierarchy per controller, as on this project's machines) and v2 (the unified
hierarchy; only its root, where the no-internal-processes rule does not apply) are
supported. Where neither can be written (dexter is not root and nothing was delegated),
:func:`cgroup_pool` returns None with the reason, and the limits fall back to rlimits.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dexter.sandbox.spawner import Spawner

ROOT = Path("/sys/fs/cgroup")
PREFIX = "dexter-"
# Processes a command needs beyond its own: the spawner helper, bwrap and bwrap's init.
OVERHEAD_PROCESSES = 3


@dataclass(frozen=True, slots=True)
class Cgroup:
    """One command's cgroup: a folder per controller (v1) or one folder (v2)."""

    pids: Path
    memory: Path
    v2: bool

    @property
    def procs_files(self) -> tuple[Path, ...]:
        """The ``cgroup.procs`` files a process writes its pid to, to join."""
        return tuple(dict.fromkeys((self.pids / "cgroup.procs", self.memory / "cgroup.procs")))

    def configure(self, max_processes: int, memory_bytes: int) -> None:
        """Set the limits for the next command (0: none)."""
        pids = str(max_processes + OVERHEAD_PROCESSES) if max_processes else "max"
        _write(self.pids / "pids.max", pids)
        if self.v2:
            _write(self.memory / "memory.max", str(memory_bytes) if memory_bytes else "max")
            with contextlib.suppress(OSError):
                _write(self.memory / "memory.swap.max", "0")
            return
        limit = str(memory_bytes) if memory_bytes else "-1"
        memsw = self.memory / "memory.memsw.limit_in_bytes"
        # memsw must stay >= the memory limit: raise it first, lower it last
        with contextlib.suppress(OSError):
            _write(memsw, "-1")
        _write(self.memory / "memory.limit_in_bytes", limit)
        with contextlib.suppress(OSError):
            if memsw.exists():
                _write(memsw, limit)

    def oom_kills(self) -> int:
        """How many processes the kernel killed here for going over the memory limit."""
        name = "memory.events" if self.v2 else "memory.oom_control"
        try:
            text = (self.memory / name).read_text()
        except OSError:
            return 0
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return int(value)
        return 0

    def leftover(self) -> list[int]:
        """Processes still inside (none once a command's PID namespace is gone)."""
        pids: list[int] = []
        for path in self.procs_files:
            with contextlib.suppress(OSError):
                pids += [int(p) for p in path.read_text().split()]
        return pids

    def remove(self) -> None:
        for folder in dict.fromkeys((self.pids, self.memory)):
            with contextlib.suppress(OSError):
                folder.rmdir()


def _write(path: Path, value: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


class CgroupPool:
    """Cgroups made once and reused, one per command running at the same time."""

    def __init__(self, pids_parent: Path, memory_parent: Path, v2: bool) -> None:
        self.pids_parent = pids_parent
        self.memory_parent = memory_parent
        self.v2 = v2
        self._free: list[Cgroup] = []
        self._all: list[Cgroup] = []
        self._count = 0
        self._lock = threading.Lock()
        self._limits: dict[Cgroup, tuple[int, int]] = {}  # set once, rewritten on change
        self._spawners: dict[Cgroup, Spawner] = {}

    def _make(self) -> Cgroup:
        with self._lock:
            self._count += 1
            name = f"{PREFIX}{os.getpid()}-{self._count}"
        group = Cgroup(self.pids_parent / name, self.memory_parent / name, self.v2)
        for folder in dict.fromkeys((group.pids, group.memory)):
            folder.mkdir(exist_ok=True)
        self._all.append(group)
        return group

    @contextlib.contextmanager
    def acquire(self, max_processes: int, memory_bytes: int) -> Iterator[Cgroup]:
        """A configured cgroup for one command; it goes back to the pool afterwards."""
        with self._lock:
            group = self._free.pop() if self._free else None
        if group is None:
            group = self._make()
        if self._limits.get(group) != (max_processes, memory_bytes):
            try:
                group.configure(max_processes, memory_bytes)
            except OSError:
                group.remove()
                raise
            self._limits[group] = (max_processes, memory_bytes)
        try:
            yield group
        finally:
            helper = self._spawners.get(group)
            for pid in group.leftover():
                if helper is None or pid != helper.pid:
                    with contextlib.suppress(OSError):
                        os.kill(pid, 9)
            with self._lock:
                self._free.append(group)

    def spawner(self, group: Cgroup) -> Spawner:
        """The helper that starts commands inside ``group`` (started on first use: the one
        time a process is moved into it)."""
        from dexter.sandbox.spawner import Spawner

        helper = self._spawners.get(group)
        if helper is None or not helper.alive:
            helper = Spawner(join_argv(group, []))
            self._spawners[group] = helper
        return helper

    def close(self) -> None:
        """Stop the helpers and remove every cgroup of this process (at exit)."""
        for helper in self._spawners.values():
            helper.close()
        self._spawners.clear()
        for group in self._all:
            group.remove()
        self._all.clear()
        self._free.clear()


def _own_path(controller: str) -> str | None:
    """This process's cgroup for ``controller`` (v1), or its v2 path (``controller=''``)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        wanted = controller in controllers.split(",") if controller else controllers == ""
        if wanted:
            return path
    return None


def _remove_stale(parent: Path) -> None:
    """Remove cgroups left by a dexter that is gone (empty ones only; the kernel refuses others)."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(parent):
            if not entry.name.startswith(PREFIX) or not entry.is_dir(follow_symlinks=False):
                continue
            owner = entry.name[len(PREFIX):].split("-", 1)[0]
            if owner.isdigit() and not Path(f"/proc/{owner}").exists():
                with contextlib.suppress(OSError):
                    os.rmdir(entry.path)


@dataclass(frozen=True, slots=True)
class PoolStatus:
    """The pool, or why there is none."""

    pool: CgroupPool | None
    problem: str = ""


@functools.lru_cache(maxsize=1)
def cgroup_pool() -> PoolStatus:
    """The process's pool of command cgroups, made on first use; None with the reason when
    this machine gives dexter no cgroup it can write."""
    if not (ROOT / "cgroup.controllers").exists() and not (ROOT / "pids").is_dir():
        return PoolStatus(None, "no cgroup file system is mounted at /sys/fs/cgroup")
    if (ROOT / "cgroup.controllers").exists():
        parents = (ROOT, ROOT)
        v2 = True
        try:
            enabled = (ROOT / "cgroup.subtree_control").read_text().split()
            missing = [c for c in ("pids", "memory") if c not in enabled]
            if missing:
                _write(ROOT / "cgroup.subtree_control", " ".join(f"+{c}" for c in missing))
        except OSError as exc:
            return PoolStatus(None, _why(exc, ROOT))
    else:
        own_pids, own_memory = _own_path("pids"), _own_path("memory")
        if own_pids is None or own_memory is None or not (ROOT / "memory").is_dir():
            return PoolStatus(None, "the pids and memory cgroup controllers are not both mounted")
        parents = (ROOT / "pids" / own_pids.lstrip("/"), ROOT / "memory" / own_memory.lstrip("/"))
        v2 = False
    for parent in dict.fromkeys(parents):
        _remove_stale(parent)
    pool = CgroupPool(parents[0], parents[1], v2)
    try:
        with pool.acquire(16, 64 * 1024 * 1024):
            pass
    except OSError as exc:
        pool.close()
        return PoolStatus(None, _why(exc, parents[0]))
    atexit.register(pool.close)
    return PoolStatus(pool)


def _why(exc: OSError, where: Path) -> str:
    if exc.errno in (1, 13, 30):  # EPERM, EACCES, EROFS
        return (f"dexter may not create cgroups under {where} ({exc.strerror}); run dexter as "
                "root or give it a delegated cgroup")
    return f"cannot create a cgroup under {where}: {exc.strerror or exc}"


def join_argv(group: Cgroup, argv: list[str]) -> list[str]:
    """``argv`` started through a ``/bin/sh`` that first moves itself into ``group``."""
    files = [str(p) for p in group.procs_files]
    script = " && ".join(f'echo $$ > "${i + 1}"' for i in range(len(files)))
    return ["/bin/sh", "-c", f'{script} && shift {len(files)} && exec "$@"', "sh", *files, *argv]
