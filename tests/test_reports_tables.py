"""Tables a source fetched (evidence/tables.py), the report built from a run (reports/model.py),
the chart grouping (reports/series.py) and the markdown report, on real SEC data and on the
record shapes the price sources return."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dexter.agent.conversation import Conversation
from dexter.data.xbrl import build_statement
from dexter.events import Done
from dexter.evidence.ledger import SourceLedger, source_from_dict, source_to_dict
from dexter.evidence.tables import (
    MAX_ROWS,
    records_table,
    table_from_dict,
    table_to_dict,
    tables_from_data,
    tables_from_json_text,
    unit_of,
)
from dexter.reports import FORMATS, ReportError, build_report, format_problem, write_report
from dexter.reports.markdown import document
from dexter.reports.presentation import format_value, value_kind, view
from dexter.reports.series import MAX_PER_CHART, charts_of, find_series, series_of
from dexter.testing.fakedata import FakeDataServer
from dexter.testing.fakellm import FakeLLM
from tests.report_helpers import run_report

REAL = Path(__file__).parent / "fixtures" / "sec-real" / "data.sec.gov" / "api" / "xbrl" / \
    "companyfacts" / "CIK0000320193.json"


@pytest.fixture(scope="module")
def apple_quarters() -> list[dict[str, object]]:
    """Apple's last four quarterly income statements built from the real companyfacts."""
    facts = json.loads(REAL.read_text(encoding="utf-8"))
    return build_statement(facts, "income", "quarterly", ticker="AAPL",
                           filing_url=lambda accession: f"https://www.sec.gov/{accession}",
                           fiscal_year_end="0927")[:4]


def column(table: object, name: str) -> tuple[object, ...]:
    [found] = [c for c in table.columns if c.name == name]  # type: ignore[attr-defined]
    return found.values  # type: ignore[no-any-return]


def test_a_real_statement_becomes_a_time_series_oldest_first(apple_quarters: list) -> None:
    [table] = tables_from_data("income_statements[AAPL, quarterly]", apple_quarters, "SEC EDGAR")
    assert table.is_time_series and table.index_name == "period"
    assert list(table.dates) == sorted(table.dates)  # EDGAR gives newest first
    newest = apple_quarters[0]
    assert table.dates[-1] == newest["report_period"]
    assert column(table, "revenue")[-1] == float(newest["revenue"])  # type: ignore[arg-type]
    units = {c.name: c.unit for c in table.columns}
    assert units["revenue"] == "USD" and units["gross_margin"] == "ratio"
    assert units["earnings_per_share_diluted"] == "USD/share"
    assert units["weighted_average_shares_diluted"] == "shares"
    # provenance fields are not figures of the table
    assert not {"source_filing", "derived", "currency", "ticker"} & set(units)


def test_price_records_sort_by_day_and_volume_is_shares() -> None:
    rows = [{"time": f"2024-01-0{d}T05:00:00Z", "open": 180 + d, "close": 181 + d,
             "high": 182 + d, "low": 179 + d, "volume": 50_000_000 + d} for d in (4, 2, 3)]
    table = records_table("prices[AAPL]", rows)
    assert table is not None
    assert table.index == ("2024-01-02", "2024-01-03", "2024-01-04")
    assert column(table, "close") == (183.0, 184.0, 185.0)
    assert {c.name: c.unit for c in table.columns}["volume"] == "shares"


def test_records_without_numbers_or_dates() -> None:
    news = [{"title": "Apple ships", "url": "https://x", "date": "2024-01-02"}]
    assert records_table("news", news) is None  # no figure: not a data table
    peers = [{"ticker": "AAPL", "pe": 30.1}, {"ticker": "MSFT", "pe": 35.2}]
    table = records_table("screen", peers)
    assert table is not None and table.index == ("AAPL", "MSFT") and not table.is_time_series
    assert series_of(table) == []  # not periods: nothing to chart


def test_bad_cells_are_missing_not_wrong() -> None:
    rows = [{"report_period": "2024-03-31", "revenue": True},
            {"report_period": "2024-06-30", "revenue": float("nan")},
            {"report_period": "2024-09-30", "revenue": 5, "nested": {"a": 1}}]
    [table] = tables_from_data("t", rows)
    assert column(table, "revenue") == (None, None, 5.0)
    assert "nested" not in {c.name for c in table.columns}


def test_a_long_record_list_keeps_its_newest_rows() -> None:
    rows = [{"date": f"{2000 + i // 365:04d}-01-01", "close": float(i)}
            for i in range(MAX_ROWS + 10)]
    table = records_table("prices", rows)
    assert table is not None
    assert table.dropped_rows == 10 and len(table.index) == MAX_ROWS


