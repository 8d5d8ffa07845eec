"""A run that pulls Apple's last four quarters from SEC EDGAR (the fake data server with the
bundled real-shaped fixtures) and writes its report with ``dexter ask --output``: shared by
the tests of every report format."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dexter.testing.fakedata import FakeDataServer, RecordedTree
from dexter.testing.fakellm import FakeLLM, Reply, ToolCallSpec
from tests.cli_helpers import LIVENESS, CliResult, cli_env, run_cli

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


# -- the research-note run: real Apple SEC data -------------------------------------------

SEC_REAL = Path(__file__).parent / "fixtures" / "sec-real"
NOTE_QUESTION = ("How has Apple's revenue, profitability and cash generation developed "
                 "over the last five fiscal years, and what does management say drove "
                 "fiscal 2024?")
WRONG_FIGURE = "$126.4 billion"
"""The answer's one wrong figure: FY2024 operating cash flow was $118.3 billion."""
NOTE_ANSWER = f"""## Summary

Apple's revenue grew 2.0% [S5] to $391.0 billion in fiscal 2024 [S1], with a gross margin \
of 46.2% [S4]; net income was $93.7 billion [S1]. Operating cash flow was \
{WRONG_FIGURE} [S1] and capital expenditure $9.4 billion [S1].

| Fiscal year | Revenue ($m) | Net income ($m) | Diluted EPS |
|---|---:|---:|---:|
| FY2023 | 383,285 | 96,995 | 6.13 |
| FY2024 | 391,035 | 93,736 | 6.08 |
| FY2025 | 416,161 | 112,010 | 7.46 |

## Quarters

In the first quarter of fiscal 2025 revenue was $124.3 billion and diluted EPS $2.40 [S2].

## What management said

Management attributes the fiscal 2024 increase to higher net sales of Services, whose \
net sales reached $96.2 billion [S3], partly offset by lower iPad and Wearables sales [S3].
"""


def script_note(llm: FakeLLM, answer: str = NOTE_ANSWER) -> None:
    """The research-note run: annual income and cash flow statements, eight quarters of
    income statements, the FY2024 10-K's MD&A, two calculations, then ``answer`` (twice:
    the figure check asks once for a repair, and the wrong figure stays)."""
    llm.enqueue(
        Reply(tool_calls=[ToolCallSpec("get_financials", {
            "query": "Apple annual income statements and cash flow statements, last 5 "
                     "fiscal years"})]),
        Reply(tool_calls=[
            ToolCallSpec("get_income_statements",
                         {"ticker": "AAPL", "period": "annual", "limit": 5}),
            ToolCallSpec("get_cash_flow_statements",
                         {"ticker": "AAPL", "period": "annual", "limit": 5})]),
        Reply(tool_calls=[ToolCallSpec("get_financials", {
            "query": "Apple quarterly income statements, last 8 quarters"})]),
        Reply(tool_calls=[ToolCallSpec("get_income_statements",
                                       {"ticker": "AAPL", "period": "quarterly", "limit": 8})]),
        Reply(tool_calls=[ToolCallSpec("read_filings", {
            "query": "Apple's fiscal 2024 10-K, management's discussion and analysis"})]),
        Reply(tool_calls=[ToolCallSpec("read_10k_items", {
            "ticker": "AAPL", "fiscal_year": 2024, "items": ["Item-7"]})]),
        Reply(tool_calls=[
            ToolCallSpec("calculator", {"expression": "180683 / 391035 * 100"}),
            ToolCallSpec("calculator", {"expression": "(391035 - 383285) / 383285 * 100"})]),
        Reply(text=answer),
        Reply(text=answer),
    )


def run_note(llm: FakeLLM, cwd: Path, filename: str, *flags: str,
             answer: str = NOTE_ANSWER, env_extra: dict[str, str] | None = None,
             data: FakeDataServer | None = None) -> ReportRun:
    """The research-note run against real SEC EDGAR responses, with ``--output filename``
    (served by ``data``, else by a data server of its own)."""
    if data is None:
        with FakeDataServer(fallback=RecordedTree(SEC_REAL)) as own:
            return run_note(llm, cwd, filename, *flags, answer=answer, env_extra=env_extra,
                            data=own)
    script_note(llm, answer)
    env = cli_env(llm, cwd, **data_env(data), **(env_extra or {}))
    env.pop("FINANCIAL_DATASETS_API_KEY", None)
    result = run_cli(["ask", "--plain", "--output", filename, *flags, NOTE_QUESTION],
                     cwd=cwd, env=env, timeout=LIVENESS)  # a PDF with charts, loaded
    return ReportRun(result, cwd / filename, data)
