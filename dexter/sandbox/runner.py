"""The operating-system sandbox every ``bash`` command runs in: one interface, one runner
per platform.

- :class:`Bubblewrap` (Linux): ``bwrap`` builds a fresh mount tree for each command from the
  :class:`~dexter.sandbox.policy.SandboxPolicy` (system folders read-only, the workspace
  read-write with every protected path bound read-only over itself, secret-named files
  masked by an empty read-only file, an empty private ``HOME`` and size-limited ``/tmp``,
  ``/var/tmp`` and ``/dev/shm``, ``/proc`` read-only), in new user, PID, IPC, UTS and
  network namespaces, as an unprivileged user (``nobody`` when dexter is root), under a
  seccomp filter (:mod:`dexter.sandbox.seccomp`) and, where dexter may make one, in a
  cgroup that bounds its processes and memory (:mod:`dexter.sandbox.cgroups`).
- :class:`Seatbelt` (macOS): a ``sandbox-exec`` profile with the same rules.
- :class:`NoSandbox`: commands run directly; the permission engine is then stricter
  (``--yes`` approves only what the parser proves read-only).

:func:`detect_runner` picks one for the settings and says why when there is none, and
which protections this machine cannot give (``SandboxStatus.weaker``). Nothing here runs
at import; the availability probe runs once, on first use.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import resource
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from dexter.sandbox.policy import ETC_SECRETS, SYSTEM_READ_DIRS, Limits, SandboxPolicy

if TYPE_CHECKING:
    from dexter.config import Settings
    from dexter.sandbox.cgroups import Cgroup, CgroupPool, PoolStatus
    from dexter.sandbox.guard import Prepared
    from dexter.sandbox.seccomp import SeccompProgram
    from dexter.sandbox.spawner import Spawner

INSTALL_HINT = ("install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: "
                "dnf install bubblewrap; Arch: pacman -S bubblewrap)")
# The user a command runs as when dexter is root: a user namespace maps it to root outside
# (so the workspace stays writable), but inside it has no capability and is not uid 0.
SANDBOX_UID = 65534
SANDBOX_USER = "nobody"
HIDDEN_TMPFS_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class SandboxStatus:
    """Whether commands are contained, by what, and if not, why and how to fix it.

    ``weaker`` lists the protections this machine cannot give, each with its reason (no
    seccomp without libseccomp, no process or shared-memory bound without a cgroup...).
    """

    active: bool
    name: str
    reason: str = ""
    weaker: tuple[str, ...] = ()

    def describe(self) -> str:
        """One line for start-up notices and status output."""
        if self.active:
            line = f"Shell sandbox: {self.name} (workspace only, network off unless allowed)."
            if self.weaker:
                line += " Not enforced here: " + "; ".join(self.weaker) + "."
            return line
        return f"Shell sandbox: OFF ({self.reason})."


@dataclass
class Launch:
    """How to start one command: its ``argv``, environment, descriptors to hand over, and
    the cgroup it runs in (None: none)."""

    argv: list[str]
    env: dict[str, str]
    pass_fds: tuple[int, ...] = ()
    cgroup: Cgroup | None = None
    spawner: Spawner | None = None
    """Starts the command inside ``cgroup`` (None: started directly)."""
    rlimits: tuple[tuple[int, int], ...] = ()
    """``(resource, value)`` pairs the ``spawner`` sets before it starts the command."""
    notes: list[str] = field(default_factory=list)


class SandboxRunner(Protocol):
    """Turns a shell command and a policy into the process that runs it contained."""

    @property
    def status(self) -> SandboxStatus:
        """Whether this runner contains anything."""

    @property
    def limits_in_argv(self) -> bool:
        """True when the launch applies the policy's resource limits itself."""

    def launch(self, shell_argv: list[str], policy: SandboxPolicy,
               prepared: Prepared | None = None) -> contextlib.AbstractContextManager[Launch]:
        """The process for ``shell_argv`` under ``policy``, for the time it runs."""


