"""The scan before (and after) every sandboxed command: what in the folders a command may
write must be masked or protected, at any depth and in any folder.

:class:`TreeScanner` walks the workspace (and the other folders a command may write or
was granted to read) without following links and finds

- secret-named files and folders (``.env``, ``*.pem``, ``credentials.json``, ``.ssh/``...,
  the names :func:`dexter.sandbox.paths.is_secret_name` knows): masked for the command;
- every ``.git`` (a repository's folder, or a file holding ``gitdir:``): protected;
- folders whose path is too long to mount (:data:`MAX_FOLDER_PATH`): masked whole.

Nothing is skipped for being large or deep (``node_modules`` and virtual environments
included): a secret moved five folders down is found like one at the top. What keeps it
fast is a cache of each folder's listing, keyed by the folder's inode, ``ctime`` and
``mtime``. Adding, removing or renaming an entry changes both times, and a command cannot
set ``ctime`` back (it moves whenever ``mtime`` is set), so a folder whose key is unchanged
has the same entries. A folder changed in the last :data:`STABLE_NS` is read again every
time, since two changes within one clock tick could leave its times equal. Inside ``.git``
and inside a secret folder (masked whole) nothing is looked at.

On Linux the scan also watches each folder it reads (:mod:`dexter.sandbox.watch`,
inotify: the watch is in place before the folder is looked at, and every change to it,
by a command or by anyone, queues an event). A folder whose listing is cached, watched
with no event since, on a local file system, and whose parent's listing is unchanged in
this scan (so its name still leads to the same folder) is not even looked at: an
unchanged workspace costs a dictionary look-up per folder instead of an ``lstat``. A
queue overflow or a change of the mount table makes every folder be looked at again.
When no watched folder changed at all since a scan of the same folders in which every
folder was trusted (the check before a command, after the previous command's check found
nothing new), and each root is still the same folder, that scan's findings are the answer.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from dexter.sandbox.paths import SECRET_DIR_PATHS, is_secret_name
from dexter.sandbox.watch import FolderWatch

MAX_FOLDER_PATH = 3_500
"""A folder whose path is longer than this many bytes is masked whole, never walked: a
mount needs a path shorter than the system's limit (4,096 bytes with a 255-byte name
under it), and a command could otherwise move a secret deeper than any scan or mask
reaches and read it there through relative paths."""
STABLE_NS = 2_000_000_000
"""A folder is cached only once its times are this much older than the scan."""
MAX_CACHED = 400_000
"""Folders remembered at most (about 200 bytes each); past that the cache starts over."""
GIT = ".git"
# SECRET_DIR_PATHS by their last two components (a folder's listing knows its own name)
_DIR_TAILS = {"/".join(p.split("/")[-2:]): "/" + p for p in SECRET_DIR_PATHS}


@dataclass(frozen=True, slots=True)
class _Listing:
    key: tuple[int, int, int, int]
    subdirs: tuple[str, ...]
    """Full paths of the folders to walk into."""
    found: tuple[tuple[Path, ...], tuple[Path, ...], tuple[Path, ...]] | None
    """(secret files, secret folders, ``.git`` entries), None when there are none."""


@dataclass(slots=True)
class ScanResult:
    """What one scan found, and what it cost."""

    secret_files: list[Path] = field(default_factory=list)
    secret_dirs: list[Path] = field(default_factory=list)
    git_entries: list[Path] = field(default_factory=list)
    """Every ``.git`` found (folder, file or link), at any depth."""
    folders: int = 0
    """Folders walked."""
    listed: int = 0
    """Folders read again (new or changed since the last scan)."""
    looked: int = 0
    """Folders whose times were looked at (the others were watched and unchanged)."""
    untrusted: int = 0
    """Folders walked that are not watched and unchanged now (new, changed, not watchable)."""
    reused: bool = False
    """Nothing changed since the last scan of the same folders: its findings, unwalked."""


class TreeScanner:
    """Walks folders for secret-named entries and ``.git``, remembering unchanged folders.

    One scanner serves a process (:func:`scanner`); its cache only saves time, never
    changes what a scan finds. Scans run one at a time (a command's check after it runs in
    a thread).
    """

    def __init__(self, *, watch: bool = True) -> None:
        self._cache: dict[str, _Listing] = {}
        self._watch = FolderWatch() if watch else None
        self._trusted: set[str] = set()
        """Cached folders watched since their listing was known current, with no event."""
        self._last: tuple[tuple[object, ...], ScanResult] | None = None
        """The last unbounded scan in which every folder was trusted, by its arguments and
        its roots' identities; forgotten on any change anywhere."""
        self._lock = threading.Lock()

    def scan(self, roots: Iterable[Path], skip: Iterable[Path] = (),
             max_depth: int | None = None) -> ScanResult:
        """Scan ``roots`` (folders; missing ones are ignored). ``skip`` lists folders not
        to enter (``DEXTER_HOME``, hidden from the command whole); ``max_depth`` bounds the
        levels below each root (None: all of them)."""
        with self._lock:
            return self._scan(roots, skip, max_depth)

    def _scan(self, roots: Iterable[Path], skip: Iterable[Path],
              max_depth: int | None) -> ScanResult:
        result = ScanResult()
        skipped = {str(p) for p in skip}
        now = time.time_ns()
        if len(self._cache) > MAX_CACHED:
            self._cache.clear()
            self._trusted.clear()
        if self._watch is not None and self._watch.pid != os.getpid():
            # a forked child: the parent's queue is not its own to read
            self._watch = FolderWatch()
            self._trusted.clear()
            self._last = None
        if self._watch is not None:
            changes = self._watch.changed()
            if changes.everything:
                self._trusted.clear()
            else:
                self._trusted -= changes.folders
            if changes.everything or changes.folders:
                self._last = None
        seen: set[str] = set()
        stack = [(str(r), 0) for r in dict.fromkeys(roots)]
        if max_depth is None:
            names = [s for s, _ in stack]
            key = (tuple(names), frozenset(skipped), tuple(_identity(n) for n in names))
            if self._last is not None and self._last[0] == key:
                return _copy(self._last[1])
            self._last = None
            self._walk(names, skipped, seen, now, result)
            if self._watch is not None and self._watch.active and not result.untrusted:
                self._last = (key, _copy(result))
            return result
        while stack:
            folder, depth = stack.pop()
            if folder in seen or folder in skipped:
                continue
            seen.add(folder)
            listing = self._listing(folder, now, result)
            if listing is None:
                continue
            self._collect(listing, result)
            if depth + 1 < max_depth:
                stack.extend((n, depth + 1) for n in listing.subdirs)
        return result

    def _walk(self, roots: list[str], skipped: set[str], seen: set[str], now: int,
              result: ScanResult) -> None:
        """The unbounded walk: the hot loop of every command, kept to a dictionary look-up
        per watched unchanged folder, and one ``lstat`` per other unchanged folder.

        A folder is taken from the cache unseen only when it is trusted (watched, no event
        since its listing was known current) and its parent's listing is unchanged in this
        walk (``same``): then its name still leads to the folder that was watched."""
        cache = self._cache
        trusted = self._trusted
        watch = self._watch
        lstat = os.lstat
        isdir = stat.S_ISDIR
        stack = [(r, False) for r in roots]
        while stack:
            folder, same = stack.pop()
            if folder in seen or folder in skipped:
                continue
            seen.add(folder)
            if same and folder in trusted:
                listing = cache.get(folder)
                if listing is not None:
                    result.folders += 1
                    if listing.found is not None:
                        self._collect(listing, result)
                    stack.extend([(sub, True) for sub in listing.subdirs])
                    continue
            trusted.discard(folder)
            result.untrusted += 1  # until it is watched, cached and current below
            # watched before it is looked at: a change from now on queues an event
            watched = watch is not None and watch.add(folder)
            result.looked += 1
            try:
                st = lstat(folder)
            except OSError:
                continue
            if not isdir(st.st_mode):
                continue
            cached = cache.get(folder)
            listing = cached
            unchanged = cached is not None and cached.key == (st.st_dev, st.st_ino,
                                                              st.st_mtime_ns, st.st_ctime_ns)
            if not unchanged:
                listing = self._fresh(folder, st, now, result)
            if listing is None:
                continue
            if watched and watch is not None and folder in cache and watch.local(st.st_dev):
                trusted.add(folder)
                result.untrusted -= 1
            result.folders += 1
            if listing.found is not None:
                self._collect(listing, result)
            stack.extend([(sub, unchanged) for sub in listing.subdirs])

    @staticmethod
    def _collect(listing: _Listing, result: ScanResult) -> None:
        if listing.found is not None:
            files, dirs, git = listing.found
            result.secret_files.extend(files)
            result.secret_dirs.extend(dirs)
            result.git_entries.extend(git)

    def _listing(self, folder: str, now: int, result: ScanResult) -> _Listing | None:
        try:
            st = os.lstat(folder)
        except OSError:
            return None
        if not stat.S_ISDIR(st.st_mode):
            return None
        cached = self._cache.get(folder)
        if cached is not None and cached.key == (st.st_dev, st.st_ino, st.st_mtime_ns,
                                                 st.st_ctime_ns):
            result.folders += 1
            return cached
        listing = self._fresh(folder, st, now, result)
        if listing is not None:
            result.folders += 1
        return listing

    def _fresh(self, folder: str, st: os.stat_result, now: int,
               result: ScanResult) -> _Listing | None:
        result.listed += 1
        self._last = None
        key = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
        listing = _read(folder, key)
        # the folder's names may lead elsewhere now: none of its subfolders is trusted
        # until looked at again (even one this scan skips)
        trusted = self._trusted
        trusted.discard(folder)
        for old in (self._cache.get(folder), listing):
            if old is not None:
                trusted.difference_update(old.subdirs)
        if listing is None or max(st.st_mtime_ns, st.st_ctime_ns) >= now - STABLE_NS:
            self._cache.pop(folder, None)
        else:
            self._cache[folder] = listing
        return listing


