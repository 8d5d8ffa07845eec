"""The README's Layout and docs/architecture.md stay true to the code.

Both had drifted: the Layout lacked ``skills/``, ``rerun.py``, ``filelock.py``,
``failures.py``, ``settings_file.py`` and the newer commands, and the list of modules over
500 lines lacked ``config.py``, ``repl/handlers.py`` and ``providers/openai_chat.py``.
These tests say what to write when the code moves on.
"""

from __future__ import annotations

import re
from pathlib import Path

import typer

from dexter.cli.app import app
from tests.test_architecture import LAYERS

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "dexter"
README = (ROOT / "README.md").read_text(encoding="utf-8")
ARCHITECTURE = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
LIMIT = 500


def _entries() -> set[str]:
    """dexter's packages (``cli/``) and top-level modules (``config.py``)."""
    return {f"{p.name}/" if p.is_dir() else p.name for p in PACKAGE.iterdir()
            if (p.is_dir() and (p / "__init__.py").exists())
            or (p.suffix == ".py" and p.name not in ("__init__.py", "__main__.py"))}


def _layout() -> str:
    start = README.index("```\ndexter/\n")
    return README[start:README.index("```", start + 3)]


def test_the_readme_layout_names_every_package_and_module() -> None:
    named = set(re.findall(r"(?<![\w/])([a-z_]+(?:/|\.py))", _layout()))
    missing = sorted(_entries() - named)
    assert missing == [], f"add to the README's Layout: {', '.join(missing)}"
    gone = sorted(n for n in named - _entries() - {"dexter/"} if not (PACKAGE / n).exists())
    assert gone == [], f"the README's Layout names what is not there: {', '.join(gone)}"


def test_the_readme_layout_names_every_command() -> None:
    command = typer.main.get_command(app)
    names = set(getattr(command, "commands", {}))
    cli_line = " ".join(line for line in _layout().split("\n  repl/")[0].splitlines())
    missing = sorted(n for n in names if not re.search(rf"\b{re.escape(n)}\b", cli_line))
    assert missing == [], f"name these commands on the README Layout's cli/ line: {missing}"


def _listed_big_modules() -> set[str]:
    block = ARCHITECTURE.split("<!-- modules over 500 lines -->")[1].split("<!-- end -->")[0]
    return {name for line in block.splitlines() if line.startswith("- ")
            for name in re.findall(r"`([\w/]+\.py)`", line.split(":")[0])}


def test_the_list_of_modules_over_500_lines_is_exact() -> None:
    sizes = {str(p.relative_to(PACKAGE)): len(p.read_text(encoding="utf-8").splitlines())
             for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}
    big = {name for name, lines in sizes.items() if lines > LIMIT}
    listed = _listed_big_modules()
    assert sorted(big - listed) == [], (
        "docs/architecture.md: name these modules over 500 lines and what one thing each "
        f"is, or split them: {', '.join(f'{n} ({sizes[n]})' for n in sorted(big - listed))}")
    assert sorted(listed - big) == [], (
        "docs/architecture.md lists modules that are no longer over 500 lines: "
        f"{', '.join(f'{n} ({sizes.get(n, 0)})' for n in sorted(listed - big))}")


def test_the_layer_table_matches_the_layering_the_tests_enforce() -> None:
    rows = [line for line in ARCHITECTURE.splitlines() if re.match(r"\| \d+ ", line)]
    documented = [set(re.findall(r"`(\w+)`", row.split("|")[2])) for row in rows]
    # the table's layer 0 is LAYERS 0 and 1 (filelock sits below the rest of layer 0)
    enforced = [LAYERS[0] | LAYERS[1], *LAYERS[2:]]
    enforced = [layer - {"__init__", "__main__"} for layer in enforced if layer - {"__main__"}]
    documented = [layer - {"__main__"} for layer in documented]
    assert documented == enforced
