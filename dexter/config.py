"""Settings: built-in defaults, then the TOML file, then the environment, then CLI flags.

Every key of the TOML file is a field below; ``config.example.toml`` lists them all. Any key
can also be set from the environment as ``DEXTER_<KEY>`` (top level) or
``DEXTER_<SECTION>_<KEY>`` (e.g. ``DEXTER_CONTEXT_ENABLED=false``). A few well-known
variables have short names (``DEXTER_MODEL``, ``DEXTER_HOME``, ``DEXTER_TRACE``).

The TOML file is ``--config FILE``, else ``$DEXTER_CONFIG``, else ``config.toml`` in the
user's config directory (platformdirs). A ``.env`` file in the working directory is a layer
just below the environment (existing variables win). Which options a file inside the
workspace may set is decided in :mod:`dexter.config_trust` (workspace trust).
"""

from __future__ import annotations

import dataclasses
import io
import math
import os
import re
import stat
import tomllib
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit


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
    side_requests: str = "auto"
    """How the memory flush and compaction are sent (one of ``SIDE_REQUEST_FORMS``)."""


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
class McpServerSettings:
    """One MCP server (``[mcp.servers.NAME]``): ``command`` (+ ``args``, ``env``) runs it
    over stdio; ``url`` (+ ``headers``) reaches it over streamable HTTP. Exactly one of the two."""

    command: str = ""
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class McpSettings:
    """MCP servers as tools (docs/mcp.md). ``servers`` comes from ``[mcp.servers.NAME]`` tables."""

    max_schema_share: float = 0.05
    startup_timeout: float = 30.0
    call_timeout: float = 120.0
    servers: dict[str, McpServerSettings] = field(default_factory=dict)


@dataclass
class ToolSettings:
    """Tool-layer switches and endpoints."""

    allow_private_network: bool = False
    web_search_provider: str = ""
    financial_datasets_base_url: str = "https://api.financialdatasets.ai"
    sec_edgar_base_url: str = "https://www.sec.gov"
    sec_edgar_data_url: str = "https://data.sec.gov"
    sec_edgar_fts_url: str = "https://efts.sec.gov/LATEST"
    sec_user_agent: str = "dexter-research-agent/0.1 (contact: dexter@example.com)"
    keyless_prices: bool = True
    yahoo_chart_base_url: str = "https://query1.finance.yahoo.com"
    yahoo_user_agent: str = "Mozilla/5.0 (compatible; dexter-research-agent/0.1)"
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
    tmp_mb: int = 1024


@dataclass
class VerifySettings:
    """Checking an answer's figures against what was fetched (see docs/verification.md)."""

    enabled: bool = True
    repair_turns: int = 1


@dataclass
class LimitsSettings:
    """Spending limits: a run (or a REPL session's runs together) stops cleanly before a
    request that would go over them. 0: no limit."""

    max_cost_usd: float = 0.0
    max_tokens: int = 0


@dataclass
class Settings:
    """All of dexter's settings."""

    model: str = "gpt-5"
    fast_model: str = ""
    max_iterations: int = 30
    max_output_tokens: int = 8_192
    max_retries: int = 3
    request_timeout: float = 600.0
    connect_timeout: float = 10.0
    first_byte_timeout: float = 120.0
    home: str = ".dexter"
    scratchpad_dir: str = "scratchpads"
    trace: bool = False
    context: ContextSettings = field(default_factory=ContextSettings)
    memory: MemorySettings = field(default_factory=MemorySettings)
    tools: ToolSettings = field(default_factory=ToolSettings)
    bash: BashSettings = field(default_factory=BashSettings)
    verify: VerifySettings = field(default_factory=VerifySettings)
    limits: LimitsSettings = field(default_factory=LimitsSettings)
    providers: dict[str, ProviderSettings] = field(default_factory=dict)
    context_windows: dict[str, int] = field(default_factory=dict)
    mcp: McpSettings = field(default_factory=McpSettings)
    config_path: str = ""
    home_rules_trusted: bool = True
    """Not a setting: False when ``DEXTER_HOME/settings.json`` is not dexter's own writing
    and was not trusted (:mod:`dexter.config_trust`); its allow rules are then not used."""

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


