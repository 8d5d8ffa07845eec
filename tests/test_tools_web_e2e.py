"""End to end: ``dexter ask`` where the model fetches a local page and answers from it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from dexter.config import Settings
from dexter.testing.fakellm import FakeLLM, Reply, ToolCallSpec
from tests.cli_helpers import cli_env, run_cli
from tests.fixtures.web.fake_http import FakeHTTP, serving

pytestmark = pytest.mark.e2e

ARTICLE = (Path(__file__).parent / "fixtures" / "web" / "article.html").read_bytes()


def _registry_has_web_tools() -> bool:
    try:
        from dexter.tools.registry import build_tools

        return "web_fetch" in {tool.name for tool in build_tools(Settings())}
    except ImportError:
        return False


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    if not _registry_has_web_tools():
        pytest.skip("the tool registry does not offer web_fetch yet")
    with FakeLLM() as server:
        yield server


@pytest.fixture
def site() -> Iterator[FakeHTTP]:
    with serving() as server:
        server.route("/acme-q3", body=ARTICLE, headers={"Content-Type": "text/html"})
        yield server


def script(llm: FakeLLM, url: str) -> None:
    llm.enqueue(
        Reply(tool_calls=[ToolCallSpec("web_fetch", {"url": url, "prompt": "What was Q3 revenue?"})]),
        Reply(text="Q3 revenue was $4.2 billion, up 12% year on year."),   # the fast model
        Reply(text="Acme's Q3 revenue was $4.2 billion (up 12%)."),        # the main model
    )


def test_ask_fetches_a_page_and_answers(llm: FakeLLM, site: FakeHTTP, tmp_path: Path) -> None:
    url = site.url("/acme-q3")
    script(llm, url)
    env = cli_env(llm, tmp_path, DEXTER_ALLOW_PRIVATE_NETWORK="1")
    result = run_cli(["ask", "--json", "What was Acme's Q3 revenue?"], cwd=tmp_path, env=env)
    assert result.code == 0, result.stderr
    assert result.events[-1]["answer"] == "Acme's Q3 revenue was $4.2 billion (up 12%)."
    fast_request = json.dumps(llm.requests[1].body)
    assert "revenue of $4.2 billion" in fast_request and "Subscribe to our newsletter" not in fast_request
    tool_end = next(e for e in result.events if e["type"] == "tool_end")
    assert tool_end["tool"] == "web_fetch" and "Q3 revenue was $4.2 billion" in tool_end["result"]
    assert site.hits("/acme-q3") == 1
    llm.assert_no_violations()


def test_ask_cannot_reach_loopback_without_the_switch(llm: FakeLLM, site: FakeHTTP, tmp_path: Path) -> None:
    url = site.url("/acme-q3")
    llm.enqueue(
        Reply(tool_calls=[ToolCallSpec("web_fetch", {"url": url, "prompt": "revenue?"})]),
        Reply(text="I could not fetch that page: private addresses are blocked."),
    )
    result = run_cli(["ask", "--json", "Read the page"], cwd=tmp_path, env=cli_env(llm, tmp_path))
    assert result.code == 0, result.stderr
    assert site.hits("/acme-q3") == 0
    tool_message = next(m for m in llm.requests[-1].body["messages"] if m["role"] == "tool")
    assert "allow_private_network" in tool_message["content"]
