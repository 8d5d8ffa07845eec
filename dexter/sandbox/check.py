"""``dexter sandbox --check``: prove, with real commands, what the shell sandbox contains.

Each probe plants something outside the sandbox's reach (a file in the real home folder and
in ``DEXTER_HOME``, a marker in dexter's own environment, a listening socket on loopback)
and runs a real command in the sandbox that tries to reach it. A probe passes when the
command cannot. Planted files are removed afterwards.

The probes of what a command must not change, and of root's powers, run in a scratch
workspace made for them (never the user's): a protected folder that is a link is refused,
``.git`` cannot be renamed away, a ``.git`` a command creates is rolled back, the command
holds no descriptor of the host nor makes a set-user-ID file, ``/proc/sys``
and the kernel keyring are out of reach, the command is not root, and a fork bomb and a
shared-memory bomb stop at the limits (a small ``max_processes`` and ``memory_mb`` for the
probe).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import os
import secrets as pyrandom
import shlex
import shutil
import socket
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from dexter.sandbox.policy import build_policy
from dexter.sandbox.runner import SandboxRunner

if TYPE_CHECKING:
    from dexter.config import Settings


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """One probe: what it checks, whether the sandbox held, and what the command printed."""

    name: str
    passed: bool
    detail: str


@contextlib.contextmanager
def _planted(path: Path, text: str) -> Iterator[Path | None]:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError:
        yield None
        return
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)


async def _run(runner: SandboxRunner, settings: Settings, cwd: Path, command: str,
               timeout: int = 30) -> tuple[int | None, str]:
    """Run ``command`` as the bash tool would; a refused command gives (None, the reason)."""
    from dexter.failures import ToolFailure
    from dexter.sandbox.process import run_command

    policy = build_policy(settings, cwd)
    try:
        result = await run_command(command, cwd, timeout, runner=runner, policy=policy,
                                   quarantine=settings.home_path / "quarantine")
    except ToolFailure as exc:
        return None, str(exc)
    out = (result.stdout.kept + result.stderr.kept).decode("utf-8", "replace").strip()
    if result.findings:
        out += "\n" + "; ".join(result.findings)
    return result.exit_code, out


async def run_checks(runner: SandboxRunner, settings: Settings, cwd: Path) -> list[ProbeResult]:
    """Run every probe in ``cwd``; returns one result per probe."""
    token = pyrandom.token_hex(12)
    content = "planted-" + pyrandom.token_hex(12)  # differs from the names the errors print
    results: list[ProbeResult] = []
    home = Path(os.path.expanduser("~"))
    marker = f"DEXTER_SANDBOX_PROBE_{token}"
    os.environ["DEXTER_SANDBOX_PROBE"] = marker
    try:
        with _planted(home / f".dexter-sandbox-check-{token}", content) as in_home, \
                _planted(settings.home_path / f".sandbox-check-{token}", content) as in_dexter_home:
            for name, target in (("the real home folder is not visible", in_home),
                                 ("DEXTER_HOME is not visible", in_dexter_home)):
                if target is None:
                    continue
                code, out = await _run(runner, settings, cwd, f"cat {shlex.quote(str(target))}")
                results.append(ProbeResult(name, content not in out, out[:200]))
            code, out = await _run(runner, settings, cwd,
                                   "cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | "
                                   "grep -c DEXTER_SANDBOX_PROBE; echo \"$DEXTER_SANDBOX_PROBE\"")
            results.append(ProbeResult("dexter's environment is not readable", marker not in out,
                                       out[:200]))
        outside = cwd.parent / f".dexter-sandbox-outside-{token}"
        code, _ = await _run(runner, settings, cwd, f"touch {shlex.quote(str(outside))}")
        results.append(ProbeResult("nothing outside the workspace is writable",
                                   not outside.exists(), f"exit {code}"))
        outside.unlink(missing_ok=True)
        code, out = await _run(runner, settings, cwd, "touch /usr/.dexter-sandbox-probe")
        results.append(ProbeResult("system folders are read-only", code != 0, out[:200]))
        probe = cwd / f".dexter-sandbox-probe-{token}"
        code, out = await _run(runner, settings, cwd, f"echo ok > {shlex.quote(probe.name)}")
        results.append(ProbeResult("the workspace is writable", probe.exists(), out[:200]))
        probe.unlink(missing_ok=True)
        results.append(await _network_probe(runner, settings, cwd))
    finally:
        os.environ.pop("DEXTER_SANDBOX_PROBE", None)
    results += await _protection_probes(runner, settings)
    return results


@contextlib.asynccontextmanager
async def _scratch(settings: Settings) -> AsyncIterator[tuple[Path, Path, Settings]]:
    """A throwaway workspace and a folder outside it, with settings of their own."""
    root = Path(tempfile.mkdtemp(prefix="dexter-sandbox-check-"))
    try:
        ws, outside = root / "ws", root / "outside"
        ws.mkdir()
        outside.mkdir()
        probe = copy.deepcopy(settings)
        probe.home = str(ws / ".dexter")
        probe.scratchpad_dir = str(ws / "scratchpads")
        probe.config_path = ""
        yield ws, outside, probe
    finally:
        shutil.rmtree(root, ignore_errors=True)


_PY_KEYCTL = ("import ctypes; libc = ctypes.CDLL(None, use_errno=True); "
              "r = libc.syscall(250, 0, -4, 0); print('keyctl', r, ctypes.get_errno())")
_PY_FDS = ("import os\nfor n in sorted(os.listdir('/proc/self/fd'), key=int):\n"
           "    try:\n        t = os.readlink('/proc/self/fd/' + n)\n"
           "    except OSError:\n        continue\n"
           "    if int(n) > 2 and not t.endswith('/fd'):\n        print('inherited', n, t)\n"
           "print('checked')")
_PY_FORKS = ("import os, time\nn = 0\ntry:\n    for _ in range(1000):\n"
             "        if os.fork() == 0:\n            time.sleep(5); os._exit(0)\n"
             "        n += 1\nexcept OSError:\n    pass\nprint('forked', n)")
_PY_SHM = ("import mmap, os, sys\ntotal = 0\nfor _ in range(8):\n"
           "    fd = os.memfd_create('probe'); os.ftruncate(fd, 64 << 20)\n"
           "    m = mmap.mmap(fd, 64 << 20)\n"
           "    for i in range(0, 64 << 20, 4096): m[i] = 1\n"
           "    total += 64; print('touched', total, flush=True)")


async def _protection_probes(runner: SandboxRunner, settings: Settings) -> list[ProbeResult]:
    results: list[ProbeResult] = []
    weaker = "; ".join(runner.status.weaker)
    py = shlex.quote(sys.executable)
    async with _scratch(settings) as (ws, outside, probe):
        canary = "planted-" + pyrandom.token_hex(12)
        (outside / "canary.txt").write_text(canary, encoding="utf-8")
        (ws / "scratchpads").symlink_to(outside)
        code, out = await _run(runner, probe, ws, "cat scratchpads/canary.txt")
        results.append(ProbeResult("a protected folder that is a link is refused, never bound",
                                   code is None and canary not in out, out[:200]))
        (ws / "scratchpads").unlink()
        git = ws / ".git"
        git.mkdir()
        (git / "HEAD").write_text("ref: refs/heads/main\n", encoding="utf-8")
        before = os.lstat(git).st_ino
        code, out = await _run(runner, probe, ws, "mv .git .git.orig && mkdir .git && "
                               "echo '[core]' > .git/config")
        held = os.lstat(git).st_ino == before and not (ws / ".git.orig").exists()
        results.append(ProbeResult(".git cannot be renamed or replaced", held, out[:200]))
        shutil.rmtree(git)
        code, out = await _run(runner, probe, ws, "mkdir .git && printf '[core]\\n\\tfsmonitor = "
                               "touch pwned\\n' > .git/config")
        results.append(ProbeResult("a .git created by a command is rolled back",
                                   not os.path.lexists(git), out[:200]))
        sysctl = "/proc/sys/fs/lease-break-time"
        code, out = await _run(runner, probe, ws, f"v=$(cat {sysctl}) && echo \"$v\" > {sysctl} "
                               "&& echo WROTE")
        results.append(ProbeResult("/proc/sys cannot be written", "WROTE" not in out, out[:200]))
        code, out = await _run(runner, probe, ws, f"{py} -c {shlex.quote(_PY_KEYCTL)}")
        results.append(ProbeResult("the kernel keyring is out of reach (keyctl)",
                                   "keyctl -1 1" in out or "keyctl -1 38" in out,
                                   out[:200] or weaker))
        code, out = await _run(runner, probe, ws, f"{py} -c {shlex.quote(_PY_FDS)}")
        results.append(ProbeResult("the command holds no descriptor of the host (a door "
                                   "past every mount)",
                                   "checked" in out and "inherited" not in out, out[:200]))
        code, out = await _run(runner, probe, ws, "cp /bin/sh probe-setid && "
                               "chmod 6755 probe-setid")
        made = ws / "probe-setid"
        mode = os.lstat(made).st_mode if made.exists() else 0
        results.append(ProbeResult("no command can make a set-user-ID file (it would be "
                                   "root's on the host)", not mode & 0o6000, out[:200]))
        made.unlink(missing_ok=True)
        code, out = await _run(runner, probe, ws, "id -u; grep CapEff /proc/self/status")
        lines = out.split()
        results.append(ProbeResult("commands run as an unprivileged user",
                                   bool(lines) and lines[0] != "0" and "0000000000000000" in out,
                                   out[:200]))
        probe.bash.max_processes = 64
        code, out = await _run(runner, probe, ws, f"{py} -c {shlex.quote(_PY_FORKS)}")
        count = _number_after(out, "forked")
        results.append(ProbeResult("a fork bomb stops at the process limit (64 for the probe)",
                                   count is not None and count <= 64,
                                   (out[:200] + (f" ({weaker})" if weaker else ""))))
        probe.bash.memory_mb = 128
        code, out = await _run(runner, probe, ws, f"{py} -c {shlex.quote(_PY_SHM)}")
        touched = max([int(w) for w in out.split() if w.isdigit()] or [0])
        results.append(ProbeResult(
            "a shared-memory bomb stops at the memory limit (128 MiB for the probe)",
            touched < 512, (out[-200:] + (f" ({weaker})" if weaker else ""))))
    return results


def _number_after(text: str, word: str) -> int | None:
    parts = text.split()
    for i, part in enumerate(parts[:-1]):
        if part == word and parts[i + 1].isdigit():
            return int(parts[i + 1])
    return None


async def _network_probe(runner: SandboxRunner, settings: Settings, cwd: Path) -> ProbeResult:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        code = (f"import socket; s=socket.socket(); s.settimeout(3); "
                f"print('connected' if s.connect_ex(('127.0.0.1', {port})) == 0 else 'refused')")
        _, out = await _run(runner, settings, cwd,
                            f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}")
    wanted = settings.bash.network
    held = ("connected" in out) if wanted else ("connected" not in out)
    name = "the network is on (config)" if wanted else "the network is off"
    return ProbeResult(name, held, out[:200])


def check(runner: SandboxRunner, settings: Settings, cwd: Path) -> list[ProbeResult]:
    """Synchronous :func:`run_checks`."""
    return asyncio.run(run_checks(runner, settings, cwd))