@dataclass(frozen=True, slots=True)
class Range:
    """The values a numeric setting accepts: ``low`` to ``high`` inclusive (``low`` itself
    excluded when ``low_open``), plus 0 when ``zero`` says what 0 means. NaN and infinity
    are never in range."""

    low: float
    high: float
    unit: str = ""
    zero: str = ""
    low_open: bool = False

    def allows(self, value: float) -> bool:
        """Whether ``value`` is an allowed value of the setting."""
        if not math.isfinite(value):
            return False
        if value == 0 and self.zero:
            return True
        above = value > self.low if self.low_open else value >= self.low
        return above and value <= self.high

    def describe(self) -> str:
        """The range as ``config.example.toml`` and the errors write it (``0 to 1,000``)."""
        low, high = _number(self.low), _number(self.high)
        span = f"more than {low}, at most {high}" if self.low_open else f"{low} to {high}"
        unit = f" {self.unit}" if self.unit else ""
        special = f"0 ({self.zero}) or " if self.zero else ""
        return f"{special}{span}{unit}"


def _number(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:,g}"


RANGES: dict[str, Range] = {
    "max_iterations": Range(1, 1_000),
    "max_output_tokens": Range(1, 1_000_000, "tokens"),
    "max_retries": Range(0, 20),
    "request_timeout": Range(0.1, 3_600, "seconds"),
    "connect_timeout": Range(0.1, 600, "seconds"),
    "first_byte_timeout": Range(0.1, 3_600, "seconds"),
    "context.context_window": Range(1_024, 100_000_000, "tokens", zero="the model table"),
    "context.max_tool_result_chars": Range(100, 100_000_000, "characters"),
    "context.preview_chars": Range(0, 1_000_000, "characters"),
    "context.max_turn_result_chars": Range(1_000, 1_000_000_000, "characters"),
    "context.microcompact_count_trigger": Range(0, 10_000, "results"),
    "context.microcompact_keep_recent": Range(0, 10_000, "results"),
    "context.microcompact_token_trigger": Range(0, 100_000_000, "tokens"),
    "context.summary_output_reserve_tokens": Range(0, 1_000_000, "tokens"),
    "context.autocompact_buffer_tokens": Range(0, 1_000_000, "tokens"),
    "context.max_compaction_failures": Range(0, 100),
    "context.min_tool_results_for_compaction": Range(0, 10_000, "results"),
    "context.truncate_keep_rounds": Range(1, 10_000, "rounds"),
    "context.overflow_keep_rounds": Range(1, 10_000, "rounds"),
    "context.max_overflow_retries": Range(0, 100),
    "context.keep_thinking": Range(0, 10_000, "messages"),
    "context.max_calls_per_tool": Range(1, 10_000, "calls"),
    "context.similarity_threshold": Range(0, 1, low_open=True),
    "memory.max_session_context_tokens": Range(0, 1_000_000, "tokens"),
    "memory.max_results": Range(1, 100, "results"),
    "tools.bash_timeout": Range(1, 600, "seconds"),
    "bash.memory_mb": Range(16, 1_048_576, "MiB", zero="no limit"),
    "bash.max_processes": Range(1, 1_000_000, zero="no limit"),
    "bash.max_file_mb": Range(1, 1_048_576, "MiB", zero="no limit"),
    "bash.tmp_mb": Range(1, 1_048_576, "MiB", zero="no limit"),
    "mcp.max_schema_share": Range(0, 1, zero="always search", low_open=True),
    "mcp.startup_timeout": Range(0.1, 600, "seconds"),
    "mcp.call_timeout": Range(0.1, 3_600, "seconds"),
    "verify.repair_turns": Range(0, 10, "requests"),
    "limits.max_cost_usd": Range(0.01, 1_000_000, "US dollars", zero="no limit"),
    "limits.max_tokens": Range(1_000, 10_000_000_000, "tokens", zero="no limit"),
    "context_windows.*": Range(1_024, 100_000_000, "tokens"),
}
"""The allowed values of every numeric setting, by dotted key (``section.key``; the values
of ``[context_windows]`` are ``context_windows.*``). ``load_settings`` checks them all, and
``config.example.toml`` writes each next to its key; a test keeps the three in step."""

