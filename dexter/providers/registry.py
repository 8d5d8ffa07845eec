"""The provider table, model catalog and routing from a model name to a provider.

Routing, first match wins:

1. ``PROVIDER:MODEL`` where ``PROVIDER`` is a built-in id (``anthropic:claude-x``,
   ``ollama:llama3.1``, ``openrouter:openai/gpt-4o``) or a custom provider declared in the
   config as ``[providers.NAME]`` with a ``base_url``.
2. ``ft:...`` (OpenAI fine-tunes) goes to OpenAI unchanged.
3. Name prefixes: ``claude-`` Anthropic, ``gemini-`` Google, ``grok-`` xAI, ``deepseek-``
   DeepSeek, ``kimi-`` Moonshot.
4. Everything else goes to OpenAI.

Unknown model names are accepted; their context window is 128,000 tokens unless configured.
This module must stay cheap to import (no SDK imports): ``dexter --version`` loads it.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Literal

from dexter.config import ConfigError, Settings

ProviderKind = Literal["openai", "anthropic"]
DEFAULT_CONTEXT_WINDOW = 128_000


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """A model in the catalog. Prices are US dollars per million tokens (None if unknown).

    ``cache_read_ratio`` and ``cache_write_ratio`` price prompt tokens served from (or
    written to) the provider's prompt cache, as a multiple of the input price: OpenAI's
    GPT-5 family bills cached input at a tenth, Anthropic reads at a tenth and writes at
    1.25x. 1.0 where the provider gives no discount or it is not known.
    """

    id: str
    display_name: str
    context_window: int
    input_price_per_mtok: float | None = None
    output_price_per_mtok: float | None = None
    cache_read_ratio: float = 1.0
    cache_write_ratio: float = 1.0


@dataclass(frozen=True, slots=True)
class ProviderInfo:
    """A provider: which SDK adapter, where, with which key, and its models.

    ``fast_model`` and ``default_model`` are model ids on this provider (no prefix).
    ``name_prefix`` routes bare model names (``claude-``); empty means "only explicit".
    ``caches_prompts``: the provider bills a repeated prompt prefix at a cached rate
    (automatically, or through the adapter's cache breakpoints), so the memory flush and
    compaction are sent as a continuation of the conversation (``[context] side_requests``).
    """

    id: str
    display_name: str
    kind: ProviderKind
    api_key_env: str | None
    base_url: str
    base_url_env: str | None
    fast_model: str
    default_model: str
    models: tuple[ModelInfo, ...] = ()
    name_prefix: str = ""
    custom: bool = False
    caches_prompts: bool = False

    def find_model(self, model_id: str) -> ModelInfo | None:
        """The catalog entry for ``model_id`` on this provider, if any."""
        return next((m for m in self.models if m.id == model_id), None)


@dataclass(frozen=True, slots=True)
class ResolvedModel:
    """A model name resolved to its provider.

    ``name`` is what the user wrote, ``model`` the id sent to the API (prefix stripped),
    ``fast_model`` a routable name for the cheap model used by summaries and compaction.
    """

    name: str
    provider: ProviderInfo
    model: str
    display_name: str
    context_window: int
    fast_model: str
    info: ModelInfo | None = None


def _m(id: str, display: str, window: int, price_in: float | None = None,
       price_out: float | None = None, cached: float = 1.0, written: float = 1.0) -> ModelInfo:
    return ModelInfo(id, display, window, price_in, price_out, cached, written)


# Cache prices as published by each provider, as a multiple of the input price.
_OPENAI_5 = {"cached": 0.1}       # GPT-5 family: cached input at 10 %
_OPENAI_41 = {"cached": 0.25}     # GPT-4.1 family, o3, o4-mini: 25 %
_OPENAI_4O = {"cached": 0.5}      # GPT-4o family, o1, o3-mini: 50 %
_ANTHROPIC = {"cached": 0.1, "written": 1.25}  # reads at 10 %, 5-minute writes at 125 %


PROVIDERS: tuple[ProviderInfo, ...] = (
    ProviderInfo(
        "openai", "OpenAI", "openai", "OPENAI_API_KEY", "https://api.openai.com/v1",
        "OPENAI_BASE_URL", "gpt-5-mini", "gpt-5",
        (
            _m("gpt-5.6-sol", "GPT 5.6 Sol", 1_047_576),
            _m("gpt-5.6-terra", "GPT 5.6 Terra", 1_047_576),
            _m("gpt-5.6-luna", "GPT 5.6 Luna", 1_047_576),
            _m("gpt-5", "GPT-5", 400_000, 1.25, 10.0, **_OPENAI_5),
            _m("gpt-5-mini", "GPT-5 mini", 400_000, 0.25, 2.0, **_OPENAI_5),
            _m("gpt-5-nano", "GPT-5 nano", 400_000, 0.05, 0.40, **_OPENAI_5),
            _m("gpt-4.1", "GPT-4.1", 1_047_576, 2.0, 8.0, **_OPENAI_41),
            _m("gpt-4.1-mini", "GPT-4.1 mini", 1_047_576, 0.40, 1.60, **_OPENAI_41),
            _m("gpt-4.1-nano", "GPT-4.1 nano", 1_047_576, 0.10, 0.40, **_OPENAI_41),
            _m("gpt-4o", "GPT-4o", 128_000, 2.50, 10.0, **_OPENAI_4O),
            _m("gpt-4o-mini", "GPT-4o mini", 128_000, 0.15, 0.60, **_OPENAI_4O),
            _m("o3", "o3", 200_000, 2.0, 8.0, **_OPENAI_41),
            _m("o3-mini", "o3-mini", 200_000, 1.10, 4.40, **_OPENAI_4O),
            _m("o4-mini", "o4-mini", 200_000, 1.10, 4.40, **_OPENAI_41),
            _m("o1", "o1", 200_000, 15.0, 60.0, **_OPENAI_4O),
        ),
        caches_prompts=True,
    ),
    ProviderInfo(
        "anthropic", "Anthropic", "anthropic", "ANTHROPIC_API_KEY", "https://api.anthropic.com",
        "ANTHROPIC_BASE_URL", "claude-haiku-4-5", "claude-sonnet-4-6",
        (
            _m("claude-sonnet-4-6", "Sonnet 4.6", 200_000, 3.0, 15.0, **_ANTHROPIC),
            _m("claude-opus-4-8", "Opus 4.8", 200_000, 5.0, 25.0, **_ANTHROPIC),
            _m("claude-fable-5", "Fable 5", 200_000),
            _m("claude-haiku-4-5", "Haiku 4.5", 200_000, 1.0, 5.0, **_ANTHROPIC),
            _m("claude-sonnet-4-5", "Sonnet 4.5", 200_000, 3.0, 15.0, **_ANTHROPIC),
            _m("claude-opus-4-1", "Opus 4.1", 200_000, 15.0, 75.0, **_ANTHROPIC),
        ),
        name_prefix="claude-",
        caches_prompts=True,
    ),
    ProviderInfo(
        "google", "Google", "openai", "GOOGLE_API_KEY",
        "https://generativelanguage.googleapis.com/v1beta/openai/", "GOOGLE_BASE_URL",
        "gemini-3-flash-preview", "gemini-3-flash-preview",
        (
            _m("gemini-3-flash-preview", "Gemini 3 Flash", 1_048_576, 0.50, 3.0),
            _m("gemini-3.1-pro-preview", "Gemini 3.1 Pro", 1_048_576, 2.0, 12.0),
            _m("gemini-2.5-pro", "Gemini 2.5 Pro", 1_048_576, 1.25, 10.0),
            _m("gemini-2.5-flash", "Gemini 2.5 Flash", 1_048_576, 0.30, 2.50),
        ),
        name_prefix="gemini-",
        caches_prompts=True,
    ),
    ProviderInfo(
        "xai", "xAI", "openai", "XAI_API_KEY", "https://api.x.ai/v1", "XAI_BASE_URL",
        "grok-4-1-fast-reasoning", "grok-4-0709",
        (
            _m("grok-4-0709", "Grok 4", 256_000, 3.0, 15.0),
            _m("grok-4-1-fast-reasoning", "Grok 4.1 Fast", 2_000_000, 0.20, 0.50),
        ),
        name_prefix="grok-",
        caches_prompts=True,
    ),
    ProviderInfo(
        "deepseek", "DeepSeek", "openai", "DEEPSEEK_API_KEY", "https://api.deepseek.com",
        "DEEPSEEK_BASE_URL", "deepseek-v4-flash", "deepseek-v4-pro",
        (
            _m("deepseek-v4-pro", "DeepSeek V4 Pro", 1_000_000),
            _m("deepseek-v4-flash", "DeepSeek V4 Flash", 1_000_000),
            _m("deepseek-chat", "DeepSeek Chat", 128_000, 0.28, 0.42, cached=0.1),
            _m("deepseek-reasoner", "DeepSeek Reasoner", 128_000, 0.28, 0.42, cached=0.1),
        ),
        name_prefix="deepseek-",
        caches_prompts=True,
    ),
    ProviderInfo(
        "moonshot", "Moonshot", "openai", "MOONSHOT_API_KEY", "https://api.moonshot.cn/v1",
        "MOONSHOT_BASE_URL", "kimi-k2-5", "kimi-k2-5",
        (_m("kimi-k2-5", "Kimi K2.5", 262_144, 0.60, 3.0),),
        name_prefix="kimi-",
        caches_prompts=True,
    ),
    ProviderInfo(
        "openrouter", "OpenRouter", "openai", "OPENROUTER_API_KEY", "https://openrouter.ai/api/v1",
        "OPENROUTER_BASE_URL", "openai/gpt-4o-mini", "openai/gpt-4o-mini",
    ),
    ProviderInfo(
        "ollama", "Ollama", "openai", None, "http://127.0.0.1:11434", "OLLAMA_BASE_URL",
        "", "llama3.1",
    ),
)

_BY_ID: dict[str, ProviderInfo] = {p.id: p for p in PROVIDERS}
_FINE_TUNE_PREFIX = "ft:"


def builtin_provider(provider_id: str) -> ProviderInfo:
    """A built-in provider by id (``KeyError`` if unknown)."""
    return _BY_ID[provider_id]


def provider_ids(settings: Settings | None = None) -> list[str]:
    """Built-in provider ids, then custom ones declared in the config."""
    ids = [p.id for p in PROVIDERS]
    if settings is not None:
        ids += sorted(pid for pid in settings.providers if pid not in _BY_ID)
    return ids


def provider_info(provider_id: str, settings: Settings) -> ProviderInfo:
    """A provider with the config's ``[providers.ID]`` overrides applied.

    A custom provider (an id that is not built in) needs a ``base_url``; it speaks the
    OpenAI Chat Completions API.
    """
    overrides = settings.providers.get(provider_id)
    builtin = _BY_ID.get(provider_id)
    if builtin is not None:
        if overrides is None:
            return builtin
        return replace(
            builtin,
            api_key_env=overrides.api_key_env or builtin.api_key_env,
            fast_model=overrides.fast_model or builtin.fast_model,
        )
    if overrides is None:
        raise ConfigError(_unknown_provider_message(provider_id, settings))
    if not overrides.base_url.strip():
        raise ConfigError(
            f"Custom provider '{provider_id}' has no base_url. Add base_url = \"https://...\" "
            f"under [providers.{provider_id}] in {settings.config_path or 'your config file'}."
        )
    return ProviderInfo(
        id=provider_id, display_name=provider_id, kind="openai",
        api_key_env=overrides.api_key_env or None, base_url=overrides.base_url.strip(),
        base_url_env=None, fast_model=overrides.fast_model, default_model="", custom=True,
    )


def _unknown_provider_message(provider_id: str, settings: Settings) -> str:
    known = ", ".join(provider_ids(settings))
    return (
        f"Unknown provider '{provider_id}'. Known providers: {known}. Write the model as "
        f"PROVIDER:MODEL (e.g. ollama:llama3.1), or declare an OpenAI-compatible server as "
        f"[providers.{provider_id}] with base_url (and api_key_env) in the config file."
    )


def _split_explicit(name: str, settings: Settings) -> tuple[ProviderInfo, str] | None:
    """``(provider, model)`` for ``PROVIDER:MODEL`` names; None when the name has no prefix."""
    if ":" not in name or name.startswith(_FINE_TUNE_PREFIX):
        return None
    prefix, rest = name.split(":", 1)
    pid = prefix.strip().lower()
    if not pid:
        raise ConfigError(f"Model '{name}' has nothing before the ':'. Write PROVIDER:MODEL.")
    if pid not in _BY_ID and pid not in settings.providers:
        raise ConfigError(_unknown_provider_message(prefix.strip(), settings))
    model = rest.strip()
    if not model:
        example = provider_info(pid, settings).default_model or "MODEL"
        raise ConfigError(
            f"Model '{name}' has no model name after '{prefix}:'. Write it as {pid}:MODEL, "
            f"e.g. {pid}:{example}."
        )
    return provider_info(pid, settings), model


def _route_bare(model: str) -> ProviderInfo:
    lowered = model.lower()
    for provider in PROVIDERS:
        if provider.name_prefix and lowered.startswith(provider.name_prefix):
            return provider
    return _BY_ID["openai"]


def _catalog_lookup(provider: ProviderInfo, model: str) -> ModelInfo | None:
    """The model's catalog entry: on its provider, else anywhere (``vendor/model`` tails too)."""
    found = provider.find_model(model)
    if found is not None:
        return found
    tail = model.rsplit("/", 1)[-1]
    for candidate in (model, tail):
        for other in PROVIDERS:
            hit = other.find_model(candidate)
            if hit is not None:
                return hit
    return None


def _qualified(provider: ProviderInfo, model: str) -> str:
    """A routable name for ``model`` on ``provider`` (bare when routing would find it anyway)."""
    if not provider.custom and _route_bare(model).id == provider.id and ":" not in model:
        return model
    return f"{provider.id}:{model}"


def resolve_model(name: str, settings: Settings) -> ResolvedModel:
    """Resolve a model name (``gpt-4.1``, ``claude-sonnet-4-6``, ``ollama:qwen3``) to its provider.

    Raises ``ConfigError`` for an empty name, an unknown ``PROVIDER:`` prefix or an empty
    model after the colon.
    """
    cleaned = name.strip()
    if not cleaned:
        raise ConfigError("The model name is empty. Pass --model NAME or set 'model' in the config.")
    explicit = _split_explicit(cleaned, settings)
    if explicit is not None:
        provider, model = explicit
    else:
        provider = provider_info(_route_bare(cleaned).id, settings)
        model = cleaned
    info = _catalog_lookup(provider, model)
    return ResolvedModel(
        name=cleaned,
        provider=provider,
        model=model,
        display_name=info.display_name if info is not None else model,
        context_window=_context_window(cleaned, model, info, settings),
        fast_model=_fast_model(cleaned, provider, settings),
        info=info,
    )


def _context_window(name: str, model: str, info: ModelInfo | None, settings: Settings) -> int:
    for key in (name, model):
        configured = settings.context_windows.get(key)
        if configured is not None and configured > 0:
            return configured
    if settings.context.context_window > 0:
        return settings.context.context_window
    return info.context_window if info is not None else DEFAULT_CONTEXT_WINDOW


def _fast_model(name: str, provider: ProviderInfo, settings: Settings) -> str:
    if settings.fast_model.strip():
        return settings.fast_model.strip()
    if provider.fast_model:
        return _qualified(provider, provider.fast_model)
    return name


def _usable(value: str | None) -> str | None:
    """A key value, or None when it is empty or an unfilled ``your-...`` placeholder."""
    if value is None:
        return None
    value = value.strip()
    if not value or value.lower().startswith(("your-", "your_", "<your")):
        return None
    return value


def api_key_for(provider: ProviderInfo, env: Mapping[str, str] | None = None) -> str | None:
    """The provider's API key from the environment, or None when missing (or a placeholder)."""
    if provider.api_key_env is None:
        return None
    env = os.environ if env is None else env
    return _usable(env.get(provider.api_key_env))


def base_url_for(provider: ProviderInfo, settings: Settings, env: Mapping[str, str] | None = None) -> str:
    """The base URL: ``[providers.ID] base_url`` > the provider's env var > the built-in default.

    For Ollama the OpenAI-compatible path ``/v1`` is appended when missing.
    """
    env = os.environ if env is None else env
    url = settings.provider(provider.id).base_url.strip()
    if not url and provider.base_url_env:
        url = env.get(provider.base_url_env, "").strip()
    url = url or provider.base_url
    if provider.id == "ollama" and not url.rstrip("/").endswith("/v1"):
        url = url.rstrip("/") + "/v1"
    return url


class MissingKeyError(ConfigError):
    """The chosen provider's API key is not set (a configuration error, exit 2); front ends
    add what can be done without one (``frontend.without_a_key``)."""


def missing_key_message(resolved: ResolvedModel) -> str:
    """What to tell the user when the provider's key is not set."""
    provider = resolved.provider
    var = provider.api_key_env or "the API key variable"
    return (
        f"No API key for {provider.display_name} (model {resolved.name}). Set {var} in a .env "
        f"file in this directory or export it in your shell (export {var}=...), then run "
        "again. Or pick another model with --model."
    )


@dataclass(frozen=True, slots=True)
class ModelRow:
    """One line of ``dexter models``. ``key_set`` is None when no key is needed."""

    provider: str
    provider_display: str
    model: str
    display_name: str
    context_window: int
    key_env: str | None
    key_set: bool | None
    is_default: bool
    is_fast: bool
    input_price_per_mtok: float | None = None
    output_price_per_mtok: float | None = None

    def cells(self) -> tuple[str, str, str, str, str]:
        """Table cells: provider, model name (as typed for --model), window, key status, marks."""
        if self.key_env is None:
            key = "no key needed"
        else:
            key = f"{self.key_env} {'set' if self.key_set else 'missing'}"
        marks = ", ".join(m for m, on in (("default", self.is_default), ("fast", self.is_fast)) if on)
        return self.provider_display, self.model, f"{self.context_window:,}", key, marks

    def __iter__(self) -> Iterator[str]:
        """Iterate the table cells, so ``table.add_row(*row)`` works."""
        return iter(self.cells())


def model_rows(settings: Settings, env: Mapping[str, str] | None = None) -> list[ModelRow]:
    """Every known model (plus the configured one) with its window and key status.

    Never includes key values, only whether each key variable is set.
    """
    env = os.environ if env is None else env
    try:
        current = resolve_model(settings.model, settings)
    except ConfigError:
        current = None
    rows: list[ModelRow] = []
    fast_names = {settings.fast_model.strip()} - {""}
    for pid in provider_ids(settings):
        try:
            provider = provider_info(pid, settings)
        except ConfigError:
            continue
        key_set = None if provider.api_key_env is None else api_key_for(provider, env) is not None
        models = [m.id for m in provider.models] or [m for m in (provider.default_model,) if m]
        if current is not None and current.provider.id == pid and current.model not in models:
            models.append(current.model)
        for model in models:
            qualified = _qualified(provider, model)
            resolved = resolve_model(qualified, settings)
            rows.append(ModelRow(
                provider=pid, provider_display=provider.display_name,
                model=resolved.name, display_name=resolved.display_name,
                context_window=resolved.context_window, key_env=provider.api_key_env,
                key_set=key_set,
                is_default=current is not None and (current.provider.id, current.model) == (pid, model),
                is_fast=qualified in fast_names or (not fast_names and model == provider.fast_model),
                input_price_per_mtok=resolved.info.input_price_per_mtok if resolved.info else None,
                output_price_per_mtok=resolved.info.output_price_per_mtok if resolved.info else None,
            ))
    return rows


def default_model(env: Mapping[str, str] | None = None) -> str:
    """The model to use when none was chosen: the default of the first built-in provider
    (in the order of ``PROVIDERS``) whose API key is set; OpenAI's when none is."""
    for provider in PROVIDERS:
        if provider.api_key_env and api_key_for(provider, env) is not None:
            return provider.default_model
    return _BY_ID["openai"].default_model


def model_name_problem(name: str, settings: Settings) -> str | None:
    """Why ``name`` is not a model dexter can route, with the nearest known names; None
    when it is fine. A ``provider:model`` form (and a fine-tuned ``ft:`` name) is accepted
    for any known provider; a bare name must be in the catalog."""
    cleaned = name.strip()
    if not cleaned:
        return "The model name is empty."
    try:
        resolved = resolve_model(cleaned, settings)
    except ConfigError as exc:
        return str(exc)
    if resolved.info is not None or ":" in cleaned or cleaned.startswith(_FINE_TUNE_PREFIX):
        return None
    known = [m.id for p in PROVIDERS for m in p.models]
    near = difflib.get_close_matches(cleaned, known, n=3, cutoff=0.4)
    hint = f" Did you mean {', '.join(near)}?" if near else ""
    return (f"Unknown model {cleaned!r}.{hint} See /models; for a model dexter does not "
            f"list, name its provider: {resolved.provider.id}:{cleaned}.")
