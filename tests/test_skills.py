"""Skills: discovery and override order, malformed skills, the system prompt, the skill
tool and reading a skill's resources through read_file."""

from __future__ import annotations

from pathlib import Path

import pytest

from dexter.agent.prompts import build_system_prompt
from dexter.config import Settings
from dexter.skills.catalog import (
    BUILTIN_DIR,
    SkillError,
    load_catalog,
    read_skill,
    split_front_matter,
)
from dexter.tools.base import ToolContext, ToolFailure
from dexter.tools.calculator import CalculatorTool
from dexter.tools.files import ReadFileParams, ReadFileTool
from dexter.tools.skill import SkillTool

BUILTIN_NAMES = ["comps", "dcf", "earnings-review", "write-memo"]


def make_skill(root: Path, name: str, description: str = "Does a thing.",
               body: str = "Step one.\n", *, extra: str = "",
               front: str | None = None) -> Path:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    head = front if front is not None else f"name: {name}\ndescription: {description}\n{extra}"
    (folder / "SKILL.md").write_text(f"---\n{head}---\n{body}", encoding="utf-8")
    return folder


@pytest.fixture
def places(tmp_path: Path) -> dict[str, Path]:
    return {"builtin": tmp_path / "builtin", "user": tmp_path / "config" / "skills",
            "home": tmp_path / "home", "cwd": tmp_path / "work"}


def catalog_of(places: dict[str, Path]):  # type: ignore[no-untyped-def]
    return load_catalog(places["home"], places["cwd"], builtin=places["builtin"],
                        user=places["user"])


def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(settings=Settings(), cwd=tmp_path / "work", home=tmp_path / "home")


# -- the built-in skills ------------------------------------------------------------------


def test_builtin_skills_are_all_valid_and_name_real_tools() -> None:
    catalog = load_catalog(Path("/nonexistent-home"), Path("/nonexistent-cwd"),
                           user=Path("/nonexistent-user"))
    assert catalog.warnings == ()
    assert catalog.names == BUILTIN_NAMES
    known = {"get_financials", "read_filings", "get_market_data", "web_search", "web_fetch",
             "calculator", "skill", "stock_screener"}
    for skill in catalog.skills:
        assert skill.source == "built-in"
        assert skill.folder.parent == BUILTIN_DIR
        assert set(skill.allowed_tools) <= known, skill.name
        assert "[S#]" in skill.body  # each states the citation rule
    dcf = catalog.get("dcf")
    assert dcf is not None
    # The valuation steps use the calculator's finance functions, which it documents.
    for function in ("wacc(", "gordon_tv(", "exit_tv(", "dcf(", "cagr(", "margin("):
        assert function in dcf.body
        assert function in CalculatorTool.description
    assert "sensitivity" in dcf.body.lower()


# -- discovery and override order ---------------------------------------------------------


def test_later_locations_override_earlier_ones_by_name(places: dict[str, Path]) -> None:
    make_skill(places["builtin"], "dcf", "Built-in DCF.")
    make_skill(places["builtin"], "comps", "Built-in comps.")
    make_skill(places["user"], "dcf", "User DCF.")
    make_skill(places["user"], "notes", "User notes.")
    make_skill(places["home"] / "skills", "dcf", "Home DCF.")
    make_skill(places["cwd"] / ".dexter" / "skills", "notes", "Project notes.")
    catalog = catalog_of(places)
    assert catalog.warnings == ()
    assert catalog.names == ["comps", "dcf", "notes"]
    dcf, notes, comps = catalog.get("dcf"), catalog.get("notes"), catalog.get("comps")
    assert dcf is not None and notes is not None and comps is not None
    assert (dcf.description, dcf.source, dcf.overrides) == ("Home DCF.", "DEXTER_HOME", "user")
    assert (notes.description, notes.source, notes.overrides) == ("Project notes.", "project",
                                                                   "user")
    assert (comps.source, comps.overrides) == ("built-in", None)
    assert [s for s, _ in catalog.searched] == ["built-in", "user", "DEXTER_HOME", "project"]


def test_home_inside_the_project_folder_is_scanned_once(tmp_path: Path) -> None:
    cwd = tmp_path / "work"
    make_skill(cwd / ".dexter" / "skills", "mine")
    catalog = load_catalog(cwd / ".dexter", cwd, builtin=tmp_path / "none",
                           user=tmp_path / "none2")
    assert catalog.names == ["mine"]
    skill = catalog.get("mine")
    assert skill is not None and skill.overrides is None