SIDE_REQUEST_FORMS = ("auto", "continuation", "separate")
"""``[context] side_requests``: ``auto`` sends the memory flush and compaction as a
continuation of the conversation when the provider caches prompt prefixes and the window
holds it, ``continuation`` does so for any provider (a server with its own prefix cache),
``separate`` always sends them as their own smaller requests."""

URL_KEYS = ("tools.financial_datasets_base_url", "tools.sec_edgar_base_url",
            "tools.sec_edgar_data_url", "tools.sec_edgar_fts_url", "tools.yahoo_chart_base_url")
"""Settings that must be an ``http(s)://host...`` URL (``[providers.*] base_url`` too, when set)."""

_SECTIONS = {"context": ContextSettings, "memory": MemorySettings, "tools": ToolSettings,
             "bash": BashSettings, "verify": VerifySettings, "limits": LimitsSettings}
_SECTIONS["mcp"] = McpSettings  # its servers are [mcp.servers.NAME] tables (_Loader.apply_mcp)
_TOP_LEVEL_KEYS = frozenset(
    f.name for f in dataclasses.fields(Settings)
    if f.name not in _SECTIONS and f.name not in {"providers", "context_windows", "config_path"})
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
    "SEC_EDGAR_FTS_URL": "tools.sec_edgar_fts_url",
    "SEC_EDGAR_USER_AGENT": "tools.sec_user_agent",
    "DEXTER_KEYLESS_PRICES": "tools.keyless_prices",
    "YAHOO_CHART_BASE_URL": "tools.yahoo_chart_base_url",
    "YAHOO_USER_AGENT": "tools.yahoo_user_agent",
}


def default_config_file() -> Path:
    """Where the TOML file lives when neither ``--config`` nor ``DEXTER_CONFIG`` is given."""
    from platformdirs import user_config_dir

    return Path(user_config_dir("dexter")) / "config.toml"


def files_read_at_start(settings: Settings, cwd: Path) -> tuple[Path, ...]:
    """Every file and folder dexter reads its configuration from when it starts in ``cwd``:
    the TOML file (the one in use, and the default place), the user config folder (skills
    beside ``config.toml``), the working directory's ``.env`` and ``dexter.toml``, its
    ``.dexter`` folder (project skills and settings), ``DEXTER_HOME`` (settings.json,
    rules, memory) and the user state folder (the record of what dexter wrote to its
    settings files: :func:`dexter.settings_file.own_content`). The shell sandbox keeps commands from creating or changing any of them
    (``dexter.sandbox.policy``); keep this list in step with what start-up reads."""
    from platformdirs import user_state_dir

    default = default_config_file()
    paths = [default, default.parent, cwd / ".env", cwd / "dexter.toml", cwd / ".dexter",
             Path(settings.home).expanduser(), Path(user_state_dir("dexter"))]
    if settings.config_path:
        paths.insert(0, Path(settings.config_path).expanduser())
    return tuple(dict.fromkeys(Path(os.path.abspath(p)) for p in paths))


def parse_dotenv(data: bytes) -> dict[str, str]:
    """The variables of a ``.env`` file's bytes.

    Bytes that are not UTF-8 become U+FFFD; a line whose name or value the environment
    cannot hold (a NUL byte, an empty name) is left out, so a damaged file never stops dexter.
    """
    from dotenv import dotenv_values

    text = data.decode("utf-8", errors="replace")
    return {name: value for name, value in dotenv_values(stream=io.StringIO(text)).items()
            if value is not None and name and "=" not in name and "\x00" not in name + value}


