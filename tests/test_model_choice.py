"""The chosen model follows the user: /model is the default of every command, names are
checked when chosen, and with one provider's key the default is that provider's model."""

from __future__ import annotations

from pathlib import Path

import pytest

from dexter.config import Settings
from dexter.providers.registry import default_model, model_name_problem
from dexter.repl.settings_store import MODEL_KEY, save_setting, settings_file
from dexter.testing.fakellm import FakeLLM, Reply
from tests.cli_helpers import cli_env, run_cli

pytestmark = pytest.mark.e2e


@pytest.fixture
def fake() -> FakeLLM:
    with FakeLLM() as server:
        yield server


def save_model(cwd: Path, name: str) -> None:
    save_setting(settings_file(Settings(home=str(cwd / ".dexter"))), MODEL_KEY, name)


def test_a_model_picked_with_slash_model_is_the_default_for_ask(fake: FakeLLM,
                                                                tmp_path: Path) -> None:
    save_model(tmp_path, "claude-sonnet-4-6")
    fake.enqueue(Reply(text="Hello."))
    result = run_cli(["ask", "--json", "hi"], cwd=tmp_path, env=cli_env(fake, tmp_path))
    assert result.code == 0, result.stderr
    assert result.events[0]["model"] == "claude-sonnet-4-6"
    assert len(fake.requests_for("anthropic")) == 1 and not fake.requests_for("openai")


def test_flags_and_environment_still_win_over_the_saved_model(fake: FakeLLM,
                                                              tmp_path: Path) -> None:
    save_model(tmp_path, "claude-sonnet-4-6")
    fake.enqueue(Reply(text="One."), Reply(text="Two."))
    flag = run_cli(["ask", "--json", "-m", "gpt-4.1", "hi"], cwd=tmp_path,
                   env=cli_env(fake, tmp_path))
    env = run_cli(["ask", "--json", "hi"], cwd=tmp_path,
                  env=cli_env(fake, tmp_path, DEXTER_MODEL="gpt-4.1"))
    assert flag.events[0]["model"] == env.events[0]["model"] == "gpt-4.1"


def test_dexter_models_marks_the_saved_model_as_current(tmp_path: Path) -> None:
    save_model(tmp_path, "claude-sonnet-4-6")
    result = run_cli(["models"], cwd=tmp_path, env=cli_env(None, tmp_path))
    assert result.code == 0, result.stderr
    current = [line for line in result.stdout.splitlines() if "claude-sonnet-4-6" in line]
    assert current and any("current" in line.lower() or "*" in line or "←" in line
                           for line in current), result.stdout


def test_with_only_an_anthropic_key_the_default_is_claude(fake: FakeLLM, tmp_path: Path) -> None:
    env = cli_env(fake, tmp_path)
    env.pop("OPENAI_API_KEY")
    fake.enqueue(Reply(text="Hello."))
    result = run_cli(["ask", "--json", "hi"], cwd=tmp_path, env=env)
    assert result.code == 0, result.stderr
    assert result.events[0]["model"].startswith("claude-")
    assert default_model({"ANTHROPIC_API_KEY": "sk-ant-real-looking-123456"}).startswith("claude-")
    assert default_model({}) == "gpt-5"


def test_an_empty_model_flag_is_an_error(tmp_path: Path) -> None:
    result = run_cli(["ask", "-m", "", "hi"], cwd=tmp_path, env=cli_env(None, tmp_path))
    assert result.code == 2
    assert "--model is empty" in result.stderr


def test_unknown_names_are_refused_with_the_nearest_known_ones() -> None:
    settings = Settings()
    problem = model_name_problem("claude-sonet-4-6", settings)
    assert problem is not None and "claude-sonnet-4-6" in problem
    assert "nonsense-model-x" in (model_name_problem("nonsense-model-x", settings) or "")
    for fine in ("gpt-4.1", "claude-sonnet-4-6", "openai:gpt-6-preview", "ollama:qwen3"):
        assert model_name_problem(fine, settings) is None, fine


def test_the_saved_model_default_and_default_model_price_are_known() -> None:
    from dexter.providers.registry import resolve_model

    for name in (Settings().model, default_model({"ANTHROPIC_API_KEY": "sk-ant-x-123456789"})):
        info = resolve_model(name, Settings()).info
        assert info is not None and info.input_price_per_mtok is not None
        assert info.context_window <= 400_000
