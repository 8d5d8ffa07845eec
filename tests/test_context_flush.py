"""Memory flush: durable facts appended under a dated heading; never over the window."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from dexter.context.flush import (
    NO_MEMORY_TOKEN,
    FlushError,
    build_flush_prompt,
    conversation_text,
    fit_recent,
    is_nothing_to_keep,
    memory_flush,
)
from dexter.context.tokens import count_tokens_exact, estimate_message_tokens, estimate_text_tokens
from dexter.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from dexter.providers.errors import ProviderError
from dexter.testing.scripted import ScriptedModel

NOW = datetime(2025, 3, 14, 9, 26)
BULLETS = "- Holds 200 NVDA shares in a Roth IRA\n- Risk tolerance: moderate, 10-year horizon"


def test_prompt_asks_for_durable_facts_and_the_nothing_token() -> None:
    prompt = build_flush_prompt("Should I trim NVDA?", "### The user (this query)\nI hold 200")
    assert "Should I trim NVDA?" in prompt and "I hold 200" in prompt
    assert "raw tool output is left out" in prompt
    for topic in ("goals", "holdings", "risk tolerance", "decisions"):
        assert topic in prompt
    assert "Do not include temporary tool output, market data, prices" in prompt
    assert f"reply with exactly {NO_MEMORY_TOKEN}" in prompt


async def test_flush_appends_bullets_under_a_dated_heading(tmp_path: Path) -> None:
    memory_dir = tmp_path / "memory"
    model = ScriptedModel([f"```markdown\n{BULLETS}\n```", "- Decided to keep the position"])
    result = await memory_flush(model, "q", "### t()\ndata", window=128_000,
                                memory_dir=memory_dir, now=NOW)
    assert result.files_written == ["2025-03-14.md"]
    assert result.text == BULLETS
    await memory_flush(model, "q", "### t()\ndata", window=128_000, memory_dir=memory_dir,
                       now=NOW.replace(minute=40))
    assert (memory_dir / "2025-03-14.md").read_text(encoding="utf-8") == (
        f"## 09:26 — Pre-compaction memory flush\n\n{BULLETS}\n\n"
        "## 09:40 — Pre-compaction memory flush\n\n- Decided to keep the position\n"
    )
    assert all(r.tools == () for r in model.requests)


async def test_flush_appends_after_existing_notes(tmp_path: Path) -> None:
    (tmp_path / "2025-03-14.md").write_text("- a note without newline", encoding="utf-8")
    await memory_flush(ScriptedModel([BULLETS]), "q", "", window=128_000, memory_dir=tmp_path,
                       now=NOW)
    text = (tmp_path / "2025-03-14.md").read_text(encoding="utf-8")
    assert text.startswith("- a note without newline\n\n## 09:26 — ")


@pytest.mark.parametrize("reply", [NO_MEMORY_TOKEN, f"`{NO_MEMORY_TOKEN}`", f" {NO_MEMORY_TOKEN}.\n",
                                   f"```\n{NO_MEMORY_TOKEN}\n```", "Nothing to keep.",
                                   "No durable facts worth remembering.", ""])
async def test_nothing_to_keep_writes_nothing(tmp_path: Path, reply: str) -> None:
    result = await memory_flush(ScriptedModel([reply]), "q", "data", window=128_000,
                                memory_dir=tmp_path / "memory", now=NOW)
    assert result.files_written == []
    assert not (tmp_path / "memory").exists()


def test_bullets_are_never_mistaken_for_nothing() -> None:
    assert not is_nothing_to_keep("- No debt; holds 100 NVDA")
    assert not is_nothing_to_keep("Nothing changed in the plan, but:\n- sold AAPL")
    assert not is_nothing_to_keep("User holds 100 NVDA shares.")


def test_the_flush_sees_the_conversation_not_the_tool_results() -> None:
    call = ToolCall("c1", "get_financials", {"query": "NVDA margins", "period": "annual"})
    messages: list[Message] = [
        SystemMessage("You are dexter."),
        UserMessage("I hold 200 NVDA in my IRA.", kind="history"),
        AssistantMessage(text="Noted: a long-term IRA position."),
        UserMessage("Should I trim NVDA?"),
        AssistantMessage(text="Checking margins first.", tool_calls=(call,)),
        ToolResultMessage("c1", "get_financials", "RAW-RESULT gross margin 75.0%"),
        UserMessage("[Tool usage: get_financials called 3 times]", kind="note"),
        UserMessage("Also consider my 10-year horizon.", kind="queued"),
        AssistantMessage(text="Margins are strong; keep the position."),
    ]
    text = conversation_text(messages)
    for kept in ("I hold 200 NVDA in my IRA.", "Noted: a long-term IRA position.",
                 "Should I trim NVDA?", "Checking margins first.", "10-year horizon",
                 "keep the position", '[called get_financials {"period": "annual", '
                 '"query": "NVDA margins"}]'):
        assert kept in text
    for left_out in ("RAW-RESULT", "75.0%", "You are dexter", "Tool usage"):
        assert left_out not in text
    assert text.startswith("### The user (earlier in the session)\n")
    long_call = ToolCall("c2", "web_fetch", {"url": "https://x.test/" + "a" * 1_000})
    assert len(conversation_text([AssistantMessage(tool_calls=(long_call,))])) < 300


async def test_request_never_exceeds_the_window_with_megabytes_of_conversation(
        tmp_path: Path) -> None:
    blocks = [f"### The assistant\nMARK{n:04d} " + "revenue rose sharply. " * 250
              for n in range(220)]
    results = "\n\n".join(blocks)
    assert len(results) > 1_200_000
    window, output = 100_000, 2_048
    model = ScriptedModel([BULLETS])
    result = await memory_flush(model, "q", results, window=window, memory_dir=tmp_path,
                                now=NOW, max_output_tokens=output)
    (request,) = model.requests
    assert estimate_message_tokens(request.messages, request.system) + output <= window
    sent = request.messages[0].content  # type: ignore[union-attr]
    exact = count_tokens_exact(sent)
    assert exact is not None and exact + output <= window
    assert "MARK0219" in sent and "MARK0000" not in sent  # the most recent part is kept
    assert "Earlier conversation omitted" in sent
    assert result.omitted_chars > 0


def test_fit_recent_keeps_whole_results_from_the_end() -> None:
    text = "### a()\n" + "x" * 4_000 + "\n\n### b()\n" + "y" * 400
    kept, omitted = fit_recent(text, 500)
    assert kept.startswith("### b()") and kept.endswith("y" * 400)
    assert omitted == len(text) - len(kept)
    assert fit_recent("short", 500) == ("short", 0)
    assert estimate_text_tokens(fit_recent("z" * 10_000, 100)[0]) <= 100


async def test_failures_raise_a_flush_error(tmp_path: Path) -> None:
    failing = ScriptedModel([ProviderError("auth", "The OpenAI key was rejected.")])
    with pytest.raises(FlushError, match="rejected"):
        await memory_flush(failing, "q", "", window=128_000, memory_dir=tmp_path, now=NOW)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(FlushError, match="memory file"):
        await memory_flush(ScriptedModel([BULLETS]), "q", "", window=128_000,
                           memory_dir=blocker / "memory", now=NOW)
    with pytest.raises(FlushError, match="too small"):
        await memory_flush(ScriptedModel([BULLETS]), "q", "", window=2_000, memory_dir=tmp_path)
