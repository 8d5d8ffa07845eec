"""Skills: folders of instructions (``SKILL.md``) the agent loads when a task calls for them.

See :mod:`dexter.skills.catalog` for the format and where skills are found, and
``docs/skills.md`` for writing one.
"""

from dexter.skills.catalog import (
    Skill,
    SkillCatalog,
    SkillError,
    load_catalog,
    read_skill,
    skill_locations,
)

__all__ = ["Skill", "SkillCatalog", "SkillError", "load_catalog", "read_skill",
           "skill_locations"]
