"""The OS sandbox with real commands: what a command inside can and cannot reach.

Every test here runs real ``bwrap`` sandboxes. They are skipped, with the reason printed,
only where bubblewrap cannot run (``.ci/run`` installs it, so CI always runs them).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from dexter.config import Settings
from dexter.sandbox.policy import Grants, SandboxPolicyError, build_policy
from dexter.sandbox.process import run_command
from dexter.sandbox.runner import Bubblewrap, detect_runner
from dexter.testing.shell_corpus import (
    AWS_CANARY,
    ENV_CANARY,
    OUTSIDE_CANARY,
    SSH_CANARY,
    World,
)
from dexter.tools.base import ToolContext, ToolOutput
from dexter.tools.bash import BashTool

RUNNER = detect_runner(Settings())
pytestmark = pytest.mark.skipif(not RUNNER.status.active,
                                reason=f"no OS sandbox here: {RUNNER.status.reason}")


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    built = World(tmp_path / "w").build()
    monkeypatch.setenv("HOME", str(built.home))
    monkeypatch.setenv("OPENAI_API_KEY", ENV_CANARY)
    return built


def settings_for(world: World) -> Settings:
    settings = Settings()
    settings.home = str(world.workspace / ".dexter")
    settings.scratchpad_dir = str(world.workspace / "scratchpads")
    return settings


def _without_cgroup() -> Bubblewrap | None:
    """The same sandbox started without the cgroup helper (rlimits by ``prlimit`` inside)."""
    from dexter.sandbox.cgroups import PoolStatus

    if not isinstance(RUNNER, Bubblewrap) or RUNNER.prlimit is None:
        return None
    return Bubblewrap(RUNNER.binary, RUNNER.prlimit, seccomp=RUNNER.seccomp,
                      cgroups=PoolStatus(None, "not used by this test"))


# Each way a command is started: through the cgroup's helper, which sets the rlimits in
# the process that execs bwrap (where dexter may make cgroups), and directly with prlimit.
LAUNCHERS = [pytest.param("as-detected", id="as-detected"),
             pytest.param("prlimit", id="prlimit-no-cgroup")]


def launcher(name: str) -> Bubblewrap:
    if name == "as-detected":
        assert isinstance(RUNNER, Bubblewrap)
        return RUNNER
    runner = _without_cgroup()
    if runner is None:
        pytest.skip("util-linux's prlimit is not installed")
    return runner


async def sandboxed(world: World, command: str, grants: Grants | None = None,
                    settings: Settings | None = None, runner: Bubblewrap | None = None) -> str:
    settings = settings or settings_for(world)
    ctx = ToolContext(settings=settings, cwd=world.workspace, home=settings.home_path,
                      shell_sandbox=runner or RUNNER, grants=grants)
    tool = BashTool()
    result = await tool.run(tool.parse_args({"command": command, "timeout": 20}), ctx)
    return result.content if isinstance(result, ToolOutput) else result


@pytest.mark.parametrize("command", [
    "cat ~/.ssh/id_rsa", "cat $HOME/.ssh/id_rsa", "cat {home}/.ssh/id_rsa", "cat ~/.s?h/i*",
    "cat {home}/.aws/credentials", "cd {home} && cat .aws/credentials",
    "python3 -c \"print(open('{home}/.ssh/id_rsa').read())\"", "find / -name id_rsa 2>/dev/null | xargs cat",
    "cat {outside}/notes.txt", "ls -R {root}",
])
async def test_planted_secrets_and_outside_files_are_invisible(world: World, command: str) -> None:
    out = await sandboxed(world, command.format(home=world.home, outside=world.outside,
                                                root=world.root))
    for canary in (SSH_CANARY, AWS_CANARY, OUTSIDE_CANARY):
        assert canary not in out


async def test_no_file_anywhere_in_the_sandbox_holds_a_planted_secret(world: World) -> None:
    # A search of the content of every file the sandbox shows would take minutes (gigabytes
    # of system folders). The planted files were written when the world was built and a bind
    # mount keeps their times, so the files that could hold one are those changed since: a
    # search of those covers the whole tree (/proc aside: processes, not files) and ends.
    # The control file in the workspace shows that the search finds what is there.
    since = int(min(p.stat().st_mtime for p in (world.home / ".ssh" / "id_rsa",
                                               world.outside / "notes.txt"))) - 60
    (world.workspace / "control.txt").write_text(f"{OUTSIDE_CANARY}\n")
    out = await sandboxed(world, f"find / -path /proc -prune -o -type f -newermt @{since} "
                                 "-print0 2>/dev/null | xargs -0 grep -l -s -F CANARY-; "
                                 "echo searched")
    listed = out.split("--- stdout ---\n")[1].splitlines()
    assert listed[-1] == "searched"
    assert str(world.workspace / "control.txt") in listed
    assert [line for line in listed[:-1] if not line.startswith(str(world.workspace))] == []


@pytest.mark.parametrize("command", [
    "env", "cat /proc/$PPID/environ", "cat /proc/1/environ", "cat /proc/*/environ",
    "cat /pro?/*/env*ron", "cat //proc//1//environ", "tr '\\0' '\\n' < /proc/self/environ",
])
async def test_dexters_environment_is_not_reachable(world: World, command: str) -> None:
    out = await sandboxed(world, command)
    assert ENV_CANARY not in out


async def test_dexters_process_is_not_visible(world: World) -> None:
    out = await sandboxed(world, f"kill -0 {os.getpid()} && echo alive || echo gone; ls /proc | grep -c '^[0-9]'")
    lines = out.split("--- stdout ---\n")[1].splitlines()
    assert "gone" in lines[0]
    assert int(lines[1]) < 10  # a new PID namespace: only the command's own processes


async def test_nothing_outside_the_workspace_is_writable(world: World) -> None:
    target = world.outside / "notes.txt"
    await sandboxed(world, f"echo pwned > {target}; rm -f {target}; touch {world.outside}/new; "
                           f"touch {world.home}/new; touch /usr/new")
    assert target.read_text() == OUTSIDE_CANARY + "\n"
    assert not (world.outside / "new").exists() and not (world.home / "new").exists()


async def test_the_workspace_is_writable_but_hooks_config_and_settings_are_not(world: World) -> None:
    ws = world.workspace
    config_before = (ws / ".git" / "config").read_text()
    out = await sandboxed(world, "echo data > out.csv; echo x > .git/hooks/pre-commit; "
                                 "git config core.fsmonitor 'touch pwned'; "
                                 "echo '{}' > .dexter/settings.json; cat .dexter/settings.json")
    assert (ws / "out.csv").read_text() == "data\n"
    assert not (ws / ".git" / "hooks" / "pre-commit").exists()
    assert (ws / ".git" / "config").read_text() == config_before
    assert (ws / ".dexter" / "settings.json").read_text() == '{"permissions": {}}\n'
    assert "Read-only file system" in out or "No such file" in out


async def test_the_private_home_and_tmp_start_empty_and_vanish(world: World) -> None:
    await sandboxed(world, "echo a > ~/left-behind; echo b > /tmp/left-behind")
    out = await sandboxed(world, "ls -A ~; ls -A /tmp; echo end")
    assert "left-behind" not in out
    assert not (world.home / "left-behind").exists()


async def test_spilled_results_in_dexter_home_are_readable_the_rest_is_hidden(world: World) -> None:
    home = world.workspace / ".dexter"
    (home / "tool-results").mkdir(parents=True)
    (home / "tool-results" / "call_1.txt").write_text("revenue 383285\n")
    (home / "memory").mkdir()
    (home / "memory" / "MEMORY.md").write_text("private note\n")
    out = await sandboxed(world, "cat .dexter/tool-results/call_1.txt; cat .dexter/memory/MEMORY.md; "
                                 "echo x > .dexter/tool-results/call_1.txt")
    assert "revenue 383285" in out and "private note" not in out
    assert (home / "tool-results" / "call_1.txt").read_text() == "revenue 383285\n"


async def test_secret_files_inside_the_workspace_are_masked(world: World) -> None:
    (world.workspace / ".env").write_text("SERVICE_PASSWORD=hunter2hunter2\n")
    (world.workspace / "deploy").mkdir()
    (world.workspace / "deploy" / "server.pem").write_text("PEM-CANARY\n")
    out = await sandboxed(world, "cat .env; cat deploy/server.pem; ls deploy")
    assert "hunter2hunter2" not in out and "PEM-CANARY" not in out


def _listener() -> socket.socket:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    return server


PROBE = "import socket,sys; s=socket.socket(); s.settimeout(3); print('connect:', s.connect_ex(('127.0.0.1', int(sys.argv[1]))))"


async def test_network_is_off_unless_granted(world: World) -> None:
    with _listener() as server:
        port = server.getsockname()[1]
        command = f"{sys.executable} -c \"{PROBE}\" {port}"
        off = await sandboxed(world, command)
        on = await sandboxed(world, command, Grants(network=True))
    assert "connect: 0" not in off
    assert "connect: 0" in on


async def test_a_granted_outside_path_is_readable_and_nothing_else(world: World) -> None:
    data = world.root / "shared-data"
    data.mkdir()
    (data / "prices.csv").write_text("AAPL,190\n")
    out = await sandboxed(world, f"cat {data}/prices.csv; echo x > {data}/prices.csv; cat {world.outside}/notes.txt",
                          Grants(read=(str(data),)))
    assert "AAPL,190" in out and OUTSIDE_CANARY not in out
    assert (data / "prices.csv").read_text() == "AAPL,190\n"


@pytest.mark.parametrize("how", LAUNCHERS)
async def test_memory_and_file_size_limits_hold(world: World, how: str) -> None:
    settings = settings_for(world)
    settings.bash.memory_mb = 64
    settings.bash.max_file_mb = 1
    out = await sandboxed(world, f"{sys.executable} -c \"x = bytearray(400 * 1024 * 1024); print('got', len(x))\"; "
                                 "head -c 3000000 /dev/zero > big.bin; echo done", settings=settings,
                          runner=launcher(how))
    assert "got 419430400" not in out and "MemoryError" in out
    assert (world.workspace / "big.bin").stat().st_size <= 1024 * 1024


@pytest.mark.parametrize("how", LAUNCHERS)
async def test_process_limit_holds(world: World, how: str) -> None:
    if how == "prlimit" and os.geteuid() == 0:
        pytest.skip("the kernel exempts root's processes from RLIMIT_NPROC: without a cgroup "
                    "nothing bounds them, which the status line says")
    settings = settings_for(world)
    settings.bash.max_processes = 20
    out = await sandboxed(world, "for i in $(seq 1 60); do sleep 5 & done 2>&1 | head -3; echo end",
                          settings=settings, runner=launcher(how))
    assert "fork" in out.lower() or "resource" in out.lower()


@pytest.mark.parametrize("how", LAUNCHERS)
async def test_each_rlimit_is_set_hard_inside_and_cannot_be_raised(world: World, how: str) -> None:
    settings = settings_for(world)
    settings.bash.memory_mb = 96
    settings.bash.max_file_mb = 3
    settings.bash.max_processes = 30
    out = await sandboxed(world, "cat /proc/self/limits; ulimit -H -f unlimited && echo raised; "
                                 "ulimit -S -f 99999999 && echo soft-raised", settings=settings,
                          runner=launcher(how))
    stdout = out.split("--- stdout ---\n")[1]
    rows = {line[:26].strip(): line[26:].split()[:2] for line in stdout.splitlines()
            if line.startswith("Max ")}
    assert rows["Max data size"] == [str(96 * 1024 * 1024)] * 2
    assert rows["Max file size"] == [str(3 * 1024 * 1024)] * 2
    assert rows["Max core file size"] == ["0", "0"]
    assert rows["Max processes"][0] == rows["Max processes"][1] != "unlimited"
    assert "raised" not in stdout


_WITH_TERMINAL = """
import asyncio, json, sys
from pathlib import Path
from dexter.config import Settings
from dexter.sandbox.cgroups import PoolStatus
from dexter.sandbox.policy import build_policy
from dexter.sandbox.process import run_command
from dexter.sandbox.runner import Bubblewrap, detect_runner
ws = Path(sys.argv[1])
s = Settings(); s.home = str(ws / '.dexter'); s.scratchpad_dir = str(ws / 'scratchpads')
r = detect_runner(s)
runners = [r, Bubblewrap(r.binary, r.prlimit, seccomp=r.seccomp, cgroups=PoolStatus(None, 'x'))]
own = open('/proc/self/stat').read().rsplit(')', 1)[1].split()[4]
cmd = "cut -d' ' -f7 /proc/self/stat; (: < /dev/tty) 2>/dev/null && echo tty-open || echo no-tty"
out = []
for runner in runners:
    res = asyncio.run(run_command(cmd, ws, 30, runner=runner, policy=build_policy(s, ws)))
    out.append(res.stdout.kept.decode())