class NoSandbox:
    """Runs commands as they are (no sandbox available or wanted)."""

    def __init__(self, reason: str) -> None:
        self._status = SandboxStatus(False, "none", reason)

    @property
    def status(self) -> SandboxStatus:
        return self._status

    @property
    def limits_in_argv(self) -> bool:
        return False

    @contextlib.contextmanager
    def launch(self, shell_argv: list[str], policy: SandboxPolicy,
               prepared: Prepared | None = None) -> Iterator[Launch]:
        yield Launch(list(shell_argv), dict(policy.env))


class Bubblewrap:
    """Linux: a ``bwrap`` mount tree per command.

    Limits are applied by a cgroup where one can be made, with the rlimits set by the
    cgroup's helper (:mod:`dexter.sandbox.spawner`) in the process that execs ``bwrap``;
    without a cgroup, inside by util-linux's ``prlimit`` when it is installed (an exec
    costs about a millisecond; a ``preexec_fn`` would make Python fork its whole address
    space for every command instead of using vfork).
    """

    def __init__(self, binary: str, prlimit: str | None = None, *,
                 seccomp: SeccompProgram | None = None, cgroups: PoolStatus | None = None,
                 as_root: bool | None = None, fd_binds: bool | None = None) -> None:
        self.binary = binary
        self.prlimit = prlimit
        self.seccomp = seccomp
        self.cgroups = cgroups
        self.as_root = os.geteuid() == 0 if as_root is None else as_root
        self.fd_binds = _bwrap_binds_fds(binary) if fd_binds is None else fd_binds
        """``bwrap --bind-fd`` exists (0.8 and later): binds are made from the descriptors
        :func:`~dexter.sandbox.guard.prepare` opened, and bwrap closes each once mounted."""

    @property
    def status(self) -> SandboxStatus:
        return SandboxStatus(True, "bubblewrap", weaker=self.weaker())

    def weaker(self) -> tuple[str, ...]:
        """What this machine cannot enforce, with the reason."""
        out = []
        if self.seccomp is not None and self.seccomp.problem:
            out.append(f"the seccomp filter ({self.seccomp.problem})")
        if self.cgroups is not None and self.cgroups.pool is None:
            if self.as_root:
                out.append(f"the process limit, which the kernel does not apply to root "
                           f"without a cgroup ({self.cgroups.problem})")
            out.append(f"a memory limit that counts shared memory and tmpfs pages "
                       f"({self.cgroups.problem})")
        if self.prlimit is None and self._pool() is None:
            out.append("rlimits inside the sandbox (util-linux's prlimit is not installed)")
        return tuple(out)

    def _pool(self) -> CgroupPool | None:
        return self.cgroups.pool if self.cgroups is not None else None

    @property
    def limits_in_argv(self) -> bool:
        """The launch applies the limits: the cgroup's helper does, or ``prlimit``."""
        return self._pool() is not None or self.prlimit is not None

    def argv(self, shell_argv: list[str], policy: SandboxPolicy,
             prepared: Prepared | None = None, *, seccomp_fd: int | None = None,
             binds: BindSources | None = None, prlimit: bool = True) -> list[str]:
        """The ``bwrap`` command line (without the cgroup wrapper). ``binds`` collects the
        descriptors the command line names (to hand to bwrap, and close afterwards);
        ``prlimit``: start the shell through ``prlimit`` (when installed) with the limits."""
        inner = shell_argv
        if self.prlimit is not None and prlimit:
            inner = [self.prlimit, *prlimit_options(policy.limits), "--", *shell_argv]
        binds = binds or BindSources(prepared, fd_binds=False)
        opts = bwrap_options(policy, prepared, is_root=self.as_root, empty=empty_file(),
                             binds=binds)
        if seccomp_fd is not None:
            opts += ["--seccomp", str(seccomp_fd)]
        return [self.binary, *opts, "--", *inner]

    @contextlib.contextmanager
    def launch(self, shell_argv: list[str], policy: SandboxPolicy,
               prepared: Prepared | None = None) -> Iterator[Launch]:
        env = dict(policy.env)
        if self.as_root:
            env.update(USER=SANDBOX_USER, LOGNAME=SANDBOX_USER)
        binds = BindSources(prepared, fd_binds=self.fd_binds)
        seccomp_fd = None
        if self.seccomp is not None and self.seccomp.bpf:
            seccomp_fd = _data_fd(self.seccomp.bpf)
        pool = self._pool()
        try:
            argv = self.argv(shell_argv, policy, prepared, seccomp_fd=seccomp_fd, binds=binds,
                             prlimit=pool is None)
            fds = [*binds.fds, *([seccomp_fd] if seccomp_fd is not None else [])]
            if pool is None:
                yield Launch(argv, env, tuple(fds))
                return
            with pool.acquire(policy.limits.max_processes, policy.limits.memory_bytes) as group:
                # root's processes are exempt from RLIMIT_NPROC (the cgroup counts them)
                nproc = policy.limits.max_processes + 1 if self.as_root else None
                yield Launch(argv, env, tuple(fds), group, pool.spawner(group),
                             rlimit_pairs(policy.limits, nproc))
        finally:
            binds.close()
            if seccomp_fd is not None:
                os.close(seccomp_fd)


