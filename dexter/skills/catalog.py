"""Finding and reading skills: folders with a ``SKILL.md`` (the Agent Skills format).

A skill is a folder whose ``SKILL.md`` starts with front matter between ``---`` lines
(``name``, ``description``, optional ``allowed-tools``) followed by a markdown body of
instructions; any other files in the folder are resources the body may point to.

Skills are looked up in four places, later ones overriding earlier ones by name:

1. ``built-in``: ``dexter/skills/builtin/`` (shipped with the package);
2. ``user``: ``<user config dir>/dexter/skills/`` (platformdirs, beside ``config.toml``);
3. ``DEXTER_HOME``: ``DEXTER_HOME/skills/``;
4. ``project``: ``./.dexter/skills/`` in the working directory.

A folder that resolves to one already scanned is scanned once. A malformed skill is
skipped with one warning naming its file and the problem; nothing here raises for bad
content.

PyYAML is not a dependency, so the front matter is read by a small strict parser for the
subset skills use: ``key: value`` lines (values optionally quoted), a description folded
over indented continuation lines (or after ``>``/``|``), and ``allowed-tools`` as a
comma- or space-separated string, a ``[a, b]`` list or ``- item`` lines. Other keys
(``license``, ``metadata``...) are accepted and ignored.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

SKILL_FILE = "SKILL.md"
MAX_SKILL_BYTES = 100_000
MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 1_024
MAX_RESOURCES = 50
NAME_PATTERN = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
BUILTIN_DIR = Path(__file__).resolve().parent / "builtin"

_KEY_LINE = re.compile(r"^([A-Za-z0-9_-]+)\s*:(?:\s+(.*))?$")


class SkillError(ValueError):
    """A SKILL.md that cannot be used; the message says what is wrong."""


@dataclass(frozen=True, slots=True)
class Skill:
    """One skill: its front matter, its instructions and where it was found."""

    name: str
    description: str
    body: str
    folder: Path
    source: str
    """Which location it came from: ``built-in``, ``user``, ``DEXTER_HOME`` or ``project``."""
    allowed_tools: tuple[str, ...] = ()
    overrides: str | None = None
    """The source of the skill of the same name this one replaced, if any."""

    @property
    def path(self) -> Path:
        """The skill's ``SKILL.md``."""
        return self.folder / SKILL_FILE

    def resources(self) -> list[Path]:
        """The other files in the skill's folder (sorted; hidden files skipped; at most
        ``MAX_RESOURCES``), as real paths."""
        found: list[Path] = []
        for root, dirs, files in os.walk(self.folder):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(files):
                path = Path(root) / name
                if name.startswith(".") or path == self.path:
                    continue
                found.append(path)
                if len(found) >= MAX_RESOURCES:
                    return found
        return found


@dataclass(frozen=True, slots=True)
class SkillCatalog:
    """The skills of a run, by name, and the problems found while looking for them."""

    skills: tuple[Skill, ...] = ()
    warnings: tuple[str, ...] = ()
    searched: tuple[tuple[str, Path], ...] = field(default=())
    """Every location looked in, as (source, folder), existing or not."""

    def get(self, name: str) -> Skill | None:
        """The skill called ``name`` (exact, then case-insensitive), or None."""
        for skill in self.skills:
            if skill.name == name:
                return skill
        folded = name.strip().casefold()
        return next((s for s in self.skills if s.name.casefold() == folded), None)

    @property
    def names(self) -> list[str]:
        """The skill names, in listing order."""
        return [skill.name for skill in self.skills]

    def folders(self) -> tuple[Path, ...]:
        """The real folders of the skills (what ``read_file`` may read besides its roots)."""
        return tuple(Path(os.path.realpath(skill.folder)) for skill in self.skills)


def user_skills_dir() -> Path:
    """``<user config dir>/dexter/skills`` (the folder of the default ``config.toml``)."""
    from platformdirs import user_config_dir

    return Path(user_config_dir("dexter")) / "skills"


def skill_locations(home: Path, cwd: Path, *, builtin: Path | None = None,
                    user: Path | None = None) -> list[tuple[str, Path]]:
    """The four places skills live, lowest priority first."""
    return [
        ("built-in", builtin or BUILTIN_DIR),
        ("user", user or user_skills_dir()),
        ("DEXTER_HOME", Path(home) / "skills"),
        ("project", Path(cwd) / ".dexter" / "skills"),
    ]


def load_catalog(home: Path, cwd: Path, *, builtin: Path | None = None,
                 user: Path | None = None) -> SkillCatalog:
    """Every usable skill from the four locations (later ones win by name), sorted by
    name, with one warning per malformed skill."""
    return catalog_from(skill_locations(home, cwd, builtin=builtin, user=user))


def catalog_from(locations: Sequence[tuple[str, Path]]) -> SkillCatalog:
    """The catalog of the given (source, folder) locations, lowest priority first."""
    chosen: dict[str, Skill] = {}
    warnings: list[str] = []
    seen: set[str] = set()
    for source, folder in locations:
        real = os.path.realpath(folder)
        if real in seen or not os.path.isdir(real):
            continue
        seen.add(real)
        for skill_dir in _skill_dirs(Path(folder), warnings):
            try:
                skill = read_skill(skill_dir, source)
            except SkillError as exc:
                warnings.append(f"Skipped the skill in {skill_dir / SKILL_FILE}: {exc}")
                continue
            previous = chosen.get(skill.name)
            if previous is not None:
                skill = _replace_overrides(skill, previous.source)
            chosen[skill.name] = skill
    skills = tuple(sorted(chosen.values(), key=lambda s: s.name))
    return SkillCatalog(skills, tuple(warnings), tuple((s, Path(f)) for s, f in locations))