def test_json_results_are_looked_into_and_junk_is_ignored() -> None:
    body = json.dumps({"data": [{"date": "2024-01-02", "close": 1.5}]})
    [table] = tables_from_json_text("mcp__prices", body)
    assert column(table, "close") == (1.5,)
    assert tables_from_json_text("x", "not json") == []
    assert tables_from_json_text("x", "[" * 5000) == []  # deep nesting: no table, no crash


@pytest.mark.parametrize(("name", "currency", "unit"), [
    ("revenue", "EUR", "EUR"), ("net_margin", "USD", "ratio"), ("revenue_growth", "", "ratio"),
    ("dividends_per_share", "USD", "USD/share"), ("shares_outstanding", "USD", "shares"),
    ("close", "", ""), ("employees", "USD", ""),
])
def test_units(name: str, currency: str, unit: str) -> None:
    assert unit_of(name, currency) == unit


def test_tables_survive_a_saved_session(apple_quarters: list) -> None:
    ledger = SourceLedger()
    tables = tables_from_data("income", apple_quarters)
    source = ledger.add("get_financials", {"query": "q"}, "text 1", tables=tables)
    assert source.tables[0].source_id == "S1"
    again = source_from_dict(json.loads(json.dumps(source_to_dict(source))))
    assert again.tables == source.tables
    with pytest.raises(ValueError, match="differ in length"):
        table_from_dict({**table_to_dict(source.tables[0]), "index": ["one"]})


def test_an_income_statement_gets_its_curated_charts(apple_quarters: list) -> None:
    tables = tables_from_data("income_statements[AAPL, quarterly]", apple_quarters)
    charts = charts_of(tables)
    assert [c.subject for c in charts] == ["Revenue and net income", "Margins", "Diluted EPS"]
    assert [[s.name for s in c.series] for c in charts] == [
        ["revenue", "net_income"], ["gross_margin", "operating_margin", "net_margin"],
        ["earnings_per_share_diluted"]]
    span = f"{charts[0].labels[0]}–{charts[0].labels[-1]}"
    assert charts[0].title == f"AAPL — Revenue and net income, {span} (USD bn)"
    assert charts[1].title.endswith("(%)") and charts[2].title.endswith("(USD per share)")
    assert all(len({s.unit for s in c.series}) == 1 for c in charts)
    assert charts[0].labels[0].startswith("Q") and "FY20" in charts[0].labels[0]
    revenue = find_series(series_of(tables[0]), "REVENUE")
    assert revenue and revenue[0].shown_name == "Revenue"


def test_a_table_of_no_known_kind_is_charted_by_unit() -> None:
    rows = [{"date": f"2024-0{m}-01", "widgets": float(m), "gadgets": 2.0 * m,
             "share_of_market": 0.1 * m} for m in range(1, 5)]
    [table] = tables_from_data("sales.csv", rows)
    charts = charts_of(table for table in [table])
    charted = sorted(s.name for c in charts for s in c.series)
    assert charted == ["gadgets", "share_of_market", "widgets"]
    for chart in charts:
        assert len({s.unit for s in chart.series}) == 1
        assert len(chart.series) <= MAX_PER_CHART
        assert "_" not in chart.title


def test_a_series_needs_three_periods() -> None:
    rows = [{"report_period": "2024-03-31", "revenue": 1.0, "net_income": 1.0},
            {"report_period": "2024-06-30", "revenue": 2.0, "net_income": None},
            {"report_period": "2024-09-30", "revenue": 3.0, "net_income": 2.0}]
    [table] = tables_from_data("t", rows)
    assert [s.name for s in series_of(table)] == ["revenue"]


@pytest.mark.parametrize(("value", "kind", "scale", "shown"), [
    (None, "amount", 1e6, "—"), (0.2836, "ratio", 1.0, "28.4%"),
    (119_575_000_000.0, "amount", 1e6, "119,575"), (-9_447_000_000.0, "amount", 1e6, "(9,447)"),
    (2.4, "per_share", 1.0, "2.40"), (2.185, "per_share", 1.0, "2.19"),
    (-0.5, "ratio", 1.0, "(50.0%)"), (-0.12, "per_share", 1.0, "(0.12)"),
    (15_408_095_000.0, "shares", 1e6, "15,408"), (185.6, "price", 1.0, "185.60"),
])
def test_cells_read_as_a_filing_prints_them(value: float | None, kind: str, scale: float,
                                            shown: str) -> None:
    assert format_value(value, kind, scale) == shown  # type: ignore[arg-type]


