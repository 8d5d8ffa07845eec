"""Which folders changed since they were last read: Linux ``inotify``, for the scan.

:class:`FolderWatch` holds one inotify instance. :meth:`FolderWatch.add` puts a watch on a
folder (without following a link) *before* the scan reads it; :meth:`FolderWatch.changed`
reads the events queued since and returns the folders whose entries were created,
removed or renamed, or that were themselves moved, removed or unmounted. The kernel queues
an event inside the system call that makes the change, whoever makes it and through
whichever mount (a watch is on the inode, and a sandbox's bind mount shows the same
inode), so once a command's processes are gone, everything it did to a watched folder is
in the queue. A command can only add events, never remove one: at worst it fills the
queue, and an overflow says "anything may have changed" (:attr:`Changes.everything`).

Only folders on local file systems are trusted (:data:`LOCAL_FS`): on a network file
system another machine's changes queue no event. A quarter of the user's inotify watches
at most are taken (:func:`watch_cap`), so the user's editors keep theirs. Elsewhere
(macOS), past the cap and where the kernel refuses (no inotify, the limit reached),
:meth:`FolderWatch.add` returns False and the scan looks at that folder's times as before.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path

IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_UNMOUNT = 0x00002000
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = 0o2000000
MASK = (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF
        | IN_ONLYDIR | IN_DONT_FOLLOW)
_EVENT = struct.Struct("iIII")
MAX_WATCHES = 65_536

LOCAL_FS = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "tmpfs", "overlay",
                      "zfs", "jfs", "reiserfs", "bcachefs", "ramfs", "hfsplus", "apfs"})
"""File systems on which every change to a folder is made through this kernel (so it
queues an event): never a network or FUSE file system."""


@dataclass(slots=True)
class Changes:
    """What :meth:`FolderWatch.changed` found since the last call."""

    folders: set[str] = field(default_factory=set)
    everything: bool = False
    """The queue overflowed or the mounts changed: no folder can be trusted unread."""


class FolderWatch:
    """One inotify instance watching folders by path."""

    def __init__(self) -> None:
        self._fd = -1
        self.pid = os.getpid()
        """The process that made the instance (a forked child shares its queue: it must
        make its own, :meth:`dexter.sandbox.scan.TreeScanner.scan` does)."""
        self._paths: dict[int, set[str]] = {}
        self._wd: dict[str, int] = {}
        self._local: dict[int, bool] = {}
        self._mounts = ""
        self._cap = watch_cap()
        if sys.platform.startswith("linux"):
            with contextlib.suppress(OSError, AttributeError):
                libc = ctypes.CDLL(None, use_errno=True)
                self._add = libc.inotify_add_watch
                self._add.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32)
                fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
                if fd >= 0:
                    self._fd = fd
                    self._mounts = _mount_table()

    @property
    def active(self) -> bool:
        """Whether folders can be watched here at all."""
        return self._fd >= 0

    def local(self, dev: int) -> bool:
        """Whether device ``dev`` holds a local file system (:data:`LOCAL_FS`), on which a
        watch sees every change."""
        local = self._local.get(dev)
        if local is None:
            local = self._local[dev] = _fs_type(dev, self._mounts) in LOCAL_FS
        return local

    def add(self, path: str) -> bool:
        """Watch the folder now at ``path`` (not following a link); False when it is not
        watched (the kernel refused, or no inotify). Check :meth:`local` too before
        trusting the watch."""
        if self._fd < 0 or (len(self._paths) >= self._cap and path not in self._wd):
            return False
        # the folder now at ``path`` (the kernel gives an inode watched already its wd)
        wd = self._add(self._fd, os.fsencode(path), MASK)
        if wd < 0:
            self.forget(path)
            return False  # ENOSPC (the watch limit), ENOENT, ENOTDIR: read it each time
        old = self._wd.get(path)
        if old is not None and old != wd:
            self.forget(path)
        self._wd[path] = wd
        self._paths.setdefault(wd, set()).add(path)
        return True

    def changed(self) -> Changes:
        """The folders changed since the last call."""
        out = Changes()
        if self._fd < 0:
            out.everything = True
            return out
        while True:
            try:
                data = os.read(self._fd, 1 << 16)
            except BlockingIOError:
                break
            except OSError as exc:
                if exc.errno == errno.EINTR:
                    continue
                out.everything = True
                break
            if not data:
                break
            offset = 0
            while offset + _EVENT.size <= len(data):
                wd, mask, _, length = _EVENT.unpack_from(data, offset)
                offset += _EVENT.size + length
                if mask & IN_Q_OVERFLOW:
                    out.everything = True
                for path in self._paths.get(wd, ()):
                    out.folders.add(path)
                if mask & (IN_IGNORED | IN_MOVE_SELF | IN_DELETE_SELF | IN_UNMOUNT):
                    # the folder is no longer at its paths: nothing there is watched now
                    for path in self._paths.pop(wd, ()):
                        self._wd.pop(path, None)
        mounts = _mount_table()
        if mounts != self._mounts:
            self._mounts = mounts
            self._local.clear()
            out.everything = True
        return out

    def forget(self, path: str) -> None:
        """Stop mapping ``path`` to its watch (it is read again before it is trusted)."""
        wd = self._wd.pop(path, None)
        if wd is not None:
            paths = self._paths.get(wd)
            if paths is not None:
                paths.discard(path)

    def __del__(self) -> None:
        self.close()

    def close(self) -> None:
        if self._fd >= 0 and self.pid == os.getpid():
            with contextlib.suppress(OSError):
                os.close(self._fd)
        self._fd = -1
        self._paths.clear()
        self._wd.clear()


def watch_cap() -> int:
    """How many folders one scanner watches at most: a quarter of the user's inotify
    watches (``fs.inotify.max_user_watches``), and no more than :data:`MAX_WATCHES`."""
    try:
        limit = int(Path("/proc/sys/fs/inotify/max_user_watches").read_text())
    except (OSError, ValueError):
        limit = 8192
    return min(MAX_WATCHES, limit // 4)


def _mount_table() -> str:
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return ""


def _fs_type(dev: int, mounts: str) -> str:
    """The file system type of device ``dev`` from ``/proc/self/mountinfo`` ('' unknown,
    or when two mounts of it disagree)."""
    wanted = f"{os.major(dev)}:{os.minor(dev)}"
    types = set()
    for line in mounts.splitlines():
        parts = line.split(" ")
        if len(parts) > 2 and parts[2] == wanted and " - " in line:
            types.add(line.split(" - ", 1)[1].split(" ", 1)[0])
    return types.pop() if len(types) == 1 else ""
