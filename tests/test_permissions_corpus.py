"""The adversarial shell corpus: every command gets its expected decision, none leaks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dexter.permissions.engine import RuleBasedPermissions

CORPUS = Path(__file__).parent / "fixtures" / "shell_corpus.tsv"


def _rows() -> list[tuple[str, str, str]]:
    rows = []
    for line in CORPUS.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        command, expected, why = line.split("\t")
        rows.append((command.replace("⏎", "\n"), expected, why))
    return rows


ROWS = _rows()


def make_workspace(root: Path) -> tuple[Path, Path]:
    """The corpus workspace: a few files, a secret, a symlink out, and DEXTER_HOME."""
    ws = root / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "data").mkdir()
    (ws / "config").mkdir()
    (ws / "README.md").write_text("hi\n")
    (ws / "notes.txt").write_text("b\na\n")
    (ws / "src" / "a.py").write_text("def f():\n    pass\n")
    (ws / "data" / "report.csv").write_text("a,b\n")
    (ws / "config" / "credentials.json").write_text("{}")
    (ws / ".env").write_text("OPENAI_API_KEY=sk-secret\n")
    os.symlink("/etc", ws / "link_out")
    os.symlink(ws / ".env", ws / "notes-link.txt")
    (root / "home" / ".ssh").mkdir(parents=True)
    os.symlink(root / "home" / ".ssh", ws / "keys-link")
    home = ws / ".dexter"
    (home / "tool-results").mkdir(parents=True)
    (home / "tool-results" / "call_1.txt").write_text("result")
    return ws, home


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> RuleBasedPermissions:
    ws, home = make_workspace(tmp_path_factory.mktemp("corpus"))
    return RuleBasedPermissions(ws, home)


def test_corpus_is_large_and_covers_every_decision() -> None:
    assert len(ROWS) >= 150
    kinds = {expected for _, expected, _ in ROWS}
    assert kinds == {"allow", "ask", "deny"}


@pytest.mark.parametrize(("command", "expected", "why"), ROWS,
                         ids=[f"{i}:{r[0][:40]}" for i, r in enumerate(ROWS)])
def test_each_command_gets_its_expected_decision(engine: RuleBasedPermissions, command: str,
                                                 expected: str, why: str) -> None:
    decision = engine.evaluate("bash", {"command": command}, True)
    assert decision.behavior == expected, f"{command!r} ({why}): {decision.reason}"


def test_no_dangerous_command_is_allowed(engine: RuleBasedPermissions) -> None:
    leaked = [command for command, expected, _ in ROWS if expected != "allow"
              and engine.evaluate("bash", {"command": command}, True).behavior == "allow"]
    assert leaked == []


def test_denials_name_the_floor_and_are_never_session_cacheable(engine: RuleBasedPermissions) -> None:
    for command, expected, _ in ROWS:
        if expected == "deny":
            decision = engine.evaluate("bash", {"command": command}, True)
            assert decision.reason.startswith("Blocked by dexter's safety floor"), command
            assert not decision.cacheable