class BindSources:
    """Where the source of each bind comes from.

    With ``fd_binds`` (bwrap 0.8 and later) a bind of a path :func:`dexter.sandbox.guard.
    prepare` opened is ``--bind-fd N`` / ``--ro-bind-fd N`` of a duplicate of that
    descriptor, one per use: what is mounted is what was checked, and bwrap closes the
    descriptor once it is mounted, so the command never holds it. (An inherited descriptor
    of a folder would be a door to that folder as the host sees it, writable and not
    hidden, and through ``..`` to everything above it.) Otherwise the source is the path:
    nothing of a command is left running when the next is prepared (its PID namespace ends
    with it) and one command runs at a time per workspace, so nothing can change it between
    the check and the mount.
    """

    def __init__(self, prepared: Prepared | None, *, fd_binds: bool) -> None:
        self.prepared = prepared
        self.fd_binds = fd_binds
        self.fds: list[int] = []

    def bind(self, flag: str, path: Path) -> list[str]:
        """The options binding ``path`` over itself (``flag``: ``--bind`` or ``--ro-bind``)."""
        fd = self.prepared.sources.get(path) if self.prepared is not None else None
        if fd is None or not self.fd_binds:
            return [flag, str(path), str(path)]
        copy = os.dup(fd)
        self.fds.append(copy)
        return [f"{flag}-fd", str(copy), str(path)]

    def close(self) -> None:
        """Close the duplicates (the command's process has its own copies by now)."""
        for fd in self.fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.fds.clear()


def _data_fd(data: bytes) -> int:
    """A pipe's read end holding ``data`` (the write end is closed: the reader sees EOF)."""
    read, write = os.pipe()
    try:
        os.write(write, data)
    finally:
        os.close(write)
    return read


_EMPTY: tuple[str, int] | None = None


def empty_file() -> str:
    """The source of every file mask: an empty read-only regular file, so a masked file
    reads as empty (git and other tools see a file, not a device). It is named by its path
    (in a private folder of the system's temporary directory, which a command never sees:
    its ``/tmp`` is its own), checked before every command to be the same empty file."""
    global _EMPTY
    if _EMPTY is not None:
        path, fd = _EMPTY
        try:
            st, now = os.fstat(fd), os.lstat(path)
            if stat.S_ISREG(st.st_mode) and st.st_size == 0 and now.st_ino == st.st_ino \
                    and now.st_dev == st.st_dev:
                return path
        except OSError:
            pass
        with contextlib.suppress(OSError):
            os.close(fd)
    folder = tempfile.mkdtemp(prefix="dexter-sandbox-")
    path = os.path.join(folder, "empty")
    fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o444)
    _EMPTY = (path, fd)
    atexit.register(shutil.rmtree, folder, True)
    return path


