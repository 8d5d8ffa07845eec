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
``syslog``, file handles (``open_by_handle_at``), ``AF_VSOCK`` sockets (the virtual
machine's channel to its host), and setting a set-user-ID or set-group-ID bit (``chmod``
and its kin, or ``open``/``openat``/``mknod`` creating a file with one: a command's files
are root's on the host when dexter is root, and any user could run such a file as root);
``openat2``, whose mode a filter cannot read, gets ``ENOSYS``. A system call of another
ABI (``int 0x80`` on x86-64) kills the process: libseccomp's action for an architecture
the filter does not name.

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
# Setting the set-user-ID or set-group-ID bit. The command's user is root outside when
# dexter is root (so that the workspace stays writable), and a file it creates is owned
# by root on the host: with these bits, any user of the machine could run it as root.
SET_ID_BITS = (0o4000, 0o2000)
# (call, index of its mode argument); open and openat take a mode only when creating
CHMOD_CALLS = (("chmod", 1), ("fchmod", 1), ("fchmodat", 2), ("fchmodat2", 2),
               ("creat", 1), ("mknod", 1), ("mknodat", 2))
OPEN_CALLS = (("open", 1, 2), ("openat", 2, 3))
O_CREAT, O_TMPFILE = 0o100, 0o20000000
# calls that libseccomp releases before them may not know by name: their number is the
# same on every architecture (the generic table, from 5.1 on)
NUMBERS = {"fchmodat2": 452}


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
        for bit in SET_ID_BITS:
            for name, mode in CHMOD_CALLS:
                _add(program, deny, name, skipped, sc.Arg(mode, sc.MASKED_EQ, bit, bit))
            for name, flags, mode in OPEN_CALLS:
                for creating in (O_CREAT, O_TMPFILE):
                    _add(program, deny, name, skipped,
                         sc.Arg(flags, sc.MASKED_EQ, creating, creating),
                         sc.Arg(mode, sc.MASKED_EQ, bit, bit))
        # openat2 takes its mode in a structure a filter cannot read: "not implemented",
        # so libc and programs fall back to openat
        _add(program, sc.ERRNO(errno.ENOSYS), "openat2", skipped)
        program.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
        program.add_rule(sc.ERRNO(errno.EAFNOSUPPORT), "socket", sc.Arg(0, sc.EQ, AF_VSOCK))
        out = io.BytesIO()
        _export(program, out)
    except (OSError, ValueError, RuntimeError, AttributeError) as exc:
        return SeccompProgram(problem=f"libseccomp could not build the filter ({exc})")
    return SeccompProgram(bpf=out.getvalue(), skipped=tuple(dict.fromkeys(skipped)))


def _add(program: object, action: object, name: str, skipped: list[str], *args: object) -> None:
    """One rule for ``name`` (by number when this libseccomp does not know the name;
    noted in ``skipped`` when neither exists here, e.g. ``open`` on arm64)."""
    for call in (name, NUMBERS.get(name)):
        if call is None:
            continue
        try:
            program.add_rule(action, call, *args)  # type: ignore[attr-defined]
            return
        except (OSError, ValueError, RuntimeError):
            continue
    skipped.append(name)


def _export(program: object, out: io.BytesIO) -> None:
    """``export_bpf`` writes to a file descriptor: through an unnamed temporary file."""
    import tempfile

    with tempfile.TemporaryFile() as sink:
        program.export_bpf(sink)  # type: ignore[attr-defined]
        sink.seek(0)
        out.write(sink.read())