print(json.dumps({"own_tty": own, "runs": out}))
"""


def test_a_command_never_has_dexters_terminal(world: World, tmp_path: Path) -> None:
    """dexter runs with a terminal (a pseudo-terminal here); a command, started through the
    cgroup helper or directly, has no controlling terminal, so it cannot read keystrokes
    from it or push input into it (``TIOCSTI``)."""
    import pty

    script = tmp_path / "with_terminal.py"
    script.write_text(_WITH_TERMINAL)
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), *sys.path])}
    pid, fd = pty.fork()
    if pid == 0:  # the child: a session leader whose controlling terminal is the pty
        try:
            os.execve(sys.executable, [sys.executable, str(script), str(world.workspace)], env)
        finally:
            os._exit(127)
    chunks = []
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(fd)
    _, status = os.waitpid(pid, 0)
    text = b"".join(chunks).decode(errors="replace")
    assert os.waitstatus_to_exitcode(status) == 0, text
    report = json.loads(text.strip().splitlines()[-1])
    assert report["own_tty"] != "0"  # the test is real: dexter's process has a terminal
    for run in report["runs"]:
        lines = run.split()
        assert lines[0] == "0" and "no-tty" in run and "tty-open" not in run


async def test_a_command_that_outlives_dexter_is_killed_with_it(world: World, tmp_path: Path) -> None:
    script = tmp_path / "parent.py"
    script.write_text(
        "import asyncio, sys\n"
        "from pathlib import Path\n"
        "from dexter.config import Settings\n"
        "from dexter.sandbox.policy import build_policy\n"
        "from dexter.sandbox.runner import detect_runner\n"
        "from dexter.sandbox.process import run_command\n"
        "ws = Path(sys.argv[1])\n"
        "s = Settings(); s.home = str(ws / '.dexter')\n"
        "r = detect_runner(s)\n"
        "asyncio.run(run_command('echo started > started; sleep 30; echo survived > survived', ws, 60,"
        " runner=r, policy=build_policy(s, ws)))\n")
    proc = subprocess.Popen([sys.executable, str(script), str(world.workspace)])
    for _ in range(200):
        if (world.workspace / "started").exists():
            break
        await asyncio.sleep(0.05)
    proc.kill()
    proc.wait()
    await asyncio.sleep(0.5)
    out = subprocess.run(["pgrep", "-f", "sleep 30; echo survived"], capture_output=True, text=True)
    assert (world.workspace / "started").exists()
    assert out.stdout.strip() == ""


def test_a_workspace_of_slash_is_refused() -> None:
    with pytest.raises(SandboxPolicyError, match="whole system"):
        build_policy(Settings(), Path("/"))


def test_bwrap_options_bind_the_workspace_after_the_private_home(world: World) -> None:
    policy = build_policy(settings_for(world), world.workspace)
    argv = Bubblewrap("bwrap").argv(["/bin/sh", "-c", "true"], policy)
    assert argv.index("--unshare-net") > 0 and "--die-with-parent" in argv
    home_at = argv.index(str(world.home))
    ws_at = max(i for i, a in enumerate(argv) if a == str(world.workspace))
    assert argv[home_at - 1] == "--tmpfs" and home_at < ws_at


@pytest.mark.parametrize("fd_binds", [True, False])
def test_binds_use_each_checked_descriptor_once_or_the_path(world: World, fd_binds: bool) -> None:
    """bwrap 0.8 and later binds duplicates of the descriptors the check opened (and closes
    each once mounted, so a bwrap option names every one exactly once); an older bwrap
    binds the paths, and no descriptor is handed over at all."""
    from dexter.sandbox.guard import prepare

    policy = build_policy(settings_for(world), world.workspace)
    prepared = prepare(policy)
    runner = Bubblewrap("bwrap", fd_binds=fd_binds)
    try:
        with runner.launch(["/bin/sh", "-c", "true"], policy, prepared) as launch:
            argv, passed = launch.argv, set(launch.pass_fds)
    finally:
        prepared.close()
    named = [int(argv[i + 1]) for i, a in enumerate(argv) if a in ("--bind-fd", "--ro-bind-fd")]
    seccomp = [int(argv[i + 1]) for i, a in enumerate(argv) if a == "--seccomp"]
    assert "/proc/self/fd" not in " ".join(argv)
    assert len(named) == len(set(named)) and passed == set(named) | set(seccomp)
    if fd_binds:
        assert ["--bind-fd", str(named[0]), str(world.workspace)] == \
            argv[argv.index("--bind-fd"):argv.index("--bind-fd") + 3]
        assert str(world.workspace / ".git") in argv and len(named) >= 3
    else:
        assert named == [] and ["--bind", str(world.workspace), str(world.workspace)] == \
            argv[argv.index("--bind"):argv.index("--bind") + 3]


async def test_run_command_without_a_policy_runs_directly(tmp_path: Path) -> None:
    result = await run_command("echo hi", tmp_path, 5)
    assert result.exit_code == 0 and b"hi" in result.stdout.kept and result.sandbox_note == ""


_AS_USER = """
import asyncio, json, sys
from pathlib import Path
from dexter.config import Settings
from dexter.sandbox.policy import build_policy
from dexter.sandbox.process import run_command
from dexter.sandbox.runner import detect_runner
ws = Path(sys.argv[1])
s = Settings(); s.home = str(ws / '.dexter'); s.scratchpad_dir = str(ws / 'scratchpads')
s.bash.max_processes = 20
r = detect_runner(s)
cmd = ("id -u; mv .git g2; echo 1 > /proc/sys/fs/lease-break-time; "
       "for i in $(seq 1 60); do sleep 5 & done 2>&1 | head -1")
