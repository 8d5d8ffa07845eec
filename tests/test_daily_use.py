"""Daily-use fixes: memory keeps a fact once, --no-memory reaches the memory commands, an
odd embedding failure says what happened, and --output writes only where it should."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime
from pathlib import Path

import pytest

from dexter.config import Settings
from dexter.memory.manager import MemoryManager
from dexter.memory.stub import HashingEmbedder
from dexter.reports.export import output_problem
from dexter.testing.fakellm import FakeLLM, Reply
from tests.cli_helpers import cli_env, run_cli

NOW = datetime(2025, 3, 14, 9, 30)


def manager(tmp_path: Path, embedder: object = None) -> MemoryManager:
    settings = Settings(home=str(tmp_path / "home"))
    return MemoryManager(settings, env={}, embedder=embedder,  # type: ignore[arg-type]
                         clock=lambda: NOW)


def test_the_same_fact_is_remembered_once(tmp_path: Path) -> None:
    mgr = manager(tmp_path)
    first = mgr.update("append", "long_term", "User prefers NVDA coverage")
    again = mgr.update("append", "long_term", "- user prefers NVDA coverage.")
    third = mgr.update("append", "long_term", "User   prefers NVDA coverage")
    text = (tmp_path / "home" / "memory" / "MEMORY.md").read_text(encoding="utf-8")
    assert text.count("NVDA coverage") == 1
    assert "Appended" in first.message
    assert again.message == third.message == "Already remembered in MEMORY.md; nothing added."
    mgr.update("append", "long_term", "User prefers AMD coverage too")
    assert (tmp_path / "home" / "memory" / "MEMORY.md").read_text().count("coverage") == 2


class BrokenEmbedder(HashingEmbedder):
    async def embed(self, texts: list[str]) -> list[list[float]]:
        raise ValueError("dimension mismatch: 3 != 1536")


def test_an_odd_embedding_failure_says_what_it_was_and_status_is_keyword(tmp_path: Path) -> None:
    mgr = manager(tmp_path, BrokenEmbedder())
    (tmp_path / "home" / "memory").mkdir(parents=True)
    (tmp_path / "home" / "memory" / "MEMORY.md").write_text("- Holds AAPL\n", encoding="utf-8")
    outcome = asyncio.run(mgr.search("AAPL"))
    assert outcome.mode == "keyword" and outcome.results
    assert "unexpected ValueError: dimension mismatch: 3 != 1536" in outcome.note
    status = mgr.status()
    assert status.mode == "keyword" and status.embedded_chunks == 0
    assert "dimension mismatch" in status.reason
    mgr.close()


def test_no_memory_reaches_the_memory_commands(tmp_path: Path) -> None:
    (tmp_path / ".dexter" / "memory").mkdir(parents=True)
    (tmp_path / ".dexter" / "memory" / "MEMORY.md").write_text("- Holds AAPL\n")
    env = cli_env(None, tmp_path, DEXTER_MEMORY_ENABLED="true")
    on = run_cli(["memory", "list"], cwd=tmp_path, env=env)
    off = run_cli(["--no-memory", "memory", "list"], cwd=tmp_path, env=env)
    assert "MEMORY.md" in on.stdout
    assert "Memory is off" in off.stdout + off.stderr and "MEMORY.md" not in off.stdout


@pytest.mark.parametrize(("path", "problem"), [
    ("answer.md", None),
    ("out/answer.md", None),  # the last folder is created
    ("out/deeper/answer.md", "does not exist"),
    ("../elsewhere.md", "outside the working directory"),
    ("sub", "is a folder"),
])
def test_output_paths(tmp_path: Path, path: str, problem: str | None) -> None:
    (tmp_path / "work" / "sub").mkdir(parents=True)
    found = output_problem(Path(path), tmp_path / "work", tmp_path / "home")
    assert (found is None) if problem is None else (problem in (found or ""))


def test_an_absolute_output_path_the_user_typed_is_allowed(tmp_path: Path) -> None:
    (tmp_path / "reports").mkdir()
    assert output_problem(tmp_path / "reports" / "a.md", tmp_path / "work", tmp_path) is None
    assert "does not exist" in (output_problem(Path("/nonexistent/dir/a.md"), tmp_path,
                                               tmp_path) or "")


@pytest.mark.e2e
def test_ask_refuses_a_deep_missing_output_folder_before_asking(tmp_path: Path) -> None:
    with FakeLLM() as fake:
        fake.enqueue(Reply(text="Never asked."))
        result = run_cli(["ask", "--output", "a/b/c.md", "hi"], cwd=tmp_path,
                         env=cli_env(fake, tmp_path))
        assert result.code == 2 and "does not exist" in result.stderr
        assert not fake.requests and not (tmp_path / "a").exists()


@pytest.mark.e2e
def test_a_huge_pasted_question_is_saved_and_sent_as_its_start(tmp_path: Path) -> None:
    question = "Summarize this filing text. " + "Revenue grew in the quarter. " * 2_000
    with FakeLLM() as fake:
        fake.enqueue(Reply(text="It says revenue grew."))
        result = run_cli(["ask", "--json", question], cwd=tmp_path,
                         env=cli_env(fake, tmp_path, DEXTER_CONTEXT_CONTEXT_WINDOW="40000"))
        assert result.code == 0, result.stderr
        body = fake.requests[0].body
    # the question (58,000 characters) went as its start and where the rest is; measured on
    # the user message, since the tool definitions' size is not what this is about
    asked = json.dumps([m for m in body["messages"] if m["role"] == "user"])
    assert len(asked) < 8_000
    assert "The question is too long for the context" in asked
    [saved] = (tmp_path / ".dexter" / "tool-results").glob("question-*.txt")
    assert saved.read_text(encoding="utf-8") == question
