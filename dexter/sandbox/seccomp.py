"""The seccomp filter every sandboxed command runs under: the system calls container
runtimes deny by default fail with ``EPERM``.

The filter is generated with libseccomp (through ``pyseccomp``, a ctypes binding to the
system's ``libseccomp.so.2``) as a compiled BPF program, once per process, and handed to
``bwrap --seccomp FD``, which installs it right before it starts the command (after its own
setup, which needs some of these calls). Denied: the kernel keyring (``keyctl``,
``add_key``, ``request_key``), tracing and reading other processes (``ptrace``,
``process_vm_*``, ``pidfd_getfd``, ``kcmp``), ``perf_event_open``, ``bpf``,
``userfaultfd``, ``io_uring``, every mount call (old and new API), ``pivot_root``,
``chroot``, new namespaces (``unshare``, ``setns``, ``clone`` with a namespace flag;
``clone3``, whose flags a filter cannot read, gets ``ENOSYS`` so libc falls back to
``clone``), kernel modules, ``kexec_*``, ``reboot``, swap, clocks, quotas, ``acct``,
``syslog``, file handles (``open_by_handle_at``), and ``AF_VSOCK`` sockets (the virtual
machine's channel to its host).

:func:`seccomp_program` returns the program, or None and says why (libseccomp missing).
"""

from __future__ import annotations

import errno
import functools
import io
import sys
from dataclasses import dataclass

DENIED = (
    "keyctl", "add_key", "request_key",
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
    "process_madvise", "perf_event_open", "bpf", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "mount", "umount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree",
    "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
    "unshare", "setns",
    "init_module", "finit_module", "delete_module", "create_module", "query_module",
    "get_kernel_syms", "kexec_load", "kexec_file_load", "reboot",
    "swapon", "swapoff", "acct", "syslog", "quotactl", "quotactl_fd",
    "settimeofday", "stime", "clock_settime", "clock_adjtime", "adjtimex",
    "open_by_handle_at", "name_to_handle_at", "lookup_dcookie", "nfsservctl",
    "uselib", "ustat", "sysfs", "_sysctl", "vm86", "vm86old", "iopl", "ioperm",
    "vhangup", "fanotify_init",
)
# clone flags that make a new namespace (CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER,
# NEWPID, NEWNET, NEWTIME)
CLONE_NAMESPACES = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000,
                    0x20000000, 0x40000000, 0x00000080)
AF_VSOCK = 40


@dataclass(frozen=True, slots=True)
class SeccompProgram:
    """A compiled filter (``bpf``), or why there is none (``problem``)."""

    bpf: bytes = b""
    problem: str = ""
    skipped: tuple[str, ...] = ()
    """Names this libseccomp does not know on this architecture (not denied, none exist)."""


@functools.lru_cache(maxsize=1)
def seccomp_program() -> SeccompProgram:
    """The filter for this machine's architecture, compiled once per process."""
    if not sys.platform.startswith("linux"):
        return SeccompProgram(problem="seccomp exists only on Linux")
    try:
        import pyseccomp as sc  # type: ignore[import-untyped]
    except (ImportError, RuntimeError, OSError) as exc:
        why = "libseccomp is not installed (Debian/Ubuntu: apt-get install libseccomp2)" \
            if "libseccomp" in str(exc) or isinstance(exc, RuntimeError) \
            else f"the pyseccomp package is missing ({exc}); reinstall dexter"
        return SeccompProgram(problem=why)
    try:
        program = sc.SyscallFilter(sc.ALLOW)
        deny = sc.ERRNO(errno.EPERM)
        skipped = []
        for name in DENIED:
            try:
                program.add_rule(deny, name)
            except (OSError, ValueError, RuntimeError):
                skipped.append(name)
        for flag in CLONE_NAMESPACES:
            program.add_rule(deny, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
        program.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
        program.add_rule(sc.ERRNO(errno.EAFNOSUPPORT), "socket", sc.Arg(0, sc.EQ, AF_VSOCK))
        out = io.BytesIO()
        _export(program, out)
    except (OSError, ValueError, RuntimeError, AttributeError) as exc:
        return SeccompProgram(problem=f"libseccomp could not build the filter ({exc})")
    return SeccompProgram(bpf=out.getvalue(), skipped=tuple(skipped))


def _export(program: object, out: io.BytesIO) -> None:
    """``export_bpf`` writes to a file descriptor: through an unnamed temporary file."""
    import tempfile

    with tempfile.TemporaryFile() as sink:
        program.export_bpf(sink)  # type: ignore[attr-defined]
        sink.seek(0)
        out.write(sink.read())
