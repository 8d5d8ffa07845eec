"""Decisions when commands run in the sandbox: what runs at once, what asks, what it grants."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dexter.permissions.engine import RuleBasedPermissions
from dexter.sandbox.policy import Grants
from dexter.sandbox.runner import SandboxStatus


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "ws"
    (root / ".dexter").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "prices.csv").write_text("AAPL,190\n")
    return root


def engine(ws: Path, auto: bool = True, writable: tuple[Path, ...] = (),
           **rules: list[str]) -> RuleBasedPermissions:
    (ws / ".dexter" / "settings.json").write_text(json.dumps({"permissions": rules}))
    return RuleBasedPermissions(ws, ws / ".dexter", contained=SandboxStatus(True, "bubblewrap"),
                                auto_allow_sandboxed=auto, writable=writable)


def decide(e: RuleBasedPermissions, command: str):  # type: ignore[no-untyped-def]
    return e.evaluate("bash", {"command": command}, True)


@pytest.mark.parametrize("command", [
    "ls", "python3 analysis.py", "echo $(date) > out.txt", "rm -rf build", "make report",
    "awk -F, '{s+=$2} END {print s}' data.csv", "for f in *.csv; do wc -l $f; done",
])
def test_workspace_only_commands_run_contained_without_asking(ws: Path, command: str) -> None:
    decision = decide(engine(ws), command)
    assert decision.behavior == "allow" and "sandbox" in decision.reason
    assert decision.grants == Grants()


@pytest.mark.parametrize(("command", "grants"), [
    ("curl -s https://www.sec.gov/x", Grants(network=True)),
    ("git clone https://github.com/x/y", Grants(network=True)),
    ("pip install pandas", Grants(network=True)),
    ("wc -l {data}/prices.csv", Grants(read=("{data}/prices.csv",))),
])
def test_commands_that_want_more_ask_and_carry_the_grant(ws: Path, command: str, grants: Grants) -> None:
    data = str(ws.parent / "data")
    decision = decide(engine(ws), command.format(data=data))
    expected = Grants(grants.network, tuple(p.format(data=data) for p in grants.read),
                      tuple(p.format(data=data) for p in grants.write))
    assert decision.behavior == "ask" and decision.grants == expected
    assert expected.describe() in decision.reason


@pytest.mark.parametrize("command", [
    "git remote -v", "git remote", "git remote get-url origin", "git remote show -n origin",
    "git remote add upstream https://github.com/x/y", "git -C sub log --oneline -5",
    "git -c core.pager=cat diff --stat", "git --no-pager log -1", "git status --short",
    "git config --get remote.origin.url", "git submodule status", "git submodule",
    "git archive -o out.tar HEAD", "git branch -a", "git show HEAD:README.md",
])
def test_local_git_commands_run_contained_without_asking(ws: Path, command: str) -> None:
    decision = decide(engine(ws), command)
    assert decision.behavior == "allow" and decision.grants == Grants(), command


@pytest.mark.parametrize("command", [
    "git fetch origin", "git pull", "git push origin main", "git ls-remote origin",
    "git -C sub fetch", "git -c http.sslVerify=false clone https://github.com/x/y",
    "git --no-pager fetch", "git remote update", "git remote show origin",
    "git remote add -f upstream https://github.com/x/y", "git remote set-head origin -a",
    "git remote prune origin", "git submodule update --init",
    "git archive --remote=https://github.com/x/y HEAD",
])
def test_git_commands_that_reach_a_remote_ask_for_the_network(ws: Path, command: str) -> None:
    decision = decide(engine(ws), command)
    assert decision.behavior == "ask" and decision.grants == Grants(network=True), command


def test_secrets_and_the_home_folder_are_never_granted(ws: Path) -> None:
    home = ws.parent / "home"
    (home / ".ssh").mkdir()
    assert decide(engine(ws), f"ls {home}").grants == Grants()
    assert decide(engine(ws), "cat ~/.ssh/id_rsa").behavior == "deny"  # the floor stays first


def test_the_floor_and_deny_rules_still_come_first(ws: Path) -> None:
    assert decide(engine(ws), "printenv").behavior == "deny"
    assert decide(engine(ws, deny=["Bash(make:*)"]), "make report").behavior == "deny"
    assert decide(engine(ws, ask=["Bash(python3:*)"]), "python3 x.py").behavior == "ask"


def test_auto_allow_off_asks_for_what_is_not_read_only(ws: Path) -> None:
    e = engine(ws, auto=False)
    assert decide(e, "ls").behavior == "allow"
    decision = decide(e, "make report")
    assert decision.behavior == "ask" and decision.grants == Grants()


def test_an_allow_rule_grants_what_the_command_needs(ws: Path) -> None:
    decision = decide(engine(ws, allow=["Bash(curl:*)"]), "curl -s https://www.sec.gov/x")
    assert decision.behavior == "allow" and decision.grants == Grants(network=True)


def test_yes_grants_the_network_but_not_paths_outside(ws: Path) -> None:
    e = engine(ws)
    data = ws.parent / "data"
    net = e.decide_noninteractive("bash", {"command": "curl -s https://x.org"}, True, (), True)
    assert net.behavior == "allow" and net.grants == Grants(network=True)
    read = e.decide_noninteractive("bash", {"command": f"cat {data}/prices.csv"}, True, (), True)
    assert read.behavior == "deny" and "allow_read" in read.reason
    explicit = e.decide_noninteractive("bash", {"command": f"cat {data}/prices.csv"}, True,
                                       {"Bash(cat:*)"}, True)
    assert explicit.behavior == "allow" and explicit.grants == Grants(read=(f"{data}/prices.csv",))
    write = e.decide_noninteractive("bash", {"command": f"cp a.csv {data}/"}, True, (), True)
    assert write.behavior == "deny" and "outside the workspace" in write.reason
    configured = engine(ws, writable=(data,))
    allowed = configured.decide_noninteractive("bash", {"command": f"cp a.csv {data}/"}, True, (), True)
    assert allowed.behavior == "allow" and allowed.grants == Grants()  # bound by the policy


def test_without_a_sandbox_asks_carry_a_warning(ws: Path) -> None:
    (ws / ".dexter" / "settings.json").write_text("{}")
    e = RuleBasedPermissions(ws, ws / ".dexter",
                             contained=SandboxStatus(False, "none", "bubblewrap is not installed"))
    decision = decide(e, "make report")
    assert decision.behavior == "ask" and "Not sandboxed" in decision.warning
    assert "bubblewrap is not installed" in decision.warning
    assert decide(e, "ls").warning == ""


def test_approval_dialog_shows_grants_and_the_warning(ws: Path) -> None:
    from rich.console import Console

    from dexter.agent.executor import ApprovalRequest
    from dexter.repl.dialogs import approval_header

    decision = decide(engine(ws), "curl -s https://x.org")
    console = Console(width=100, record=True, color_system=None)
    for item in approval_header(ApprovalRequest("bash", {"command": "curl -s https://x.org"}, decision, "c1")):
        console.print(item)
    assert "inside the sandbox: network" in console.export_text()
    (ws / ".dexter" / "settings.json").write_text("{}")
    bare = RuleBasedPermissions(ws, ws / ".dexter", contained=SandboxStatus(False, "none", "off"))
    console = Console(width=100, record=True, color_system=None)
    request = ApprovalRequest("bash", {"command": "make"}, decide(bare, "make"), "c2")
    for item in approval_header(request):
        console.print(item)
    assert "Not sandboxed" in console.export_text()