def test_missing_folders_are_no_problem(places: dict[str, Path]) -> None:
    catalog = catalog_of(places)
    assert catalog.skills == () and catalog.warnings == ()


# -- malformed skills ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("front", "body", "problem"),
    [
        (None, "", "body (the instructions after the front matter) is empty"),
        ("description: no name\n", "x", "has no 'name'"),
        ("name: bad\n", "x", "has no 'description'"),
        ("name: Bad_Name\ndescription: d\n", "x", "must be lowercase letters"),
        ("name: other\ndescription: d\n", "x", "differs from its folder's name"),
        ("name: bad\ndescription: d\nthis is not yaml\n", "x", "is not 'key: value'"),
        ("name: bad\nname: bad\ndescription: d\n", "x", "appears twice"),
        ("name: bad\ndescription: \"unclosed\n", "x", "unclosed quote"),
    ],
)
def test_a_malformed_skill_is_skipped_with_one_warning(places: dict[str, Path], front: str | None,
                                                      body: str, problem: str) -> None:
    make_skill(places["user"], "good")
    make_skill(places["user"], "bad", front=front, body=body)
    catalog = catalog_of(places)
    assert catalog.names == ["good"]
    assert len(catalog.warnings) == 1
    warning = catalog.warnings[0]
    assert str(places["user"] / "bad" / "SKILL.md") in warning
    assert problem in warning


def test_files_that_are_not_skills_are_reported(places: dict[str, Path]) -> None:
    (places["user"] / "empty").mkdir(parents=True)
    (places["user"] / "README.md").write_text("not a skill folder")
    (places["user"] / "nofront").mkdir()
    (places["user"] / "nofront" / "SKILL.md").write_text("# Just markdown\n")
    (places["user"] / "binary").mkdir()
    (places["user"] / "binary" / "SKILL.md").write_bytes(b"---\xff\xfe\n")
    (places["user"] / "huge").mkdir()
    (places["user"] / "huge" / "SKILL.md").write_text("---\n" + "x" * 200_000)
    warnings = catalog_of(places).warnings
    assert len(warnings) == 4
    text = "\n".join(warnings)
    assert "empty: it has no SKILL.md" in text
    assert "does not start with '---' front matter" in text
    assert "not UTF-8" in text
    assert "larger than 100,000 bytes" in text


def test_front_matter_subset() -> None:
    meta, body = split_front_matter(
        "---\n"
        "name: 'memo'\n"
        "description: >\n"
        "  Writes a memo\n"
        "  with sources.\n"
        "license: MIT  # ignored key and comment\n"
        "metadata:\n"
        "  version: 2\n"
        "allowed-tools:\n"
        "  - calculator\n"
        "  - get_financials\n"
        "---\n"
        "Body\n")
    assert meta["name"] == "memo"
    assert meta["description"] == "Writes a memo\nwith sources."
    assert meta["license"] == "MIT"
    assert body == "Body\n"
    with pytest.raises(SkillError, match="no closing"):
        split_front_matter("---\nname: x\n")


def test_allowed_tools_forms(tmp_path: Path) -> None:
    for line in ("allowed-tools: calculator, web_search\n",
                 "allowed-tools: [calculator, \"web_search\"]\n",
                 "allowed-tools: calculator web_search\n"):
        folder = make_skill(tmp_path, "s", extra=line)
        assert read_skill(folder, "user").allowed_tools == ("calculator", "web_search")
    skill = read_skill(make_skill(tmp_path, "s", description="  spaced   out  "), "user")
    assert skill.description == "spaced out"


# -- the system prompt --------------------------------------------------------------------


def test_system_prompt_lists_names_and_descriptions_only(places: dict[str, Path]) -> None:
    make_skill(places["user"], "alpha", "Alpha does A.", body="SECRET-ALPHA-BODY steps\n")
    make_skill(places["user"], "beta", "Beta does B.", body="SECRET-BETA-BODY steps\n")
    catalog = catalog_of(places)
    tools = [CalculatorTool(), SkillTool(catalog)]
    prompt = build_system_prompt(tools, skills=catalog.skills)
    assert "## Skills" in prompt
    assert "- **alpha**: Alpha does A." in prompt
    assert "- **beta**: Beta does B." in prompt
    assert "SECRET-ALPHA-BODY" not in prompt and "SECRET-BETA-BODY" not in prompt
    # Without the skill tool there is nothing to load them with: no list.
    assert "## Skills" not in build_system_prompt([CalculatorTool()], skills=catalog.skills)
    # A skill loaded for the run (dexter ask --skill) is included whole.
    loaded = build_system_prompt(tools, skills=catalog.skills, active_skill=catalog.get("beta"))
    assert "SECRET-BETA-BODY" in loaded and "SECRET-ALPHA-BODY" not in loaded


