"""Routing a model name to its provider, context windows, keys, base URLs and `dexter models` rows."""

from __future__ import annotations

import subprocess
import sys

import pytest

from dexter.config import ConfigError, ProviderSettings, Settings
from dexter.providers.call import create_chat_model
from dexter.providers.registry import (
    DEFAULT_CONTEXT_WINDOW,
    api_key_for,
    base_url_for,
    builtin_provider,
    missing_key_message,
    model_rows,
    resolve_model,
)


@pytest.mark.parametrize(
    ("name", "provider", "model"),
    [
        ("gpt-4.1", "openai", "gpt-4.1"),
        ("o3", "openai", "o3"),
        ("my-local-model", "openai", "my-local-model"),
        ("claude-sonnet-4-6", "anthropic", "claude-sonnet-4-6"),
        ("gemini-2.5-pro", "google", "gemini-2.5-pro"),
        ("grok-4-0709", "xai", "grok-4-0709"),
        ("deepseek-chat", "deepseek", "deepseek-chat"),
        ("kimi-k2-5", "moonshot", "kimi-k2-5"),
        ("ollama:llama3.1", "ollama", "llama3.1"),
        ("ollama:qwen3:8b", "ollama", "qwen3:8b"),
        ("openrouter:anthropic/claude-sonnet-4-6", "openrouter", "anthropic/claude-sonnet-4-6"),
        ("anthropic:claude-x", "anthropic", "claude-x"),
        ("openai:my-finetune", "openai", "my-finetune"),
        ("google:gemini-x", "google", "gemini-x"),
        ("OpenAI:gpt-4o", "openai", "gpt-4o"),
        ("ft:gpt-4o-mini:acme:research:abc123", "openai", "ft:gpt-4o-mini:acme:research:abc123"),
    ],
)
def test_model_names_route_to_their_provider(name: str, provider: str, model: str) -> None:
    resolved = resolve_model(name, Settings())
    assert (resolved.provider.id, resolved.model) == (provider, model)


def test_context_windows_are_per_model_not_per_provider() -> None:
    settings = Settings()
    assert resolve_model("gpt-4o", settings).context_window == 128_000
    assert resolve_model("gpt-4.1", settings).context_window == 1_047_576
    assert resolve_model("claude-sonnet-4-6", settings).context_window == 200_000


def test_unknown_models_are_accepted_with_a_128k_window() -> None:
    settings = Settings()
    for name in ("my-local-model", "claude-future-9", "ollama:llama3.1", "openai:my-finetune"):
        resolved = resolve_model(name, settings)
        assert resolved.context_window == DEFAULT_CONTEXT_WINDOW == 128_000
        assert resolved.display_name == resolved.model


def test_openrouter_vendor_model_uses_the_catalog_window() -> None:
    resolved = resolve_model("openrouter:anthropic/claude-sonnet-4-6", Settings())
    assert resolved.context_window == 200_000


def test_configured_window_beats_global_setting_which_beats_table() -> None:
    settings = Settings()
    settings.context.context_window = 64_000
    assert resolve_model("gpt-4.1", settings).context_window == 64_000
    settings.context_windows["gpt-4.1"] = 32_000
    assert resolve_model("gpt-4.1", settings).context_window == 32_000
    settings.context_windows["ollama:qwen3"] = 40_960
    assert resolve_model("ollama:qwen3", settings).context_window == 40_960


