"""``/skills`` in the REPL: the skills, where each came from, and a malformed one reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from dexter.testing.fakellm import FakeLLM
from tests.repl_harness import make_settings, running_repl


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("DEXTER_MODEL", raising=False)
    monkeypatch.chdir(tmp_path)


async def test_slash_skills_lists_skills_and_reports_a_malformed_one(fake_llm: FakeLLM,
                                                                      tmp_path: Path) -> None:
    project = tmp_path / ".dexter" / "skills"
    (project / "house").mkdir(parents=True)
    (project / "house" / "SKILL.md").write_text(
        "---\nname: house\ndescription: Our house style for memos.\n---\nSteps.\n")
    (project / "broken").mkdir()
    (project / "broken" / "SKILL.md").write_text("no front matter\n")
    async with running_repl(make_settings(tmp_path), width=220) as d:
        d.line("/skills")
        text = await d.wait_for("Skills are looked for in")
    assert "Our house style for memos." in text
    assert "DEXTER_HOME (.dexter/skills/house)" in text
    assert "dcf" in text and "built-in" in text
    assert "broken/SKILL.md: it does not start with '---' front matter" in " ".join(text.split())
    assert fake_llm.requests_for("openai") == []