@dataclass(frozen=True)
class Layers:
    """What one settings load is built from, lowest first: the TOML file (its path and the
    bytes read from it), the ``.env`` variables (a layer just below the environment: a
    variable the environment has wins), the environment, and the command-line overrides."""

    config: tuple[Path, bytes] | None = None
    dotenv: typing.Mapping[str, str] = field(default_factory=dict)
    env: typing.Mapping[str, str] = field(default_factory=dict)
    overrides: typing.Mapping[str, Any] = field(default_factory=dict)


@dataclass
class Loaded:
    """Settings as the layers made them, before :func:`validate_settings`: ``sources`` says
    where each dotted key was set (the file, the variable, "command line"), ``origins``
    which layer set it (``config``, ``dotenv``, ``env`` or ``flag``)."""

    settings: Settings
    sources: dict[str, str]
    origins: dict[str, str]


def load_layers(layers: Layers) -> Loaded:
    """Apply ``layers`` to the defaults (values type-checked, not yet range-checked)."""
    loader = _Loader()
    if layers.config is not None:
        path, data = layers.config
        loader.origin = "config"
        loader.apply_toml(path, data)
        loader.settings.config_path = str(path)
    loader.apply_env(layers.env, layers.dotenv)
    loader.origin = "flag"
    for key, value in layers.overrides.items():
        if value is not None:
            loader.set_dotted(key, value, source="command line")
    return Loaded(loader.settings, loader.sources, loader.origins)


def load_settings(
    config_file: str | Path | None = None,
    overrides: dict[str, Any] | None = None,
    env: typing.Mapping[str, str] | None = None,
) -> Settings:
    """Build settings from defaults, the TOML file, the environment and ``overrides``.

    ``overrides`` uses dotted keys (``{"model": "claude-sonnet-4-6", "context.enabled": False}``)
    and comes from CLI flags; ``None`` values are ignored. Every value is checked (its type,
    and for numbers the range in :data:`RANGES`); a bad one raises ``ConfigError`` naming
    where it was set, the key, the value and what is allowed. (No ``.env`` and no workspace
    trust here: the front ends load through :func:`dexter.config_trust.resolve_settings`.)
    """
    env = os.environ if env is None else env
    path = choose_config_file(config_file, env)
    loaded = load_layers(Layers(config=(path, read_config_bytes(path)) if path else None,
                                env=env, overrides=overrides or {}))
    validate_settings(loaded.settings, loaded.sources)
    return loaded.settings


def choose_config_file(config_file: str | Path | None, env: typing.Mapping[str, str]) -> Path | None:
    """The TOML file to read: ``config_file`` (``--config``), else ``DEXTER_CONFIG`` in
    ``env``, else the user config directory's ``config.toml`` when it exists. A file named
    explicitly that does not exist is a ``ConfigError``."""
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


MAX_CONFIG_BYTES = 1_000_000
"""A config or ``.env`` file larger than this is not read."""