def _identity(folder: str) -> tuple[int, int] | None:
    try:
        st = os.lstat(folder)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None


def _copy(found: ScanResult) -> ScanResult:
    """A reused scan's findings (lists of their own: callers may keep or extend them)."""
    return ScanResult(list(found.secret_files), list(found.secret_dirs),
                      list(found.git_entries), found.folders, listed=0, looked=0,
                      reused=True)


def _read(folder: str, key: tuple[int, int, int, int]) -> _Listing | None:
    subdirs: list[str] = []
    files: list[Path] = []
    dirs: list[Path] = []
    git: list[Path] = []
    parent = os.path.basename(folder.rstrip("/")).casefold()
    prefix = folder.rstrip("/") + "/"
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                name = entry.name
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                    is_file = not is_dir and entry.is_file(follow_symlinks=False)
                except OSError:
                    continue
                if name == GIT:
                    git.append(Path(prefix + name))
                elif is_secret_name(name) or _secret_dir_path(folder, parent, name) \
                        or (is_dir and _too_deep(prefix, name)):
                    # a link is not masked: its target is masked where it lies, or invisible
                    if is_dir:
                        dirs.append(Path(prefix + name))
                    elif is_file:
                        files.append(Path(prefix + name))
                elif is_dir:
                    subdirs.append(prefix + name)
    except OSError:
        return None
    found = (tuple(files), tuple(dirs), tuple(git)) if files or dirs or git else None
    return _Listing(key, tuple(subdirs), found)


