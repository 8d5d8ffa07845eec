"""End to end: one ``dexter ask`` saves a fact with memory_update; a new process finds and uses it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from dexter.testing.fakellm import FakeLLM, Reply, ToolCallSpec
from tests.cli_helpers import cli_env, run_cli

pytestmark = pytest.mark.e2e

FACT = "- Risk tolerance: conservative; no single stock above 5% of the portfolio"


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


def test_a_fact_saved_in_one_run_is_recalled_and_found_in_the_next(fake: FakeLLM, tmp_path: Path) -> None:
    env = cli_env(fake, tmp_path, DEXTER_MEMORY_ENABLED="true")
    fake.enqueue(
        Reply(tool_calls=[ToolCallSpec("memory_update", {"content": FACT, "file": "long_term"})]),
        Reply(text="Noted: I will keep positions under 5%."),
    )
    first = run_cli(["ask", "--json", "--model", "gpt-5.6-sol",
                     "Remember that I am conservative: never more than 5% in one stock."],
                    cwd=tmp_path, env=env)
    assert first.code == 0, first.stderr
    memory_file = tmp_path / ".dexter" / "memory" / "MEMORY.md"
    assert memory_file.read_text() == FACT + "\n"

    fake.enqueue(
        Reply(tool_calls=[ToolCallSpec("memory_search", {"query": "risk tolerance single stock"})]),
        Reply(text="Given your conservative risk tolerance, keep NVDA under 5%."),
    )
    second = run_cli(["ask", "--json", "--model", "gpt-5.6-sol", "How much NVDA should I buy?"],
                     cwd=tmp_path, env=env)
    assert second.code == 0, second.stderr
    events = second.events
    recalled = [e for e in events if e["type"] == "memory_recalled"]
    assert recalled and recalled[0]["files"] == ["MEMORY.md"]
    chat = fake.requests_for("openai")
    first_call, second_call = chat[-2], chat[-1]
    system = json.dumps(first_call.body["messages"][0])
    assert "no single stock above 5%" in system, "recall put MEMORY.md in the system prompt"
    tool_results = [m for m in second_call.body["messages"] if m.get("role") == "tool"]
    source_id, _, content = tool_results[-1]["content"].partition(" ")
    assert source_id == "[S1]"  # the result is headed by its source id
    found = json.loads(content)["data"]
    assert found["results"][0]["path"] == "MEMORY.md"
    assert "conservative" in found["results"][0]["snippet"]
    assert found["mode"] == "hybrid"  # OPENAI_API_KEY is set: vectors from the fake /v1/embeddings
    assert fake.requests_for("embeddings")
    assert events[-1]["answer"] == "Given your conservative risk tolerance, keep NVDA under 5%."
    fake.assert_no_violations()


@pytest.mark.parametrize("args", [
    ["ask", "--json", "--no-memory", "--model", "gpt-5.6-sol", "hi"],
    ["--no-memory", "--model", "gpt-5.6-sol", "ask", "--json", "hi"],  # given before the command
], ids=["after-ask", "before-ask"])
def test_no_memory_flag_hides_the_tools_and_writes_nothing(fake: FakeLLM, tmp_path: Path,
                                                           args: list[str]) -> None:
    env = cli_env(fake, tmp_path, DEXTER_MEMORY_ENABLED="true", DEXTER_MODEL="gpt-4.1")
    fake.enqueue(Reply(text="No memory used."))
    result = run_cli(args, cwd=tmp_path, env=env)
    assert result.code == 0, result.stderr
    assert fake.requests_for("openai")[-1].body["model"] == "gpt-5.6-sol"
    tools = [t["function"]["name"] for t in fake.requests_for("openai")[-1].body.get("tools", [])]
    assert not any(name.startswith("memory_") for name in tools)
    assert not (tmp_path / ".dexter" / "memory").exists()