def test_a_statement_view_has_a_labelled_row_per_field_in_statement_order(
        apple_quarters: list) -> None:
    [table] = tables_from_data("income_statements[AAPL, quarterly]", apple_quarters)
    shown = view(table)
    assert shown.title == "AAPL — Income statement, quarterly"
    assert shown.unit == "USD millions, except per-share; shares in millions"
    assert shown.corner == "Fiscal quarter" and shown.header[0].startswith("Q")
    labels = [row.label for row in shown.rows]
    assert labels[:3] == ["Revenue", "Cost of revenue", "Gross profit"]
    assert labels.index("Net income") < labels.index("EPS, basic") < labels.index(
        "EPS, diluted") < labels.index("Gross margin")
    assert not any("_" in label for label in labels)
    assert {c.name: value_kind(c) for c in table.columns}["gross_margin"] == "ratio"


def test_the_report_keeps_the_runs_tables_once_and_lists_its_sources_by_id(
        apple_quarters: list) -> None:
    conversation = Conversation()
    tables = tables_from_data("income", apple_quarters)
    conversation.ledger.add("get_financials", {"query": "a"}, "x 1", tables=tables)
    conversation.ledger.add("get_financials", {"query": "b"}, "x 2", tables=tables)
    conversation.ledger.add("web_fetch", {"url": "https://e.com"}, "x 3",
                            urls=["https://e.com"], title="A page")
    done = Done(answer="Revenue rose [S3].", model="m",
                citations=[{"id": "S3", "tool": "web_fetch", "title": "A page",
                            "url": "https://e.com"}],
                tool_calls=[{"tool": "web_fetch", "source_id": "S3"},
                            {"tool": "get_financials", "source_id": "S2"},
                            {"tool": "get_financials", "source_id": "S1"}])
    report = build_report(done, " Q? ", "2026-12-01", conversation.ledger)
    assert len(report.tables) == 1  # the same data fetched twice is one table
    assert [(s.id, s.cited) for s in report.sources] == [("S1", False), ("S2", False),
                                                          ("S3", True)]
    text = document(report)
    assert text.startswith("# Q?\n\n*2026-12-01 · m*")
    assert "- **[S3]** A page · [https://e.com](<https://e.com>)" in text
    assert "| Revenue |" in text and "revenue" not in text.split("## Data")[1].split("|")[1]


def test_unknown_extensions_are_refused_before_and_at_writing(tmp_path: Path) -> None:
    assert format_problem(tmp_path / "a.md") is None
    problem = format_problem(tmp_path / "a.docx")
    assert problem is not None and ".docx" in problem and "a.md" in problem
    report = build_report(Done(answer="x"), "q", "now")
    with pytest.raises(ReportError, match="docx"):
        write_report(report, tmp_path / "a.docx")
    with pytest.raises(ReportError, match="Could not write"):
        write_report(report, tmp_path / "missing" / "a.md")
    assert set(FORMATS.values()) >= {"markdown"}


@pytest.mark.e2e
def test_ask_output_md_holds_the_answer_sources_and_the_fetched_table(
        llm: FakeLLM, data: FakeDataServer, tmp_path: Path) -> None:
    run = run_report(llm, data, tmp_path, "apple.md")
    assert run.result.code == 0, run.result.stderr
    text = run.path.read_text(encoding="utf-8")
    assert text.startswith("# How did Apple's revenue")
    assert "**[S1]** Apple Inc. — Income statement, quarterly" in text
    assert "aapl-20240928.htm" in text and "companyfacts" not in text
    assert "✓ All 6 figures checked against the sources." in text
    assert text.index("figures checked") < text.index("Apple's quarterly revenue")
    # the fetched table, every quarter, in millions with the unit in the caption
    assert "*USD millions, except per-share*" in text
    assert "| Revenue | 119,575 | 90,753 | 85,777 | 94,930 |" in text
    assert "| Net margin | 28.4% | 26.0% | 25.0% | 15.5% |" in text
    assert oct(run.path.stat().st_mode & 0o777) == "0o644"


@pytest.mark.e2e
def test_ask_refuses_an_unknown_report_format_before_the_run(
        llm: FakeLLM, data: FakeDataServer, tmp_path: Path) -> None:
    run = run_report(llm, data, tmp_path, "apple.docx")
    assert run.result.code == 2
    assert "not .docx" in run.result.stderr and "Traceback" not in run.result.stderr
    assert llm.requests == []  # nothing was spent
