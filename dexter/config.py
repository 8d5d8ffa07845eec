"""Settings: built-in defaults, then the TOML file, then the environment, then CLI flags.

Every key of the TOML file is a field below; ``config.example.toml`` lists them all. Any key
can also be set from the environment as ``DEXTER_<KEY>`` (top level) or
``DEXTER_<SECTION>_<KEY>`` (e.g. ``DEXTER_CONTEXT_ENABLED=false``). A few well-known
variables have short names (``DEXTER_MODEL``, ``DEXTER_HOME``, ``DEXTER_TRACE``).

The TOML file is ``--config FILE``, else ``$DEXTER_CONFIG``, else ``config.toml`` in the
user's config directory (platformdirs). A ``.env`` file in the working directory is loaded
into the environment first (existing variables win).
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class ConfigError(Exception):
    """A configuration problem the user must fix; the message says what and how."""


@dataclass
class ContextSettings:
    """The context defenses (constants in docs/architecture.md). ``enabled = false`` turns all off."""

    enabled: bool = True
    context_window: int = 0
    max_tool_result_chars: int = 50_000
    preview_chars: int = 2_000
    max_turn_result_chars: int = 200_000
    microcompact_count_trigger: int = 8
    microcompact_keep_recent: int = 4
    microcompact_token_trigger: int = 80_000
    summary_output_reserve_tokens: int = 20_000
    autocompact_buffer_tokens: int = 13_000
    max_compaction_failures: int = 3
    min_tool_results_for_compaction: int = 3
    truncate_keep_rounds: int = 5
    overflow_keep_rounds: int = 3
    max_overflow_retries: int = 2
    keep_thinking: int = 2
    max_calls_per_tool: int = 3
    similarity_threshold: float = 0.7


@dataclass
class MemorySettings:
    """Persistent memory (files under ``DEXTER_HOME/memory``)."""

    enabled: bool = True
    embedding_provider: str = "auto"
    embedding_model: str = ""
    max_session_context_tokens: int = 2_000
    max_results: int = 6
    index_sessions: bool = True


@dataclass
class ProviderSettings:
    """Per-provider overrides. Empty strings mean "use the built-in value"."""

    base_url: str = ""
    api_key_env: str = ""
    fast_model: str = ""


@dataclass
class ToolSettings:
    """Tool-layer switches and endpoints."""

    allow_private_network: bool = False
    web_search_provider: str = ""
    financial_datasets_base_url: str = "https://api.financialdatasets.ai"
    sec_edgar_base_url: str = "https://www.sec.gov"
    sec_edgar_data_url: str = "https://data.sec.gov"
    sec_user_agent: str = "dexter-research-agent/0.1 (contact: dexter@example.com)"
    bash_timeout: int = 120


@dataclass
class BashSettings:
    """The shell tool's operating-system sandbox (see docs/security.md)."""

    sandbox: bool = True
    auto_allow_sandboxed: bool = True
    network: bool = False
    allow_read: list[str] = field(default_factory=list)
    allow_write: list[str] = field(default_factory=list)
    env: list[str] = field(default_factory=list)
    memory_mb: int = 4096
    max_processes: int = 512
    max_file_mb: int = 2048


@dataclass
class VerifySettings:
    """Checking an answer's figures against what was fetched (see docs/verification.md)."""

    enabled: bool = True
    repair_turns: int = 1


@dataclass
class Settings:
    """All of dexter's settings."""

    model: str = "gpt-5.6-sol"
    fast_model: str = ""
    max_iterations: int = 10
    max_output_tokens: int = 8_192
    max_retries: int = 3
    request_timeout: float = 600.0
    home: str = ".dexter"
    scratchpad_dir: str = "scratchpads"
    trace: bool = False
    context: ContextSettings = field(default_factory=ContextSettings)
    memory: MemorySettings = field(default_factory=MemorySettings)
    tools: ToolSettings = field(default_factory=ToolSettings)
    bash: BashSettings = field(default_factory=BashSettings)
    verify: VerifySettings = field(default_factory=VerifySettings)
    providers: dict[str, ProviderSettings] = field(default_factory=dict)
    context_windows: dict[str, int] = field(default_factory=dict)
    config_path: str = ""

    @property
    def home_path(self) -> Path:
        """``DEXTER_HOME`` as an absolute path (relative values are from the working dir)."""
        return Path(self.home).expanduser().resolve()

    @property
    def scratchpad_path(self) -> Path:
        return Path(self.scratchpad_dir).expanduser().resolve()

    def provider(self, provider_id: str) -> ProviderSettings:
        """Overrides for one provider (defaults when none are configured)."""
        return self.providers.get(provider_id, ProviderSettings())


