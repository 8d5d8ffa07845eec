"""A run that pulls Apple's last four quarters from SEC EDGAR (the fake data server with the
bundled real-shaped fixtures) and writes its report with ``dexter ask --output``: shared by
the tests of every report format."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dexter.testing.fakedata import FakeDataServer
from dexter.testing.fakellm import FakeLLM, Reply, ToolCallSpec
from tests.cli_helpers import CliResult, cli_env, run_cli

QUESTION = "How did Apple's revenue and margins move over the last four quarters?"
ANSWER = ("Apple's quarterly revenue, from its filings [S1]:\n\n"
          "| Quarter | Revenue | Net margin |\n|---|---|---|\n"
          "| Q1 2024 | $119.6B | 28.4% |\n| Q4 2024 | $94.9B | 15.5% |\n\n"
          "Revenue fell from $119.6B in Q1 2024 to $94.9B in Q4 2024 [S1].")


@dataclass
class ReportRun:
    """The finished run and the file it wrote."""

    result: CliResult
    path: Path
    data: FakeDataServer


def script_quarters(llm: FakeLLM, answer: str = ANSWER) -> None:
    """The main model asks get_financials, the router picks quarterly income statements
    (4 quarters), then the main model answers with ``answer``."""
    llm.enqueue(
        Reply(tool_calls=[ToolCallSpec("get_financials",
                                       {"query": "Apple quarterly income statements, last 4"})]),
        Reply(tool_calls=[ToolCallSpec("get_income_statements",
                                       {"ticker": "AAPL", "period": "quarterly", "limit": 4})]),
        Reply(text=answer),
    )


def data_env(data: FakeDataServer) -> dict[str, str]:
    """Point every data source at the fake data server."""
    return {"SEC_EDGAR_BASE_URL": data.url, "SEC_EDGAR_DATA_URL": data.url,
            "FINANCIAL_DATASETS_BASE_URL": data.url}


def run_report(llm: FakeLLM, data: FakeDataServer, cwd: Path, filename: str,
               *flags: str, answer: str = ANSWER) -> ReportRun:
    """Run the scripted question with ``--output filename`` (and ``flags``)."""
    script_quarters(llm, answer)
    env = cli_env(llm, cwd, **data_env(data))
    env.pop("FINANCIAL_DATASETS_API_KEY", None)
    result = run_cli(["ask", "--plain", "--output", filename, *flags, QUESTION], cwd=cwd,
                     env=env)
    return ReportRun(result, cwd / filename, data)
