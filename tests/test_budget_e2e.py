"""Spending limits through ``dexter ask`` against the fake server: the run stops cleanly
before the request that would pass the limit, says what was spent, and keeps its record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dexter.agent.budget import OUTPUT_ALLOWANCE, Spend, over_budget
from dexter.config import LimitsSettings, Settings
from dexter.providers.registry import resolve_model
from dexter.testing.fakellm import FakeLLM, Reply, ToolCallSpec, Usage
from tests.cli_helpers import cli_env, run_cli

pytestmark = pytest.mark.e2e


@pytest.fixture
def fake() -> FakeLLM:
    with FakeLLM() as server:
        yield server


def script(fake: FakeLLM) -> None:
    # gpt-4.1: $2 in / $8 out per million tokens, so the first call costs $0.208
    fake.enqueue(Reply(tool_calls=[ToolCallSpec("calculator", {"expression": "2*21"})],
                       usage=Usage(100_000, 1_000)),
                 Reply(text="It is 42 [S1].", usage=Usage(100_000, 1_000)))


def test_a_budget_too_small_for_a_second_request_stops_after_the_first(
        fake: FakeLLM, tmp_path: Path) -> None:
    script(fake)
    result = run_cli(["ask", "--json", "-m", "gpt-4.1", "--max-cost", "0.21", "what is 2*21?"],
                     cwd=tmp_path, env=cli_env(fake, tmp_path))
    assert result.code == 1
    assert len(fake.requests) == 1  # the second request was never sent
    done = result.events[-1]
    assert done["status"] == "budget"
    assert "past the budget of $0.21" in done["answer"] and "$0.21 spent" in done["answer"]
    pad = [json.loads(line) for line in result.scratchpads()[0].read_text().splitlines()]
    assert any(e["type"] == "tool_result" for e in pad) and pad[-1]["status"] == "budget"


def test_a_token_limit_stops_the_same_way_and_the_plain_view_says_so(
        fake: FakeLLM, tmp_path: Path) -> None:
    script(fake)
    result = run_cli(["ask", "-m", "gpt-4.1", "--max-tokens", "102000", "what is 2*21?"],
                     cwd=tmp_path, env=cli_env(fake, tmp_path))
    assert result.code == 1 and len(fake.requests) == 1
    assert "Stopped: Stopped before the next request" in result.stdout
    assert "101,000 used so far" in result.stdout


def test_a_budget_large_enough_lets_the_run_answer(fake: FakeLLM, tmp_path: Path) -> None:
    script(fake)
    result = run_cli(["ask", "--json", "-m", "gpt-4.1", "--max-cost", "1", "what is 2*21?"],
                     cwd=tmp_path, env=cli_env(fake, tmp_path))
    assert result.code == 0 and result.events[-1]["answer"] == "It is 42 [S1]."


def test_limits_without_a_price_and_the_arithmetic() -> None:
    limits = LimitsSettings(max_cost_usd=1.0)
    assert "no price is known for mystery" in (over_budget(limits, Spend(0, 0.0), 10, None,
                                                           "mystery") or "")
    price = resolve_model("gpt-4.1", Settings()).info
    # 0.995 spent + 1,000 input tokens ($0.002) + the output allowance ($0.008) > $1
    assert over_budget(limits, Spend(0, 0.995), 1_000, price, "gpt-4.1") is not None
    assert over_budget(limits, Spend(0, 0.98), 1_000, price, "gpt-4.1") is None
    tokens = LimitsSettings(max_tokens=10_000)
    assert over_budget(tokens, Spend(8_000, None), 1_000 - 1, None, "m") is None
    assert OUTPUT_ALLOWANCE == 1_000
    assert over_budget(tokens, Spend(8_000, None), 1_001, None, "m") is not None