def test_window_override_by_stripped_model_id() -> None:
    settings = Settings(context_windows={"qwen3": 8_192})
    assert resolve_model("ollama:qwen3", settings).context_window == 8_192


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("", "empty"),
        ("   ", "empty"),
        (":gpt-4o", "nothing before"),
        ("anthropic:", "no model name after 'anthropic:'"),
        ("ollama:  ", "no model name after 'ollama:'"),
    ],
)
def test_bad_model_forms_raise_a_clear_config_error(name: str, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        resolve_model(name, Settings())


def test_unknown_provider_prefix_names_the_known_providers() -> None:
    with pytest.raises(ConfigError) as info:
        resolve_model("foo:bar", Settings())
    text = str(info.value)
    assert "Unknown provider 'foo'" in text
    for pid in ("openai", "anthropic", "google", "xai", "deepseek", "moonshot", "openrouter", "ollama"):
        assert pid in text
    assert "[providers.foo]" in text


def test_custom_openai_compatible_provider_from_config() -> None:
    settings = Settings(providers={
        "lmstudio": ProviderSettings(base_url="http://127.0.0.1:1234/v1", api_key_env="LMSTUDIO_KEY"),
    })
    resolved = resolve_model("lmstudio:qwen2.5-7b", settings)
    assert resolved.provider.id == "lmstudio"
    assert resolved.provider.kind == "openai"
    assert resolved.model == "qwen2.5-7b"
    assert resolved.context_window == 128_000
    assert base_url_for(resolved.provider, settings, {}) == "http://127.0.0.1:1234/v1"
    assert api_key_for(resolved.provider, {"LMSTUDIO_KEY": "abc123"}) == "abc123"
    with pytest.raises(ConfigError, match="lmstudio"):
        resolve_model("other:x", settings)


def test_custom_provider_without_base_url_is_a_config_error() -> None:
    settings = Settings(providers={"mine": ProviderSettings(api_key_env="MINE_KEY")})
    with pytest.raises(ConfigError, match=r"no base_url.*\[providers\.mine\]"):
        resolve_model("mine:model", settings)


def test_fast_model_precedence() -> None:
    settings = Settings()
    assert resolve_model("gpt-5", settings).fast_model == "gpt-5-mini"
    assert resolve_model("claude-opus-4-8", settings).fast_model == "claude-haiku-4-5"
    assert resolve_model("openai:my-finetune", settings).fast_model == "gpt-5-mini"
    assert resolve_model("openrouter:x/y", settings).fast_model == "openrouter:openai/gpt-4o-mini"
    # Ollama has no fast model: the main model does the summaries.
    assert resolve_model("ollama:qwen3", settings).fast_model == "ollama:qwen3"
    settings.providers["anthropic"] = ProviderSettings(fast_model="claude-sonnet-4-6")
    assert resolve_model("claude-opus-4-8", settings).fast_model == "claude-sonnet-4-6"
    settings.fast_model = "gpt-4o-mini"
    assert resolve_model("claude-opus-4-8", settings).fast_model == "gpt-4o-mini"


def test_custom_provider_fast_model_stays_on_that_provider() -> None:
    settings = Settings(providers={
        "lab": ProviderSettings(base_url="http://127.0.0.1:9/v1", fast_model="tiny"),
    })
    fast = resolve_model("lab:big", settings).fast_model
    assert fast == "lab:tiny"
    assert resolve_model(fast, settings).provider.id == "lab"


@pytest.mark.parametrize("value", ["", "   ", "your-openai-api-key", "your_key_here", "<your key>"])
def test_empty_or_placeholder_keys_count_as_missing(value: str) -> None:
    assert api_key_for(builtin_provider("openai"), {"OPENAI_API_KEY": value}) is None


def test_key_is_read_from_the_provider_variable() -> None:
    env = {"OPENAI_API_KEY": "sk-real", "XAI_API_KEY": "xai-real"}
    assert api_key_for(builtin_provider("openai"), env) == "sk-real"
    assert api_key_for(builtin_provider("xai"), env) == "xai-real"
    assert api_key_for(builtin_provider("anthropic"), env) is None
    assert api_key_for(builtin_provider("ollama"), env) is None


def test_base_url_config_beats_env_beats_default() -> None:
    openai = builtin_provider("openai")
    settings = Settings()
    assert base_url_for(openai, settings, {}) == "https://api.openai.com/v1"
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:8000/v1"}
    assert base_url_for(openai, settings, env) == "http://127.0.0.1:8000/v1"
    settings.providers["openai"] = ProviderSettings(base_url="http://proxy.local/v1")
    assert base_url_for(openai, settings, env) == "http://proxy.local/v1"
    # OPENAI_BASE_URL must not redirect other OpenAI-compatible providers.
    assert base_url_for(builtin_provider("xai"), Settings(), env) == "https://api.x.ai/v1"
    assert base_url_for(builtin_provider("anthropic"), Settings(), {"ANTHROPIC_BASE_URL": "http://a"}) == "http://a"


def test_ollama_base_url_gets_the_v1_path_once() -> None:
    ollama = builtin_provider("ollama")
    assert base_url_for(ollama, Settings(), {}) == "http://127.0.0.1:11434/v1"
    assert base_url_for(ollama, Settings(), {"OLLAMA_BASE_URL": "http://gpu:11434/"}) == "http://gpu:11434/v1"
    assert base_url_for(ollama, Settings(), {"OLLAMA_BASE_URL": "http://gpu:11434/v1"}) == "http://gpu:11434/v1"


def test_missing_key_message_names_the_variable_and_where_to_set_it() -> None:
    text = missing_key_message(resolve_model("claude-sonnet-4-6", Settings()))
    assert "ANTHROPIC_API_KEY" in text and ".env" in text and "shell" in text
    assert "claude-sonnet-4-6" in text
    # and the keyless way in, which every front end adds to the message (one place:
    # frontend.without_a_key): the data commands need no model and no key
    from dexter.frontend import config_problem
    from dexter.providers.registry import MissingKeyError

    assert "dexter data statements AAPL" in config_problem(MissingKeyError(text))


def test_create_chat_model_without_key_raises_the_missing_key_message() -> None:
    resolved = resolve_model("grok-4-0709", Settings())
    with pytest.raises(ConfigError, match="XAI_API_KEY"):
        create_chat_model(resolved, Settings(), env={})


def test_create_chat_model_builds_the_right_adapter() -> None:
    settings = Settings()
    env = {"ANTHROPIC_API_KEY": "sk-ant-x", "OPENAI_API_KEY": "sk-x"}
    claude = create_chat_model(resolve_model("claude-opus-4-8", settings), settings, env=env)
    assert (claude.provider_id, claude.model) == ("anthropic", "claude-opus-4-8")
    fast = create_chat_model(resolve_model("claude-opus-4-8", settings), settings, env=env, fast=True)
    assert fast.model == "claude-haiku-4-5"
    local = create_chat_model(resolve_model("ollama:qwen3", settings), settings, env={})
    assert (local.provider_id, local.model) == ("ollama", "qwen3")


def test_model_rows_show_key_status_but_never_the_key() -> None:
    settings = Settings(model="claude-sonnet-4-6")
    env = {"ANTHROPIC_API_KEY": "sk-ant-secret-value", "OPENAI_API_KEY": "your-key-here"}
    rows = model_rows(settings, env)
    assert "sk-ant-secret-value" not in repr(rows)
    by_name = {r.model: r for r in rows}
    assert by_name["claude-sonnet-4-6"].is_default
    assert by_name["claude-sonnet-4-6"].key_set is True
    assert by_name["claude-haiku-4-5"].is_fast
    assert by_name["gpt-4.1"].key_set is False
    assert by_name["gpt-4.1"].context_window == 1_047_576
    assert by_name["ollama:llama3.1"].key_set is None
    assert sum(r.is_default for r in rows) == 1
    assert tuple(by_name["claude-sonnet-4-6"]) == (
        "Anthropic", "claude-sonnet-4-6", "200,000", "ANTHROPIC_API_KEY set", "default")
    assert tuple(by_name["gpt-4.1"])[3] == "OPENAI_API_KEY missing"
    assert tuple(by_name["ollama:llama3.1"])[3] == "no key needed"


def test_model_rows_include_an_unlisted_configured_model() -> None:
    settings = Settings(model="ollama:qwen3:32b", context_windows={"ollama:qwen3:32b": 40_960})
    row = next(r for r in model_rows(settings, {}) if r.is_default)
    assert (row.provider, row.model, row.context_window) == ("ollama", "ollama:qwen3:32b", 40_960)


def test_importing_the_registry_does_not_import_the_sdks() -> None:
    code = (
        "import sys, dexter.providers.registry, dexter.providers.errors, dexter.providers.call\n"
        "print(sorted(m for m in ('openai', 'anthropic', 'httpx', 'httpx2') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
