"""Options given before a command apply to it, for every command, the same way as after it.

``dexter --config c.toml models`` once showed the default model, ``dexter --config n.toml
sandbox`` ignored ``[bash] sandbox = false`` and ``dexter --config /nonexistent models``
exited 0: only some commands looked at the options given before them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from dexter.cli.app import app
from dexter.cli.global_options import place_global_options
from tests.cli_helpers import cli_env, config_outside, run_cli

ROOT = typer.main.get_command(app)


def _leaves(command: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    children = getattr(command, "commands", None) or {}
    found = [(path, command)] if path and (not children or command.invoke_without_command) \
        else []
    for name, child in children.items():
        found += _leaves(child, (*path, name))
    return found


def _options(command: Any) -> set[str]:
    return {opt for p in command.params if p.param_type_name == "option" for opt in p.opts}


def _arguments(command: Any, scratchpad: Path) -> list[str]:
    """A value for each argument: an existing scratchpad for a file, else a word."""
    return [str(scratchpad) if p.name == "file" else "x"
            for p in command.params if p.param_type_name == "argument"]


def _place(args: list[str]) -> list[str]:
    with ROOT.make_context("dexter", [], resilient_parsing=True) as ctx:
        return place_global_options(ctx, ROOT, args)


@pytest.mark.parametrize(("given", "placed"), [
    (["--config", "c.toml", "models"], ["models", "--config", "c.toml"]),
    (["-c", "c.toml", "-m", "gpt-4.1", "mcp", "list"], ["mcp", "list", "-c", "c.toml", "-m", "gpt-4.1"]),
    (["--no-memory", "memory", "search", "risk"], ["memory", "search", "--no-memory", "risk"]),
    (["--model=gpt-4.1", "eval", "--limit", "2"], ["eval", "--model=gpt-4.1", "--limit", "2"]),
    (["-mgpt-4.1", "ask", "--json", "q"], ["ask", "-mgpt-4.1", "--json", "q"]),
    (["--resume=", "ask", "q"], ["ask", "--resume=", "q"]),
    # no command: the interactive session takes them; help and unknown options as typed
    (["--model", "gpt-4.1", "--no-memory"], ["--model", "gpt-4.1", "--no-memory"]),
    (["--model", "gpt-4.1", "--help"], ["--model", "gpt-4.1", "--help"]),
    (["--model", "gpt-4.1", "nosuchcommand"], ["--model", "gpt-4.1", "nosuchcommand"]),
    (["models", "--config", "c.toml"], ["models", "--config", "c.toml"]),
    (["--config", "c.toml", "data", "facts", "AAPL"], ["data", "facts", "--config", "c.toml", "AAPL"]),
    # a group named without its command shows its usage; a command's help drops what it lacks
    (["--config", "c.toml", "data"], ["--config", "c.toml", "data"]),
    (["--config", "c.toml", "memory", "--help"], ["--config", "c.toml", "memory", "--help"]),
    (["-c", "c.toml", "-m", "gpt-4.1", "replay", "-h"], ["replay", "-h"]),
    (["-c", "c.toml", "-m", "gpt-4.1", "models", "-h"], ["models", "-c", "c.toml", "-m", "gpt-4.1", "-h"]),
])
def test_options_before_a_command_are_placed_on_the_command(given: list[str],
                                                             placed: list[str]) -> None:
    assert _place(given) == placed


def test_every_global_option_is_one_a_command_can_take() -> None:
    globals_ = {opt for p in ROOT.params if p.param_type_name == "option" and not p.is_eager
                for opt in p.opts}
    assert globals_ == {"--model", "-m", "--config", "-c", "--no-memory", "--continue",
                        "--resume", "-r", "--trust-workspace"}
    ask = ROOT.commands["ask"]
    assert globals_ <= _options(ask)  # ask takes every one of them


def test_a_command_without_the_option_is_a_usage_error_naming_both(tmp_path: Path) -> None:
    result = run_cli(["--model", "gpt-4.1", "replay", "x.jsonl"], cwd=tmp_path,
                     env=cli_env(None, tmp_path))
    assert result.code == 2
    assert "'dexter replay' has no --model option" in result.stderr
    result = run_cli(["--no-memory", "eval", "compare", "a", "b"], cwd=tmp_path,
                     env=cli_env(None, tmp_path))
    assert result.code == 2
    assert "'dexter eval compare' has no --no-memory option" in result.stderr
    result = run_cli(["--trust-workspace", "models"], cwd=tmp_path, env=cli_env(None, tmp_path))
    assert result.code == 2
    assert "'dexter models' has no --trust-workspace option" in result.stderr
    assert "trust the files with `dexter trust` first" in " ".join(result.stderr.split())


def test_help_after_options_it_lacks_is_the_help(tmp_path: Path) -> None:
    env = cli_env(None, tmp_path)
    result = run_cli(["--model", "gpt-4.1", "replay", "--help"], cwd=tmp_path, env=env)
    assert result.code == 0, result.stderr
    assert "dexter replay [OPTIONS]" in result.stdout.splitlines()[0]
    result = run_cli(["--config", "c.toml", "data", "--help"], cwd=tmp_path, env=env)
    assert result.code == 0, result.stderr  # not "'dexter data' has no --config option"
    assert "dexter data [OPTIONS] COMMAND" in result.stdout.splitlines()[0]


def test_every_command_with_a_config_reads_the_one_given_before_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The whole command tree in this process (the same parser and commands as the `dexter`
    # executable, one import instead of a start per command); the tests below run the
    # executable itself.
    scratchpad = tmp_path / "run.jsonl"
    scratchpad.write_text(json.dumps({"type": "init", "timestamp": "2026-01-01T00:00:00Z",
                                      "query": "q", "model": "gpt-4.1"}) + "\n")
    commands = [(path, cmd) for path, cmd in _leaves(ROOT) if "--config" in _options(cmd)]
    assert {" ".join(path) for path, _ in commands} >= {
        "ask", "rerun", "models", "skills", "sandbox", "sessions", "memory list", "mcp list",
        "eval", "trust", "data statements"}
    env = cli_env(None, tmp_path)
    monkeypatch.chdir(tmp_path)
    for name in set(os.environ) - set(env):
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    for path, command in commands:
        args = ["--config", str(tmp_path / "missing.toml"), *path,
                *_arguments(command, scratchpad)]
        result = CliRunner().invoke(app, args)
        assert (result.exit_code, f"Config file not found: {tmp_path / 'missing.toml'}") == \
            (2, result.stderr.split("Error: ", 1)[-1].split(". Check")[0]), (path, result.stderr)


@pytest.mark.e2e
def test_models_shows_the_model_of_the_config_and_of_model_given_before_it(
        tmp_path: Path) -> None:
    config = config_outside(tmp_path)
    config.write_text('model = "claude-sonnet-4-6"\n')
    env = cli_env(None, tmp_path, COLUMNS="200")
    result = run_cli(["--config", str(config), "models"], cwd=tmp_path, env=env)
    assert result.code == 0, result.stderr
    assert "Current model: claude-sonnet-4-6." in result.stdout
    result = run_cli(["--model", "gpt-4.1-mini", "models"], cwd=tmp_path, env=env)
    assert "Current model: gpt-4.1-mini." in result.stdout
    # given on both sides, the later one wins, as for any repeated option
    result = run_cli(["--model", "gpt-4.1-mini", "models", "--model", "gpt-4.1"],
                     cwd=tmp_path, env=env)
    assert "Current model: gpt-4.1." in result.stdout


@pytest.mark.e2e
def test_sandbox_honours_the_config_given_before_it(tmp_path: Path) -> None:
    config = config_outside(tmp_path)  # the user's own file: its widening options apply
    config.write_text("[bash]\nsandbox = false\n")
    env = cli_env(None, tmp_path, COLUMNS="200")
    before = run_cli(["--config", str(config), "sandbox"], cwd=tmp_path, env=env)
    after = run_cli(["sandbox", "--config", str(config)], cwd=tmp_path, env=env)
    assert before.code == after.code == 0
    assert before.stdout == after.stdout
    assert "bubblewrap" not in before.stdout.splitlines()[0]