_SECTIONS = {"context": ContextSettings, "memory": MemorySettings, "tools": ToolSettings,
             "bash": BashSettings, "verify": VerifySettings}
_ENV_ALIASES = {
    "DEXTER_MODEL": "model",
    "DEXTER_FAST_MODEL": "fast_model",
    "DEXTER_HOME": "home",
    "DEXTER_TRACE": "trace",
    "DEXTER_MAX_ITERATIONS": "max_iterations",
    "DEXTER_SCRATCHPAD_DIR": "scratchpad_dir",
    "DEXTER_ALLOW_PRIVATE_NETWORK": "tools.allow_private_network",
    "FINANCIAL_DATASETS_BASE_URL": "tools.financial_datasets_base_url",
    "SEC_EDGAR_BASE_URL": "tools.sec_edgar_base_url",
    "SEC_EDGAR_DATA_URL": "tools.sec_edgar_data_url",
    "SEC_EDGAR_USER_AGENT": "tools.sec_user_agent",
}


def default_config_file() -> Path:
    """Where the TOML file lives when neither ``--config`` nor ``DEXTER_CONFIG`` is given."""
    from platformdirs import user_config_dir

    return Path(user_config_dir("dexter")) / "config.toml"


def load_dotenv_file(cwd: Path | None = None) -> None:
    """Load ``.env`` from the working directory; variables already set win."""
    path = (cwd or Path.cwd()) / ".env"
    if path.is_file():
        from dotenv import load_dotenv

        load_dotenv(path, override=False)


def load_settings(
    config_file: str | Path | None = None,
    overrides: dict[str, Any] | None = None,
    env: typing.Mapping[str, str] | None = None,
) -> Settings:
    """Build settings from defaults, the TOML file, the environment and ``overrides``.

    ``overrides`` uses dotted keys (``{"model": "claude-sonnet-4-6", "context.enabled": False}``)
    and comes from CLI flags; ``None`` values are ignored.
    """
    env = os.environ if env is None else env
    settings = Settings()
    path = _choose_config_file(config_file, env)
    if path is not None:
        _apply_toml(settings, path)
        settings.config_path = str(path)
    _apply_env(settings, env)
    for key, value in (overrides or {}).items():
        if value is not None:
            _set_dotted(settings, key, value, source="command line")
    _validate(settings)
    return settings


def _choose_config_file(config_file: str | Path | None, env: typing.Mapping[str, str]) -> Path | None:
    if config_file:
        path = Path(config_file).expanduser()
        if not path.is_file():
            raise ConfigError(f"Config file not found: {path}. Check the --config path.")
        return path
    if env.get("DEXTER_CONFIG"):
        path = Path(env["DEXTER_CONFIG"]).expanduser()
        if not path.is_file():
            raise ConfigError(f"Config file not found: {path} (from DEXTER_CONFIG). Fix or unset it.")
        return path
    path = default_config_file()
    return path if path.is_file() else None


def _apply_toml(settings: Settings, path: Path) -> None:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}. Fix the file or pass another --config.") from None
    except OSError as exc:
        raise ConfigError(f"Cannot read config file {path}: {exc.strerror}.") from None
    for key, value in data.items():
        if key == "providers":
            if not isinstance(value, dict):
                raise ConfigError(f"{path}: [providers] must be a table of provider tables.")
            for pid, table in value.items():
                if not isinstance(table, dict):
                    raise ConfigError(f"{path}: [providers.{pid}] must be a table.")
                prov = settings.providers.setdefault(pid, ProviderSettings())
                for k, v in table.items():
                    _set_field(prov, k, v, f"{path} [providers.{pid}]")
        elif key == "context_windows":
            if not isinstance(value, dict) or not all(isinstance(v, int) for v in value.values()):
                raise ConfigError(f"{path}: [context_windows] maps model names to integers.")
            settings.context_windows.update(value)
        elif key in _SECTIONS:
            if not isinstance(value, dict):
                raise ConfigError(f"{path}: [{key}] must be a table.")
            for k, v in value.items():
                _set_field(getattr(settings, key), k, v, f"{path} [{key}]")
        else:
            _set_field(settings, key, value, str(path))


