"""``dexter sandbox --check``: prove, with real commands, what the shell sandbox contains.

Each probe plants something outside the sandbox's reach (a file in the real home folder and
in ``DEXTER_HOME``, a marker in dexter's own environment, a listening socket on loopback)
and runs a real command in the sandbox that tries to reach it. A probe passes when the
command cannot. Planted files are removed afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets as pyrandom
import shlex
import socket
import sys
from collections.abc import Iterator
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


async def _run(runner: SandboxRunner, settings: Settings, cwd: Path, command: str) -> tuple[int | None, str]:
    from dexter.sandbox.process import run_command

    policy = build_policy(settings, cwd)
    result = await run_command(command, cwd, 30, runner=runner, policy=policy)
    out = (result.stdout.kept + result.stderr.kept).decode("utf-8", "replace").strip()
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
    return results


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
