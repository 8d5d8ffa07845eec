"""Rule grammar, matching and settings.json persistence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dexter.permissions.rules import (
    Rule,
    RuleError,
    SettingsFileError,
    load_rules,
    parse_rule,
    save_rule,
)
from dexter.permissions.shell_parse import parse_command


@pytest.mark.parametrize("text", [
    "Bash",
    "Bash(git status)",
    "Bash(git log:*)",
    "Bash(rm -rf build)",
    "Bash(echo '\\(hi\\)')",
    "Bash(grep -n 'a b' notes.txt)",
    "Write",
    "Edit",
    "Read",
    "WebFetch",
    "WebFetch(domain:example.com)",
    "WebSearch",
    "memory_update",
])
def test_round_trip(text: str) -> None:
    rule = parse_rule(text)
    assert str(rule) == text
    assert parse_rule(str(rule)) == rule


def test_parsed_structure_and_normal_forms() -> None:
    assert parse_rule("Bash(git log:*)") == Rule("Bash", "prefix", ("git", "log"))
    assert parse_rule("Bash(echo '\\(hi\\)')").words == ("echo", "(hi)")
    assert parse_rule("Bash(:*)") == Rule("Bash")
    assert parse_rule("bash") == Rule("Bash")
    assert parse_rule("write_file").tool == "Write"
    assert parse_rule("web_search") == Rule("WebSearch")
    assert parse_rule("WebFetch(domain:News.Example.COM.)").domain == "news.example.com"
    assert parse_rule("Edit").tool_name == "edit_file"


@pytest.mark.parametrize(("text", "message"), [
    ("", "non-empty"),
    ("Bash(", "closing"),
    ("Bash()", "empty"),
    ("Bash(ls) extra", "after the closing"),
    ("Bash(ls && rm:*)", "one simple command"),
    ("Bash(ls *.py)", "one simple command"),
    ("Bash(FOO=1 ls)", "without assignments"),
    ("Bash(ls > out)", "one simple command"),
    ("WebFetch(example.com)", "domain:"),
    ("WebFetch(domain:not a host)", "not a domain"),
    ("Write(notes.txt)", "take no argument"),
    ("12abc", "not a tool name"),
    ("Bash)", "without"),
])
def test_malformed_rules_say_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(RuleError, match=message):
        parse_rule(text)


def _seg(command: str):  # type: ignore[no-untyped-def]
    parsed = parse_command(command)
    assert len(parsed.segments) == 1
    return parsed.segments[0]


def test_prefix_matches_at_word_boundaries() -> None:
    rule = parse_rule("Bash(git log:*)")
    assert rule.matches_segment(_seg("git log"))
    assert rule.matches_segment(_seg("git log --oneline -5"))
    assert rule.matches_segment(_seg("/usr/bin/git log"))
    assert not rule.matches_segment(_seg("git logs"))
    assert not rule.matches_segment(_seg("git"))
    assert not rule.matches_segment(_seg("./git log"))


def test_exact_matches_only_the_same_words() -> None:
    rule = parse_rule("Bash(git status)")
    assert rule.matches_segment(_seg("git  status"))
    assert rule.matches_segment(_seg("timeout 5 git status"))
    assert not rule.matches_segment(_seg("git status -s"))
    assert not rule.matches_segment(_seg("git status > out.txt"))


def test_domain_rules_cover_subdomains_only() -> None:
    rule = parse_rule("WebFetch(domain:example.com)")
    assert rule.matches_host("example.com")
    assert rule.matches_host("docs.example.com")
    assert not rule.matches_host("notexample.com")
    assert not rule.matches_host("example.com.evil.net")


def test_load_reports_malformed_entries(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"model": "x", "permissions": {
        "allow": ["Bash(git log:*)", "Bash(", 42], "deny": "Bash", "ask": [], "extra": 1}}))
    rules = load_rules(path)
    assert rules.allow == [Rule("Bash", "prefix", ("git", "log"))]
    text = "\n".join(rules.warnings)
    assert "permissions.allow" in text and "closing" in text and "non-empty string" in text
    assert "permissions.deny must be a list" in text
    assert "unknown key permissions.extra" in text


def test_corrupt_settings_file_is_a_warning_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text("{not json")
    rules = load_rules(path)
    assert rules.allow == [] and "not readable JSON" in rules.warnings[0]
    with pytest.raises(SettingsFileError):
        save_rule(path, "allow", parse_rule("Write"))
    assert path.read_text() == "{not json"


def test_save_rule_keeps_other_keys_and_deduplicates(tmp_path: Path) -> None:
    path = tmp_path / "home" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"model": "claude-x", "permissions": {"deny": ["Bash(rm:*)"]}}))
    rule = parse_rule("Bash(git push:*)")
    save_rule(path, "allow", rule)
    save_rule(path, "allow", rule)
    data = json.loads(path.read_text())
    assert data == {"model": "claude-x",
                    "permissions": {"deny": ["Bash(rm:*)"], "allow": ["Bash(git push:*)"]}}
    assert [p.name for p in path.parent.iterdir()] == ["settings.json"]


def test_save_rule_creates_the_file(tmp_path: Path) -> None:
    path = tmp_path / "new-home" / "settings.json"
    save_rule(path, "deny", parse_rule("WebFetch(domain:evil.com)"))
    assert json.loads(path.read_text()) == {"permissions": {"deny": ["WebFetch(domain:evil.com)"]}}


def test_two_processes_writing_settings_keep_each_others_keys(tmp_path: Path) -> None:
    """Rules and REPL choices share settings.json; concurrent writers lose nothing."""
    import subprocess
    import sys

    path = tmp_path / "settings.json"
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from dexter.settings_file import update_settings_file\n"
        "path, who = Path(sys.argv[1]), sys.argv[2]\n"
        "for i in range(40):\n"
        "    update_settings_file(path, lambda d: d.setdefault(who, []).append(i))\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(path), who])
             for who in ("a", "b", "c")]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    data = json.loads(path.read_text())
    assert {k: len(v) for k, v in data.items()} == {"a": 40, "b": 40, "c": 40}