def _apply_env(settings: Settings, env: typing.Mapping[str, str]) -> None:
    for var, dotted in _ENV_ALIASES.items():
        if env.get(var):
            _set_dotted(settings, dotted, env[var], source=var)
    for var, raw in env.items():
        if not var.startswith("DEXTER_") or var in _ENV_ALIASES or var == "DEXTER_CONFIG":
            continue
        rest = var[len("DEXTER_"):].lower()
        for section in _SECTIONS:
            if rest.startswith(section + "_"):
                key = rest[len(section) + 1:]
                if key in {f.name for f in dataclasses.fields(_SECTIONS[section])}:
                    _set_dotted(settings, f"{section}.{key}", raw, source=var)
                break


def _set_dotted(settings: Settings, dotted: str, value: Any, source: str) -> None:
    target: Any = settings
    *parents, name = dotted.split(".")
    for part in parents:
        target = getattr(target, part)
    _set_field(target, name, value, source)


def _set_field(obj: Any, name: str, value: Any, source: str) -> None:
    fields = {f.name: f for f in dataclasses.fields(obj)}
    if name not in fields or name == "config_path":
        known = ", ".join(sorted(n for n in fields if n != "config_path"))
        raise ConfigError(f"{source}: unknown setting '{name}'. Known settings here: {known}.")
    hint = typing.get_type_hints(type(obj))[name]
    setattr(obj, name, _coerce(value, hint, f"{source}: '{name}'"))


def _coerce(value: Any, hint: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    if hint is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in {"1", "true", "yes", "on"}:
            return True
        if text in {"0", "false", "no", "off", ""}:
            return False
        raise ConfigError(f"{where} must be true or false, got {value!r}.")
    if hint is int:
        if isinstance(value, bool):
            raise ConfigError(f"{where} must be a whole number, got {value!r}.")
        try:
            return int(str(value).replace("_", ""))
        except ValueError:
            raise ConfigError(f"{where} must be a whole number, got {value!r}.") from None
    if hint is float:
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{where} must be a number, got {value!r}.") from None
    if hint is str:
        if not isinstance(value, str | int | float):
            raise ConfigError(f"{where} must be a string, got {value!r}.")
        return str(value)
    if origin is list or hint is list or typing.get_origin(hint) is list:
        if isinstance(value, str):
            return [item.strip() for item in value.split(",") if item.strip()]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where} must be a list of strings, got {value!r}.")
        return list(value)
    if isinstance(value, dict) and dataclasses.is_dataclass(hint):
        raise ConfigError(f"{where} must be written as a [section] table.")
    return value


def _validate(settings: Settings) -> None:
    if settings.max_iterations < 1:
        raise ConfigError("max_iterations must be at least 1.")
    if not settings.model.strip():
        raise ConfigError("model is empty. Set --model, DEXTER_MODEL or 'model' in the config file.")
    for name in ("memory_mb", "max_processes", "max_file_mb"):
        if getattr(settings.bash, name) < 0:
            raise ConfigError(f"[bash] {name} must not be negative (0 means no limit).")
    ctx = settings.context
    for name in ("max_tool_result_chars", "preview_chars", "max_turn_result_chars",
                 "microcompact_keep_recent", "truncate_keep_rounds", "overflow_keep_rounds"):
        if getattr(ctx, name) < 0:
            raise ConfigError(f"[context] {name} must not be negative.")
    if ctx.max_calls_per_tool < 1:
        raise ConfigError("[context] max_calls_per_tool must be at least 1.")
    if not 0 < ctx.similarity_threshold <= 1:
        raise ConfigError("[context] similarity_threshold must be between 0 and 1 (e.g. 0.7).")
    if ctx.preview_chars > ctx.max_tool_result_chars:
        raise ConfigError("[context] preview_chars must not exceed max_tool_result_chars.")
