"""``dexter models`` never cuts a model id or a key name, at any width or in a pipe.

At 80 columns (and piped, which rich also lays out at 80) the table used to end ids like
``gemini-3-flash-pre…`` and ``openrouter:openai/…``, and fold ``OPENAI_API_KE`` / ``Y``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pexpect
import pytest
from rich.console import Console

from dexter.config import Settings
from dexter.frontend import models_table
from dexter.providers.registry import model_rows
from tests.cli_helpers import LIVENESS, cli_env, run_cli, spawn_terminal

ROWS = model_rows(Settings(), env={})
IDS = [row.model for row in ROWS]
KEYS = sorted({row.key_env for row in ROWS if row.key_env})


def whole_words(text: str) -> set[str]:
    return set(re.findall(r"[A-Za-z0-9_.:/-]+", text))


@pytest.mark.parametrize("width", [200, 120, 97, 96, 80, 72, 60, 50, 40])
def test_every_id_and_key_name_is_whole_at_any_terminal_width(width: int) -> None:
    console = Console(width=width, force_terminal=True, color_system=None)
    with console.capture() as shown:
        console.print(models_table(ROWS, console))
    text = shown.get()
    assert max(len(line) for line in text.splitlines()) <= width
    assert "…" not in text
    assert set(IDS) <= whole_words(text)
    if "Key" in text.splitlines()[2]:  # the key column kept: every variable name whole
        assert set(KEYS) <= whole_words(text)
    if width >= 97:  # room for every column
        assert "Provider" in text and "Context" in text and "default" in text


def test_the_repl_table_keeps_ids_whole_too() -> None:
    console = Console(width=80, force_terminal=True, color_system=None)
    with console.capture() as shown:
        console.print(models_table(ROWS, console, box=False))
    assert "…" not in shown.get() and set(IDS) <= whole_words(shown.get())


@pytest.mark.e2e
def test_piped_models_puts_each_model_on_one_line(tmp_path: Path) -> None:
    env = cli_env(None, tmp_path)
    env.pop("COLUMNS")
    result = run_cli(["models"], cwd=tmp_path, env=env)
    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    for row in ROWS:
        [line] = [line for line in lines if f" {row.model} " in line]
        assert f"{row.context_window:,}" in line and (row.key_env or "no key needed") in line
    assert "…" not in result.stdout
    assert any(line.startswith("Current model: ") and line.endswith("config file.")
               for line in lines)  # not wrapped either


@pytest.mark.e2e
def test_models_in_an_80_column_terminal_keeps_every_id_whole(tmp_path: Path) -> None:
    env = cli_env(None, tmp_path, TERM="xterm-256color")
    env.pop("COLUMNS")
    child = spawn_terminal(["models"], cwd=tmp_path, env=env, dimensions=(200, 80),
                           timeout=LIVENESS)
    try:
        child.expect(pexpect.EOF)
        text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", child.before or "")
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    assert "…" not in text
    assert set(IDS) <= whole_words(text)
    assert max(len(line) for line in text.splitlines()) <= 80
