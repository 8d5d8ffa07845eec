"""Settings: layering, env overrides, clear errors, and config.example.toml in sync."""

from __future__ import annotations

import dataclasses
import re
import tomllib
import typing
from pathlib import Path

import pytest

from dexter.config import (
    RANGES,
    BashSettings,
    ConfigError,
    ContextSettings,
    LimitsSettings,
    McpSettings,
    MemorySettings,
    Settings,
    ToolSettings,
    VerifySettings,
    load_settings,
    parse_dotenv,
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
    assert Settings().max_iterations == 30


def test_example_file_lists_every_key_with_its_default() -> None:
    data = tomllib.loads((ROOT / "config.example.toml").read_text(encoding="utf-8"))
    defaults = Settings()
    top = {f.name for f in dataclasses.fields(Settings)} - {
        "context", "memory", "tools", "bash", "verify", "limits", "providers", "context_windows",
        "config_path", "home_rules_trusted"}
    top -= {"mcp"}
    for name in top:
        assert data[name] == getattr(defaults, name), name
    for f in dataclasses.fields(McpSettings):
        if f.name != "servers":  # [mcp.servers.NAME] tables: examples in comments
            assert data["mcp"][f.name] == getattr(McpSettings(), f.name), f"[mcp] {f.name}"
    for section, cls in (("context", ContextSettings), ("memory", MemorySettings),
                         ("tools", ToolSettings), ("bash", BashSettings),
                         ("verify", VerifySettings), ("limits", LimitsSettings)):
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
    with pytest.raises(ConfigError, match="max_iterations = 0 is out of range; allowed: 1 to"):
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


def test_side_requests_take_one_of_three_forms(tmp_path: Path) -> None:
    assert load_settings(env=NO_FILE_ENV).context.side_requests == "auto"
    for form in ("auto", "continuation", "separate"):
        env = {**NO_FILE_ENV, "DEXTER_CONTEXT_SIDE_REQUESTS": form}
        assert load_settings(env=env).context.side_requests == form
    path = write(tmp_path, '[context]\nside_requests = "cached"\n')
    with pytest.raises(ConfigError, match=r"\[context\] side_requests = 'cached' is not one of "
                                          r"auto, continuation, separate") as raised:
        load_settings(path, env=NO_FILE_ENV)
    assert str(path) in str(raised.value)


# ---------------------------------------------------------------------------------------
# Validation: every numeric key has a range, checked at load time, written in the example
# ---------------------------------------------------------------------------------------

SECTIONS: dict[str, type] = {
    f.name: type(getattr(Settings(), f.name)) for f in dataclasses.fields(Settings)
    if dataclasses.is_dataclass(getattr(Settings(), f.name))}
"""Every [section] of the config, from the Settings fields that are dataclasses."""


def is_float_key(dotted: str) -> bool:
    section, _, name = dotted.rpartition(".")
    if section == "context_windows":
        return False
    cls = SECTIONS[section] if section else Settings
    return typing.get_type_hints(cls).get(name) is float


def numeric_keys() -> set[str]:
    keys = {f.name for f in dataclasses.fields(Settings) if f.type in ("int", "float")}
    for section, cls in SECTIONS.items():
        keys |= {f"{section}.{f.name}" for f in dataclasses.fields(cls) if f.type in ("int", "float")}
    return keys | {"context_windows.*"}


def toml_line(dotted: str, value: str) -> str:
    section, _, name = dotted.rpartition(".")
    if section == "context_windows":
        return f'[context_windows]\n"local-model" = {value}\n'
    return f"[{section}]\n{name} = {value}\n" if section else f"{name} = {value}\n"


def env_name(dotted: str) -> str:
    return "DEXTER_" + dotted.replace(".", "_").upper()


def label(dotted: str) -> str:
    section, _, name = dotted.rpartition(".")
    if section == "context_windows":
        return '[context_windows] "local-model"'
    return f"[{section}] {name}" if section else name


def test_every_numeric_key_has_exactly_one_range() -> None:
    assert set(RANGES) == numeric_keys()


def test_every_default_is_in_its_range() -> None:
    settings = Settings()
    for dotted, rule in RANGES.items():
        if dotted == "context_windows.*":
            continue
        section, _, name = dotted.rpartition(".")
        value = getattr(getattr(settings, section) if section else settings, name)
        assert rule.allows(value), dotted


def test_example_file_writes_every_range_next_to_its_key() -> None:
    lines = (ROOT / "config.example.toml").read_text(encoding="utf-8").split("\n")
    section, found = "", {}
    for line in lines:
        if header := re.match(r"^\[([a-z_]+)\]", line):
            section = header.group(1)
        if key := re.match(r"^([a-z_]+) = .*# allowed: (.+)$", line):
            found[f"{section}.{key.group(1)}" if section else key.group(1)] = key.group(2)
    expected = {k: r.describe() for k, r in RANGES.items() if k != "context_windows.*"}
    assert found == expected
    text = "\n".join(lines)
    assert f"Each value allowed: {RANGES['context_windows.*'].describe()}." in text


# (key, bad value as TOML, how the value is shown in the error)
BAD_VALUES: list[tuple[str, str, str]] = [
    ("max_iterations", "0", "0"),
    ("max_iterations", "100000", "100000"),
    ("max_output_tokens", "0", "0"),
    ("max_output_tokens", "-5", "-5"),
    ("max_retries", "-1", "-1"),
    ("max_retries", "1000000", "1000000"),
    ("request_timeout", "0", "0.0"),
    ("request_timeout", "-3.0", "-3.0"),
    ("request_timeout", "nan", "nan"),
    ("request_timeout", "inf", "inf"),
    ("context.context_window", "10", "10"),
    ("context.context_window", "-1", "-1"),
    ("context.max_tool_result_chars", "-1", "-1"),
    ("context.preview_chars", "-10", "-10"),
    ("context.max_turn_result_chars", "0", "0"),
    ("context.microcompact_count_trigger", "-1", "-1"),
    ("context.microcompact_keep_recent", "-4", "-4"),
    ("context.microcompact_token_trigger", "-80000", "-80000"),
    ("context.summary_output_reserve_tokens", "-1", "-1"),
    ("context.autocompact_buffer_tokens", "99999999999", "99999999999"),
    ("context.max_compaction_failures", "-3", "-3"),
    ("context.min_tool_results_for_compaction", "-1", "-1"),
    ("context.truncate_keep_rounds", "0", "0"),
    ("context.overflow_keep_rounds", "0", "0"),
    ("context.max_overflow_retries", "1000000", "1000000"),
    ("context.keep_thinking", "-1", "-1"),
    ("context.max_calls_per_tool", "0", "0"),
    ("context.similarity_threshold", "0.0", "0.0"),
    ("context.similarity_threshold", "1.5", "1.5"),
    ("context.similarity_threshold", "nan", "nan"),
    ("memory.max_session_context_tokens", "-1", "-1"),
    ("memory.max_results", "0", "0"),
    ("tools.bash_timeout", "-1", "-1"),
    ("tools.bash_timeout", "0", "0"),
    ("tools.bash_timeout", "86400", "86400"),
    ("bash.memory_mb", "-1", "-1"),
    ("bash.memory_mb", "1", "1"),
    ("bash.max_processes", "-1", "-1"),
    ("bash.max_file_mb", "-2048", "-2048"),
    ("verify.repair_turns", "-1", "-1"),
    ("verify.repair_turns", "100", "100"),
    ("context_windows.*", "-128000", "-128000"),
    ("context_windows.*", "10", "10"),
    ("context_windows.*", "0", "0"),
]


@pytest.mark.parametrize(("dotted", "toml_value", "shown"), BAD_VALUES)
def test_a_bad_value_in_the_file_names_file_key_value_and_range(
        tmp_path: Path, dotted: str, toml_value: str, shown: str) -> None:
    path = write(tmp_path, toml_line(dotted, toml_value))
    with pytest.raises(ConfigError) as caught:
        load_settings(path, env=NO_FILE_ENV)
    expected = (f"{path}: {label(dotted)} = {shown} is out of range; "
                f"allowed: {RANGES[dotted].describe()}.")
    assert str(caught.value) == expected


@pytest.mark.parametrize(("dotted", "toml_value", "shown"),
                         [b for b in BAD_VALUES if b[0] != "context_windows.*"])
def test_a_bad_value_in_the_environment_names_the_variable(
        dotted: str, toml_value: str, shown: str) -> None:
    var = env_name(dotted)
    with pytest.raises(ConfigError) as caught:
        load_settings(env={**NO_FILE_ENV, var: toml_value})
    message = str(caught.value)
    assert message.startswith(f"{var}: {label(dotted)} = {shown} is out of range")
    assert message.endswith(f"allowed: {RANGES[dotted].describe()}.")


def boundaries() -> list[tuple[str, float]]:
    cases: list[tuple[str, float]] = []
    for dotted, rule in RANGES.items():
        low = rule.low + 0.001 if rule.low_open else rule.low
        cases += [(dotted, low), (dotted, rule.high)]
        if rule.zero:
            cases.append((dotted, 0))
    return cases


@pytest.mark.parametrize(("dotted", "value"), boundaries())
def test_boundary_values_are_accepted(tmp_path: Path, dotted: str, value: float) -> None:
    is_float = is_float_key(dotted)
    text = repr(float(value)) if is_float else str(int(value))
    # preview_chars may not exceed max_tool_result_chars: give the other one room
    extra = {"context.preview_chars": "max_tool_result_chars = 100000000\n",
             "context.max_tool_result_chars": "preview_chars = 0\n"}.get(dotted, "")
    settings = load_settings(write(tmp_path, toml_line(dotted, text) + extra), env=NO_FILE_ENV)
    section, _, name = dotted.rpartition(".")
    if section == "context_windows":
        assert settings.context_windows["local-model"] == value
    else:
        assert getattr(getattr(settings, section) if section else settings, name) == value


@pytest.mark.parametrize(("toml", "expected"), [
    ('max_retries = 1e6\n', "'max_retries' must be a whole number, got 1000000.0"),
    ('request_timeout = true\n', "'request_timeout' must be a number, got true; write it as request_timeout = 600.0."),
    ("[context]\nkeep_thinking = 2.5\n", "[context]: 'keep_thinking' must be a whole number"),
    ("[context]\nkeep_thinking = [1]\n", "[context]: 'keep_thinking' must be a whole number"),
    ('[context_windows]\n"m" = "big"\n', "[context_windows] maps model names to integers"),
    ('[context_windows]\n"m" = true\n', "[context_windows] maps model names to integers"),
    ('model = 5\n', "'model' must be a string in quotes, got 5; write it as model = \"5\"."),
    # the file has types: text where a boolean, number or list belongs is an error too
    ('trace = "yes"\n', "'trace' must be true or false, got \"yes\"; write it as trace = true."),
    ('[memory]\nenabled = 0\n', "[memory]: 'enabled' must be true or false, got 0; write it as "
                                 "enabled = false."),
    ('max_iterations = "10"\n', "'max_iterations' must be a whole number, got \"10\"; write it "
                                "as max_iterations = 10."),
    ('request_timeout = "5"\n', "'request_timeout' must be a number, got \"5\"; write it as "
                                "request_timeout = 5.0."),
    ('[bash]\nallow_read = "/a,/b"\n', "[bash]: 'allow_read' must be a list of strings, got "
                                        "\"/a,/b\"; write it as allow_read = [\"/a\", \"/b\"]."),
    ('[tools]\nweb_search_provider = 1.5\n', "'web_search_provider' must be a string in quotes"),
    ('[providers.lab]\napi_key_env = true\n',
     "'api_key_env' must be a string in quotes, got true; write it as api_key_env = \"...\"."),
    ('home = "a\\u0000b"\n', "home = 'a\\x00b' holds a control character"),
    ('[tools]\nsec_user_agent = "x\\ny"\n', "[tools] sec_user_agent = 'x\\ny' holds a control"),
    ('[tools]\nsec_edgar_base_url = "sec.gov"\n', "is not a URL; allowed: http://host"),
    ('[providers.lab]\nbase_url = "ftp://x"\n', "[providers.lab] base_url = 'ftp://x' is not a URL"),
    ('[providers.lab]\napi_key_env = "MY KEY"\n', "is not an environment variable name"),
    ("[context]\npreview_chars = 9000\nmax_tool_result_chars = 5000\n",
     "[context] preview_chars = 9000 is out of range; allowed: at most max_tool_result_chars"),
])
def test_wrong_types_and_strings_are_explained(tmp_path: Path, toml: str, expected: str) -> None:
    path = write(tmp_path, toml)
    with pytest.raises(ConfigError) as caught:
        load_settings(path, env=NO_FILE_ENV)
    assert expected in str(caught.value)
    assert str(caught.value).startswith(str(path))


def test_a_huge_number_is_shortened_in_the_error() -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(env={**NO_FILE_ENV, "DEXTER_MAX_RETRIES": "9" * 5000})
    assert "must be a whole number" in str(caught.value) and len(str(caught.value)) < 200


def test_top_level_keys_are_read_from_the_environment() -> None:
    settings = load_settings(env={**NO_FILE_ENV, "DEXTER_MAX_RETRIES": "5",
                                  "DEXTER_REQUEST_TIMEOUT": "30", "DEXTER_MAX_OUTPUT_TOKENS": ""})
    assert (settings.max_retries, settings.request_timeout) == (5, 30.0)
    assert settings.max_output_tokens == Settings().max_output_tokens  # empty: not set


def test_a_config_file_that_is_not_utf8_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_bytes(b'# caf\xe9\nmodel = "gpt-4.1"\n')
    with pytest.raises(ConfigError, match=r"is not UTF-8 text \(byte 0xe9 on line 1\)"):
        load_settings(path, env=NO_FILE_ENV)
    path.write_bytes(b"\x00\x01\x02binary\xff")
    with pytest.raises(ConfigError, match=r"is not UTF-8 text|is not valid TOML"):
        load_settings(path, env=NO_FILE_ENV)


def test_argument_and_variable_text_that_is_not_utf8_is_replaced() -> None:
    settings = load_settings(overrides={"model": "gpt\udce9"},
                             env={**NO_FILE_ENV, "DEXTER_FAST_MODEL": "x\ud800"})
    assert (settings.model, settings.fast_model) == ("gpt\ufffd", "x\ufffd")


def test_a_damaged_dotenv_is_read_with_replacements() -> None:
    values = parse_dotenv(b"DEXTER_T_LATIN=caf\xe9\nDEXTER_T_NUL=a\x00b\n"
                          b"\xff\xfe\x00garbage\nDEXTER_T_OK=fine\n")
    assert values["DEXTER_T_LATIN"] == "caf\ufffd"
    assert "DEXTER_T_NUL" not in values
    assert values["DEXTER_T_OK"] == "fine"
    assert all("\x00" not in k + v for k, v in parse_dotenv(bytes(range(256)) * 4).items())
