"""MCP pieces without servers: config validation, rule matching, schema checks, results."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from dexter.config import ConfigError, load_settings
from dexter.permissions.engine import allow_list_problems, preapproved
from dexter.permissions.rules import parse_rule
from dexter.tools.mcp import result_text, schema_problems, tool_name
from dexter.tools.mcp_client import expand_vars


def load(tmp_path: Path, text: str) -> object:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return load_settings(path, env={})


def test_servers_are_read_from_their_tables(tmp_path: Path) -> None:
    settings = load(tmp_path, '[mcp]\nmax_schema_share = 0.1\n'
                              '[mcp.servers.prices]\ncommand = "uvx"\nargs = ["srv"]\n'
                              'env = {KEY = "${KEY}"}\n'
                              '[mcp.servers.web]\nurl = "https://x.example/mcp"\n'
                              'headers = {Authorization = "Bearer t"}\n')
    mcp = settings.mcp  # type: ignore[attr-defined]
    assert mcp.max_schema_share == 0.1
    assert mcp.servers["prices"].args == ["srv"] and mcp.servers["prices"].env == {"KEY": "${KEY}"}
    assert mcp.servers["web"].headers == {"Authorization": "Bearer t"}


@pytest.mark.parametrize(("table", "message"), [
    ('[mcp.servers.a]\nargs = ["x"]\n', "needs either command"),
    ('[mcp.servers.a]\ncommand = "x"\nurl = "http://h/mcp"\n', "not both"),
    ('[mcp.servers.a]\nurl = "ftp://h"\n', "is not a URL"),
    ('[mcp.servers.a__b]\ncommand = "x"\n', "server name"),
    ('[mcp.servers.a]\ncommand = "x"\nheaders = {A = "b"}\n', "headers are for a url"),
    ('[mcp.servers.a]\ncommand = "x"\nenv = {A = 1}\n', "table of strings"),
    ('[mcp.servers.a]\ncommand = "x"\nport = 3\n', "unknown setting 'port'"),
    ("[mcp]\nmax_schema_share = 2\n", "out of range"),
])
def test_bad_server_tables_are_clear_errors(tmp_path: Path, table: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load(tmp_path, table)


def test_a_server_prefix_rule_covers_its_tools_only() -> None:
    rule = parse_rule("mcp__prices")
    assert rule.covers("mcp__prices__quote")
    assert not rule.covers("mcp__pricesx__quote")
    assert not parse_rule("mcp__prices__quote").covers("mcp__prices__quote_all")
    assert preapproved("mcp__prices__order", ["mcp__prices"], False)
    assert not preapproved("mcp__other__order", ["mcp__prices"], False)
    assert parse_rule("mcp__my-server").covers("mcp__my-server__t")


def test_allow_values_naming_mcp_tools_are_accepted() -> None:
    names = {"bash", "mcp__prices__quote"}
    assert allow_list_problems(["mcp__prices", "mcp__prices__quote"], names) == []
    assert allow_list_problems(["mcp__down"], names) == []  # a server that failed to start
    assert allow_list_problems(["nope"], names)


def test_tool_names_are_safe_for_providers() -> None:
    assert tool_name("fx", "get.quote v2") == "mcp__fx__get_quote_v2"
    assert len(tool_name("fx", "x" * 100)) == 64


def test_arguments_are_checked_against_the_schema() -> None:
    schema = {"type": "object", "properties": {"ticker": {"type": "string"}},
              "required": ["ticker"]}
    assert schema_problems(schema, {"ticker": "AAPL"}) == []
    assert any("ticker" in p for p in schema_problems(schema, {}))
    assert schema_problems({"type": "no-such-type"}, {}) == []  # the server decides


def test_result_text_keeps_text_links_and_structured_content() -> None:
    text = SimpleNamespace(type="text", text="hello")
    link = SimpleNamespace(type="resource_link", uri="https://x.example/a")
    image = SimpleNamespace(type="image", mime_type="image/png")
    out, urls = result_text(SimpleNamespace(content=[text, link, image], structured_content=None))
    assert out.splitlines() == ["hello", "[link https://x.example/a]", "[image image/png]"]
    assert urls == ["https://x.example/a"]
    out, _ = result_text(SimpleNamespace(content=[], structured_content={"a": 1}))
    assert out == '{"a": 1}'


def test_variables_expand_from_the_environment() -> None:
    assert expand_vars("Bearer ${TOKEN}", {"TOKEN": "t1"}) == "Bearer t1"
    assert expand_vars("${MISSING}x", {}) == "x"