def _replace_overrides(skill: Skill, source: str) -> Skill:
    return Skill(skill.name, skill.description, skill.body, skill.folder, skill.source,
                 skill.allowed_tools, overrides=source)


def _skill_dirs(folder: Path, warnings: list[str]) -> Iterable[Path]:
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:
        warnings.append(f"Could not list the skills folder {folder}: {exc.strerror or exc}.")
        return []
    dirs: list[Path] = []
    for entry in entries:
        if entry.name.startswith(".") or not entry.is_dir():
            continue
        path = Path(entry.path)
        if not (path / SKILL_FILE).is_file():
            warnings.append(f"Skipped the folder {path}: it has no {SKILL_FILE}.")
            continue
        dirs.append(path)
    return dirs


def read_skill(folder: Path, source: str) -> Skill:
    """Read and check ``folder/SKILL.md``; raises ``SkillError`` saying what is wrong."""
    path = folder / SKILL_FILE
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_SKILL_BYTES + 1)
    except OSError as exc:
        raise SkillError(f"it cannot be read ({exc.strerror or exc})") from None
    if len(raw) > MAX_SKILL_BYTES:
        raise SkillError(f"it is larger than {MAX_SKILL_BYTES:,} bytes; move detail into "
                         "resource files beside it")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise SkillError("it is not UTF-8 text") from None
    meta, body = split_front_matter(text)
    name = meta.get("name", "")
    description = " ".join(meta.get("description", "").split())
    if not isinstance(name, str) or not name:
        raise SkillError("the front matter has no 'name'")
    if len(name) > MAX_NAME_CHARS or not NAME_PATTERN.match(name):
        raise SkillError(f"the name {name!r} must be lowercase letters, digits and single "
                         f"hyphens, at most {MAX_NAME_CHARS} characters")
    if name != folder.name:
        raise SkillError(f"the name {name!r} differs from its folder's name {folder.name!r}")
    if not description:
        raise SkillError("the front matter has no 'description' (say what the skill does "
                         "and when to use it)")
    if len(description) > MAX_DESCRIPTION_CHARS:
        raise SkillError(f"the description is longer than {MAX_DESCRIPTION_CHARS:,} characters")
    if not body.strip():
        raise SkillError("the body (the instructions after the front matter) is empty")
    tools = _tool_list(meta.get("allowed-tools", ""))
    return Skill(name, description, body.strip() + "\n", folder, source, tools)


def split_front_matter(text: str) -> tuple[dict[str, str], str]:
    """The front matter's keys (lists kept as their raw text) and the body after it.

    Raises ``SkillError`` when the file does not start with ``---`` front matter or a
    line in it cannot be read.
    """
    lines = text.replace("\r\n", "\n").split("\n")
    if not lines or lines[0].strip() != "---":
        raise SkillError("it does not start with '---' front matter (name, description)")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise SkillError("the front matter has no closing '---' line") from None
    meta: dict[str, str] = {}
    key: str | None = None
    for number, line in enumerate(lines[1:end], start=2):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line[0] in " \t":
            if key is None:
                raise SkillError(f"line {number} is indented but belongs to no key")
            meta[key] = f"{meta[key]}\n{line.strip()}".strip()
            continue
        match = _KEY_LINE.match(line)
        if match is None:
            raise SkillError(f"line {number} ({line.strip()[:40]!r}) is not 'key: value'")
        key, value = match.group(1), (match.group(2) or "").strip()
        if key in meta:
            raise SkillError(f"the key {key!r} appears twice")
        meta[key] = _scalar(value, number) if value not in (">", "|", ">-", "|-") else ""
    return meta, "\n".join(lines[end + 1:])


def _scalar(value: str, number: int) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        inner = value[1:-1]
        return inner.replace("''", "'") if value[0] == "'" else inner.replace('\\"', '"')
    if value and value[0] in "\"'":
        raise SkillError(f"line {number} has an unclosed quote")
    if " #" in value:
        value = value.split(" #", 1)[0].rstrip()
    return value


def _tool_list(raw: str) -> tuple[str, ...]:
    text = raw.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    items = (item.strip("\"'") for item in re.split(r"[,\s]+", text))
    return tuple(dict.fromkeys(item for item in items if item and item != "-"))


def skill_rows(catalog: SkillCatalog, cwd: Path | None = None) -> list[tuple[str, str, str]]:
    """(name, description, where it came from) per skill, for ``dexter skills`` and
    ``/skills``; the place is the source and the folder (relative to ``cwd`` when inside),
    plus the source it overrides."""
    rows = []
    for skill in catalog.skills:
        folder = skill.folder
        if cwd is not None and folder.is_relative_to(cwd):
            folder = folder.relative_to(cwd)
        where = f"{skill.source} ({folder})"
        if skill.overrides:
            where += f", overrides {skill.overrides}"
        rows.append((skill.name, skill.description, where))
    return rows


def locations_text(catalog: SkillCatalog) -> str:
    """One line naming where skills are looked for, lowest priority first; a folder that
    two locations share (``DEXTER_HOME`` is ``./.dexter`` by default, the project's
    folder too) is named once, with both."""
    shared: dict[str, tuple[list[str], Path]] = {}
    for source, folder in catalog.searched:
        sources, _ = shared.setdefault(os.path.realpath(folder), ([], folder))
        sources.append(source)
    return "Skills are looked for in " + "; ".join(
        f"{' and '.join(sources)}: {folder}" for sources, folder in shared.values()
    ) + " (later ones win)."