res = asyncio.run(run_command(cmd, ws, 30, runner=r, policy=build_policy(s, ws)))
print(json.dumps({"status": r.status.describe(), "text": res.text()}))
"""


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                    reason="needs root to become another user (setpriv)")
def test_a_dexter_that_is_not_root_gets_the_same_boundary() -> None:
    import tempfile

    top = Path(tempfile.mkdtemp(prefix="dexter-as-nobody-"))  # pytest's tmp is root's only
    try:
        _as_nobody(top)
    finally:
        shutil.rmtree(top, ignore_errors=True)


def _as_nobody(top: Path) -> None:
    ws = top / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    os.chmod(top, 0o755)
    subprocess.run(["chown", "-R", "65534:65534", str(ws)], check=True)
    root = Path(__file__).resolve().parents[1]
    site = [p for p in sys.path if p.endswith("site-packages")]
    env = {"PATH": os.environ["PATH"], "HOME": str(ws),
           "PYTHONPATH": os.pathsep.join([str(root), *site])}
    become = ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"]
    for python in (sys.executable, "/usr/bin/python3"):
        probe = subprocess.run([*become, python, "-c", "import pydantic, dexter"], env=env,
                               capture_output=True, check=False)
        if probe.returncode == 0:
            break
    else:
        pytest.skip("no Python this machine's nobody user can run dexter with")
    done = subprocess.run([*become, python, "-c", _AS_USER, str(ws)], env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["status"].startswith("Shell sandbox: bubblewrap")
    assert "shared memory" in report["status"]  # no cgroup for a user: said, not hidden
    text = report["text"]
    assert "Exit code: 0" in text and "65534" in text
    assert "cannot move '.git'" in text and "Read-only file system" in text
    assert "fork" in text.lower() or "resource" in text.lower()
