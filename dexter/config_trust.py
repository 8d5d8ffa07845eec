"""Workspace trust for configuration: options that widen what dexter may do come only from
places no command can write, or from a workspace file whose exact content the user confirmed.

A command dexter runs may write the workspace (the working directory) and any ``[bash]
allow_write`` folder, so a file there is attacker input to dexter's next start. Such a
**workspace file** is the working directory's ``.env`` (always), and the TOML config when
it lies where commands can write, as named or after any symlink on its way (``dexter``
started in the home folder makes ``~/.config/dexter/config.toml`` one). From a workspace
file dexter takes keys and harmless options; the **widening** ones (:func:`widening`) only
when the file is trusted:

- sandbox grants: ``[bash] allow_read``, ``allow_write``, ``env``, ``network = true``,
  ``sandbox = false``, ``auto_allow_sandboxed = true``, higher ``memory_mb``,
  ``max_processes``, ``max_file_mb`` and ``[tools] bash_timeout``, and ``[tools]
  allow_private_network = true``;
- where requests and keys go: ``[tools] *_base_url``, ``[providers.*] base_url`` and
  ``api_key_env``, every ``[mcp.servers.*]`` (a program dexter starts, or a server it sends
  headers to);
- where dexter keeps its rules and records (``home``, ``scratchpad_dir``), higher
  ``[limits]``;
- in a ``.env``, any variable that is neither a key (a name ending in ``_KEY``, ``_TOKEN``,
  ``_SECRET``, ``_PASSWORD``...) nor a dexter setting: ``OPENAI_BASE_URL`` and the other
  ``*_BASE_URL`` variables, proxies, certificate files, loader paths. dexter's libraries
  and the programs it starts read them from its environment.

Narrowing is always taken (``network = false``, a lower limit). A file is trusted when its
SHA-256 is the one recorded for its path (``trusted_files`` in ``settings.json`` of
DEXTER_HOME, which commands cannot write), when the user confirms it at the interactive
start (``confirm``), or for one run with ``--trust-workspace``; a changed file is new
content and asks again. The DEXTER_HOME holding the records is the one the environment, the
flags and a config file outside the workspace choose. Files are read once, at start: a file
a command writes during a session is not read by that session (:func:`changed_files` tells
the front ends, which say so).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from dexter.config import (
    ConfigError,
    Layers,
    Loaded,
    McpServerSettings,
    ProviderSettings,
    Settings,
    choose_config_file,
    default_config_file,
    env_setting,
    load_layers,
    parse_dotenv,
    read_config_bytes,
    read_small_file,
    validate_settings,
)
from dexter.secrets import scrub_output
from dexter.settings_file import (
    SETTINGS_FILE,
    SettingsFileError,
    own_content,
    read_settings_file,
    record_own_content,
    update_settings_file,
)

TRUST_KEY = "trusted_files"
"""The ``settings.json`` key: ``{path: sha256}`` of the workspace files the user trusted."""

Kind = Literal["dotenv", "config", "settings"]

_KEY_NAME = re.compile(
    r"(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSPHRASE|ACCESS_KEY_ID|KEY_ID|PAT)$",
    re.IGNORECASE)
_LISTS = {"bash.allow_read": "commands may read these folders outside the workspace",
          "bash.allow_write": "commands may write these folders outside the workspace",
          "bash.env": "these variables of dexter's environment are handed to every command"}
_TURNS_ON = {"bash.network": "commands get the network",
             "bash.auto_allow_sandboxed": "contained commands run without asking",
             "tools.allow_private_network": "web fetches may reach local and private addresses"}
_TURNS_OFF = {"bash.sandbox": "commands run without the operating-system sandbox"}
_RAISES = {"bash.memory_mb": "a command may use more memory",
           "bash.max_processes": "a command may start more processes",
           "bash.max_file_mb": "a command may write larger files",
           "tools.bash_timeout": "a command may run longer",
           "limits.max_cost_usd": "a run may spend more",
           "limits.max_tokens": "a run may use more tokens"}
_CHANGES = {"home": "dexter's rules, memory and trust records are read from there",
            "scratchpad_dir": "dexter writes its run records there",
            "tools.financial_datasets_base_url": "data requests, with the key, go there",
            "tools.sec_edgar_base_url": "filing requests go there (its data is trusted as SEC's)",
            "tools.sec_edgar_data_url": "filing data requests go there (trusted as SEC's)",
            "tools.yahoo_chart_base_url": "price requests go there"}
_PROVIDER_FIELDS = {"base_url": "the model's requests, with its key, go there",
                    "api_key_env": "this variable is sent as the provider's key"}
_OTHER_VARIABLE = ("set in dexter's environment, which its libraries and the programs it "
                   "starts read")
_VARIABLE_EFFECTS = (
    (re.compile(r"(?i)(?:_BASE_URL|_API_BASE|_BASE|_ENDPOINT|_URL|_HOST)$"),
     "requests, with the key, go to this address"),
    (re.compile(r"(?i)(?:^|_)PROXY$"), "dexter's requests go through this proxy"),
    (re.compile(r"(?i)^(?:SSL_CERT_(?:FILE|DIR)|REQUESTS_CA_BUNDLE|CURL_CA_BUNDLE)$"),
     "the certificates dexter trusts for HTTPS"),
    (re.compile(r"^(?:LD_|DYLD_|PYTHON|NODE_|GIT_)"),
     "changes what the programs dexter starts load and run"),
    (re.compile(r"^XDG_"), "moves where dexter and its programs read their configuration"),
)


@dataclass(frozen=True, slots=True)
class Widening:
    """One widening option of a workspace file: ``key`` as the file writes it
    (``DEXTER_BASH_ALLOW_WRITE``, ``[bash] allow_write``), its value as shown to the user
    (secrets masked), and what it would let dexter do."""

    key: str
    value: str
    effect: str

    def line(self) -> str:
        """``KEY = value (effect)`` for the messages."""
        return f"{self.key} = {self.value}  ({self.effect})"


@dataclass(frozen=True, slots=True)
class WorkspaceFile:
    """A configuration file dexter read from where commands can write.

    ``trusted`` says whether its widening options are used, ``how`` why (``stored``: its
    content was confirmed before; ``confirmed``: just now; ``flag``: ``--trust-workspace``;
    ``declined``: the user said no at the prompt; ``""``: it widens nothing, or nobody was
    asked)."""

    path: Path
    kind: Kind
    digest: str
    widening: tuple[Widening, ...]
    trusted: bool
    how: str = ""

    @property
    def ignored(self) -> bool:
        """True when it sets widening options that were not used."""
        return bool(self.widening) and not self.trusted

    def describe(self) -> str:
        """The file and its widening options, one per line (for the prompt and the notice)."""
        if self.kind == "settings":
            lines = [f"{self.path} holds dexter's permission rules and trust records for this "
                     "folder, but dexter did not write this content (it may have come with the "
                     "folder, or another program wrote it). It widens what dexter may do:"]
        else:
            lines = [f"{self.path} is in the workspace, where commands dexter runs can write, "
                     "and sets options that widen what dexter may do:"]
        lines += [f"  {w.line()}" for w in self.widening]
        return "\n".join(lines)

    def notice(self) -> str | None:
        """The one warning for an ignored file (which file, which keys, how to trust it)."""
        if not self.ignored:
            return None
        keys = ", ".join(dict.fromkeys(w.key for w in self.widening))
        how = ("If you wrote them, run `dexter trust` once (it asks again whenever the file "
               "changes), or pass --trust-workspace for this run.")
        if self.kind == "settings":
            return (f"Ignored {keys} in {self.path}: dexter did not write this content (it may "
                    "have come with the folder, or another program wrote it), and these "
                    f"entries widen what dexter may do. {how} Its deny and ask rules and "
                    "saved choices are used.")
        return (f"Ignored {keys} in {self.path}: the file is in the workspace, where commands "
                f"can write, and these options widen what dexter may do. {how} The file's "
                "other settings are used.")


@dataclass
class Resolved:
    """The outcome of :func:`resolve_settings`: the validated settings, the ``.env``
    variables to add to the process environment, the workspace files with their trust, and
    other notices (a ``.env`` that could not be read, ``DEXTER_CONFIG`` in a ``.env``)."""

    settings: Settings
    environ: dict[str, str]
    files: list[WorkspaceFile]
    notices: list[str] = field(default_factory=list)
    watched: dict[Path, str | None] = field(default_factory=dict)
    """Every workspace config path dexter looked at, with the digest read (None: absent)."""
    trust_home: Path | None = None
    """The DEXTER_HOME whose ``settings.json`` holds the trust records."""


Confirm = Callable[[WorkspaceFile], bool]


class TrustStore:
    """The trusted content hashes, in ``settings.json`` of a DEXTER_HOME (one owner writes
    it: :mod:`dexter.settings_file`)."""

    def __init__(self, home: Path) -> None:
        self.path = home / SETTINGS_FILE
        self.usable = True
        """False when the settings file itself is not trusted (not dexter's own writing):
        its records then trust nothing."""

    def entries(self) -> dict[str, str]:
        """Every record: the file's path -> the SHA-256 of its trusted content."""
        if not self.usable:
            return {}
        try:
            table = read_settings_file(self.path).get(TRUST_KEY)
        except SettingsFileError:
            return {}
        if not isinstance(table, dict):
            return {}
        return {k: v for k, v in table.items() if isinstance(k, str) and isinstance(v, str)}

    def is_trusted(self, path: Path, digest: str) -> bool:
        """Whether this exact content of ``path`` was trusted."""
        return self.entries().get(file_key(path)) == digest

    def trust(self, path: Path, digest: str) -> None:
        """Record ``digest`` as the trusted content of ``path`` (replacing an older one, so
        going back to content trusted before asks again). ``SettingsFileError`` on failure."""
        def change(data: dict[str, Any]) -> None:
            table = data.get(TRUST_KEY)
            table = dict(table) if isinstance(table, dict) else {}
            table[file_key(path)] = digest
            data[TRUST_KEY] = table

        update_settings_file(self.path, change)

    def revoke(self, path: Path) -> bool:
        """Forget the trust of ``path``; False when there was none."""
        key, found = file_key(path), False

        def change(data: dict[str, Any]) -> None:
            nonlocal found
            table = data.get(TRUST_KEY)
            if isinstance(table, dict) and key in table:
                found = True
                data[TRUST_KEY] = {k: v for k, v in table.items() if k != key}

        if key in self.entries():
            update_settings_file(self.path, change)
        return found


def file_key(path: Path) -> str:
    """How a file is named in the records: its folder resolved, its own name as is (a
    ``.env`` that is a symlink is still the workspace's ``.env``)."""
    absolute = Path(os.path.abspath(path))
    return str(Path(os.path.realpath(absolute.parent)) / absolute.name)


def digest_of(data: bytes) -> str:
    """The SHA-256 of a file's bytes, as recorded."""
    return hashlib.sha256(data).hexdigest()


def is_key_name(name: str) -> bool:
    """Whether a variable's name is that of a credential (``OPENAI_API_KEY``,
    ``GITHUB_TOKEN``, ``AWS_SECRET_ACCESS_KEY``): a workspace ``.env`` may set those."""
    return bool(_KEY_NAME.search(name))


def writable_by_commands(path: Path, roots: Iterable[Path]) -> bool:
    """Whether ``path`` lies in one of ``roots`` (the folders commands may write): as
    named, or where any of its leading parts leads after symlinks."""
    absolute = Path(os.path.abspath(path))
    places = {absolute} | {Path(os.path.realpath(Path(*absolute.parts[:i])))
                           for i in range(2, len(absolute.parts) + 1)}
    folders = {Path(os.path.abspath(r)) for r in roots} | {Path(os.path.realpath(r)) for r in roots}
    return any(place == root or place.is_relative_to(root) for place in places for root in folders)


def resolve_settings(config_file: str | Path | None = None,
                     overrides: Mapping[str, Any] | None = None,
                     env: Mapping[str, str] | None = None, cwd: Path | None = None, *,
                     trust_workspace: bool = False, confirm: Confirm | None = None) -> Resolved:
    """Settings for a front end: the TOML file, the working directory's ``.env``, the
    environment and the flags, with the widening options of untrusted workspace files left
    out (see the module docstring). ``confirm`` asks the user about a file (the interactive
    start; None: nobody to ask); ``trust_workspace`` trusts every workspace file for this run.
    ``ConfigError`` for a bad value."""
    env = os.environ if env is None else env
    cwd = Path(os.path.abspath(cwd or Path.cwd()))
    flags = {k: v for k, v in (overrides or {}).items() if v is not None}
    notices: list[str] = []
    dotenv_path = cwd / ".env"
    dotenv_data = _read_dotenv(dotenv_path, notices)
    dotenv = parse_dotenv(dotenv_data) if dotenv_data is not None else {}
    path = choose_config_file(config_file, env)
    config = (Path(os.path.abspath(path)), read_config_bytes(path)) if path else None
    watched: dict[Path, str | None] = {
        dotenv_path: digest_of(dotenv_data) if dotenv_data is not None else None}
    roots = _writable_roots(cwd, config, dotenv, env, flags)
    config_path = config[0] if config else Path(os.path.abspath(default_config_file()))
    in_workspace = writable_by_commands(config_path, roots)
    if in_workspace:
        watched[config_path] = digest_of(config[1]) if config else None
    trusted_only = load_layers(Layers(config=None if in_workspace else config, env=env,
                                      overrides=flags))
    store = TrustStore(trusted_only.settings.home_path)
    decide = _Decider(store, trust_workspace, confirm, notices)
    files: list[WorkspaceFile] = []
    home_file = _check_home_settings(trusted_only.settings, decide)
    if home_file is not None:
        files.append(home_file)
        store.usable = home_file.trusted
    base, config_widening, config_trusted = trusted_only, [], True
    if config is not None and in_workspace:
        with_config = load_layers(Layers(config=config, env=env, overrides=flags))
        config_widening = widening(trusted_only, with_config, "config")
        checked = decide(config[0], "config", config[1], [w for _, w in config_widening])
        files.append(checked)
        config_trusted = checked.trusted
        if config_trusted:
            base = with_config
    allowed = dict(dotenv)
    if dotenv_data is not None:
        allowed = _check_dotenv(dotenv_path, dotenv_data, dotenv, base, env, flags,
                                config if config_trusted else None, decide, files)
    if "DEXTER_CONFIG" in dotenv and "DEXTER_CONFIG" not in env:
        allowed.pop("DEXTER_CONFIG", None)
        notices.append(f"DEXTER_CONFIG in {dotenv_path} is not used: dexter chooses its config "
                       "file before it reads .env. Export it in your shell or pass --config.")
    final = load_layers(Layers(config=config, dotenv=allowed, env=env, overrides=flags))
    if not config_trusted:
        _revert(final, trusted_only, [dotted for dotted, _ in config_widening])
    validate_settings(final.settings, final.sources)
    final.settings.home_rules_trusted = store.usable
    default_home = cwd / ".dexter"
    if not writable_by_commands(final.settings.home_path, [cwd]):
        # DEXTER_HOME is elsewhere, so the sandbox does not hide ./.dexter: a start here
        # without DEXTER_HOME would read its rules and trust records
        watched[default_home / SETTINGS_FILE] = _digest_or_none(default_home / SETTINGS_FILE)
    environ = {k: v for k, v in allowed.items() if k not in env}
    return Resolved(final.settings, environ, files, notices, watched,
                    trust_home=trusted_only.settings.home_path)


def changed_files(resolved: Resolved) -> list[Path]:
    """The workspace config files whose content is not what dexter read at start (written,
    replaced or created since, by a command or anyone): not used by this session."""
    return [path for path, digest in resolved.watched.items()
            if _digest_or_none(path) != digest]


def _digest_or_none(path: Path) -> str | None:
    try:
        return digest_of(read_small_file(path))
    except (OSError, ValueError):
        return None


class ConfigWatch:
    """Tells once about each workspace config file that changed since the start."""

    def __init__(self, resolved: Resolved) -> None:
        self.resolved = resolved
        self.reported: set[Path] = set()

    def newly_changed(self) -> list[str]:
        """A warning for each file that changed since the start and was not reported yet."""
        found = [p for p in changed_files(self.resolved) if p not in self.reported]
        self.reported.update(found)
        return [_changed_message(path) for path in found]


def _changed_message(path: Path) -> str:
    if path.name == SETTINGS_FILE:
        return (f"{path} changed during this session, perhaps written by a command dexter "
                "ran. It is not this session's DEXTER_HOME, but dexter started here without "
                "DEXTER_HOME would take its permission rules and trust records: check it, or "
                "delete it if you did not write it.")
    return (f"{path} changed during this session, perhaps written by a command dexter ran. "
            "dexter read it only at start and does not use the new content now; at the "
            "next start, any option in it that widens what dexter may do is ignored until "
            "you confirm it (dexter trust).")


class _Decider:
    """Decides whether a workspace file's widening options are used."""

    def __init__(self, store: TrustStore, flag: bool, confirm: Confirm | None,
                 notices: list[str]) -> None:
        self.store, self.flag, self.confirm, self.notices = store, flag, confirm, notices

    def __call__(self, path: Path, kind: Kind, data: bytes,
                 found: list[Widening]) -> WorkspaceFile:
        digest = digest_of(data)
        wide = tuple(dict.fromkeys(found))
        candidate = WorkspaceFile(path, kind, digest, wide, trusted=not wide)
        if not wide:
            return candidate
        if self.flag:
            return dataclasses.replace(candidate, trusted=True, how="flag")
        stored = own_content(path, data) if kind == "settings" \
            else self.store.is_trusted(path, digest)
        if stored:
            return dataclasses.replace(candidate, trusted=True, how="stored")
        if self.confirm is None:
            return candidate
        if not self.confirm(candidate):
            return dataclasses.replace(candidate, how="declined")
        try:
            if kind == "settings":
                record_own_content(path, data)
            else:
                self.store.trust(path, digest)
        except OSError as exc:
            self.notices.append(f"Trusted {path} for this session only: cannot record it "
                                f"({exc.strerror or exc}).")
        except SettingsFileError as exc:
            self.notices.append(f"Trusted {path} for this session only: {exc}")
        return dataclasses.replace(candidate, trusted=True, how="confirmed")


_ALLOW_EFFECT = ("runs without asking, with the network or the folders outside the workspace "
                 "it needs")
_TRUST_EFFECT = "this file's widening options are used without asking"


def _check_home_settings(settings: Settings, decide: _Decider) -> WorkspaceFile | None:
    """Decide ``DEXTER_HOME/settings.json`` when ``DEXTER_HOME`` is a relative path (the
    default ``.dexter``): a folder of whatever workspace dexter starts in, whose settings
    file may have come with it. Its allow rules and trust records are used when it is
    dexter's own writing (:func:`dexter.settings_file.own_content`) or trusted; None when
    the home was given as an absolute path (the user's choice) or there is no such file."""
    if os.path.isabs(os.path.expanduser(settings.home)):
        return None
    path = settings.home_path / SETTINGS_FILE
    try:
        data = read_small_file(path)
        parsed = json.loads(data.decode("utf-8"))
    except (OSError, ValueError):
        return None  # absent; or unreadable, which the rules loader reports
    if not isinstance(parsed, dict):
        return None
    permissions = parsed.get("permissions")
    allow = permissions.get("allow") if isinstance(permissions, dict) else None
    trusted = parsed.get(TRUST_KEY)
    wide = [Widening("permissions.allow", _shown(rule), _ALLOW_EFFECT)
            for rule in (allow if isinstance(allow, list) else []) if isinstance(rule, str)]
    wide += [Widening(TRUST_KEY, _shown(name), _TRUST_EFFECT)
             for name in (trusted if isinstance(trusted, dict) else {})]
    return decide(path, "settings", data, wide)


def _check_dotenv(path: Path, data: bytes, dotenv: dict[str, str], base: Loaded,
                  env: Mapping[str, str], flags: Mapping[str, Any],
                  config: tuple[Path, bytes] | None, decide: _Decider,
                  files: list[WorkspaceFile]) -> dict[str, str]:
    """Decide the ``.env``; the variables of it that dexter uses."""
    with_dotenv = load_layers(Layers(config=config, dotenv=dotenv, env=env, overrides=flags))
    found = widening(base, with_dotenv, "dotenv")
    keys = {dotted for dotted, _ in found}
    # every variable of a widening setting (SEC_EDGAR_BASE_URL and its DEXTER_ name alike)
    dropped = {name for name in dotenv if env_setting(name) in keys}
    others = [name for name in dotenv
              if name not in env and env_setting(name) is None and name != "DEXTER_CONFIG"
              and not is_key_name(name) and name not in _key_variables(base.settings)]
    wide = [w for _, w in found]
    wide += [Widening(_shown(name), _shown(dotenv[name]), _variable_effect(name))
             for name in others]
    checked = decide(path, "dotenv", data, wide)
    files.append(checked)
    if checked.trusted:
        return dict(dotenv)
    return {k: v for k, v in dotenv.items() if k not in dropped and k not in others}


def _variable_effect(name: str) -> str:
    """What a variable of a ``.env`` that is neither a key nor a setting would change."""
    return next((effect for pattern, effect in _VARIABLE_EFFECTS if pattern.search(name)),
                _OTHER_VARIABLE)


def _key_variables(settings: Settings) -> set[str]:
    """Variables the trusted settings name as a provider's key (``api_key_env``)."""
    return {p.api_key_env for p in settings.providers.values() if p.api_key_env}


def _read_dotenv(path: Path, notices: list[str]) -> bytes | None:
    try:
        return read_small_file(path)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        if os.path.lexists(path):
            reason = exc.strerror if isinstance(exc, OSError) else str(exc)
            notices.append(f"{path} was not read: {reason}.")
        return None


def _writable_roots(cwd: Path, config: tuple[Path, bytes] | None, dotenv: Mapping[str, str],
                    env: Mapping[str, str], flags: Mapping[str, Any]) -> list[Path]:
    """The working directory and every ``[bash] allow_write`` folder any layer names (all of
    them, trusted or not: a folder commands may be allowed to write is not a safe place)."""
    layers = [Layers(env=env), Layers(dotenv=dotenv), Layers(overrides=flags)]
    if config is not None:
        layers.append(Layers(config=config))
    roots = [cwd]
    for layer in layers:
        try:
            folders = load_layers(layer).settings.bash.allow_write
        except ConfigError:
            continue  # the full load reports it
        roots += [cwd / Path(p).expanduser() for p in folders if p.strip()]
    return roots


def widening(base: Loaded, candidate: Loaded, origin: str) -> list[tuple[str, Widening]]:
    """The options ``origin`` (``config`` or ``dotenv``) sets in ``candidate`` that widen
    what ``base`` allows, as (dotted key, :class:`Widening`)."""
    old, new = base.settings, candidate.settings
    found: list[tuple[str, Widening]] = []

    def mine(dotted: str) -> bool:
        return candidate.origins.get(dotted) == origin

    def add(dotted: str, value: str, effect: str) -> None:
        found.append((dotted, Widening(_shown(_key(dotted, candidate, origin)), _shown(value),
                                       effect)))

    for dotted, effect in _LISTS.items():
        before, after = _get(old, dotted), _get(new, dotted)
        added = [item for item in after if item not in before]
        if mine(dotted) and added:
            add(dotted, ", ".join(added), effect)
    for dotted, effect in _TURNS_ON.items():
        if mine(dotted) and _get(new, dotted) and not _get(old, dotted):
            add(dotted, "true", effect)
    for dotted, effect in _TURNS_OFF.items():
        if mine(dotted) and not _get(new, dotted) and _get(old, dotted):
            add(dotted, "false", effect)
    for dotted, effect in _RAISES.items():
        before, after = _get(old, dotted), _get(new, dotted)
        if mine(dotted) and before and (after == 0 or after > before):
            add(dotted, "0 (no limit)" if after == 0 else f"{after:g}", effect)
    for dotted, effect in _CHANGES.items():
        if mine(dotted) and _get(new, dotted) != _get(old, dotted):
            add(dotted, str(_get(new, dotted)), effect)
    for pid, prov in new.providers.items():
        for name, effect in _PROVIDER_FIELDS.items():
            dotted = f"providers.{pid}.{name}"
            if mine(dotted) and getattr(prov, name) != getattr(old.provider(pid), name):
                add(dotted, getattr(prov, name), effect)
    for name, server in new.mcp.servers.items():
        prefix = f"mcp.servers.{name}."
        if any(k.startswith(prefix) and v == origin for k, v in candidate.origins.items()) \
                and old.mcp.servers.get(name) != server:
            found.append((f"mcp.servers.{name}",
                          Widening(_shown(f"[mcp.servers.{name}]"), _shown(_server_text(server)),
                                   "dexter starts this program, or sends requests and headers "
                                   "to this server, outside the sandbox")))
    return found


def _revert(final: Loaded, trusted: Loaded, keys: list[str]) -> None:
    """Set each of ``keys`` the config file set in ``final`` back to its ``trusted`` value
    (a ``.env`` or the environment that set it instead keeps its value)."""
    settings = final.settings
    for dotted in keys:
        if dotted.startswith("mcp.servers."):
            name, prefix = dotted.removeprefix("mcp.servers."), f"{dotted}."
            if not any(k.startswith(prefix) and v == "config" for k, v in final.origins.items()):
                continue
            if name in trusted.settings.mcp.servers:
                settings.mcp.servers[name] = dataclasses.replace(trusted.settings.mcp.servers[name])
            else:
                settings.mcp.servers.pop(name, None)
        elif final.origins.get(dotted) != "config":
            continue
        elif dotted.startswith("providers."):
            _, pid, name = dotted.split(".", 2)
            setattr(settings.providers[pid], name, getattr(trusted.settings.provider(pid), name))
            if pid not in trusted.settings.providers and settings.providers[pid] == ProviderSettings():
                settings.providers.pop(pid)  # nothing of it is left
        else:
            value = _get(trusted.settings, dotted)
            _set(settings, dotted, list(value) if isinstance(value, list) else value)
        final.sources[dotted] = trusted.sources.get(dotted, "built-in default")
        final.origins[dotted] = trusted.origins.get(dotted, "")


def _get(settings: Settings, dotted: str) -> Any:
    target: Any = settings
    for part in dotted.split("."):
        target = getattr(target, part)
    return target


def _set(settings: Settings, dotted: str, value: Any) -> None:
    *parents, name = dotted.split(".")
    target: Any = settings
    for part in parents:
        target = getattr(target, part)
    setattr(target, name, value)


def _key(dotted: str, loaded: Loaded, origin: str) -> str:
    """How the file writes ``dotted``: the variable's name in a ``.env``, else
    ``[section] key``."""
    if origin == "dotenv":
        return loaded.sources.get(dotted, dotted)
    section, _, name = dotted.rpartition(".")
    return f"[{section}] {name}" if section else name


def _server_text(server: McpServerSettings) -> str:
    what = server.url or " ".join([server.command, *server.args])
    names = [*server.env, *server.headers]
    return what + (f" (with {', '.join(names)})" if names else "")


MAX_SHOWN = 2_000
"""A value longer than this is shown cut, saying so (the user should read the file)."""


def _shown(value: str) -> str:
    """A value as the prompt and the messages show it: credentials masked, invisible and
    direction-changing characters (U+202E...) written as ``\\u202e`` so a path cannot
    look like another, and cut only past :data:`MAX_SHOWN`, saying so."""
    text = "".join(f"\\u{ord(ch):04x}" if unicodedata.category(ch) == "Cf" else ch
                   for ch in scrub_output(str(value)))
    if len(text) <= MAX_SHOWN:
        return text
    return (f"{text[:MAX_SHOWN]}... ({len(text):,} characters in all: read the file before "
            "you trust it)")