def read_small_file(path: Path, limit: int = MAX_CONFIG_BYTES) -> bytes:
    """The bytes of the regular file ``path``, read once. ``OSError`` when it cannot be
    opened; ``ValueError`` when it is not a regular file (a FIFO would block the start) or
    is larger than ``limit``."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("it is not a regular file")
        if info.st_size > limit:
            raise ValueError(f"it is larger than {limit:,} bytes")
        chunks, size = [], 0
        while chunk := os.read(fd, 65_536):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise ValueError(f"it is larger than {limit:,} bytes")
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_config_bytes(path: Path) -> bytes:
    """The bytes of the config file ``path`` (``ConfigError`` when it cannot be read)."""
    try:
        return read_small_file(path)
    except OSError as exc:
        raise ConfigError(f"Cannot read config file {path}: {exc.strerror}.") from None
    except ValueError as exc:
        raise ConfigError(f"Cannot read config file {path}: {exc}.") from None


def _read_toml(path: Path, raw: bytes) -> dict[str, Any]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise ConfigError(
            f"{path} is not UTF-8 text (byte 0x{raw[exc.start]:02x} on line {line}). "
            "Save the file as UTF-8.") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}. Fix the file or pass another --config.") from None


class _Loader:
    """Applies the layers to one ``Settings`` and remembers where each key was set
    (``sources``: dotted key -> the file, the variable or "command line")."""

    def __init__(self) -> None:
        self.settings = Settings()
        self.sources: dict[str, str] = {}
        self.origins: dict[str, str] = {}
        self.origin = ""
        """The layer being applied (``config``, ``dotenv``, ``env``, ``flag``): recorded in
        ``origins`` for every key it sets."""

    def note(self, dotted: str, source: str) -> None:
        self.sources[dotted] = source
        self.origins[dotted] = self.origin

    def apply_toml(self, path: Path, raw: bytes) -> None:
        settings, where = self.settings, str(path)
        for key, value in _read_toml(path, raw).items():
            if key == "providers":
                if not isinstance(value, dict):
                    raise ConfigError(f"{path}: [providers] must be a table of provider tables.")
                for pid, table in value.items():
                    if not isinstance(table, dict):
                        raise ConfigError(f"{path}: [providers.{pid}] must be a table.")
                    prov = settings.providers.setdefault(pid, ProviderSettings())
                    for k, v in table.items():
                        self.set_field(prov, f"providers.{pid}", k, v, where)
            elif key == "context_windows":
                if not isinstance(value, dict) or not all(
                        isinstance(v, int) and not isinstance(v, bool) for v in value.values()):
                    raise ConfigError(f"{path}: [context_windows] maps model names to integers.")
                for model, tokens in value.items():
                    settings.context_windows[model] = tokens
                    self.note(f"context_windows.{model}", where)
            elif key == "mcp" and isinstance(value, dict):
                self.apply_mcp(path, value)
            elif key in _SECTIONS:
                if not isinstance(value, dict):
                    raise ConfigError(f"{path}: [{key}] must be a table.")
                for k, v in value.items():
                    self.set_field(getattr(settings, key), key, k, v, where)
            else:
                self.set_field(settings, "", key, value, where)

    def apply_mcp(self, path: Path, table: dict[str, Any]) -> None:
        """``[mcp]`` keys, and each ``[mcp.servers.NAME]`` table as a server."""
        where, mcp = str(path), self.settings.mcp
        for k, v in table.items():
            if k != "servers":
                self.set_field(mcp, "mcp", k, v, where)
                continue
            if not isinstance(v, dict) or not all(isinstance(t, dict) for t in v.values()):
                raise ConfigError(f"{path}: [mcp.servers] must hold [mcp.servers.NAME] tables.")
            for name, server_table in v.items():
                server = mcp.servers.setdefault(name, McpServerSettings())
                for sk, sv in server_table.items():
                    section = f"mcp.servers.{name}"
                    if sk in ("env", "headers"):
                        if not isinstance(sv, dict) or not all(
                                isinstance(x, str) for x in sv.values()):
                            raise ConfigError(f"{path} [{section}]: '{sk}' must be a table of "
                                              "strings (NAME = \"value\").")
                        setattr(server, sk, dict(sv))
                        self.note(f"{section}.{sk}", where)
                    else:
                        self.set_field(server, section, sk, sv, where)

    def apply_env(self, env: typing.Mapping[str, str],
                  dotenv: typing.Mapping[str, str] | None = None) -> None:
        """The environment's settings variables, and below them those of ``.env``."""
        merged = {**(dotenv or {}), **env}
        ordered = [*(v for v in _ENV_ALIASES if v in merged),
                   *(v for v in merged if v not in _ENV_ALIASES)]
        for var in ordered:
            dotted, raw = env_setting(var), merged[var]
            # an empty short name or top-level variable is not set; a section one is
            if dotted is None or (not raw and (var in _ENV_ALIASES or "." not in dotted)):
                continue
            self.origin = "env" if var in env else "dotenv"
            self.set_dotted(dotted, raw, source=var)

    def set_dotted(self, dotted: str, value: Any, source: str) -> None:
        target: Any = self.settings
        *parents, name = dotted.split(".")
        for part in parents:
            target = getattr(target, part)
        self.set_field(target, ".".join(parents), name, value, source)

    def set_field(self, obj: Any, section: str, name: str, value: Any, source: str) -> None:
        fields = {f.name: f for f in dataclasses.fields(obj)}
        where = f"{source} [{section}]" if section else source
        if name not in fields or name == "config_path":
            known = ", ".join(sorted(n for n in fields if n != "config_path"))
            raise ConfigError(f"{where}: unknown setting '{name}'. Known settings here: {known}.")
        hint = typing.get_type_hints(type(obj))[name]
        if self.origin == "config":  # the file has types: `trace = "yes"` is not a boolean
            _check_toml_type(value, hint, f"{where}: '{name}'", name, getattr(obj, name))
        setattr(obj, name, _coerce(value, hint, f"{where}: '{name}'"))
        self.note(f"{section}.{name}" if section else name, source)