# -- the skill tool and its resources ------------------------------------------------------


async def test_skill_tool_returns_the_body_and_lists_resources(tmp_path: Path,
                                                               places: dict[str, Path]) -> None:
    folder = make_skill(places["user"], "dcf", body="Discount the flows.\n",
                        extra="allowed-tools: calculator\n")
    (folder / "template.md").write_text("| WACC | g |\n")
    (folder / "data").mkdir()
    (folder / "data" / "erp.csv").write_text("year,erp\n2025,4.3\n")
    (folder / ".hidden").write_text("no")
    tool = SkillTool(catalog_of(places))
    assert tool.concurrency_safe and tool.compactable and not tool.needs_approval
    assert tool.source_kind is None
    text = await tool.run(tool.parse_args({"name": "dcf"}), ctx(tmp_path))
    assert text.startswith("Skill dcf (user) loaded: follow these instructions.\n"
                           f"File: {folder / 'SKILL.md'}\n")
    assert "Tools this skill uses: calculator" in text
    assert "Discount the flows." in text
    assert f"- {folder / 'data' / 'erp.csv'} (" in text
    assert f"- {folder / 'template.md'} (13 bytes)" in text
    assert ".hidden" not in text
    with pytest.raises(ToolFailure, match=r"No skill is called 'nope'\. Available skills: dcf"):
        await tool.run(tool.parse_args({"name": "nope"}), ctx(tmp_path))


async def test_read_file_reads_skill_resources_and_nothing_else(tmp_path: Path,
                                                                places: dict[str, Path]) -> None:
    folder = make_skill(places["user"], "dcf")
    (folder / "template.md").write_text("WACC table\n")
    (places["user"] / "loose.md").write_text("outside any skill\n")
    (places["user"].parent / "config.toml").write_text("model = 'x'\n")
    (folder / ".env").write_text("KEY=1\n")
    places["cwd"].mkdir()
    catalog = catalog_of(places)
    tool = ReadFileTool(catalog.folders())
    output = await tool.run(ReadFileParams(path=str(folder / "template.md")), ctx(tmp_path))
    assert "WACC table" in output.content
    for refused in (places["user"] / "loose.md", places["user"].parent / "config.toml",
                    folder / ".env"):
        with pytest.raises(ToolFailure):
            await tool.run(ReadFileParams(path=str(refused)), ctx(tmp_path))
    # Without the skill roots the resource is outside the sandbox.
    with pytest.raises(ToolFailure, match="outside the allowed folders"):
        await ReadFileTool().run(ReadFileParams(path=str(folder / "template.md")), ctx(tmp_path))


def test_registry_adds_the_skill_tool_when_there_are_skills(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from dexter.skills.catalog import SkillCatalog
    from dexter.tools.registry import build_tools

    monkeypatch.chdir(tmp_path)
    settings = Settings(home=str(tmp_path / "home"))
    names = [t.name for t in build_tools(settings)]
    assert "skill" in names  # the built-in skills
    assert names.index("skill") == names.index("calculator") + 1
    assert "skill" not in [t.name for t in build_tools(settings, skills=SkillCatalog())]


def test_the_locations_name_each_folder_once_and_every_location(tmp_path: Path) -> None:
    from dexter.skills.catalog import locations_text

    shared = locations_text(load_catalog(tmp_path / ".dexter", tmp_path,
                                         user=tmp_path / "user"))
    assert shared.count(str(tmp_path / ".dexter" / "skills")) == 1
    assert f"DEXTER_HOME and project: {tmp_path / '.dexter' / 'skills'}" in shared
    apart = locations_text(load_catalog(tmp_path / "home", tmp_path, user=tmp_path / "user"))
    assert f"DEXTER_HOME: {tmp_path / 'home' / 'skills'}" in apart
    assert f"project: {tmp_path / '.dexter' / 'skills'}" in apart
