"""The operating-system sandbox every ``bash`` command runs in: one interface, one runner
per platform.

- :class:`Bubblewrap` (Linux): ``bwrap`` builds a fresh mount tree for each command from the
  :class:`~dexter.sandbox.policy.SandboxPolicy` (system folders read-only, the workspace
  read-write, an empty private ``HOME`` and ``/tmp``, new PID/IPC/UTS/network namespaces,
  ``--die-with-parent``).
- :class:`Seatbelt` (macOS): a ``sandbox-exec`` profile with the same rules.
- :class:`NoSandbox`: commands run directly; the permission engine is then stricter
  (``--yes`` approves only what the parser proves read-only).

:func:`detect_runner` picks one for the settings and says why when there is none. Nothing
here runs at import; the availability probe runs once, on first use.
"""

from __future__ import annotations

import functools
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from dexter.sandbox.policy import ETC_SECRETS, SYSTEM_READ_DIRS, Limits, SandboxPolicy

if TYPE_CHECKING:
    from dexter.config import Settings

INSTALL_HINT = ("install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: "
                "dnf install bubblewrap; Arch: pacman -S bubblewrap)")


@dataclass(frozen=True, slots=True)
class SandboxStatus:
    """Whether commands are contained, by what, and if not, why and how to fix it."""

    active: bool
    name: str
    reason: str = ""

    def describe(self) -> str:
        """One line for start-up notices and status output."""
        if self.active:
            return f"Shell sandbox: {self.name} (workspace only, network off unless allowed)."
        return f"Shell sandbox: OFF ({self.reason})."


class SandboxRunner(Protocol):
    """Turns a shell command and a policy into the ``argv`` that runs it contained."""

    @property
    def status(self) -> SandboxStatus:
        """Whether this runner contains anything."""

    @property
    def limits_in_argv(self) -> bool:
        """True when :meth:`argv` applies the policy's resource limits itself."""

    def argv(self, shell_argv: list[str], policy: SandboxPolicy) -> list[str]:
        """The command line that runs ``shell_argv`` under ``policy``."""

    def cleanup(self) -> None:
        """Remove what :meth:`argv` left behind for the last command (temporary files)."""


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

    def argv(self, shell_argv: list[str], policy: SandboxPolicy) -> list[str]:
        return list(shell_argv)

    def cleanup(self) -> None:
        return None


class Bubblewrap:
    """Linux: a ``bwrap`` mount tree per command.

    Limits are applied inside by util-linux's ``prlimit`` when it is installed (an exec
    costs about a millisecond; a ``preexec_fn`` would make Python fork its whole address
    space for every command instead of using vfork).
    """

    def __init__(self, binary: str, prlimit: str | None = None) -> None:
        self.binary = binary
        self.prlimit = prlimit

    @property
    def status(self) -> SandboxStatus:
        return SandboxStatus(True, "bubblewrap")

    @property
    def limits_in_argv(self) -> bool:
        return self.prlimit is not None

    def argv(self, shell_argv: list[str], policy: SandboxPolicy) -> list[str]:
        inner = shell_argv
        if self.prlimit is not None:
            inner = [self.prlimit, *prlimit_options(policy.limits), "--", *shell_argv]
        return [self.binary, *bwrap_options(policy), "--", *inner]

    def cleanup(self) -> None:
        return None


def bwrap_options(policy: SandboxPolicy, *, is_root: bool | None = None) -> list[str]:
    """The ``bwrap`` options for ``policy``, in mount order (later mounts cover earlier)."""
    is_root = os.geteuid() == 0 if is_root is None else is_root
    opts = ["--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc",
            "--unshare-uts", "--unshare-cgroup-try"]
    if not policy.network:
        opts.append("--unshare-net")
    if is_root:
        opts += ["--cap-drop", "ALL"]
    for folder in SYSTEM_READ_DIRS:
        if os.path.islink(folder):
            opts += ["--symlink", os.readlink(folder), folder]
        elif os.path.isdir(folder):
            opts += ["--ro-bind", folder, folder]
    for secret in ETC_SECRETS:
        opts += _mask(Path(secret))
    if policy.network:
        resolv = os.path.realpath("/etc/resolv.conf")
        if resolv.startswith("/run/"):
            opts += ["--ro-bind-try", os.path.dirname(resolv), os.path.dirname(resolv)]
    opts += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/var/tmp"]
    home = str(policy.home)
    # A workspace that is the home folder itself keeps it (secret files in it are masked).
    private_home = policy.home not in (Path("/"), policy.workspace) and \
        not any(policy.home.is_relative_to(d) for d in SYSTEM_READ_DIRS)
    home_inside = policy.home.is_relative_to(policy.workspace)
    if private_home and not home_inside:
        opts += ["--tmpfs", home]
    opts += ["--bind", str(policy.workspace), str(policy.workspace)]
    for path in policy.extra_write:
        opts += ["--bind", str(path), str(path)]
    if private_home and home_inside:
        opts += ["--tmpfs", home]
    for path in policy.extra_read:
        if not path.is_relative_to(policy.workspace) or path.is_relative_to(policy.home):
            opts += ["--ro-bind", str(path), str(path)]
    for path in policy.read_only_inside:
        opts += ["--ro-bind", str(path), str(path)]
    for path in policy.hidden:
        opts += ["--tmpfs", str(path)]
    for path in policy.reveal:
        opts += ["--ro-bind", str(path), str(path)]
    for path in policy.masked_files:
        opts += _mask(path)
    for path in policy.masked_dirs:
        opts += _mask(path)
    opts += ["--chdir", str(policy.workspace)]
    return opts


