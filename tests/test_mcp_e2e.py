"""End to end: real MCP servers (tests/fixtures/mcp_server.py, written with the SDK) over
stdio and streamable HTTP, driven by ``dexter ask`` against the fake model."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dexter.testing.fakellm import Dynamic, FakeLLM, RecordedRequest, Reply, ToolCallSpec
from tests.cli_helpers import LIVENESS, CliResult, cli_env, config_outside, run_cli, script_argv

pytestmark = pytest.mark.e2e

SERVER = Path(__file__).parent / "fixtures" / "mcp_server.py"


def server_argv(*args: str) -> list[str]:
    """The arguments after the interpreter that start the fixture server with ``args``
    (warm: the SDK's imports are paid once, not at each of the suite's many starts)."""
    return script_argv(SERVER, *args)


def stdio_table(name: str, *args: str) -> str:
    argv = ", ".join(f'"{a}"' for a in server_argv(*args))
    return f'[mcp.servers.{name}]\ncommand = "{sys.executable}"\nargs = [{argv}]\n'


def ask(llm: FakeLLM, tmp_path: Path, config: str, *extra: str) -> CliResult:
    path = config_outside(tmp_path)
    path.write_text(config, encoding="utf-8")
    env = cli_env(llm, tmp_path, DEXTER_CONFIG=str(path))
    return run_cli(["ask", "--json", *extra, "What is AAPL's price?"], cwd=tmp_path, env=env,
                   timeout=120)


def tool_names(request: Any) -> list[str]:
    return [t["function"]["name"] for t in request.body.get("tools", [])]


def tool_messages(request: Any) -> list[str]:
    return [str(m["content"]) for m in request.body["messages"] if m["role"] == "tool"]


def test_a_stdio_tool_result_reaches_the_model_and_the_ledger(llm: FakeLLM, tmp_path: Path) -> None:
    llm.enqueue(Reply(tool_calls=[ToolCallSpec("mcp__fx__get_quote", {"ticker": "aapl"})]),
                Reply(text="AAPL last traded at 123.45 USD [S1]."))
    result = ask(llm, tmp_path, stdio_table("fx"))
    assert result.code == 0, result.stderr
    first = llm.requests[0].body["tools"]
    quote = next(t for t in first if t["function"]["name"] == "mcp__fx__get_quote")
    assert quote["function"]["parameters"]["required"] == ["ticker"]
    assert "AAPL last price 123.45 USD" in tool_messages(llm.requests[-1])[0]
    end = next(e for e in result.events if e["type"] == "tool_end")
    assert end["tool"] == "mcp__fx__get_quote" and end["source_id"] == "S1"
    assert "MCP server fx" in end["title"]


def test_a_write_tool_is_denied_without_allow(llm: FakeLLM, tmp_path: Path) -> None:
    call = ToolCallSpec("mcp__fx__place_order", {"ticker": "AAPL", "shares": 5})
    llm.enqueue(Reply(tool_calls=[call]), Reply(text="The order was not approved."))
    result = ask(llm, tmp_path, stdio_table("fx"))
    assert result.code == 0, result.stderr
    denied = next(e for e in result.events if e["type"] == "tool_denied")
    assert denied["tool"] == "mcp__fx__place_order"
    assert "--allow mcp__fx__place_order" in denied["reason"]
    assert not any("ordered" in m for m in tool_messages(llm.requests[-1]))


@pytest.mark.parametrize("allow", ["mcp__fx__place_order", "mcp__fx"])
def test_allow_by_tool_or_by_server_lets_it_run(llm: FakeLLM, tmp_path: Path, allow: str) -> None:
    call = ToolCallSpec("mcp__fx__place_order", {"ticker": "AAPL", "shares": 5})
    llm.enqueue(Reply(tool_calls=[call]), Reply(text="Ordered."))
    result = ask(llm, tmp_path, stdio_table("fx"), "--allow", allow)
    assert result.code == 0, result.stderr
    assert "ordered 5 AAPL" in tool_messages(llm.requests[-1])[0]


def test_arguments_are_checked_against_the_servers_schema(llm: FakeLLM, tmp_path: Path) -> None:
    llm.enqueue(Reply(tool_calls=[ToolCallSpec("mcp__fx__get_quote", {"symbol": "AAPL"})]),
                Reply(text="Bad call."))
    result = ask(llm, tmp_path, stdio_table("fx"))
    assert result.code == 0, result.stderr
    message = tool_messages(llm.requests[-1])[0]
    assert "Invalid arguments for mcp__fx__get_quote" in message and "ticker" in message


def test_a_server_that_fails_to_start_is_reported_once_and_the_run_goes_on(
        llm: FakeLLM, tmp_path: Path) -> None:
    llm.enqueue(Reply(tool_calls=[ToolCallSpec("mcp__broken__get_quote", {"ticker": "A"})]),
                Reply(text="The broken server is unavailable."))
    result = ask(llm, tmp_path, stdio_table("broken", "--crash") + stdio_table("fx"))
    assert result.code == 0, result.stderr
    assert result.stderr.count("MCP server 'broken'") == 1
    assert "crashing on purpose" in result.stderr
    assert "Traceback" not in result.stderr
    names = tool_names(llm.requests[0])
    assert "mcp__fx__get_quote" in names and not any("broken" in n for n in names)


def test_a_server_that_dies_mid_run_is_reported_once_and_restarted_on_the_next_call(
        llm: FakeLLM, tmp_path: Path) -> None:
    llm.enqueue(Reply(tool_calls=[ToolCallSpec("mcp__fx__die", {})]),
                Reply(tool_calls=[ToolCallSpec("mcp__fx__get_quote", {"ticker": "AAPL"})]),
                Reply(text="AAPL last traded at 123.45 USD [S1]."))
    result = ask(llm, tmp_path, stdio_table("fx"))
    assert result.code == 0, result.stderr
    [error] = [e for e in result.events if e["type"] == "tool_error"]
    assert error["tool"] == "mcp__fx__die"
    assert error["error"].startswith("MCP server 'fx' stopped during die")
    assert "restarted once" in error["error"] and "dying on request" in error["error"]
    # the next call started it again and got its answer
    assert "AAPL last price 123.45 USD" in tool_messages(llm.requests[-1])[-1]
    assert result.stderr.count("MCP server 'fx'") == 1
    assert "restarted once when its tools are next called" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_server_is_restarted_once_only(llm: FakeLLM, tmp_path: Path) -> None:
    llm.enqueue(Reply(tool_calls=[ToolCallSpec("mcp__fx__die", {})]),
                Reply(tool_calls=[ToolCallSpec("mcp__fx__die", {})]),  # restarted, dies again
                Reply(tool_calls=[ToolCallSpec("mcp__fx__get_quote", {"ticker": "AAPL"})]),
                Reply(text="The server is gone."))
    result = ask(llm, tmp_path, stdio_table("fx"))
    assert result.code == 0, result.stderr
    errors = [e for e in result.events if e["type"] == "tool_error"]
    assert [e["tool"] for e in errors] == ["mcp__fx__die", "mcp__fx__die", "mcp__fx__get_quote"]
    assert errors[2]["error"].startswith("MCP server 'fx' is unavailable (the connection "
                                         "failed")
    assert result.stderr.count("MCP server 'fx'") == 1
    assert "Traceback" not in result.stderr


def test_a_restart_that_fails_leaves_the_tools_unavailable_with_the_reason(
        llm: FakeLLM, tmp_path: Path) -> None:
    marker = tmp_path / "started-once"
    llm.enqueue(Reply(tool_calls=[ToolCallSpec("mcp__fx__die", {})]),
                Reply(tool_calls=[ToolCallSpec("mcp__fx__get_quote", {"ticker": "AAPL"})]),
                Reply(text="The server is gone."))
    result = ask(llm, tmp_path, stdio_table("fx", "--once", str(marker)))
    assert result.code == 0, result.stderr
    errors = [e for e in result.events if e["type"] == "tool_error"]
    assert len(errors) == 2
    message = errors[1]["error"]
    assert message.startswith("MCP server 'fx' is unavailable (it stopped (the connection "
                              "failed")
    assert "and the restart failed" in message and "refusing a second start" in message
    assert result.stderr.count("MCP server 'fx'") == 1
    assert "Traceback" not in result.stderr


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def http_server() -> Iterator[str]:
    yield from _http_server()


def _http_server(*args: str) -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, *server_argv("--http", str(port), *args)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):  # until it accepts connections
            if proc.poll() is not None:
                pytest.fail("the HTTP MCP server exited")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(LIVENESS)


def test_a_streamable_http_server(llm: FakeLLM, tmp_path: Path, http_server: str) -> None:
    llm.enqueue(Reply(tool_calls=[ToolCallSpec("mcp__web__get_quote", {"ticker": "msft"})]),
                Reply(text="MSFT is 123.45 USD."))
    config = f'[mcp.servers.web]\nurl = "{http_server}"\nheaders = {{X-Test = "1"}}\n'
    result = ask(llm, tmp_path, config)
    assert result.code == 0, result.stderr
    assert "MSFT last price 123.45 USD" in tool_messages(llm.requests[-1])[0]


def test_search_mode_binds_only_the_chosen_tool(llm: FakeLLM, tmp_path: Path) -> None:
    config = "[mcp]\nmax_schema_share = 0.001\n" + stdio_table("fx", "--many", "30")
    llm.enqueue(
        Reply(tool_calls=[ToolCallSpec("mcp_search", {"query": "price ticker"})]),
        Reply(tool_calls=[ToolCallSpec("mcp_search", {"select": ["mcp__fx__get_quote"]})]),
        Reply(tool_calls=[ToolCallSpec("mcp__fx__get_quote", {"ticker": "aapl"})]),
        Reply(text="AAPL is 123.45 USD."))
    result = ask(llm, tmp_path, config)
    assert result.code == 0, result.stderr
    first, second, third, last = (tool_names(r) for r in llm.requests)
    assert "mcp_search" in first and not any(n.startswith("mcp__") for n in first)
    assert "mcp__fx__get_quote" in tool_messages(llm.requests[1])[0]  # the search found it
    assert not any(n.startswith("mcp__") for n in second)
    assert [n for n in third if n.startswith("mcp__")] == ["mcp__fx__get_quote"]
    assert "mcp__fx__pad_0" not in last
    assert "AAPL last price 123.45 USD" in tool_messages(llm.requests[-1])[-1]
    assert "mcp__fx__pad_3" not in llm.requests[0].body["messages"][0]["content"]  # prompt too

    listed = run_cli(["mcp", "list"], cwd=tmp_path,
                     env=cli_env(llm, tmp_path, DEXTER_CONFIG=str(config_outside(tmp_path))))
    assert listed.code == 0, listed.stderr
    assert "search mode" in listed.stdout and "saving" in listed.stdout
    assert "mcp__fx__pad_29" in listed.stdout


def test_mcp_list_reports_a_failed_server(llm: FakeLLM, tmp_path: Path) -> None:
    path = config_outside(tmp_path)
    path.write_text(stdio_table("fx") + stdio_table("broken", "--crash"), encoding="utf-8")
    result = run_cli(["mcp", "list"], cwd=tmp_path, env=cli_env(llm, tmp_path, DEXTER_CONFIG=str(path)))
    assert result.code == 1
    assert "fx (stdio" in result.stdout and "running, 3 tools" in result.stdout
    assert "mcp__fx__place_order  asks first" in result.stdout
    assert "broken (stdio" in result.stdout and "failed" in result.stdout
    assert "all MCP schemas bound" in result.stdout
    assert "Traceback" not in result.stderr


def _worker_step(request: RecordedRequest) -> Reply:
    """Lead or worker, answered from each request: the lead delegates, the worker calls the
    MCP quote tool, then each answers."""
    messages = request.body.get("messages", [])
    system = str(messages[0].get("content", "")) if messages else ""
    done = any(m.get("role") == "tool" for m in messages)
    if "You are a worker agent" in system:
        if not done:
            return Reply(tool_calls=[ToolCallSpec("mcp__fx__get_quote", {"ticker": "msft"})])
        return Reply(text="Worker report: MSFT last price 123.45 USD.")
    if not done:
        return Reply(tool_calls=[ToolCallSpec("spawn_subagent", {
            "description": "MSFT quote", "task": "Get MSFT's last price.",
            "subagent_type": "research"})])
    return Reply(text="MSFT last traded at 123.45 USD.")


def test_a_subagent_gets_the_read_only_mcp_tools(llm: FakeLLM, tmp_path: Path) -> None:
    llm.enqueue(*[Dynamic(_worker_step) for _ in range(4)])
    result = ask(llm, tmp_path, stdio_table("fx"))
    assert result.code == 0, result.stderr
    workers = [r for r in llm.requests if "You are a worker agent" in str(r.body["messages"][0])]
    assert len(workers) == 2
    names = tool_names(workers[0])
    assert "mcp__fx__get_quote" in names and "mcp__fx__die" in names
    assert "mcp__fx__place_order" not in names  # needs approval: a worker has no one to ask
    assert "MSFT last price 123.45 USD" in tool_messages(workers[1])[0]
    spawn = next(e for e in result.events if e["type"] == "tool_end"
                 and e["tool"] == "spawn_subagent")
    assert "Worker report: MSFT last price 123.45 USD." in spawn["result"]


def test_rerun_keeps_the_mcp_tools_and_live_calls_reach_the_server(
        llm: FakeLLM, tmp_path: Path) -> None:
    config = config_outside(tmp_path)
    config.write_text(stdio_table("fx"), encoding="utf-8")
    llm.enqueue(Reply(tool_calls=[ToolCallSpec("mcp__fx__get_quote", {"ticker": "aapl"})]),
                Reply(text="AAPL last traded at 123.45 USD [S1]."))
    env = cli_env(llm, tmp_path, DEXTER_CONFIG=str(config))
    first = run_cli(["ask", "--json", "What is AAPL's price?"], cwd=tmp_path, env=env,
                    timeout=120)
    assert first.code == 0, first.stderr
    [pad] = first.scratchpads()
    asked = len(llm.requests)
    # the recorded call is answered from the record; a new one goes to the real server
    llm.enqueue(Reply(tool_calls=[ToolCallSpec("mcp__fx__get_quote", {"ticker": "aapl"}),
                                  ToolCallSpec("mcp__fx__get_quote", {"ticker": "nvda"})]),
                Reply(text="AAPL and NVDA both last traded at 123.45 USD [S1][S2]."))
    rerun = run_cli(["rerun", "--json", "--live-tools", str(pad)], cwd=tmp_path, env=env,
                    timeout=120)
    assert rerun.code == 0, rerun.stderr
    offered = next(t for t in llm.requests[asked].body["tools"]
                   if t["function"]["name"] == "mcp__fx__get_quote")
    # the server's own schema and description, not the placeholder of a missing tool
    assert offered["function"]["parameters"]["required"] == ["ticker"]
    assert offered["function"]["description"].startswith("[MCP server fx]")
    texts = tool_messages(llm.requests[-1])
    assert any("AAPL last price 123.45 USD" in t for t in texts)
    assert any("NVDA last price 123.45 USD" in t for t in texts)
    assert "Traceback" not in rerun.stderr


# -- what real servers do (found with server-everything, -filesystem, -memory, -time, -git
# and -sqlite; reproduced by the fixture's options) ------------------------------------------

VENDOR_KEY = "Zq8vN2kLw9Rt4Yp7Hs3Jd6Fg1Xb5"  # not key-shaped: known only by its variable


def log_of(tmp_path: Path, name: str) -> str:
    return (tmp_path / ".dexter" / "mcp-logs" / f"{name}.log").read_text(encoding="utf-8")


def test_a_servers_key_in_its_stderr_is_never_printed(llm: FakeLLM, tmp_path: Path) -> None:
    config = (stdio_table("vendor", "--leak", "VENDOR_API_KEY")
              + 'env = { VENDOR_API_KEY = "${VENDOR_API_KEY}" }\n' + stdio_table("fx"))
    path = config_outside(tmp_path)
    path.write_text(config, encoding="utf-8")
    env = cli_env(llm, tmp_path, DEXTER_CONFIG=str(path), VENDOR_API_KEY=VENDOR_KEY)
    llm.enqueue(Reply(text="No vendor data."))
    asked = run_cli(["ask", "--json", "What is AAPL's price?"], cwd=tmp_path, env=env,
                    timeout=LIVENESS)
    listed = run_cli(["mcp", "list"], cwd=tmp_path, env=env, timeout=LIVENESS)
    assert asked.code == 0, asked.stderr
    assert "MCP server 'vendor'" in asked.stderr and "rejected the key ***" in asked.stderr
    assert listed.code == 1 and "rejected the key ***" in listed.stdout
    for text in (asked.stdout, asked.stderr, listed.stdout, listed.stderr, log_of(tmp_path, "vendor"),
                 *(p.read_text() for p in asked.scratchpads())):
        assert VENDOR_KEY not in text


def test_the_sdks_own_log_lines_go_to_the_servers_log_not_the_terminal(
        llm: FakeLLM, tmp_path: Path) -> None:
    llm.enqueue(Reply(tool_calls=[ToolCallSpec("mcp__chatty__get_quote", {"ticker": "aapl"})]),
                Reply(text="AAPL last traded at 123.45 USD [S1]."))
    result = ask(llm, tmp_path, stdio_table("chatty", "--stdout-noise"))
    assert result.code == 0, result.stderr
    assert "AAPL last price 123.45 USD" in tool_messages(llm.requests[-1])[0]  # still works
    # one line of dexter's, where the SDK printed an 11-line traceback
    assert result.stderr.count("MCP server 'chatty' wrote something that is not MCP") == 1
    assert "Traceback" not in result.stderr and "JSONRPC" not in result.stderr
    log = log_of(tmp_path, "chatty")
    assert "Failed to parse JSONRPC message from server" in log and "Traceback" in log


def test_an_http_server_gone_before_close_prints_nothing_from_the_sdk(tmp_path: Path) -> None:
    for url in _http_server("--die-on-close"):
        path = config_outside(tmp_path)
        path.write_text(f'[mcp.servers.web]\nurl = "{url}"\n', encoding="utf-8")
        result = run_cli(["mcp", "list"], cwd=tmp_path,
                         env=cli_env(None, tmp_path, DEXTER_CONFIG=str(path),
                                     OPENAI_API_KEY="sk-test"), timeout=LIVENESS)
    assert result.code == 0, result.stderr
    assert "web (http" in result.stdout and "running, 3 tools" in result.stdout
    assert result.stderr == ""  # was: "Session termination failed: ..."
    assert "Session termination failed" in log_of(tmp_path, "web")


def test_a_restarted_servers_log_keeps_why_the_first_one_stopped(llm: FakeLLM,
                                                                  tmp_path: Path) -> None:
    llm.enqueue(Reply(tool_calls=[ToolCallSpec("mcp__fx__die", {})]),
                Reply(tool_calls=[ToolCallSpec("mcp__fx__get_quote", {"ticker": "AAPL"})]),
                Reply(text="AAPL last traded at 123.45 USD [S1]."))
    result = ask(llm, tmp_path, stdio_table("fx"))
    assert result.code == 0, result.stderr
    log = log_of(tmp_path, "fx")
    starts = [i for i, line in enumerate(log.splitlines())
              if line.startswith("----- dexter started MCP server")]
    assert len(starts) == 2  # the first start and the restart, each with its separator
    first_run = log.splitlines()[starts[0]:starts[1]]
    assert "fixture server: dying on request" in first_run
    # a new session appends too
    llm.enqueue(Reply(text="Nothing to call."))
    assert ask(llm, tmp_path, stdio_table("fx")).code == 0
    assert log_of(tmp_path, "fx").startswith(log)


def test_a_tool_that_must_be_called_as_a_task_is_not_offered_and_mcp_list_says_why(
        llm: FakeLLM, tmp_path: Path) -> None:
    # server-everything's simulate-research-query declares taskSupport "required" and
    # answers a plain call with -32601: offering it only produced failing calls.
    llm.enqueue(Reply(text="Nothing to call."))
    result = ask(llm, tmp_path, stdio_table("fx", "--tasks"))
    assert result.code == 0, result.stderr
    names = tool_names(llm.requests[0])
    assert "mcp__fx__get_quote" in names and "mcp__fx__research" not in names
    assert "mcp__fx__research" not in llm.requests[0].body["messages"][0]["content"]
    listed = run_cli(["mcp", "list"], cwd=tmp_path,
                     env=cli_env(llm, tmp_path, DEXTER_CONFIG=str(config_outside(tmp_path))),
                     timeout=LIVENESS)
    assert listed.code == 0, listed.stderr
    assert "running, 3 tools" in listed.stdout
    assert ("mcp__fx__research  not offered: it must be called as a task "
            "(execution.taskSupport = required), which dexter does not do") in listed.stdout
