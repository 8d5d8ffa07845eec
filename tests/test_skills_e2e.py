"""End to end: ``dexter skills`` and ``dexter ask --skill`` through the real command
against the fake LLM server (no network)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dexter.testing.fakellm import FakeLLM, Reply, ToolCallSpec
from tests.cli_helpers import cli_env, run_cli

pytestmark = pytest.mark.e2e

MODEL = "gpt-5.6-sol"


@pytest.fixture
def fake() -> FakeLLM:
    with FakeLLM() as server:
        yield server


def write_skill(root: Path, name: str, description: str, body: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n---\n{body}")
    return folder


def system_text(request_body: dict[str, object]) -> str:
    messages = request_body["messages"]
    assert isinstance(messages, list)
    return "\n".join(str(m.get("content")) for m in messages if m.get("role") in ("system", "developer"))


def test_dexter_skills_lists_builtin_user_and_project_skills(tmp_path: Path) -> None:
    env = cli_env(None, tmp_path, COLUMNS="400")  # wide enough that no cell wraps
    write_skill(Path(env["XDG_CONFIG_HOME"]) / "dexter" / "skills", "pitch",
                "Write a one-page pitch.", "Steps.\n")
    write_skill(tmp_path / ".dexter" / "skills", "dcf", "Our house DCF.", "House steps.\n")
    bad = tmp_path / ".dexter" / "skills" / "broken"
    bad.mkdir()
    (bad / "SKILL.md").write_text("---\nname: broken\n---\nno description\n")
    result = run_cli(["skills"], cwd=tmp_path, env=env)
    assert result.code == 0, result.stderr
    out = " ".join(result.stdout.split())
    for name in ("comps", "earnings-review", "write-memo", "pitch", "dcf"):
        assert name in out
    assert "Write a one-page pitch." in out
    assert "Our house DCF." in out and "overrides built-in" in out
    assert "built-in (" in out and "user (" in out
    assert "Skills are looked for in built-in:" in out
    # DEXTER_HOME is the project's .dexter here (the default): its folder is named once
    looked = out[out.index("Skills are looked for in"):]
    assert looked.count(str(tmp_path / ".dexter" / "skills")) == 1
    assert f"DEXTER_HOME and project: {tmp_path / '.dexter' / 'skills'}" in looked
    # One warning naming the file and the problem; the rest still listed.
    err = " ".join(result.stderr.split())
    assert err.count("Warning:") == 1
    assert "broken/SKILL.md" in err and "has no 'description'" in err
    assert "Traceback" not in result.stderr


def test_ask_with_the_dcf_skill_gives_the_model_its_instructions(fake: FakeLLM,
                                                                 tmp_path: Path) -> None:
    fake.enqueue(
        Reply(tool_calls=[ToolCallSpec("calculator", {"expression": "dcf(10%, 0, 110, 121)"})]),
        Reply(text="The enterprise value is 1,200 [S1]."),
    )
    result = run_cli(["ask", "--model", MODEL, "--skill", "dcf", "Value a company with flows "
                      "of 110 and 121 at a 10% discount rate and no growth."],
                     cwd=tmp_path, env=cli_env(fake, tmp_path))
    assert result.code == 0, result.stderr
    requests = fake.requests_for("openai")
    assert len(requests) == 2
    fake.assert_no_violations()
    system = system_text(requests[0].body)
    # The skill's body reached the model, once, as instructions for the run.
    assert "## Skill loaded for this run: dcf" in system
    assert "# Discounted cash flow valuation" in system
    assert "## 3. Sensitivity table" in system
    # The other skills are only listed by name and description.
    assert "- **comps**: Compare a company with its peers" in system
    assert "# Comparable company analysis" not in system
    # The calculator's dcf() answered: 110/1.1 + 121/1.21 + (121/0.1)/1.21 = 1200.
    assert '"result": 1200' in json.dumps(requests[1].body).replace('\\"', '"')
    assert "1,200" in result.stdout


def test_the_model_loads_a_skill_and_reads_its_resource(fake: FakeLLM, tmp_path: Path) -> None:
    env = cli_env(fake, tmp_path)
    folder = write_skill(Path(env["XDG_CONFIG_HOME"]) / "dexter" / "skills", "house-style",
                         "How our memos look.", "Use the template in template.md.\n")
    (folder / "template.md").write_text("TEMPLATE-LINE: thesis first\n")
    fake.enqueue(
        Reply(tool_calls=[ToolCallSpec("skill", {"name": "house-style"})]),
        Reply(tool_calls=[ToolCallSpec("read_file", {"path": str(folder / "template.md")})]),
        Reply(text="Thesis first."),
    )
    result = run_cli(["ask", "--model", MODEL, "Write it in house style."], cwd=tmp_path, env=env)
    assert result.code == 0, result.stderr
    requests = fake.requests_for("openai")
    assert len(requests) == 3
    first = system_text(requests[0].body)
    assert "- **house-style**: How our memos look." in first
    assert "Use the template in template.md." not in first
    second = json.dumps(requests[1].body)
    assert "Use the template in template.md." in second
    assert "template.md (" in second
    assert "TEMPLATE-LINE: thesis first" in json.dumps(requests[2].body)


def test_an_unknown_skill_is_a_usage_error(fake: FakeLLM, tmp_path: Path) -> None:
    result = run_cli(["ask", "--model", MODEL, "--skill", "nope", "hi"], cwd=tmp_path,
                     env=cli_env(fake, tmp_path))
    assert result.code == 2
    assert "No skill is called 'nope'" in result.stderr and "dcf" in result.stderr
    assert "Traceback" not in result.stderr
    assert fake.requests_for("openai") == []
