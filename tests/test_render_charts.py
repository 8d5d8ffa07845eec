"""Terminal charts: sparklines and bars from series (pure), and ``dexter ask --charts`` in a
pseudo-terminal, on a dumb terminal and with ``--json``."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from pathlib import Path

import pexpect
import pytest
from rich.console import Console, RenderableType

from dexter.render.charts import (
    bar_cells,
    bars_view,
    change_of,
    change_text,
    chart_view,
    series_list_view,
    short_value,
    sparkline,
)
from dexter.reports.series import Chart, Series
from dexter.testing.fakedata import FakeDataServer
from dexter.testing.fakellm import FakeLLM
from tests.cli_helpers import cli_env, run_cli, spawn_terminal
from tests.report_helpers import QUESTION, data_env, script_quarters

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
QUARTERS = ("Q1 FY2024", "Q2 FY2024", "Q3 FY2024", "Q4 FY2024")
TABLE = "Apple Inc. — Income statement, quarterly"
REVENUE = Series("revenue", "USD", QUARTERS, (119_575e6, 90_753e6, 85_777e6, 94_930e6),
                 TABLE, "S1", "Revenue", "quarterly")
MARGIN = Series("net_margin", "ratio", QUARTERS, (0.2836, 0.2604, None, 0.1552),
                TABLE, "S1", "Net margin", "quarterly")


def shown(renderable: RenderableType, width: int = 100) -> str:
    console = Console(record=True, width=width, file=io.StringIO(), color_system=None)
    console.print(renderable)
    return console.export_text()


def test_sparkline_scales_from_lowest_to_highest() -> None:
    assert sparkline([1.0, 2.0, 3.0, 8.0]) == "▁▂▃█"
    assert sparkline([119_575e6, 90_753e6, 85_777e6, 94_930e6]) == "█▂▁▃"
    assert sparkline([-5.0, 0.0, 5.0]) == "▁▅█"  # negatives scale like any value
    assert sparkline([2.0, None, 2.0]) == "▄·▄"  # flat: the middle level; missing: a dot
    assert sparkline([None, None]) == "··"


def test_bars_are_proportional_with_eighths_and_missing_is_blank() -> None:
    bars = bar_cells([8.0, 4.0, None, 1.0, 0.0], width=8)
    assert bars == ["████████", "████", "", "█", ""]
    assert bar_cells([3.0, 2.0], width=4) == ["████", "██▋"]  # 2/3 of 4 cells = 2 5/8
    assert bar_cells([100.0, 0.001], width=10)[1] == "▏"  # a tiny value still shows


def test_negative_values_grow_left_of_an_axis() -> None:
    bars = bar_cells([4.0, -2.0, None], width=8)
    assert bars[0] == "    │████" and bars[1] == "  ██│" and bars[2] == ""
    only_negative = bar_cells([-4.0, -1.0], width=4)
    assert only_negative == ["████", "█"]


def test_values_read_as_the_reports_show_them() -> None:
    assert short_value(119_575e6, "USD") == "$119.6B"
    assert short_value(0.2836, "ratio") == "28.4%"
    assert short_value(2.18, "USD/share") == "$2.18"
    assert short_value(15_408_095_000.0, "shares") == "15.4B"
    assert short_value(-2e9, "USD") == "($2.0B)"  # negatives in parentheses, as in reports
    assert short_value(None, "USD") == "—"
    assert change_text(0.2836, 0.1552, "ratio") == "-12.8 pp"
    assert change_text(119_575e6, 94_930e6, "USD") == "-20.6%"
    assert change_text(-2.0, 1.0, "") == "+150.0%"
    assert change_text(-9_447e6, -12_715e6, "USD") == "+34.6%"  # capex grew by its size


def test_chart_view_has_a_sparkline_row_per_series_with_first_last_and_change() -> None:
    text = shown(chart_view(Chart("Apple Inc. — Margins, Q1 FY2024–Q4 FY2024 (%)", "ratio",
                                  (MARGIN,), "S1")))
    assert "Apple Inc. — Margins" in text
    row = next(line for line in text.splitlines() if line.startswith("Net margin"))
    assert "█▇·▁" in row and "28.4% Q1 FY2024" in row and "15.5% Q4 FY2024" in row
    assert "-12.8 pp" in row and "since Q1 FY2024" in row  # no year-earlier quarter here


def test_a_quarterly_series_changes_year_on_year_not_from_its_first_quarter() -> None:
    quarters = ("Q4 FY2024", "Q1 FY2025", "Q2 FY2025", "Q3 FY2025", "Q4 FY2025", "Q1 FY2026")
    revenue = Series("revenue", "USD", quarters,
                     (94_930e6, 124_300e6, 95_359e6, 94_036e6, 102_466e6, 143_756e6), TABLE,
                     "S2", "Revenue", "quarterly")
    row = next(line for line in shown(chart_view(Chart("t", "USD", (revenue,), "S2")))
               .splitlines() if line.startswith("Revenue"))
    # the holiday quarter against last year's holiday quarter, not against Q4 FY2024
    assert "+15.7%" in row and "YoY vs Q1 FY2025" in row and "+51.4%" not in row
    annual = Series("revenue", "USD", ("FY2023", "FY2024", "FY2025"),
                    (383_285e6, 391_035e6, 416_161e6), TABLE, "S1", "Revenue", "annual")
    assert change_of(annual) == ("+6.4%", "YoY vs FY2024")


def test_bars_view_labels_each_period_with_its_value() -> None:
    text = shown(bars_view(MARGIN, width=20))
    q1, q3, q4 = (next(ln for ln in text.splitlines() if ln.startswith(q))
                  for q in ("Q1", "Q3", "Q4"))
    assert q1.count("█") == 20 and q1.rstrip().endswith("28.4%")
    assert "█" not in q3 and q3.rstrip().endswith("—")
    assert q4.rstrip().endswith("15.5%") and 10 <= q4.count("█") <= 11
    plain = shown(bars_view(REVENUE, bars=False))
    assert "█" not in plain and "$119.6B" in plain
    listing = shown(series_list_view([REVENUE, MARGIN]))
    assert listing.splitlines()[0].split()[:2] == ["1", "Revenue"]
    assert "2  Net margin" in listing and "_" not in listing


# -- dexter ask --charts ------------------------------------------------------------------


def ask_in_terminal(llm: FakeLLM, data: FakeDataServer, cwd: Path, term: str,
                    *flags: str, question: str = QUESTION,
                    script: Callable[[FakeLLM], None] = script_quarters) -> str:
    """``dexter ask`` in a pseudo-terminal against the fake servers; what it printed."""
    script(llm)
    env = cli_env(llm, cwd, TERM=term, **data_env(data))
    env.pop("FINANCIAL_DATASETS_API_KEY", None)
    child = spawn_terminal(["ask", *flags, question], cwd=cwd, env=env, dimensions=(60, 160),
                           timeout=90)
    screen = io.StringIO()
    child.logfile_read = screen
    try:
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0, screen.getvalue()
    return screen.getvalue()


@pytest.mark.e2e
def test_ask_charts_draws_sparklines_after_the_answer_in_a_terminal(
        llm: FakeLLM, data: FakeDataServer, tmp_path: Path) -> None:
    output = ask_in_terminal(llm, data, tmp_path, "xterm-256color", "--charts")
    output = ANSI.sub("", output)
    answer_at = output.rfind("Revenue fell from")
    chart_at = output.find("Apple Inc. — Revenue and net income, Q1 FY2024–Q4 FY2024 (USD bn)")
    assert 0 <= answer_at < chart_at
    revenue = next(line for line in output[chart_at:].splitlines()
                   if line.startswith("Revenue "))
    assert "█▂▁▃" in revenue and "$119.6B Q1 FY2024" in revenue and "-20.6%" in revenue
    assert "Net margin" in output[chart_at:] and "-12.8 pp" in output[chart_at:]
    charts = output[chart_at:]
    assert "income_statements" not in charts and "net_margin" not in charts, charts


@pytest.mark.e2e
def test_ask_charts_prints_nothing_extra_on_a_dumb_terminal(
        llm: FakeLLM, data: FakeDataServer, tmp_path: Path) -> None:
    output = ask_in_terminal(llm, data, tmp_path, "dumb", "--charts")
    assert "Revenue fell from" in output
    assert "Revenue and net income" not in output and "▁" not in output


def test_ask_charts_with_json_or_a_pipe_keeps_the_output_as_it_was(
        llm: FakeLLM, data: FakeDataServer, tmp_path: Path) -> None:
    script_quarters(llm)
    env = cli_env(llm, tmp_path, TERM="xterm-256color", **data_env(data))
    env.pop("FINANCIAL_DATASETS_API_KEY", None)
    result = run_cli(["ask", "--json", "--charts", QUESTION], cwd=tmp_path, env=env)
    assert result.code == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert events[-1]["type"] == "done"
    script_quarters(llm)
    piped = run_cli(["ask", "--charts", QUESTION], cwd=tmp_path, env=env)
    assert piped.code == 0 and "Revenue fell from" in piped.stdout
    assert "Revenue and net income" not in piped.stdout and "▁" not in piped.stdout


@pytest.mark.e2e
def test_ask_charts_on_the_research_note_compares_quarters_year_on_year(
        llm: FakeLLM, tmp_path: Path) -> None:
    from dexter.testing.fakedata import RecordedTree
    from tests.report_helpers import NOTE_QUESTION, SEC_REAL, script_note

    with FakeDataServer(fallback=RecordedTree(SEC_REAL)) as real:
        output = ANSI.sub("", ask_in_terminal(llm, real, tmp_path, "xterm-256color",
                                              "--charts", question=NOTE_QUESTION,
                                              script=script_note))
    quarterly = output[output.index("Apple Inc. — Revenue and net income, Q2 FY2024–Q1 FY2026"):]
    revenue = next(line for line in quarterly.splitlines() if line.startswith("Revenue "))
    # Q1 FY2026 (143,756) against Q1 FY2025 (124,300), not against Q2 FY2024
    assert "+15.7%" in revenue and "YoY vs Q1 FY2025" in revenue, revenue
    annual = output[output.index("Apple Inc. — Revenue and net income, FY2021–FY2025"):]
    assert "YoY vs FY2024" in annual.splitlines()[1]
    assert "Apple Inc. — Free cash flow, FY2021–FY2025 (USD bn)" in output
    assert "Capital expenditure" in output and "($12.7B)" in output