def env_setting(var: str) -> str | None:
    """The dotted key an environment variable sets (``DEXTER_BASH_NETWORK`` ->
    ``bash.network``, ``SEC_EDGAR_BASE_URL`` -> ``tools.sec_edgar_base_url``), or None for a
    variable that sets no setting (``DEXTER_CONFIG`` chooses the file instead)."""
    if var in _ENV_ALIASES:
        return _ENV_ALIASES[var]
    if not var.startswith("DEXTER_") or var == "DEXTER_CONFIG":
        return None
    rest = var[len("DEXTER_"):].lower()
    if rest in _TOP_LEVEL_KEYS:
        return rest
    for section, cls in _SECTIONS.items():
        if rest.startswith(section + "_"):
            key = rest[len(section) + 1:]
            fields = {f.name for f in dataclasses.fields(cls)} - {"servers"}
            return f"{section}.{key}" if key in fields else None
    return None


def _clean(text: str) -> str:
    """Lone surrogates (an environment variable or argument that is not UTF-8) become
    U+FFFD, as ``dexter.text.clean`` does (config sits below it, so it cannot import it)."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _coerce(value: Any, hint: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    if isinstance(value, str):
        value = _clean(value)
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
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise ConfigError(f"{where} must be a whole number, got {value!r}.")
        try:
            return int(str(value).strip().replace("_", ""))
        except ValueError:
            raise ConfigError(f"{where} must be a whole number, got {_shown(value)}.") from None
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise ConfigError(f"{where} must be a number, got {value!r}.")
        try:
            return float(value)
        except (ValueError, OverflowError):
            raise ConfigError(f"{where} must be a number, got {_shown(value)}.") from None
    if hint is str:
        if not isinstance(value, str):  # `model = 5` in TOML: a number, not a name
            raise ConfigError(f"{where} must be a string in quotes, got {_shown(value)}.")
        return value
    if origin is list or hint is list or typing.get_origin(hint) is list:
        if isinstance(value, str):
            return [item.strip() for item in value.split(",") if item.strip()]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where} must be a list of strings, got {value!r}.")
        return list(value)
    if isinstance(value, dict) and dataclasses.is_dataclass(hint):
        raise ConfigError(f"{where} must be written as a [section] table.")
    return value


def _check_toml_type(value: Any, hint: Any, where: str, name: str, default: Any) -> None:
    """A value from the TOML file must have the TOML type of its setting (the environment
    and flags give text, converted by :func:`_coerce`): ``max_iterations = "10"``,
    ``trace = "yes"`` and ``allow_read = "/data"`` are errors that say what to write."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    fits = {bool: lambda v: isinstance(v, bool),
            int: lambda v: isinstance(v, int) and not isinstance(v, bool),
            float: lambda v: isinstance(v, int | float) and not isinstance(v, bool),
            str: lambda v: isinstance(v, str)}
    listed = hint is list or typing.get_origin(hint) is list
    if listed:
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return
        kind = "a list of strings"
        items = value.split(",") if isinstance(value, str) else [] if isinstance(
            value, list | dict) else [str(value)]
        example: Any = [item.strip() for item in items if item.strip()] or ["..."]
    elif hint in fits:
        if fits[hint](value):
            return
        kind = {bool: "true or false", int: "a whole number", float: "a number",
                str: "a string in quotes"}[hint]
        example = _intended(value, hint, default)
    else:
        return
    written = _toml(example)
    if len(written) > 60:
        written = _toml(default)
    got = _toml(value)
    raise ConfigError(f"{where} must be {kind}, got {got if len(got) <= 60 else _shown(value)}; write it as "
                      f"{name} = {written}.")