def _too_deep(prefix: str, name: str) -> bool:
    if len(prefix) + len(name) <= MAX_FOLDER_PATH // 4:  # a character is 4 bytes at most
        return False
    return len(os.fsencode(prefix + name)) > MAX_FOLDER_PATH


def _secret_dir_path(folder: str, parent: str, name: str) -> bool:
    full = _DIR_TAILS.get(f"{parent}/{name.casefold()}")
    return full is not None and f"{folder}/{name}".casefold().endswith(full)


_CERT_BEGIN = b"-----BEGIN CERTIFICATE-----"
_CERT_END = b"-----END CERTIFICATE-----"
_CERTS_CACHE: dict[str, tuple[tuple[int, ...], bool]] = {}


def only_certificates(path: Path) -> bool:
    """True when a ``.pem``/``.crt`` file holds nothing but public certificates (a CA
    bundle such as certifi's ``cacert.pem``): no key, nothing else. Such a file is left
    visible; every other secret-named file is masked. Cached while the file is unchanged."""
    if path.suffix.casefold() not in (".pem", ".crt"):
        return False
    try:
        st = os.lstat(path)
        key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        cached = _CERTS_CACHE.get(str(path))
        if cached is not None and cached[0] == key:
            return cached[1]
        if not stat.S_ISREG(st.st_mode) or st.st_size > 8 * 1024 * 1024:
            return False
        with open(path, "rb") as handle:
            data = handle.read(8 * 1024 * 1024 + 1)
    except OSError:
        return False
    verdict = _certificates_only(data)
    _CERTS_CACHE[str(path)] = (key, verdict)
    return verdict


def _certificates_only(data: bytes) -> bool:
    inside = False
    blocks = 0
    for raw in data.splitlines():
        line = raw.strip()
        if line == _CERT_BEGIN and not inside:
            inside, blocks = True, blocks + 1
        elif line == _CERT_END and inside:
            inside = False
        elif inside:
            if line.strip(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="):
                return False
        elif line and not line.startswith(b"#") and b"-----" in line:
            return False  # another PEM block (a key) outside the certificates
    return blocks > 0 and not inside


_SCANNER: TreeScanner | None = None


def scanner() -> TreeScanner:
    """The process's scanner (its cache is shared by every command of the process)."""
    global _SCANNER
    if _SCANNER is None:
        _SCANNER = TreeScanner()
    return _SCANNER
