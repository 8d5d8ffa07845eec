"""MCP pieces without servers: config validation, rule matching, schema checks, results."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from dexter.config import ConfigError, McpSettings, Settings, load_settings
from dexter.permissions.engine import allow_list_problems, preapproved
from dexter.permissions.rules import parse_rule
from dexter.tools.mcp import result_text, schema_problems, tool_name
from dexter.tools.mcp_client import McpManager, McpToolInfo, expand_vars


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


def _manager(tools: int) -> McpManager:
    from dexter.config import McpServerSettings, McpSettings

    manager = McpManager(McpSettings(servers={"fx": McpServerSettings(command="x")}))
    state = manager.servers["fx"]
    state.status = "running"
    state.tools = [McpToolInfo("fx", f"tool_{i}", "Gets a price. " + "words " * 50,
                               {"type": "object", "properties": {"q": {"type": "string"}}},
                               read_only=i % 2 == 0) for i in range(tools)]
    return manager


def test_the_plan_binds_everything_under_the_share_and_searches_over_it() -> None:
    from dexter.agent.mcp_setup import plan_mcp, report_lines

    settings = Settings()
    small = plan_mcp(_manager(2), settings, 128_000)
    assert not small.search_mode and small.saved_tokens == 0
    assert [t.name for t in small.tools] == ["mcp__fx__tool_0", "mcp__fx__tool_1"]
    assert small.tools[0].concurrency_safe and not small.tools[0].needs_approval
    assert small.tools[1].needs_approval and not small.tools[1].compactable
    big = plan_mcp(_manager(200), settings, 128_000)
    assert big.search_mode and big.tools[0].name == "mcp_search"
    assert big.saved_tokens > 0 and not any(t.bound() for t in big.tools[1:])
    lines = report_lines(_manager(200), big)
    assert lines[0].startswith("fx (stdio: x): running, 200 tools")
    assert "saving" in lines[-1]


async def test_mcp_search_lists_then_binds_the_selected_tool(tmp_path: Path) -> None:
    from dexter.agent.mcp_setup import plan_mcp
    from dexter.tools.base import ToolContext

    plan = plan_mcp(_manager(200), Settings(), 128_000)
    search, tools = plan.tools[0], plan.tools[1:]
    ctx = ToolContext(settings=Settings(), cwd=tmp_path, home=tmp_path)
    found = json.loads(str(await search.run(search.parse_args({"query": "price"}), ctx)))
    assert found["total_matches"] == 200 and len(found["matches"]) == 20
    assert not any(t.bound() for t in tools)
    chosen = json.loads(str(await search.run(search.parse_args(
        {"select": ["mcp__fx__tool_7", "mcp__nope"]}), ctx)))
    assert [b["name"] for b in chosen["bound"]] == ["mcp__fx__tool_7"]
    assert chosen["unknown"] == ["mcp__nope"]
    assert [t.name for t in tools if t.bound()] == ["mcp__fx__tool_7"]


async def test_the_repl_command_prints_the_report() -> None:
    from dexter.agent.mcp_setup import plan_mcp
    from dexter.repl.handlers import mcp_command

    printed: list[str] = []
    manager = _manager(1)
    session = SimpleNamespace(mcp=manager, mcp_plan=plan_mcp(manager, Settings(), 128_000))
    repl = SimpleNamespace(session=session, print=lambda *items, **_: printed.extend(
        str(i) for i in items), note=printed.append)
    await mcp_command(repl, "")
    assert printed[0].startswith("fx (stdio: x): running, 1 tool")
    assert "mcp__fx__tool_0  read-only" in printed[1]
    assert printed[-1].startswith("all MCP schemas bound")
    printed.clear()
    await mcp_command(SimpleNamespace(session=None, note=printed.append), "")
    assert "No session" in printed[0]


def test_every_line_about_a_server_is_scrubbed_of_its_secrets(tmp_path: Path) -> None:
    settings = load(tmp_path, '[mcp.servers.web]\nurl = "https://x.example/mcp"\n'
                              'headers = {Authorization = "Bearer tok-Aa1Bb2Cc3Dd4Ee5"}\n'
                              '[mcp.servers.std]\ncommand = "srv"\n'
                              'env = {VENDOR_PASSWORD = "${VENDOR_PASSWORD}"}\n')
    manager = McpManager(settings.mcp, env={"VENDOR_PASSWORD": "hunter2hunter2",  # type: ignore[attr-defined]
                                            "SHELL_TOKEN": "Plain4Token8Value"})
    text = ("401: bad token tok-Aa1Bb2Cc3Dd4Ee5 for hunter2hunter2; env Plain4Token8Value; "
            "key sk-proj-abcdefghijklmnopqrstuvwx\x1b[2J")
    cleaned = manager.clean(text)
    for secret in ("tok-Aa1Bb2Cc3Dd4Ee5", "hunter2hunter2", "Plain4Token8Value", "sk-proj-abc"):
        assert secret not in cleaned
    assert "\x1b" not in cleaned and "\\x1b" in cleaned  # shown, not sent to the terminal


def test_a_servers_log_is_appended_with_a_line_per_start_and_moved_aside_when_large(
        tmp_path: Path) -> None:
    from dexter.tools import mcp_log
    from dexter.tools.mcp_log import SEPARATOR, ServerLog

    path = tmp_path / "logs" / "fx.log"
    log = ServerLog(path, lambda text: text.replace("s3cret", "***"))
    log.start("srv --a")
    log.write("first start died: s3cret")
    log.start("srv --a")
    log.write("second start")
    log.close()
    lines = path.read_text().splitlines()
    assert [line.startswith(SEPARATOR) for line in lines] == [True, False, True, False]
    assert lines[1] == "first start died: ***"
    path.write_text("x" * (mcp_log.MAX_LOG_BYTES + 1))
    log.start("srv --a")
    log.close()
    assert path.with_name("fx.log.1").read_text() == "x" * (mcp_log.MAX_LOG_BYTES + 1)
    assert path.read_text().startswith(SEPARATOR)


def test_a_servers_stderr_reaches_its_log_scrubbed_and_its_last_line_is_kept(
        tmp_path: Path) -> None:
    import subprocess
    import sys

    from dexter.tools.mcp_log import ServerLog

    log = ServerLog(tmp_path / "s.log", lambda text: text.replace("s3cret", "***"))
    log.start("python")
    sink = log.stderr_sink()
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stderr.write("
                             "'starting\\nbad key s3cret\\n')"], stderr=sink)
    log.release_sink()
    proc.wait(60)
    assert log.tail(wait=60) == "bad key ***"  # after the stream ended, whatever the timing
    log.close()
    assert "bad key ***" in (tmp_path / "s.log").read_text()
    assert "s3cret" not in (tmp_path / "s.log").read_text()


def test_a_server_program_given_by_name_skips_path_folders_commands_may_write(
        tmp_path: Path) -> None:
    from dexter.tools.mcp_client import McpError

    workspace, system = tmp_path / "ws" / "bin", tmp_path / "system"
    for folder in (workspace, system):
        folder.mkdir(parents=True)
        for name in ("both", "planted"):
            if folder == system and name == "planted":
                continue
            (folder / name).write_text("#!/bin/sh\n")
            (folder / name).chmod(0o755)
    env = {"PATH": f"{workspace}{os.pathsep}relative/bin{os.pathsep}{system}"}
    manager = McpManager(McpSettings(), env=env, writable=[tmp_path / "ws"])
    assert manager._program("both") == str(system / "both")  # not the workspace's, first
    assert manager._program(str(workspace / "planted")) == str(workspace / "planted")  # a path
    with pytest.raises(McpError, match=r"only at .*ws/bin/planted, in a folder commands"):
        manager._program("planted")
    assert manager._program("nowhere") == "nowhere"  # the SDK reports it missing