def _intended(value: Any, hint: Any, default: Any) -> Any:
    """The value a mistyped TOML value most likely meant (``"10"`` -> 10, ``5`` -> "5"),
    else the setting's default, for the error's example."""
    if hint is str:
        return str(value) if isinstance(value, int | float) and not isinstance(value, bool) \
            else default or "..."
    if hint is bool and value in (0, 1) and isinstance(value, int):
        return bool(value)
    if isinstance(value, str):
        try:
            return _coerce(value, hint, "")
        except ConfigError:
            pass
    return default


def _toml(value: Any) -> str:
    """``value`` written as TOML (true, 10, 0.5, "text", ["a", "b"])."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value)


def _shown(value: Any) -> str:
    """``repr(value)``, shortened when it is long (a 5,000-digit number)."""
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:40]}... ({len(text)} characters)"


_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f]")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _label(dotted: str) -> str:
    """``[context] keep_thinking`` for ``context.keep_thinking``, ``max_retries`` as is."""
    section, _, name = dotted.rpartition(".")
    if section.startswith("context_windows"):
        return f'[context_windows] "{dotted.removeprefix("context_windows.")}"'
    return f"[{section}] {name}" if section else name


def _where(dotted: str, sources: dict[str, str]) -> str:
    return sources.get(dotted, "built-in default")


def _numbers(settings: Settings) -> Iterator[tuple[str, Any]]:
    """Every numeric setting as (dotted key, value), the ``[context_windows]`` map included."""
    for f in dataclasses.fields(Settings):
        value = getattr(settings, f.name)
        if f.name in _SECTIONS:
            for sub in dataclasses.fields(value):
                inner = getattr(value, sub.name)
                if isinstance(inner, int | float) and not isinstance(inner, bool):
                    yield f"{f.name}.{sub.name}", inner
        elif isinstance(value, int | float) and not isinstance(value, bool):
            yield f.name, value
    for model, tokens in settings.context_windows.items():
        yield f"context_windows.{model}", tokens


def _strings(settings: Settings) -> Iterator[tuple[str, str]]:
    """Every string setting as (dotted key, value): list items and provider tables included."""
    def of(obj: Any, prefix: str) -> Iterator[tuple[str, str]]:
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            key = f"{prefix}.{f.name}" if prefix else f.name
            if isinstance(value, str):
                yield key, value
            elif isinstance(value, list):
                yield from ((key, item) for item in value if isinstance(item, str))

    yield from of(settings, "")
    for section in _SECTIONS:
        yield from of(getattr(settings, section), section)
    for pid, prov in settings.providers.items():
        yield from of(prov, f"providers.{pid}")
    for name, server in settings.mcp.servers.items():
        yield from of(server, f"mcp.servers.{name}")
        for key, table in (("env", server.env), ("headers", server.headers)):
            yield from ((f"mcp.servers.{name}.{key}", v) for v in table.values())


_MCP_NAME = re.compile(r"[A-Za-z0-9-]+(_[A-Za-z0-9-]+)*")


def _validate_mcp(settings: Settings, sources: dict[str, str]) -> None:
    """Each ``[mcp.servers.NAME]``: a usable name, and either a command or an http(s) URL."""
    for name, server in settings.mcp.servers.items():
        label = f"[mcp.servers.{name}]"
        where = _where(f"mcp.servers.{name}.{'url' if server.url else 'command'}", sources)
        if not _MCP_NAME.fullmatch(name) or len(name) > 30:
            raise ConfigError(f"{where}: {label}: the server name must be letters, digits, - "
                              "and single _ (at most 30), e.g. [mcp.servers.prices].")
        if bool(server.command.strip()) == bool(server.url):
            raise ConfigError(f"{where}: {label} needs either command (a stdio server) or url "
                              "(streamable HTTP), not both and not neither.")
        parts = urlsplit(server.url)
        if server.url and (parts.scheme not in ("http", "https") or not parts.netloc):
            raise ConfigError(f"{where}: {label} url = {server.url!r} is not a URL; allowed: "
                              "http://host... or https://host...")
        if server.url and (server.args or server.env):
            raise ConfigError(f"{where}: {label}: args and env are for a command; an HTTP "
                              "server takes headers.")
        if server.command and server.headers:
            raise ConfigError(f"{where}: {label}: headers are for a url; a command takes env.")


def validate_settings(settings: Settings, sources: dict[str, str] | None = None) -> None:
    """Check every value against :data:`RANGES` and the rules between keys (``sources``:
    where each dotted key was set, for the message); ``ConfigError`` for the first bad one."""
    sources = sources or {}
    for dotted, value in _numbers(settings):
        rule = RANGES.get("context_windows.*" if dotted.startswith("context_windows.") else dotted)
        if rule is not None and not rule.allows(value):
            raise ConfigError(
                f"{_where(dotted, sources)}: {_label(dotted)} = {_shown(value)} is out of "
                f"range; allowed: {rule.describe()}.")
    for dotted, text in _strings(settings):
        if _CONTROL.search(text):
            raise ConfigError(f"{_where(dotted, sources)}: {_label(dotted)} = {_shown(text)} "
                              "holds a control character; remove it.")
    urls = [(key, getattr(settings.tools, key.split(".")[1])) for key in URL_KEYS]
    urls += [(f"providers.{pid}.base_url", p.base_url) for pid, p in settings.providers.items()]
    for dotted, url in urls:
        parts = urlsplit(url)
        if url and (parts.scheme not in ("http", "https") or not parts.netloc):
            raise ConfigError(f"{_where(dotted, sources)}: {_label(dotted)} = {url!r} is not a "
                              "URL; allowed: http://host... or https://host...")
    for pid, prov in settings.providers.items():
        if prov.api_key_env and not _ENV_NAME.fullmatch(prov.api_key_env):
            dotted = f"providers.{pid}.api_key_env"
            raise ConfigError(f"{_where(dotted, sources)}: {_label(dotted)} = "
                              f"{prov.api_key_env!r} is not an environment variable name; "
                              "allowed: letters, digits and _ (e.g. MYLAB_API_KEY).")
    _validate_mcp(settings, sources)
    if not settings.model.strip():
        raise ConfigError("model is empty. Set --model, DEXTER_MODEL or 'model' in the config file.")
    ctx = settings.context
    if ctx.preview_chars > ctx.max_tool_result_chars:
        dotted = "context.preview_chars"
        raise ConfigError(f"{_where(dotted, sources)}: [context] preview_chars = "
                          f"{ctx.preview_chars} is out of range; allowed: at most "
                          f"max_tool_result_chars ({ctx.max_tool_result_chars:,}).")
    if ctx.side_requests not in SIDE_REQUEST_FORMS:
        dotted = "context.side_requests"
        raise ConfigError(f"{_where(dotted, sources)}: [context] side_requests = "
                          f"{_shown(ctx.side_requests)} is not one of "
                          f"{', '.join(SIDE_REQUEST_FORMS)}.")
