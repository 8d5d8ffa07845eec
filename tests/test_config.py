"""Settings: layering, env overrides, clear errors, and config.example.toml in sync."""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

import pytest

from dexter.config import (
    BashSettings,
    ConfigError,
    ContextSettings,
    MemorySettings,
    Settings,
    ToolSettings,
    VerifySettings,
    load_settings,
)

ROOT = Path(__file__).resolve().parents[1]
NO_FILE_ENV = {"DEXTER_CONFIG": ""}


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_match_the_design() -> None:
    ctx = ContextSettings()
    assert (ctx.max_tool_result_chars, ctx.preview_chars, ctx.max_turn_result_chars) == (50_000, 2_000, 200_000)
    assert (ctx.microcompact_count_trigger, ctx.microcompact_keep_recent, ctx.microcompact_token_trigger) == (8, 4, 80_000)
    assert (ctx.summary_output_reserve_tokens, ctx.autocompact_buffer_tokens) == (20_000, 13_000)
    assert (ctx.max_compaction_failures, ctx.min_tool_results_for_compaction) == (3, 3)
    assert (ctx.truncate_keep_rounds, ctx.overflow_keep_rounds, ctx.max_overflow_retries) == (5, 3, 2)
    assert ctx.keep_thinking == 2 and ctx.enabled and ctx.context_window == 0
    assert Settings().max_iterations == 10


def test_example_file_lists_every_key_with_its_default() -> None:
    data = tomllib.loads((ROOT / "config.example.toml").read_text(encoding="utf-8"))
    defaults = Settings()
    top = {f.name for f in dataclasses.fields(Settings)} - {
        "context", "memory", "tools", "bash", "verify", "providers", "context_windows",
        "config_path"}
    for name in top:
        assert data[name] == getattr(defaults, name), name
    for section, cls in (("context", ContextSettings), ("memory", MemorySettings),
                         ("tools", ToolSettings), ("bash", BashSettings),
                         ("verify", VerifySettings)):
        for f in dataclasses.fields(cls):
            assert data[section][f.name] == getattr(cls(), f.name), f"[{section}] {f.name}"


def test_example_file_loads(tmp_path: Path) -> None:
    settings = load_settings(ROOT / "config.example.toml", env=NO_FILE_ENV)
    assert settings.model == Settings().model


def test_layering_flags_over_env_over_file(tmp_path: Path) -> None:
    path = write(tmp_path, 'model = "from-file"\nmax_iterations = 4\n[context]\npreview_chars = 100\n')
    env = {"DEXTER_MODEL": "from-env", "DEXTER_CONTEXT_PREVIEW_CHARS": "300"}
    settings = load_settings(path, overrides={"model": "from-flag", "max_iterations": None}, env=env)
    assert settings.model == "from-flag"
    assert settings.max_iterations == 4
    assert settings.context.preview_chars == 300


def test_dexter_config_env_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, 'model = "claude-sonnet-4-6"\n')
    assert load_settings(env={"DEXTER_CONFIG": str(path)}).model == "claude-sonnet-4-6"


def test_generic_env_keys_and_booleans() -> None:
    env = {"DEXTER_CONTEXT_ENABLED": "false", "DEXTER_MEMORY_ENABLED": "0",
           "DEXTER_ALLOW_PRIVATE_NETWORK": "1", "DEXTER_TRACE": "yes"}
    settings = load_settings(env={**NO_FILE_ENV, **env})
    assert settings.context.enabled is False
    assert settings.memory.enabled is False
    assert settings.tools.allow_private_network is True
    assert settings.trace is True


def test_unknown_key_is_named(tmp_path: Path) -> None:
    path = write(tmp_path, "[context]\nmax_tool_result_char = 5\n")
    with pytest.raises(ConfigError, match="unknown setting 'max_tool_result_char'"):
        load_settings(path, env=NO_FILE_ENV)


def test_bad_values_and_files_are_explained(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="whole number"):
        load_settings(write(tmp_path, 'max_iterations = "many"\n'), env=NO_FILE_ENV)
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_settings(write(tmp_path, "model = \n"), env=NO_FILE_ENV)
    with pytest.raises(ConfigError, match="Config file not found"):
        load_settings(tmp_path / "missing.toml", env=NO_FILE_ENV)
    with pytest.raises(ConfigError, match="true or false"):
        load_settings(env={**NO_FILE_ENV, "DEXTER_CONTEXT_ENABLED": "maybe"})
    with pytest.raises(ConfigError, match="at least 1"):
        load_settings(overrides={"max_iterations": 0}, env=NO_FILE_ENV)


def test_custom_provider_table(tmp_path: Path) -> None:
    path = write(tmp_path, '[providers.mylab]\nbase_url = "http://gpu:8000/v1"\napi_key_env = "MYLAB_KEY"\n'
                           '[context_windows]\n"mylab:qwen" = 32768\n')
    settings = load_settings(path, env=NO_FILE_ENV)
    assert settings.provider("mylab").base_url == "http://gpu:8000/v1"
    assert settings.context_windows["mylab:qwen"] == 32768


def test_soft_limit_settings_are_validated() -> None:
    with pytest.raises(ConfigError, match="similarity_threshold"):
        load_settings(env={**NO_FILE_ENV, "DEXTER_CONTEXT_SIMILARITY_THRESHOLD": "1.5"})
    with pytest.raises(ConfigError, match="max_calls_per_tool"):
        load_settings(env={**NO_FILE_ENV, "DEXTER_CONTEXT_MAX_CALLS_PER_TOOL": "0"})
    settings = load_settings(env={**NO_FILE_ENV, "DEXTER_CONTEXT_MAX_CALLS_PER_TOOL": "5"})
    assert settings.context.max_calls_per_tool == 5
