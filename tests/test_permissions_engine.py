"""The permission engine: precedence, session grants, approvals, non-interactive runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dexter.config import Settings
from dexter.permissions import engine as engine_module
from dexter.permissions.base import PermissionDecision, SessionGrants
from dexter.permissions.engine import (
    RuleBasedPermissions,
    allow_list_problems,
    build_permission_engine,
    preapproved,
)
from dexter.permissions.rules import RuleError
from dexter.sandbox.runner import SandboxStatus


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "README.md").write_text("hi\n")
    (tmp_path / ".dexter").mkdir()
    return tmp_path


def make(ws: Path, **permissions: list[str]) -> RuleBasedPermissions:
    (ws / ".dexter" / "settings.json").write_text(json.dumps({"permissions": permissions}))
    return RuleBasedPermissions(ws, ws / ".dexter")


def bash(engine: RuleBasedPermissions, command: str) -> PermissionDecision:
    return engine.evaluate("bash", {"command": command}, True)


def test_deny_rule_beats_allow_rule(ws: Path) -> None:
    engine = make(ws, allow=["Bash(git push:*)"], deny=["Bash(git push --force:*)"])
    assert bash(engine, "git push origin main").behavior == "allow"
    decision = bash(engine, "git push --force origin")
    assert decision.behavior == "deny" and "Bash(git push --force:*)" in decision.reason


def test_ask_rule_beats_read_only_auto_allow(ws: Path) -> None:
    engine = make(ws, ask=["Bash(cat:*)"])
    assert bash(engine, "cat README.md").behavior == "ask"
    assert bash(engine, "head README.md").behavior == "allow"


def test_every_segment_must_be_allowed(ws: Path) -> None:
    engine = make(ws, allow=["Bash(npm test)"])
    assert bash(engine, "npm test").behavior == "allow"
    assert bash(engine, "npm test | head -5").behavior == "allow"
    decision = bash(engine, "npm test && npm publish")
    assert decision.behavior == "ask"
    assert decision.proposed_rule == "Bash(npm publish)"


def test_tool_wide_allow_never_covers_unknown_commands_or_the_floor(ws: Path) -> None:
    engine = make(ws, allow=["Bash"])
    assert bash(engine, "python3 build.py").behavior == "allow"
    assert bash(engine, "echo $(date)").behavior == "ask"
    assert bash(engine, "rm -rf /").behavior == "deny"
    assert bash(engine, "cat .env").behavior == "deny"


def test_deny_rules_see_inside_substitutions(ws: Path) -> None:
    engine = make(ws, deny=["Bash(curl:*)"])
    assert bash(engine, "echo $(curl https://x)").behavior == "deny"


def test_session_keys_and_proposals(ws: Path) -> None:
    engine = make(ws)
    mutating = bash(engine, "  rm -rf build  ")
    assert (mutating.behavior, mutating.session_key, mutating.cacheable, mutating.proposed_rule) == \
        ("ask", "bash:rm -rf build", True, "Bash(rm -rf build)")
    unknown = bash(engine, "echo $(date)")
    assert (unknown.behavior, unknown.cacheable, unknown.proposed_rule) == ("ask", False, None)
    assert "parser cannot fully follow" in unknown.reason
    write = engine.evaluate("write_file", {"path": "a.txt", "content": "x"}, True)
    edit = engine.evaluate("edit_file", {"path": "a.txt", "old_text": "x", "new_text": "y"}, True)
    assert write.session_key == edit.session_key == "file:write"
    assert (write.behavior, write.proposed_rule, edit.proposed_rule) == ("ask", "Write", "Edit")


def test_write_tools_are_denied_up_front_for_refused_paths(ws: Path) -> None:
    engine = make(ws, allow=["Write"])
    for path in (".env", ".dexter/settings.json", "../elsewhere.txt"):
        decision = engine.evaluate("write_file", {"path": path, "content": "x"}, True)
        assert decision.behavior == "deny", path
    assert engine.evaluate("write_file", {"path": "memo.md", "content": "x"}, True).behavior == "allow"


def test_edit_rules_are_separate_from_write_rules(ws: Path) -> None:
    engine = make(ws, allow=["Write"], deny=["Edit"])
    assert engine.evaluate("edit_file", {"path": "a.txt"}, True).behavior == "deny"
    assert engine.evaluate("write_file", {"path": "a.txt"}, True).behavior == "allow"


def test_web_fetch_is_allowed_unless_a_domain_rule_says_otherwise(ws: Path) -> None:
    engine = make(ws, deny=["WebFetch(domain:evil.com)"], ask=["WebFetch(domain:slow.org)"])
    assert engine.evaluate("web_fetch", {"url": "https://sec.gov/x"}, False).behavior == "allow"
    assert engine.evaluate("web_fetch", {"url": "https://a.evil.com/x"}, False).behavior == "deny"
    assert engine.evaluate("web_fetch", {"url": "https://notevil.com/"}, False).behavior == "allow"
    assert engine.evaluate("web_fetch", {"url": "http://slow.org"}, False).behavior == "ask"


def test_other_tools_follow_needs_approval_and_rules(ws: Path) -> None:
    engine = make(ws, allow=["memory_update"], deny=["web_search"])
    assert engine.evaluate("calculator", {}, False).behavior == "allow"
    assert engine.evaluate("memory_update", {}, True).behavior == "allow"
    assert engine.evaluate("web_search", {"query": "x"}, False).behavior == "deny"
    decision = engine.evaluate("cron", {}, True)
    assert (decision.behavior, decision.session_key) == ("ask", "cron")


def test_bad_input_and_internal_errors_fail_closed(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    engine = make(ws)
    assert engine.evaluate("bash", {"command": 42}, True).behavior == "deny"
    assert engine.evaluate("bash", {}, True).behavior == "deny"

    def boom(*_: Any) -> None:
        raise RuntimeError("parser exploded")

    monkeypatch.setattr(engine_module, "parse_command", boom)
    decision = bash(engine, "ls")
    assert decision.behavior == "deny" and "parser exploded" in decision.reason


def test_always_writes_a_rule_that_a_new_engine_honours(ws: Path) -> None:
    (ws / ".dexter" / "settings.json").write_text(json.dumps({"model": "keep-me"}))
    engine = RuleBasedPermissions(ws, ws / ".dexter")
    decision = bash(engine, "python3 report.py")
    assert decision.proposed_rule == "Bash(python3 report.py)"
    engine.add_rule("allow", decision.proposed_rule)
    assert bash(engine, "python3 report.py").behavior == "allow"
    data = json.loads((ws / ".dexter" / "settings.json").read_text())
    assert data == {"model": "keep-me", "permissions": {"allow": ["Bash(python3 report.py)"]}}
    fresh = RuleBasedPermissions(ws, ws / ".dexter")
    assert bash(fresh, "python3 report.py").behavior == "allow"
    assert bash(fresh, "python3 other.py").behavior == "ask"


def test_add_rule_rejects_malformed_rules(ws: Path) -> None:
    engine = make(ws)
    with pytest.raises(RuleError):
        engine.add_rule("allow", "Bash(ls &&)")
    assert json.loads((ws / ".dexter" / "settings.json").read_text()) == {"permissions": {}}


def test_malformed_rules_surface_as_warnings(ws: Path) -> None:
    engine = make(ws, allow=["Bash(git log:*)", "Bash(oops"])
    assert len(engine.warnings) == 1 and "Bash(oops" in engine.warnings[0]


def test_session_grants_prune_bash_keys_on_a_new_query() -> None:
    grants = SessionGrants({"bash:ls -la", "file:write", "cron"})
    ask = PermissionDecision("ask", session_key="bash:ls -la")
    assert grants.covers(ask)
    assert not grants.covers(PermissionDecision("ask", session_key="bash:ls -la", cacheable=False))
    grants.new_query()
    assert grants == {"file:write", "cron"}
    assert not grants.covers(ask)


def test_floor_beats_yes(ws: Path) -> None:
    engine = make(ws, allow=["Bash"])
    decision = engine.decide_noninteractive("bash", {"command": "cat ~/.ssh/id_rsa"}, True, {"bash"}, True)
    assert decision.behavior == "deny" and "safety floor" in decision.reason
    rule_denied = make(ws, deny=["Write"]).decide_noninteractive(
        "write_file", {"path": "a.txt"}, True, set(), True)
    assert rule_denied.behavior == "deny"


def test_yes_approves_every_ask_when_the_shell_is_sandboxed(ws: Path) -> None:
    engine = make(ws)
    engine.shell_status = SandboxStatus(True, "bubblewrap")
    engine.auto_allow_sandboxed = False
    for tool, args in (("bash", {"command": "echo $(date)"}), ("bash", {"command": "curl -s x.com"}),
                       ("write_file", {"path": "a.txt"})):
        assert engine.decide_noninteractive(tool, args, True, set(), True).behavior == "allow"


def test_without_a_sandbox_yes_does_not_approve_commands_the_parser_cannot_prove(ws: Path) -> None:
    engine = make(ws)  # no sandbox
    decision = engine.decide_noninteractive("bash", {"command": "echo $(date)"}, True, set(), True)
    assert decision.behavior == "deny"
    assert "not sandboxed" in decision.reason and "apt-get install bubblewrap" in decision.reason
    assert engine.decide_noninteractive("bash", {"command": "ls"}, True, set(), True).behavior == "allow"
    # An explicit allow still works, and --yes still approves the other tools.
    assert engine.decide_noninteractive("bash", {"command": "echo $(date)"}, True, {"bash"},
                                        True).behavior == "allow"
    assert engine.decide_noninteractive("write_file", {"path": "a.txt"}, True, set(),
                                        True).behavior == "allow"


def test_allow_names_a_tool_or_a_rule(ws: Path) -> None:
    engine = make(ws)

    def decide(tool: str, args: dict[str, Any], allow: set[str]) -> str:
        return engine.decide_noninteractive(tool, args, True, allow, False).behavior

    assert decide("bash", {"command": "python3 x.py"}, {"bash"}) == "allow"
    assert decide("write_file", {"path": "a.txt"}, {"write_file"}) == "allow"
    assert decide("write_file", {"path": "a.txt"}, {"Write"}) == "allow"
    assert decide("edit_file", {"path": "a.txt"}, {"Write"}) == "deny"
    assert decide("bash", {"command": "git push origin"}, {"Bash(git push:*)"}) == "allow"
    assert decide("bash", {"command": "git push && rm x"}, {"Bash(git push:*)"}) == "deny"
    assert decide("bash", {"command": "git push | head -3"}, {"Bash(git push:*)"}) == "allow"


def test_unapproved_noninteractive_denial_says_how_to_allow(ws: Path) -> None:
    decision = make(ws).decide_noninteractive("bash", {"command": "make build"}, True, set(), False)
    assert decision.behavior == "deny"
    assert "--allow bash" in decision.reason and "Bash(make build)" in decision.reason


def test_module_level_preapproved() -> None:
    assert preapproved("bash", set(), True)
    assert preapproved("write_file", {"write_file"}, False)
    assert preapproved("bash", {"Bash(git log:*)"}, False, {"command": "git log -3"})
    assert not preapproved("bash", {"Bash(git log:*)"}, False, {"command": "git log; rm x"})
    assert not preapproved("bash", {"not a rule("}, False, {"command": "ls"})


def test_build_from_settings(ws: Path) -> None:
    settings = Settings(home=str(ws / ".dexter"))
    (ws / ".dexter" / "settings.json").write_text(json.dumps({"permissions": {"deny": ["Read"]}}))
    engine = build_permission_engine(settings, cwd=ws)
    assert engine.evaluate("read_file", {"path": "README.md"}, False).behavior == "deny"
    assert engine.settings_path == ws / ".dexter" / "settings.json"


def test_allow_list_problems_name_typos_and_unknown_tools() -> None:
    tools = {"bash", "write_file", "web_fetch"}
    assert allow_list_problems(["Bash(git log:*)", "Write", "write_file", "bash",
                                "WebFetch(domain:sec.gov)"], tools) == []
    problems = allow_list_problems(["Bash(git log:*", "write"], tools)
    assert len(problems) == 2
    assert "missing its closing ')'" in problems[0]
    assert "no tool 'write'" in problems[1] and "write_file" in problems[1]
