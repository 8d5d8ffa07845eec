"""Each thing the sandbox protects, attacked four ways through ``dexter ask``: renamed (with
a look-alike put in its place), replaced, made a symbolic link to the home folder, and
written or pre-created. The fake LLM issues every attempt as its own ``bash`` call, plain
and hidden from the command check as ``echo B64 | base64 -d | sh``, without ``--yes`` and
with it; the effect is read from outside the sandbox afterwards: the protected thing is
the same file or folder with the same content, no look-alike or link is left, nothing in
the home folder changed, and the next start widens nothing.

docs/security.md ("Red-team attempts") lists these attempts and their outcomes.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from dexter.config import Settings
from dexter.sandbox.runner import detect_runner
from dexter.testing.fakellm import FakeLLM, Reply, ToolCallSpec
from dexter.testing.shell_corpus import World
from tests.cli_helpers import cli_env, run_cli
from tests.sandbox_helpers import MODES, alerts, ask, hide, snapshot

RUNNER = detect_runner(Settings())
pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(not RUNNER.status.active,
                                 reason=f"no OS sandbox here: {RUNNER.status.reason}")]
WIDE_RULES = '{"permissions": {"allow": ["Bash(curl:*)"]}, "trusted_files": {}}'


@pytest.fixture
def machine(tmp_path: Path) -> World:
    """A home with planted keys, a folder outside, and a git workspace whose DEXTER_HOME
    (``./.dexter``, given as an absolute path) holds a harmless settings file."""
    return World(tmp_path).build()


def _identity(path: Path) -> tuple[int, bool]:
    st = os.lstat(path)
    return st.st_ino, path.is_symlink()


@pytest.mark.parametrize(("yes", "hidden"), MODES)
def test_the_scratchpads_folder_cannot_be_renamed_replaced_linked_or_written(
        llm: FakeLLM, machine: World, yes: bool, hidden: bool) -> None:
    m = machine
    pads = m.workspace / "scratchpads"
    pads.mkdir()
    (pads / "earlier.jsonl").write_text('{"type": "query"}\n')
    before, home_before = _identity(pads), snapshot(m.home)
    ask(llm, m, ["mv scratchpads sp.old; mkdir -p scratchpads; echo x > scratchpads/new.jsonl",
                 f"rm -rf scratchpads; ln -sfn {m.home} scratchpads",
                 "echo '{}' > scratchpads/planted.jsonl; : > scratchpads/earlier.jsonl"],
        yes=yes, hidden=hidden)
    assert _identity(pads) == before
    assert (pads / "earlier.jsonl").read_text() == '{"type": "query"}\n'
    assert not (pads / "planted.jsonl").exists() and not (pads / "new.jsonl").exists()
    assert not os.path.lexists(m.workspace / "sp.old")
    assert snapshot(m.home) == home_before


@pytest.mark.parametrize(("yes", "hidden"), MODES)
def test_dexter_home_cannot_be_renamed_replaced_linked_or_written(
        llm: FakeLLM, machine: World, yes: bool, hidden: bool) -> None:
    m = machine
    home = m.workspace / ".dexter"
    settings = home / "settings.json"
    before, home_before = _identity(home), snapshot(m.home)
    ask(llm, m, [f"mv .dexter .dexter.old; mkdir -p .dexter; echo '{WIDE_RULES}' > "
                 ".dexter/settings.json",
                 f"rm -rf .dexter; ln -sfn {m.home} .dexter",
                 f"echo '{WIDE_RULES}' > .dexter/settings.json; ls -la .dexter"],
        yes=yes, hidden=hidden)
    assert _identity(home) == before
    assert json.loads(settings.read_text()).get("permissions") == {}
    assert not os.path.lexists(m.workspace / ".dexter.old")
    assert snapshot(m.home) == home_before


@pytest.mark.parametrize("name", [".env", "dexter.toml"])
@pytest.mark.parametrize(("yes", "hidden"), MODES)
def test_a_config_file_that_does_not_exist_cannot_be_created_by_any_route(
        llm: FakeLLM, machine: World, name: str, yes: bool, hidden: bool) -> None:
    """Absent at the start: written, renamed into place, made a link or a folder, each is
    rolled back after the command (and shown), so the next start reads none of it."""
    m = machine
    line = "DEXTER_BASH_NETWORK=true" if name == ".env" else "[bash]\\nnetwork = true"
    result = ask(llm, m, [f"printf '{line}\\n' > {name}",
                          f"printf '{line}\\n' > staged; mv staged {name}",
                          f"ln -s {m.home}/.bash_history {name}",
                          f"mkdir -p {name}/x",
                          f"mkfifo {name}"],
                 yes=yes, hidden=hidden)
    assert not os.path.lexists(m.workspace / name)
    if hidden:  # the plain forms may be refused by the command check before they run
        assert any(name in a for a in alerts(result)), alerts(result)


@pytest.mark.parametrize("name", [".env", "dexter.toml"])
@pytest.mark.parametrize(("yes", "hidden"), MODES)
def test_a_config_file_that_exists_cannot_be_renamed_replaced_linked_or_written(
        llm: FakeLLM, machine: World, name: str, yes: bool, hidden: bool) -> None:
    m = machine
    text = "DEXTER_MAX_ITERATIONS=12\n" if name == ".env" else "max_iterations = 12\n"
    line = "DEXTER_BASH_NETWORK=true" if name == ".env" else "[bash]\\nnetwork = true"
    path = m.workspace / name
    path.write_text(text)
    before, before_mode = _identity(path), os.stat(path).st_mode & 0o777
    ask(llm, m, [f"printf '{line}\\n' >> {name}",
                 f"mv {name} {name}.old; printf '{line}\\n' > {name}",
                 f"printf '{line}\\n' > staged; mv -f staged {name}",
                 f"rm -f {name}; ln -s {m.home}/.bash_history {name}",
                 f"ln {name} hard; printf '{line}\n' >> hard; chmod 666 {name}",
                 "ln .git/config gitcfg; printf '[core]\\n\\tfsmonitor = touch x\\n' >> gitcfg"],
        yes=yes, hidden=hidden)
    assert _identity(path) == before and path.read_text() == text
    assert not os.path.lexists(m.workspace / f"{name}.old")
    hard = m.workspace / "hard"  # a hard link cannot cross the read-only mount
    assert not hard.exists() or not os.path.samefile(hard, path)
    assert "fsmonitor" not in (m.workspace / ".git" / "config").read_text()
    assert os.stat(path).st_mode & 0o777 == before_mode


@pytest.mark.parametrize("recorded", [False, True], ids=["no-record-yet", "record-exists"])
@pytest.mark.parametrize("hidden", [False, True])
def test_a_command_cannot_forge_dexters_record_of_its_own_settings_files(
        llm: FakeLLM, tmp_path: Path, hidden: bool, recorded: bool) -> None:
    """Started in the home folder with the default (relative) DEXTER_HOME, the user state
    folder, where dexter records which settings files it wrote, is in the workspace. A
    folder brought by a clone has a ``.dexter/settings.json`` that allows curl; a command
    tries to make dexter take it for its own: by writing the record, by renaming the
    folders above it, by linking the record's folder elsewhere. None of it sticks, and
    the next start still ignores the allow rule."""
    home = tmp_path / "home"
    (home / ".dexter").mkdir(parents=True)
    settings = home / ".dexter" / "settings.json"
    settings.write_text(WIDE_RULES)
    state = home / ".local" / "state" / "dexter"
    record = state / "own-settings.json"
    earlier = json.dumps({str(tmp_path / "elsewhere" / "settings.json"): "0" * 64})
    if recorded:  # dexter wrote a settings file elsewhere before
        state.mkdir(parents=True)
        record.write_text(earlier)
    forged = json.dumps({str(settings): hashlib.sha256(
        WIDE_RULES.encode()).hexdigest()})
    env = cli_env(llm, home, HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"),
                  DEXTER_MAX_RETRIES="0")
    env.pop("DEXTER_HOME", None)
    env.pop("XDG_STATE_HOME", None)
    attempts = [f"mkdir -p .local/state/dexter && echo '{forged}' > "
                ".local/state/dexter/own-settings.json",
                f"mv .local .local.old; mkdir -p .local/state/dexter && echo '{forged}' > "
                ".local/state/dexter/own-settings.json",
                f"mkdir -p stash .local/state && echo '{forged}' > stash/own-settings.json; "
                "rm -rf .local/state/dexter; ln -s ../../stash .local/state/dexter"]
    llm.enqueue(*[Reply(tool_calls=[ToolCallSpec("bash", {"command": hide(a) if hidden else a})])
                  for a in attempts], Reply(text="Done."))
    first = run_cli(["ask", "--plain", "go"], cwd=home, env=env, timeout=180)
    assert first.code == 0, first.stderr
    assert not state.is_symlink()
    if recorded:  # read-only: the record, and the folders above it, stay as they were
        assert record.read_text() == earlier
        assert not os.path.lexists(home / ".local.old")
    else:  # absent: whatever a command created there is rolled back after it
        assert not os.path.lexists(state)
        if hidden:  # a plain one is refused by the command check before it runs
            assert "! Sandbox: the command created .local/state/dexter" in first.stdout
    llm.enqueue(Reply(text="ok"))
    second = run_cli(["ask", "--plain", "again"], cwd=home, env=env, timeout=180)
    assert f"Ignored permissions.allow in {settings}" in " ".join(second.stderr.split())
    # the control: the forged record is the one that would have worked
    state.mkdir(parents=True, exist_ok=True)
    record.write_text(forged)
    llm.enqueue(Reply(text="ok"))
    control = run_cli(["ask", "--plain", "again"], cwd=home, env=env, timeout=180)
    assert control.code == 0 and "Ignored" not in control.stderr, control.stderr
