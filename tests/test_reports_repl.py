"""``/export FILE`` and ``/chart`` in the REPL, after a run that pulls Apple's quarters from
the fake data server with the real finance tool; and their messages before any answer, for
a bad extension, a path outside the working directory and a missing folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from openpyxl import load_workbook
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from dexter.config import Settings
from dexter.repl.completion import ReplCompleter
from dexter.repl.handlers import build_registry
from dexter.testing.fakedata import FakeDataServer
from dexter.testing.fakellm import FakeLLM
from dexter.tools.base import Tool
from dexter.tools.finance import SourceOptions, finance_tools
from tests.repl_harness import make_settings, running_repl
from tests.report_helpers import QUESTION, script_quarters


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("DEXTER_MODEL", raising=False)
    monkeypatch.chdir(tmp_path)


def one_line(text: str) -> str:
    return " ".join(text.split())


def with_data(tmp_path: Path, data: FakeDataServer) -> tuple[Settings, list[Tool[Any]]]:
    """Settings and the real finance tools, pointed at the fake data server."""
    settings = make_settings(tmp_path, **{"tools.sec_edgar_base_url": data.url,
                                          "tools.sec_edgar_data_url": data.url,
                                          "tools.financial_datasets_base_url": data.url})
    tools = finance_tools(settings, env={},
                          source_options=SourceOptions(sec_rate_limiter=None, use_cache=False))
    return settings, tools


async def test_export_and_chart_the_last_answer(fake_llm: FakeLLM, data: FakeDataServer,
                                                tmp_path: Path) -> None:
    settings, tools = with_data(tmp_path, data)
    async with running_repl(settings, tools=tools, width=120) as d:
        d.line("/export early.md")
        await d.wait_for("No answer yet: ask a question first, then /export early.md.")
        d.line("/chart")
        await d.wait_for("No answer yet: ask a question first, then /chart.")
        assert fake_llm.requests_for("openai") == []

        script_quarters(fake_llm)
        await d.ask(QUESTION, "Revenue fell from")

        d.line("/export out/apple.xlsx")
        await d.wait_for("Wrote out/apple.xlsx (1 data table, 1 cited source)")
        book = load_workbook(tmp_path / "out" / "apple.xlsx")
        sheet = book[book.sheetnames[1]]
        revenue = next(r for r in sheet.iter_rows() if r[0].value == "Revenue")
        assert revenue[1].value == 119_575_000_000
        assert book["Report"]["B1"].value == QUESTION

        d.line("/export apple.md")
        await d.wait_for("Wrote apple.md")
        markdown = (tmp_path / "apple.md").read_text()
        assert markdown.startswith(f"# {QUESTION}") and "| Revenue | 119,575 |" in markdown

        d.line("/export apple.docx")
        text = await d.wait_for("not .docx")
        assert "/export apple.docx: dexter writes reports as" in one_line(text)
        assert ".xlsx" in text.split("not .docx")[0].splitlines()[-1]
        d.line("/export ../elsewhere.md")
        await d.wait_for("points outside the working directory")
        elsewhere = tmp_path.parent / f"{tmp_path.name}-elsewhere"
        elsewhere.mkdir()
        (tmp_path / "linked").symlink_to(elsewhere)  # as a command could have made it
        d.line(f"/export {tmp_path / 'linked' / 'apple.md'}")
        text = await d.wait_for("give the real folder")
        assert "linked is a symbolic link inside a folder commands may write" in one_line(text)
        assert list(elsewhere.iterdir()) == []
        d.line("/export no/such/place.md")
        text = await d.wait_for("create it first.")
        assert "does not exist (dexter creates at most the last folder)" in one_line(text)
        d.line("/export")
        await d.wait_for("Usage: /export FILE")
        assert not (tmp_path.parent / "elsewhere.md").exists()
        assert not (tmp_path / "apple.docx").exists()

        d.line("/chart")
        text = await d.wait_for("Draw one with /chart NAME or /chart NUMBER.")
        listing = [one_line(line) for line in text.splitlines()
                   if "Income statement" in line and line.strip()[:1].isdigit()]
        assert listing[0].startswith("1 Revenue █▂▁▃")
        assert any(line.startswith("3 Net margin ") for line in listing), listing
        assert any(line.startswith("4 EPS, diluted ") for line in listing)

        d.line("/chart net margin")
        text = await d.wait_for("Net margin  Apple Inc. — Income statement, quarterly [S1]")
        bars = text.split("/chart net margin")[-1].splitlines()
        q1, q3 = (next(ln for ln in bars if ln.startswith(q)) for q in ("Q1 FY2024",
                                                                        "Q3 FY2024"))
        assert "█" * 20 in q1 and q1.rstrip().endswith("28.4%")
        assert "█" in q3 and q3.rstrip().endswith("25.0%")
        d.line("/chart 2")
        text = await d.wait_for("Net income  Apple Inc. — Income statement")
        assert "$14.7B" in text.split("/chart 2")[-1]
        d.line("/chart 99")
        await d.wait_for("/chart 99: there are")
        d.line("/chart ebitda")
        await d.wait_for("/chart ebitda: no series by that name")

        d.line("/clear")
        await d.wait_for("Started a fresh conversation")
        d.line("/export after.md")
        await d.wait_for("then /export after.md.")
        assert not (tmp_path / "after.md").exists()


async def test_chart_on_a_dumb_terminal_prints_the_values_without_bars(
        fake_llm: FakeLLM, data: FakeDataServer, tmp_path: Path) -> None:
    settings, tools = with_data(tmp_path, data)
    async with running_repl(settings, tools=tools, width=120, fancy=False) as d:
        script_quarters(fake_llm)
        await d.ask(QUESTION, "Revenue fell from")
        d.line("/chart revenue")
        text = await d.wait_for("Revenue  Apple Inc. — Income statement")
    chart = text.split("Revenue  Apple Inc. — Income statement")[-1]
    assert "$119.6B" in chart and "$94.9B" in chart
    assert "█" not in chart and "▏" not in chart


def test_export_completes_paths_and_chart_is_in_the_registry(tmp_path: Path) -> None:
    (tmp_path / "reports").mkdir()
    registry = build_registry()
    assert registry.get("export") is not None and registry.get("chart") is not None
    completer = ReplCompleter(registry, lambda _name: [])
    text = "/export rep"
    found = [c.text for c in completer.get_completions(Document(text, len(text)),
                                                       CompleteEvent())]
    assert found == ["orts"]
