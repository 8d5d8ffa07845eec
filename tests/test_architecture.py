"""The package layering of docs/architecture.md holds: no package imports one above it.

Layers, lowest first. A module may import the packages of strictly lower layers (and its
own package). ``testing`` (fake servers and harnesses) may use everything but the front
ends.
"""

from __future__ import annotations

import ast
from pathlib import Path

from dexter import events

ROOT = Path(__file__).resolve().parents[1] / "dexter"
LAYERS: list[set[str]] = [
    {"filelock"},
    {"config", "events", "messages", "secrets", "text", "tls", "failures", "settings_file",
     "metrics"},
    {"sandbox", "scratchpad", "data", "memory", "providers", "evidence", "skills",
     "config_trust"},
    {"permissions", "context", "tools", "reports"},
    {"agent", "render", "frontend", "rerun"},
    {"testing"},
    {"evals"},
    {"repl"},
    {"cli", "__init__"},
    {"__main__"},
]
LEVEL = {name: i for i, layer in enumerate(LAYERS) for name in layer}


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = [node.module] if isinstance(node, ast.ImportFrom) and node.module else \
            [a.name for a in node.names] if isinstance(node, ast.Import) else []
        found.update(n.split(".")[1] for n in names if n.startswith("dexter."))
    return found


def test_every_package_has_a_layer() -> None:
    packages = {p.name.removesuffix(".py") for p in ROOT.iterdir()
                if p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists())}
    assert packages - set(LEVEL) == set()


def test_no_package_imports_one_above_it() -> None:
    wrong = []
    for path in ROOT.rglob("*.py"):
        package = path.relative_to(ROOT).parts[0].removesuffix(".py")
        for target in _imports(path) - {package}:
            if LEVEL[target] >= LEVEL[package]:
                wrong.append(f"{path.relative_to(ROOT.parent)} imports dexter.{target}")
    assert wrong == []


def test_the_event_union_lists_every_event_once() -> None:
    def subclasses(cls: type) -> set[type]:
        return {c for sub in cls.__subclasses__() for c in {sub} | subclasses(sub)}

    # by type tag: a slots dataclass is a new class, and the class it replaced lingers
    assert {cls.type for cls in subclasses(events.Event)} == set(events.EVENT_TYPES)
    assert len(events.EVENT_TYPES) == len(events.EVENT_CLASSES)
    assert {
        "thinking", "tool_limit", "tool_approval", "tool_denied", "microcompact", "compaction",
        "memory_flush", "memory_recalled", "context_cleared", "queue_drain", "provider_retry",
        "verification", "sandbox_alert", "done"} == events.RECORDED_EVENT_TYPES