def bwrap_options(policy: SandboxPolicy, prepared: Prepared | None = None, *,
                  is_root: bool | None = None, empty: str = "/dev/null",
                  binds: BindSources | None = None) -> list[str]:
    """The ``bwrap`` options for ``policy``, in mount order (later mounts cover earlier).

    What ``prepared`` checked is bound through ``binds`` (its descriptors, when bwrap takes
    them); ``empty`` is the file every mask binds.
    """
    is_root = os.geteuid() == 0 if is_root is None else is_root
    bind = (binds or BindSources(prepared, fd_binds=False)).bind
    tmp = ["--size", str(policy.limits.tmp_bytes)] if policy.limits.tmp_bytes else []
    # No --new-session: both launchers start the command in a session without a terminal
    # (the cgroup helper's own, or a new one), and a second setsid costs about 3 ms.
    opts = ["--die-with-parent", "--unshare-user"]
    if is_root:
        opts += ["--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
    opts += ["--disable-userns", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
             "--unshare-cgroup-try"]
    if not policy.network:
        opts.append("--unshare-net")
    opts += ["--cap-drop", "ALL"]
    for folder in SYSTEM_READ_DIRS:
        if os.path.islink(folder):
            opts += ["--symlink", os.readlink(folder), folder]
        elif os.path.isdir(folder):
            opts += ["--ro-bind", folder, folder]
    for secret in ETC_SECRETS:
        opts += _mask(Path(secret), empty)
    if policy.network:
        resolv = os.path.realpath("/etc/resolv.conf")
        if resolv.startswith("/run/"):
            opts += ["--ro-bind-try", os.path.dirname(resolv), os.path.dirname(resolv)]
    opts += ["--proc", "/proc", "--remount-ro", "/proc",
             "--dev", "/dev", *tmp, "--tmpfs", "/dev/shm", "--remount-ro", "/dev",
             *tmp, "--tmpfs", "/tmp", *tmp, "--tmpfs", "/var/tmp"]
    home = str(policy.home)
    # A workspace that is the home folder itself keeps it (secret files in it are masked).
    private_home = policy.home not in (Path("/"), policy.workspace) and \
        not any(policy.home.is_relative_to(d) for d in SYSTEM_READ_DIRS)
    home_inside = policy.home.is_relative_to(policy.workspace)
    if private_home and not home_inside:
        opts += [*tmp, "--tmpfs", home]
    opts += bind("--bind", policy.workspace)
    for path in policy.extra_write:
        opts += bind("--bind", path)
    if private_home and home_inside:
        opts += [*tmp, "--tmpfs", home]
    for path in policy.extra_read:
        if not path.is_relative_to(policy.workspace) or path.is_relative_to(policy.home):
            opts += bind("--ro-bind", path)
    if prepared is not None:
        keep, read_only, hidden = prepared.keep, prepared.read_only, prepared.hidden
    else:
        keep = ()
        read_only = tuple(p for p in policy.protected_as("read-only") if os.path.lexists(p))
        hidden = tuple(p for p in policy.protected_as("hidden") if os.path.isdir(p))
    for path in keep:
        opts += bind("--bind", path)
    for path in read_only:
        opts += bind("--ro-bind", path)
    for path in hidden:
        opts += ["--size", str(HIDDEN_TMPFS_BYTES), "--tmpfs", str(path)]
        for shown in policy.reveal:
            if shown.is_relative_to(path) and (prepared is None or shown in prepared.sources):
                opts += bind("--ro-bind", shown)
        opts += ["--remount-ro", str(path)]
    for path in policy.masked_files:
        opts += _mask(path, empty)
    for path in policy.masked_dirs:
        opts += _mask(path, empty)
    opts += ["--chdir", str(policy.workspace)]
    return opts


def _mask(path: Path, empty: str) -> list[str]:
    """Options that replace ``path`` by an empty read-only file or folder. A link is never
    masked (bwrap would follow it): what it points to is masked where it lies, or is not
    visible at all."""
    try:
        st = os.lstat(path)
    except OSError:
        return []
    if stat.S_ISDIR(st.st_mode):
        return ["--size", str(HIDDEN_TMPFS_BYTES), "--tmpfs", str(path), "--remount-ro", str(path)]
    if stat.S_ISREG(st.st_mode):
        return ["--ro-bind", empty, str(path)]
    return []


class Seatbelt:
    """macOS: a ``sandbox-exec`` profile per command (private HOME in a temporary folder)."""

    def __init__(self, binary: str = "/usr/bin/sandbox-exec") -> None:
        self.binary = binary

    @property
    def status(self) -> SandboxStatus:
        return SandboxStatus(True, "sandbox-exec")

    @property
    def limits_in_argv(self) -> bool:
        return False

    @contextlib.contextmanager
    def launch(self, shell_argv: list[str], policy: SandboxPolicy,
               prepared: Prepared | None = None) -> Iterator[Launch]:
        with tempfile.TemporaryDirectory(prefix="dexter-sbx-") as temp:
            private = Path(temp)
            (private / "home").mkdir()
            (private / "tmp").mkdir()
            yield Launch([self.binary, "-p", seatbelt_profile(policy, private), *shell_argv],
                         dict(policy.env))


def _sb(path: Path | str) -> str:
    return '"' + str(path).replace("\\", "\\\\").replace('"', '\\"') + '"'


def seatbelt_profile(policy: SandboxPolicy, private: Path) -> str:
    """The SBPL profile for ``policy``. Later rules win over earlier ones."""
    lines = ["(version 1)", "(deny default)",
             "(allow process-fork) (allow process-exec) (allow signal (target same-sandbox))",
             "(allow sysctl-read) (allow mach-lookup) (allow ipc-posix-shm)",
             "(allow file-read-metadata)", "(allow file-read*)",
             f"(deny file-read* (subpath {_sb(policy.home)}))",
             *[f"(deny file-read* (subpath {_sb(p)}))" for p in ETC_SECRETS],
             f"(allow file-read* (subpath {_sb(policy.workspace)}))",
             *[f"(allow file-read* (subpath {_sb(p)}))" for p in policy.extra_read],
             f"(allow file-read* file-write* (subpath {_sb(private)}))",
             "(allow file-write* (literal \"/dev/null\") (literal \"/dev/tty\"))",
             f"(allow file-write* (subpath {_sb(policy.workspace)}))",
             *[f"(allow file-read* file-write* (subpath {_sb(p)}))" for p in policy.extra_write],
             *[f"(deny file-write* (subpath {_sb(p)}))"
               for p in policy.protected_as("read-only", "absent")],
             *[f"(deny file-read* file-write* (subpath {_sb(p)}))"
               for p in policy.protected_as("hidden")],
             *[f"(allow file-read* (subpath {_sb(p)}))" for p in policy.reveal],
             *[f"(deny file-read* file-write* (subpath {_sb(p)}))"
               for p in (*policy.masked_files, *policy.masked_dirs)]]
    lines.append("(allow network*)" if policy.network else "(deny network*)")
    return "\n".join(lines) + "\n"


def prlimit_options(limits: Limits) -> list[str]:
    """``prlimit`` options for ``limits`` (soft and hard alike, so nothing inside raises them)."""
    opts = ["--core=0"]
    if limits.memory_bytes:
        opts.append(f"--data={limits.memory_bytes}")
    if limits.max_file_bytes:
        opts.append(f"--fsize={limits.max_file_bytes}")
    if limits.max_processes:
        # counted per user namespace: the command's processes (and bwrap's init) only
        opts.append(f"--nproc={limits.max_processes + 1}")
    return opts


def rlimit_pairs(limits: Limits, nproc: int | None = None) -> tuple[tuple[int, int], ...]:
    """``(resource, value)`` for each rlimit of ``limits`` (soft and hard alike, so nothing
    inside raises them): data size, processes (``nproc``; None: above the count the user
    already runs, since the kernel counts every process of the user), file size, no core.
    """
    if nproc is None:
        nproc = _user_process_count() + limits.max_processes if limits.max_processes else 0
    pairs = [(getattr(resource, "RLIMIT_DATA", None), limits.memory_bytes),
             (getattr(resource, "RLIMIT_NPROC", None), nproc if limits.max_processes else 0),
             (resource.RLIMIT_FSIZE, limits.max_file_bytes),
             (resource.RLIMIT_CORE, 0)]
    return tuple((which, value) for which, value in pairs
                 if which is not None and (value or which == resource.RLIMIT_CORE))


def limit_setter(limits: Limits) -> Callable[[], None]:
    """A ``preexec_fn`` that applies ``limits`` to the command and everything it starts.

    Root is exempt from the process limit by the kernel; the PID namespace still keeps
    a root command's processes inside the sandbox and they all end with it.
    """
    pairs = rlimit_pairs(limits)

    def apply() -> None:
        for which, value in pairs:
            try:
                _, hard = resource.getrlimit(which)
                cap = value if hard == resource.RLIM_INFINITY else min(value, hard)
                resource.setrlimit(which, (cap, cap))
            except (ValueError, OSError):
                continue

    return apply


def _user_process_count() -> int:
    uid = os.getuid()
    count = 0
    try:
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                try:
                    count += entry.stat().st_uid == uid
                except OSError:
                    continue
    except OSError:
        return 256
    return count


@functools.lru_cache(maxsize=8)
def _bwrap_binds_fds(binary: str) -> bool:
    """Whether this ``bwrap`` has ``--bind-fd`` (0.8 and later)."""
    try:
        done = subprocess.run([binary, "--help"], capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return b"--ro-bind-fd" in done.stdout + done.stderr


@functools.lru_cache(maxsize=8)
def _probe_bwrap(binary: str) -> str | None:
    """None when ``bwrap`` can build a sandbox here (with a user namespace); else its error."""
    try:
        done = subprocess.run(
            [binary, "--ro-bind", "/", "/", "--unshare-user", "--disable-userns",
             "--unshare-pid", "--unshare-net", "--die-with-parent", "--", "/bin/true"],
            capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if done.returncode != 0:
        return done.stderr.decode("utf-8", "replace").strip()[:300] or f"exit {done.returncode}"
    return None


def detect_runner(settings: Settings) -> SandboxRunner:
    """The runner for this machine and these settings (``[bash] sandbox``)."""
    if not settings.bash.sandbox:
        return NoSandbox("turned off by [bash] sandbox = false")
    if sys.platform.startswith("linux"):
        from dexter.sandbox.programs import system_program, writable_folders

        writable = writable_folders(Path.cwd(), settings.bash.allow_write)
        binary = system_program("bwrap", writable)
        if binary is None:
            planted = shutil.which("bwrap")
            if planted is not None:
                return NoSandbox(f"the only bwrap on PATH is {planted}, in a folder commands "
                                 f"can write, so dexter does not start it; {INSTALL_HINT}")
            return NoSandbox(f"bubblewrap is not installed; {INSTALL_HINT}")
        problem = _probe_bwrap(binary)
        if problem:
            return NoSandbox(f"bubblewrap cannot create a sandbox here: {problem}")
        return _bubblewrap(binary, system_program("prlimit", writable))
    if sys.platform == "darwin":
        if os.path.exists("/usr/bin/sandbox-exec"):
            return Seatbelt()
        return NoSandbox("/usr/bin/sandbox-exec is missing")
    return NoSandbox(f"no sandbox for {sys.platform}")


@functools.lru_cache(maxsize=4)
def _bubblewrap(binary: str, prlimit: str | None) -> Bubblewrap:
    """One runner per process: the seccomp filter is compiled and the cgroups are made once."""
    from dexter.sandbox.cgroups import cgroup_pool
    from dexter.sandbox.seccomp import seccomp_program

    return Bubblewrap(binary, prlimit, seccomp=seccomp_program(), cgroups=cgroup_pool())
