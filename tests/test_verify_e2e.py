"""End to end through ``dexter ask``: the source ledger, citations and the number check,
against the fake LLM server (both providers' wire formats) and real files as sources."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dexter.testing.fakellm import FakeLLM, Reply, ToolCallSpec
from tests.cli_helpers import CliResult, cli_env, run_cli

pytestmark = pytest.mark.e2e

PROVIDERS = [
    pytest.param("gpt-5.6-sol", "openai", id="openai"),
    pytest.param("claude-sonnet-4-6", "anthropic", id="anthropic"),
]
DATA = ("Apple Inc. FY2024 (10-K, accession 0000320193-24-000123)\n"
        "(dollars in millions)\n"
        "Total net sales | 391,035 | 383,285\nNet income | 93,736 | 96,995\n")


@pytest.fixture
def fake() -> FakeLLM:
    with FakeLLM() as server:
        yield server


def ask(fake: FakeLLM, cwd: Path, model: str, question: str, *flags: str) -> CliResult:
    (cwd / "aapl.txt").write_text(DATA, encoding="utf-8")
    result = run_cli(["ask", "--model", model, *flags, question], cwd=cwd,
                     env=cli_env(fake, cwd))
    assert result.code == 0, result.stderr + result.stdout
    fake.assert_no_violations()
    return result


def read_data() -> Reply:
    return Reply(tool_calls=[ToolCallSpec("read_file", {"path": "aapl.txt"})])


def events(result: CliResult, kind: str) -> list[dict[str, Any]]:
    return [e for e in result.events if e["type"] == kind]


def user_texts(body: dict[str, Any]) -> str:
    return json.dumps(body.get("messages", []))


@pytest.mark.parametrize(("model", "route"), PROVIDERS)
def test_figures_from_the_fetched_data_verify_and_cite_their_source(
        fake: FakeLLM, tmp_path: Path, model: str, route: str) -> None:
    fake.enqueue(read_data(), Reply(text="Net sales were $391.0 billion in FY2024 [S1], "
                                         "against $383.3B in FY2023 [S1]."))
    result = ask(fake, tmp_path, model, "Apple sales?", "--json")
    requests = fake.requests_for(route)
    assert len(requests) == 2  # no repair turn
    assert "[S1] File: aapl.txt" in user_texts(requests[1].body)  # the id heads the result
    [end] = events(result, "tool_end")
    assert end["source_id"] == "S1"
    done = result.events[-1]
    verification = done["verification"]
    assert (verification["checked"], verification["supported"], verification["status"]) == \
        (2, 2, "verified")
    assert verification["unsupported"] == [] and verification["unknown_citations"] == []
    assert verification["counts"]["supported"] == 2
    assert [(f["text"], f["status"], f["source"]) for f in verification["figures"]] == [
        ("$391.0 billion", "supported", "S1"), ("$383.3B", "supported", "S1")]
    assert done["citations"] == [{"id": "S1", "tool": "read_file", "title": "File: aapl.txt",
                                  "detail": "", "provider": "", "url": "aapl.txt"}]
    pad = [json.loads(line) for line in result.scratchpads()[0].read_text().splitlines()]
    [record] = [e for e in pad if e["type"] == "tool_result"]
    assert record["source_id"] == "S1"
    assert [e["status"] for e in pad if e["type"] == "verification"] == ["verified"]


@pytest.mark.parametrize(("model", "route"), PROVIDERS)
def test_an_invented_figure_gets_one_repair_turn_and_is_marked_if_kept(
        fake: FakeLLM, tmp_path: Path, model: str, route: str) -> None:
    invented = "Net sales were $391.0 billion [S1] and Services $96.2 billion [S1]."
    fake.enqueue(read_data(), Reply(text=invented), Reply(text=invented))
    result = ask(fake, tmp_path, model, "Apple sales?", "--plain")
    requests = fake.requests_for(route)
    assert len(requests) == 3  # one repair request, then the answer is final
    repair = user_texts(requests[2].body)
    assert "$96.2 billion" in repair and "is in none of the cited sources [S1]" in repair
    assert "$391.0 billion\\\"" not in repair  # the supported figure is not named
    out = result.stdout
    assert "Checking the answer: 1 figure does not check out ($96.2 billion is in none" in out
    assert "Services $96.2 billion ⚠ [S1]" in out
    assert ("⚠ 1 of 2 figures does not check out (marked ⚠): $96.2 billion is in none of "
            "the cited sources [S1] nor any other.") in out
    assert "- [S1] File: aapl.txt\n" in out + "\n" and "read_file" not in out.split("**Sources**")[1]


def test_a_repaired_answer_verifies(fake: FakeLLM, tmp_path: Path) -> None:
    fake.enqueue(read_data(), Reply(text="Net income was $101.2 billion [S1]."),
                 Reply(text="Net income was $93.7 billion [S1]."))
    result = ask(fake, tmp_path, "gpt-5.6-sol", "Apple profit?", "--json")
    checks = events(result, "verification")
    assert [(c["status"], c["final"]) for c in checks] == [("unverified", False),
                                                           ("verified", True)]
    assert result.events[-1]["answer"] == "Net income was $93.7 billion [S1]."


def test_a_calculator_result_from_fetched_inputs_verifies(fake: FakeLLM, tmp_path: Path) -> None:
    fake.enqueue(
        read_data(),
        Reply(tool_calls=[ToolCallSpec("calculator",
                                       {"expression": "(391035 - 383285) / 383285 * 100"})]),
        Reply(text="Net sales grew 2.02% [S2] to $391.0 billion [S1]."))
    result = ask(fake, tmp_path, "gpt-5.6-sol", "Apple growth?", "--json")
    done = result.events[-1]
    assert done["verification"]["status"] == "verified"
    # by id, the calculation in words with its arithmetic
    assert [c["id"] for c in done["citations"]] == ["S1", "S2"]
    assert done["citations"][1]["detail"] == "(391,035 - 383,285) ÷ 383,285 × 100 = 2.02"
    assert len(fake.requests) == 3


def test_a_calculation_on_invented_inputs_does_not_verify(fake: FakeLLM, tmp_path: Path) -> None:
    fake.enqueue(
        read_data(),
        Reply(tool_calls=[ToolCallSpec("calculator", {"expression": "(400000 - 383285) / 383285 * 100"})]),
        Reply(text="Net sales grew 4.36% [S2]."), Reply(text="Net sales grew 4.36% [S2]."))
    result = ask(fake, tmp_path, "gpt-5.6-sol", "Apple growth?", "--json")
    assert result.events[-1]["verification"]["unsupported"][0]["text"] == "4.36%"


def test_a_citation_to_a_missing_source_is_flagged(fake: FakeLLM, tmp_path: Path) -> None:
    answer = "Net sales were $391.0 billion [S1] [S9]."
    fake.enqueue(read_data(), Reply(text=answer), Reply(text=answer))
    result = ask(fake, tmp_path, "gpt-5.6-sol", "Apple sales?", "--plain")
    assert "These citations name no source: [S9]" in user_texts(fake.requests[2].body)
    assert "⚠ [S9] cites no source." in result.stdout


def test_an_answer_without_data_is_no_evidence(fake: FakeLLM, tmp_path: Path) -> None:
    fake.enqueue(Reply(text="A DCF discounts future cash flows to today."))
    result = ask(fake, tmp_path, "gpt-5.6-sol", "What is a DCF?", "--json")
    done = result.events[-1]
    assert done["verification"]["status"] == "no_evidence"
    assert done["citations"] == [] and len(fake.requests) == 1


def test_figures_without_data_are_sent_back_then_marked(fake: FakeLLM, tmp_path: Path) -> None:
    fake.enqueue(Reply(text="Apple's sales were about $390 billion."),
                 Reply(text="Apple's sales were about $390 billion."))
    result = ask(fake, tmp_path, "gpt-5.6-sol", "Apple sales?", "--plain")
    assert "compute it with the calculator" in user_texts(fake.requests[1].body)
    assert "$390 billion ⚠" in result.stdout
    assert "No data was fetched for this answer: 1 of 1 figure rests on no source" in \
        result.stdout


def test_verification_can_be_turned_off(fake: FakeLLM, tmp_path: Path) -> None:
    fake.enqueue(Reply(text="Apple's sales were about $390 billion."))
    (tmp_path / "aapl.txt").write_text(DATA, encoding="utf-8")
    result = run_cli(["ask", "--json", "Apple sales?"], cwd=tmp_path,
                     env=cli_env(fake, tmp_path, DEXTER_VERIFY_ENABLED="false"))
    assert result.code == 0
    assert result.events[-1]["verification"] is None and len(fake.requests) == 1


def test_replay_shows_the_sources_and_the_check(fake: FakeLLM, tmp_path: Path) -> None:
    fake.enqueue(read_data(), Reply(text="Net sales were $391.0 billion [S1]."))
    result = ask(fake, tmp_path, "gpt-5.6-sol", "Apple sales?", "--plain")
    [pad] = result.scratchpads()
    replay = run_cli(["replay", str(pad)], cwd=tmp_path, env=cli_env(fake, tmp_path))
    assert replay.code == 0, replay.stderr
    assert "✓ [S1] " in replay.stdout
    assert "- [S1] File: aapl.txt" in replay.stdout and "read_file:" not in replay.stdout
    assert "✓ 1 figure checked against the sources." in replay.stdout
