"""The parts of the shell sandbox below bwrap: the workspace scan, the protected paths of a
policy, the checks before and after a command, the seccomp filter and the cgroups."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from dexter.config import Settings, files_read_at_start
from dexter.sandbox import scan as scan_module
from dexter.sandbox.cgroups import cgroup_pool, join_argv
from dexter.sandbox.guard import ProtectionRefused, after, first_link, open_nofollow, prepare
from dexter.sandbox.paths import is_secret_name, secret_component_reason
from dexter.sandbox.policy import build_policy
from dexter.sandbox.scan import TreeScanner, only_certificates
from dexter.sandbox.seccomp import DENIED, seccomp_program

CERT = ("-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----\n")


def _settings(ws: Path) -> Settings:
    settings = Settings()
    settings.home = str(ws / ".dexter")
    settings.scratchpad_dir = str(ws / "scratchpads")
    return settings


@pytest.mark.parametrize("name", [
    ".env", ".ENV", ".env.local", "credentials", "credentials.json", "a.pem", "id_rsa",
    "id_ed25519.pub", ".ssh", ".netrc", "x.key", "ｃｒｅｄｅｎｔｉａｌｓ", "foo.PEM.", "notes.md",
    "env", ".git", "credentials_x", "index.js", "keyring",
])
def test_the_fast_secret_name_check_agrees_with_the_reasoned_one(name: str) -> None:
    assert is_secret_name(name) == (secret_component_reason(name) is not None)


def test_the_scan_finds_secrets_at_any_depth_and_in_every_folder(tmp_path: Path) -> None:
    deep = tmp_path / "a" / "b" / "c" / "d" / "e" / "f" / "g"
    deep.mkdir(parents=True)
    (deep / "service.pem").write_text("x")
    (tmp_path / "node_modules" / "pkg" / ".ssh").mkdir(parents=True)
    (tmp_path / ".venv" / "lib").mkdir(parents=True)
    (tmp_path / ".venv" / "lib" / "credentials.json").write_text("x")
    (tmp_path / "sub" / ".git").mkdir(parents=True)
    (tmp_path / "sub" / ".git" / "id_rsa").write_text("inside .git: not walked")
    (tmp_path / "link.pem").symlink_to("/etc/hostname")
    found = TreeScanner().scan([tmp_path])
    assert set(found.secret_files) == {deep / "service.pem",
                                       tmp_path / ".venv" / "lib" / "credentials.json"}
    assert found.secret_dirs == [tmp_path / "node_modules" / "pkg" / ".ssh"]
    assert found.git_entries == [tmp_path / "sub" / ".git"]


def test_folders_changed_moments_ago_are_read_again_every_scan(tmp_path: Path) -> None:
    (tmp_path / "x" / "y").mkdir(parents=True)
    scanner = TreeScanner()
    first, second = scanner.scan([tmp_path]), scanner.scan([tmp_path])
    assert first.listed == first.folders == 3 and second.listed == 3


def test_a_cached_folder_is_read_again_when_its_times_are_put_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scan_module, "STABLE_NS", 0)  # cache at once
    folder = tmp_path / "data"
    folder.mkdir()
    scanner = TreeScanner()
    assert scanner.scan([tmp_path]).secret_files == []
    assert scanner.scan([tmp_path]).listed == 0  # both folders remembered
    before = os.stat(folder)
    time.sleep(0.02)  # past the file system clock's tick, so ctime moves
    (folder / "id_rsa").write_text("key")
    os.utime(folder, ns=(before.st_atime_ns, before.st_mtime_ns))  # mtime forged back
    assert os.stat(folder).st_mtime_ns == before.st_mtime_ns
    assert scanner.scan([tmp_path]).secret_files == [folder / "id_rsa"]


def test_certificate_bundles_are_not_secrets_but_keys_are(tmp_path: Path) -> None:
    bundle, key, mixed = tmp_path / "cacert.pem", tmp_path / "k.pem", tmp_path / "m.pem"
    bundle.write_text("# Issuer: x\n" + CERT + "\n" + CERT)
    key.write_text("-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n")
    mixed.write_text(CERT + "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----\n")
    assert only_certificates(bundle)
    assert not only_certificates(key) and not only_certificates(mixed)
    assert not only_certificates(tmp_path / "missing.pem")


def _repo(path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(path)], check=True, capture_output=True)


def test_the_policy_protects_every_git_folder_git_would_use(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _repo(ws)
    _repo(ws / "vendored")
    _repo(ws / "store")
    (ws / "sub").mkdir()
    (ws / "sub" / ".git").write_text("gitdir: ../store/.git\n")
    (ws / "store" / ".git" / "commondir").write_text("../../common\n")
    with (ws / ".git" / "config").open("a") as config:
        config.write("[core]\n\thooksPath = .githooks\n[include]\n\tpath = ../shared.gitconfig\n")
    policy = build_policy(_settings(ws), ws)
    modes = {p.path: p.mode for p in policy.protected}
    assert modes[ws / ".git"] == modes[ws / "vendored" / ".git"] == "read-only"
    assert modes[ws / "sub" / ".git"] == modes[ws / "store" / ".git"] == "read-only"
    assert modes[ws / "common"] == "absent"  # the commondir named, not there: never created
    assert modes[ws / ".githooks"] == "absent"
    assert ws.parent / "shared.gitconfig" not in modes  # outside: not the command's to write
    assert modes[ws / ".dexter"] == "hidden" and modes[ws / "scratchpads"] == "read-only"
    assert modes[ws / ".env"] == modes[ws / "dexter.toml"] == "absent"


def test_the_config_files_read_at_start_include_the_workspace_ones(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    settings.config_path = str(tmp_path / "my.toml")
    files = files_read_at_start(settings, tmp_path)
    for path in (tmp_path / "my.toml", tmp_path / ".env", tmp_path / "dexter.toml",
                 tmp_path / ".dexter"):
        assert path in files


def test_a_protected_path_behind_a_link_refuses_the_command(tmp_path: Path) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    (ws / "scratchpads").symlink_to(outside)
    policy = build_policy(_settings(ws), ws)
    with pytest.raises(ProtectionRefused) as refused:
        prepare(policy)
    message = str(refused.value)
    assert "scratchpads" in message and str(outside) in message and "rm 'scratchpads'" in message
    assert list(outside.iterdir()) == []  # nothing was made through the link


def test_open_nofollow_stops_at_the_first_link(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    os.close(open_nofollow(tmp_path / "real"))
    with pytest.raises(Exception, match="link"):
        open_nofollow(tmp_path / "link" / "x")
    assert first_link(tmp_path / "link" / "x", tmp_path) == (tmp_path / "link", str(tmp_path / "real"))


def test_after_a_command_what_it_created_or_linked_is_moved_aside(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    settings = _settings(ws)
    policy = build_policy(settings, ws)
    prepared = prepare(policy)
    prepared.close()
    assert (ws / ".dexter").is_dir() and (ws / "scratchpads").is_dir()  # made first
    # what a command could do meanwhile (done here from outside)
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("[core]\n\tfsmonitor = touch pwned\n")
    (ws / "dexter.toml").symlink_to("/etc/passwd")
    (ws / "deep" / "er").mkdir(parents=True)
    (ws / "deep" / "er" / ".git").mkdir()
    findings = after(prepared, policy, ws / ".dexter" / "quarantine")
    assert not os.path.lexists(ws / ".git") and not os.path.lexists(ws / "dexter.toml")
    assert not os.path.lexists(ws / "deep" / "er" / ".git")
    text = " | ".join(findings)
    assert "created .git" in text and "dexter.toml a symbolic link to /etc/passwd" in text
    assert "deep/er/.git" in text
    kept = {p.relative_to(ws / ".dexter" / "quarantine").parts[1:]
            for p in (ws / ".dexter" / "quarantine").glob("*/**/*") if p.name in
            (".git", "dexter.toml")}
    assert (".git",) in kept and ("dexter.toml",) in kept and ("deep", "er", ".git") in kept


def test_after_a_quiet_command_there_is_nothing_to_report(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _repo(ws)
    (ws / "notes.md").write_text("x")
    policy = build_policy(_settings(ws), ws)
    prepared = prepare(policy)
    prepared.close()
    (ws / "out.csv").write_text("a,b\n")
    assert after(prepared, policy, ws / ".dexter" / "quarantine") == []


def test_the_seccomp_filter_compiles_with_every_listed_call() -> None:
    program = seccomp_program()
    if program.problem:
        pytest.skip(program.problem)
    assert len(program.bpf) > 100 and len(program.bpf) % 8 == 0  # sock_filter records
    # only calls this architecture never had may be missing from the filter
    assert set(program.skipped) <= {"vm86", "vm86old", "stime", "create_module",
                                    "query_module", "get_kernel_syms", "nfsservctl",
                                    "uselib", "ustat", "sysfs", "_sysctl", "umount"}
    assert {"keyctl", "ptrace", "mount", "bpf", "unshare"} <= set(DENIED) - set(program.skipped)


def test_a_command_joins_its_cgroup_before_bwrap_starts() -> None:
    status = cgroup_pool()
    if status.pool is None:
        pytest.skip(status.problem)
    with status.pool.acquire(40, 128 * 1024 * 1024) as group:
        assert (group.pids / "pids.max").read_text().strip() == "43"
        argv = join_argv(group, ["bwrap", "--", "true"])
        assert argv[:2] == ["/bin/sh", "-c"] and argv[-3:] == ["bwrap", "--", "true"]
        done = subprocess.run(join_argv(group, ["/bin/sh", "-c", "cat /proc/self/cgroup"]),
                              capture_output=True, text=True, check=True)
        assert group.pids.name in done.stdout


def test_a_protection_this_machine_cannot_give_is_named_with_its_reason() -> None:
    from dexter.sandbox.cgroups import PoolStatus
    from dexter.sandbox.runner import Bubblewrap
    from dexter.sandbox.seccomp import SeccompProgram

    runner = Bubblewrap("bwrap", None, seccomp=SeccompProgram(problem="libseccomp is not installed"),
                        cgroups=PoolStatus(None, "dexter may not create cgroups"), as_root=True)
    line = runner.status.describe()
    assert line.startswith("Shell sandbox: bubblewrap") and "Not enforced here:" in line
    for part in ("seccomp filter (libseccomp is not installed)",
                 "process limit, which the kernel does not apply to root",
                 "counts shared memory", "prlimit is not installed"):
        assert part in line
    assert Bubblewrap("bwrap", "/usr/bin/prlimit", seccomp=SeccompProgram(bpf=b"x" * 8),
                      cgroups=PoolStatus(None, "no"), as_root=False).status.weaker == (
        "a memory limit that counts shared memory and tmpfs pages (no)",)


def test_a_folder_too_deep_to_mount_is_masked_whole(tmp_path: Path) -> None:
    from dexter.sandbox.scan import MAX_FOLDER_PATH

    folder = tmp_path
    fd = os.open(tmp_path, os.O_RDONLY)
    depth = 0
    while len(os.fsencode(str(folder))) <= MAX_FOLDER_PATH:
        os.mkdir("x" * 200, dir_fd=fd)
        fd = os.open("x" * 200, os.O_RDONLY, dir_fd=fd)
        folder, depth = folder / ("x" * 200), depth + 1
    os.mkdir("inner", dir_fd=fd)
    found = TreeScanner().scan([tmp_path])
    assert found.secret_dirs == [folder]  # the first folder past the limit, nothing below
    assert len(os.fsencode(str(folder.parent))) <= MAX_FOLDER_PATH < len(os.fsencode(str(folder)))