def _mask(path: Path) -> list[str]:
    """Options that replace ``path`` by an empty file or an empty read-only folder."""
    if os.path.isdir(path) and not os.path.islink(path):
        return ["--tmpfs", str(path), "--remount-ro", str(path)]
    if os.path.lexists(path):
        return ["--ro-bind", "/dev/null", str(path)]
    return []


class Seatbelt:
    """macOS: a ``sandbox-exec`` profile per command (private HOME in a temporary folder)."""

    def __init__(self, binary: str = "/usr/bin/sandbox-exec") -> None:
        self.binary = binary
        self._temp: tempfile.TemporaryDirectory[str] | None = None

    @property
    def status(self) -> SandboxStatus:
        return SandboxStatus(True, "sandbox-exec")

    @property
    def limits_in_argv(self) -> bool:
        return False

    def argv(self, shell_argv: list[str], policy: SandboxPolicy) -> list[str]:
        self.cleanup()
        self._temp = tempfile.TemporaryDirectory(prefix="dexter-sbx-")
        private = Path(self._temp.name)
        (private / "home").mkdir()
        (private / "tmp").mkdir()
        return [self.binary, "-p", seatbelt_profile(policy, private), *shell_argv]

    def cleanup(self) -> None:
        if self._temp is not None:
            self._temp.cleanup()
            self._temp = None


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
             *[f"(deny file-write* (subpath {_sb(p)}))" for p in policy.read_only_inside],
             *[f"(deny file-read* file-write* (subpath {_sb(p)}))" for p in policy.hidden],
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
        opts.append(f"--nproc={_user_process_count() + limits.max_processes}")
    return opts


def limit_setter(limits: Limits) -> Callable[[], None]:
    """A ``preexec_fn`` that applies ``limits`` to the command and everything it starts.

    The process limit counts every process of the user, so it is set above the count the
    user already runs. Root is exempt from it by the kernel; the PID namespace still keeps
    a root command's processes inside the sandbox and they all end with it.
    """
    nproc = _user_process_count() + limits.max_processes if limits.max_processes else 0

    def apply() -> None:
        pairs = [(getattr(resource, "RLIMIT_DATA", None), limits.memory_bytes),
                 (getattr(resource, "RLIMIT_NPROC", None), nproc),
                 (resource.RLIMIT_FSIZE, limits.max_file_bytes),
                 (resource.RLIMIT_CORE, 0)]
        for which, value in pairs:
            if which is None or (value == 0 and which != resource.RLIMIT_CORE):
                continue
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
def _probe_bwrap(binary: str) -> str | None:
    """None when ``bwrap`` can build a sandbox here; else its error (e.g. no user namespaces)."""
    try:
        done = subprocess.run(
            [binary, "--ro-bind", "/", "/", "--unshare-pid", "--unshare-net", "--die-with-parent",
             "--", "/bin/true"], capture_output=True, timeout=10, check=False)
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
        binary = shutil.which("bwrap")
        if binary is None:
            return NoSandbox(f"bubblewrap is not installed; {INSTALL_HINT}")
        problem = _probe_bwrap(binary)
        if problem:
            return NoSandbox(f"bubblewrap cannot create a sandbox here: {problem}")
        return Bubblewrap(binary, shutil.which("prlimit"))
    if sys.platform == "darwin":
        if os.path.exists("/usr/bin/sandbox-exec"):
            return Seatbelt()
        return NoSandbox("/usr/bin/sandbox-exec is missing")
    return NoSandbox(f"no sandbox for {sys.platform}")
