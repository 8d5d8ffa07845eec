"""The HTML and PDF reports: written end to end by ``dexter ask --output`` after a run
against the fake data server (Apple's four quarters from EDGAR fixtures), and the charts,
the answer's HTML and the PDF's table layout on their own."""

from __future__ import annotations

import io
import json
import math
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from pypdf import PdfReader

from dexter.evidence.tables import Column, DataTable
from dexter.reports import FORMATS, ReportError, render_bytes, write_report
from dexter.reports.answer_html import answer_html
from dexter.reports.charts import axis_scale, chart_caption, chart_png, chart_svg, draw
from dexter.reports.model import Report, ReportSource
from dexter.reports.pdf import column_groups
from dexter.reports.series import Chart, Series, charts_of
from dexter.testing.fakedata import FakeDataServer
from dexter.testing.fakellm import FakeLLM
from tests.report_helpers import QUESTION, run_report

REVENUE_Q1 = "119,575"
MARGIN_Q1 = "28.4%"


class Page(HTMLParser):
    """Every start tag with its attributes, and the text outside tags."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.chunks: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    def handle_data(self, data: str) -> None:
        self.chunks.append(data)

    @property
    def text(self) -> str:
        return " ".join("".join(self.chunks).split())

    def named(self, tag: str) -> list[dict[str, str]]:
        return [attrs for name, attrs in self.tags if name == tag]


def resource_references(page: Page) -> list[str]:
    """What a browser would load: src of any tag, href of anything but a link (<a>)."""
    found = []
    for tag, attrs in page.tags:
        for key, value in attrs.items():
            if key in {"src", "srcset", "poster", "data", "background"} or \
                    (key in {"href", "xlink:href"} and tag != "a"):
                found.append(value)
    return found


# --- end to end ------------------------------------------------------------------------


@pytest.mark.e2e
def test_html_report_holds_the_answer_sources_numbers_and_charts(
        llm: FakeLLM, data: FakeDataServer, tmp_path: Path) -> None:
    run = run_report(llm, data, tmp_path, "report.html")
    assert run.result.code == 0, run.result.stderr
    text = run.path.read_text(encoding="utf-8")
    page = Page(text)
    assert page.text.startswith(QUESTION)
    assert "Revenue fell from $119.6B in Q1 2024 to $94.9B in Q4 2024 [S1]." in page.text
    # the source is listed with a link to the filings the figures came from, not the API
    links = [a["href"] for a in page.named("a")]
    documents = [u for u in links if u.startswith(data.url)]
    assert documents and all("/Archives/edgar/data/320193/" in u for u in documents), links
    assert any(u.endswith("/aapl-20240928.htm") for u in documents)
    assert "SEC EDGAR (XBRL company facts)" in page.text
    # the answer's citations jump to the source they name
    assert links.count("#source-S1") >= 2 and {"id": "source-S1"} in page.named("li")
    # the check's banner comes before the answer
    assert page.text.index("All 6 figures checked against the sources") < \
        page.text.index("Revenue fell from")
    # the fetched numbers, in the data table, right-aligned, in millions
    assert REVENUE_Q1 in page.text and MARGIN_Q1 in page.text
    assert "USD millions, except per-share" in page.text
    cells = [attrs for attrs in page.named("td") if attrs.get("class") == "num"]
    assert len(cells) >= 16  # 4 fields x 4 quarters
    # the income statement's curated charts: revenue and net income, margins, diluted EPS
    labels = [s["aria-label"] for s in page.named("svg")]
    assert labels == ["Apple Inc. — Revenue and net income, Q1 FY2024–Q4 FY2024 (USD bn)",
                      "Apple Inc. — Net margin, Q1 FY2024–Q4 FY2024 (%)",  # all it has
                      "Apple Inc. — Diluted EPS, Q1 FY2024–Q4 FY2024 (USD per share)"]
    assert "Figure 1. Apple Inc. — Revenue and net income" in page.text
    assert "Source: [S1] SEC EDGAR (XBRL company facts)" in page.text
    # self-contained: no script, nothing loaded from anywhere
    assert not page.named("script") and not page.named("link") and not page.named("img")
    assert all(ref.startswith("#") for ref in resource_references(page)), \
        resource_references(page)
    assert "default-src 'none'" in page.named("meta")[1]["content"]
    assert "@import" not in text and "url(http" not in text


@pytest.mark.e2e
def test_pdf_report_holds_the_question_sources_and_figures(
        llm: FakeLLM, data: FakeDataServer, tmp_path: Path) -> None:
    run = run_report(llm, data, tmp_path, "report.pdf")
    assert run.result.code == 0, run.result.stderr
    reader = PdfReader(run.path)
    text = "\n".join(page.extract_text() for page in reader.pages)
    flat = "".join(text.split())
    assert "".join(QUESTION.split()) in flat
    assert "SEC EDGAR (XBRL company facts)" in text
    assert "aapl-20240928.htm" in text and "/api/xbrl/companyfacts" not in flat
    assert REVENUE_Q1 in text and MARGIN_Q1 in text and "✓" in text
    # the filing is a live link, and the three charts are images
    uris = [str(annot.get_object()["/A"]["/URI"]) for page in reader.pages
            for annot in page.get("/Annots") or [] if "/A" in annot.get_object()]
    assert any(u.startswith(data.url) and u.endswith("aapl-20240928.htm") for u in uris), uris
    assert sum(len(page.images) for page in reader.pages) == 3
    assert reader.metadata is not None and reader.metadata.title == QUESTION


HOSTILE = ("Revenue was $119.6B [S1]. <script>alert(1)</script> "
           "<img src=x onerror=alert(2)> [click](javascript:alert(3)) "
           "![pixel](http://tracker.example/p.png)")


@pytest.mark.e2e
def test_raw_html_in_an_answer_stays_text_in_the_html_report(
        llm: FakeLLM, data: FakeDataServer, tmp_path: Path) -> None:
    run = run_report(llm, data, tmp_path, "report.htm", answer=HOSTILE)
    assert run.result.code == 0, run.result.stderr
    page = Page(run.path.read_text(encoding="utf-8"))
    assert not page.named("script") and not page.named("img")
    assert "<script>alert(1)</script>" in page.text
    assert "<img src=x onerror=alert(2)>" in page.text
    assert not any("javascript" in a.get("href", "") for a in page.named("a"))
    assert not any("onerror" in attrs for _, attrs in page.tags)
    # the image is a link to click, not a picture the browser fetches on opening
    assert {"href": "http://tracker.example/p.png"} in page.named("a")


# --- the answer as HTML ------------------------------------------------------------------


def test_citations_of_known_sources_link_to_them_outside_code_and_links() -> None:
    page = Page(answer_html("Up [S1], [S2] and [S7]. `[S1]` [see [S1]](https://a.example)",
                            cited=["S1", "S2"]))
    assert [a["href"] for a in page.named("a")] == ["#source-S1", "#source-S2",
                                                   "https://a.example"]
    assert "[S7]" in page.text and "[S1]" in page.text


def test_answer_html_keeps_tables_and_safe_links_only() -> None:
    out = answer_html("| a | b |\n|---|--:|\n| x | 1 |\n\n[ok](https://example.com/?a=1&b=2) "
                      "[no](file:///etc/passwd) <b>raw</b>")
    page = Page(out)
    assert [a["href"] for a in page.named("a")] == ["https://example.com/?a=1&b=2"]
    assert page.named("td")[1] == {"style": "text-align:right"}
    assert not page.named("b") and "<b>raw</b>" in page.text
    assert "[no](file:///etc/passwd)" in page.text


# --- charts ----------------------------------------------------------------------------

QUARTERS = ("Q1 2024", "Q2 2024", "Q3 2024", "Q4 2024")


def amounts_chart() -> Chart:
    revenue = Series("revenue", "USD", QUARTERS, (119.575e9, 90.753e9, None, 94.93e9),
                     "income", "S1", "Revenue")
    income = Series("net_income", "USD", QUARTERS, (33.9e9, 23.6e9, 21.4e9, 14.7e9),
                    "income", "S1", "Net income")
    return Chart("Apple Inc. — Revenue and net income", "USD", (revenue, income), "S1")


def test_a_missing_amount_is_an_empty_slot_marked_na() -> None:
    figure = draw(amounts_chart())
    ax = figure.axes[0]
    heights = sorted(round(p.get_height(), 3) for p in ax.patches)
    assert len(heights) == 7  # 8 slots, one value missing
    assert 119.575 in heights and 94.93 in heights  # in billions
    assert ax.get_ylabel() == "USD bn"
    assert [t.get_text() for t in ax.get_xticklabels()] == list(QUARTERS)
    texts = [t.get_text() for t in ax.texts]
    assert "n/a" in texts
    # every bar carries its value, as the tables print it
    assert {"119.6", "90.8", "94.9", "33.9", "14.7"} <= set(texts), texts
    assert [t.get_text() for t in figure.legends[0].get_texts()] == ["Revenue", "Net income"]
    # a metric has one colour in every chart
    colours = {p.get_facecolor() for p in ax.patches[:3]}
    assert len(colours) == 1


def test_a_metric_has_the_same_colour_in_every_chart() -> None:
    from dexter.reports.charts import color_of

    alone = Series("net_income", "USD", QUARTERS, (1.0, 2.0, 3.0, 4.0), "t", "S2")
    assert color_of(alone) == color_of(amounts_chart().series[1]) != \
        color_of(amounts_chart().series[0])
    made_up = Series("widgets", "", QUARTERS, (1.0, 2.0, 3.0, 4.0), "t", "S2")
    assert color_of(made_up) == color_of(made_up)


def test_many_bars_are_all_labelled() -> None:
    quarters = tuple(f"Q{q} FY{y}" for y in (2024, 2025) for q in (1, 2, 3, 4))
    series = tuple(Series(name, "USD", quarters, tuple(float(i + 1) * 1e9 for i in range(8)),
                          "t", "S1") for name in ("revenue", "net_income", "gross_profit"))
    ax = draw(Chart("t", "USD", series, "S1")).axes[0]
    assert len(ax.patches) == 24
    assert len([t for t in ax.texts if t.get_text()]) >= 24


def test_a_ratio_chart_is_a_line_in_percent_with_a_gap() -> None:
    margin = Series("net_margin", "ratio", QUARTERS, (0.284, None, 0.25, 0.155), "income", "S1")
    ax = draw(Chart("income · %", "ratio", (margin,), "S1")).axes[0]
    (line,) = ax.get_lines()
    ys = list(line.get_ydata())
    assert ys[0] == pytest.approx(28.4) and ys[3] == pytest.approx(15.5)
    assert math.isnan(ys[1])
    assert ax.get_ylabel() == "%"
    figure = ax.figure
    figure.canvas.draw()  # type: ignore[union-attr]
    labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert labels and all(label.endswith("%") for label in labels), labels


def test_axis_scale_follows_the_largest_amount() -> None:
    def series(unit: str, value: float) -> list[Series]:
        return [Series("x", unit, ("a", "b", "c"), (value, 1.0, 2.0), "t", "")]

    assert axis_scale(series("USD", 3.9e11)) == (1e9, "bn")
    assert axis_scale(series("shares", 15.2e6)) == (1e6, "m")
    assert axis_scale(series("USD/share", 6.1e3)) == (1.0, "")
    assert axis_scale(series("ratio", 0.5)) == (1.0, "")


def test_svg_is_inline_deterministic_and_its_ids_are_prefixed() -> None:
    chart = amounts_chart()
    first, again = chart_svg(chart, "c1"), chart_svg(chart, "c1")
    assert first == again
    assert first.startswith("<svg ") and "<?xml" not in first and "<!--" not in first
    other = chart_svg(chart, "c2")
    ids = set(Page(first).tags and [a["id"] for _, a in Page(first).tags if "id" in a])
    other_ids = {a["id"] for _, a in Page(other).tags if "id" in a}
    assert ids and all(i.startswith("c1-") for i in ids) and not ids & other_ids
    refs = resource_references(Page(first))
    assert refs and all(r.startswith("#c1-") for r in refs)
    assert "matplotlib.pyplot" not in sys.modules  # no global figure state, no GUI backend


def test_chart_png_and_caption() -> None:
    png = chart_png(amounts_chart(), dpi=50)
    assert png.startswith(b"\x89PNG")
    sources = (ReportSource("S1", "Apple Inc. — Income statement", "https://x", "t", True,
                            provider="SEC EDGAR (XBRL company facts)"),)
    assert chart_caption(amounts_chart(), sources) == \
        "Source: [S1] SEC EDGAR (XBRL company facts)"
    untitled = (ReportSource("S1", "prices.csv", "", "read_file", True),)
    assert chart_caption(amounts_chart(), untitled) == "Source: [S1] prices.csv"


def test_charts_libraries_are_not_loaded_until_a_report_needs_them() -> None:
    code = ("import sys, json, dexter.cli.app, dexter.reports, dexter.reports.html, "
            "dexter.reports.pdf; print(json.dumps(sorted(m for m in ('matplotlib', 'fpdf', "
            "'numpy', 'PIL') if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).parents[1])
    assert json.loads(out.stdout) == []


# --- the PDF's tables ------------------------------------------------------------------


def test_column_groups_fit_the_room_and_repeat_the_first_column() -> None:
    widths = [40.0] + [25.0] * 12
    groups = column_groups(widths, 265.0)
    assert [len(g) for g in groups] == [7, 7]
    assert all(g[0] == 0 for g in groups)
    assert sorted(c for g in groups for c in g[1:]) == list(range(1, 13))
    assert column_groups([40.0, 25.0], 300.0) == [[0, 1]]


def wide_statement(periods: int, fields: int) -> DataTable:
    dates = tuple(f"{2000 + n}-12-31" for n in range(periods))
    index = tuple(f"FY{2000 + n} ({d})" for n, d in enumerate(dates))
    columns = tuple(Column(f"field_{k}", "USD",
                           tuple(float(1_234_567_890_123 + k + n) for n in range(periods)))
                    for k in range(fields))
    return DataTable("balance_sheets[XYZ, annual]", "SEC EDGAR", "period", index, dates,
                     columns, source_id="S1")


def report_with(*tables: DataTable) -> Report:
    return Report("What does XYZ hold?", "2026-12-01 10:00 UTC", "gpt-5", "Assets grew [S1].",
                  (ReportSource("S1", "balance sheets", "https://example.com/x", "t", True),),
                  "", (), tables)


def test_a_wide_statement_keeps_its_newest_periods_on_a_portrait_page() -> None:
    reader = PdfReader(io.BytesIO(render_bytes(report_with(wide_statement(16, 6)), "pdf")))
    text = "\n".join(p.extract_text() for p in reader.pages)
    table = text[text.index("\nData\n"):text.index("FY2000–FY2007 not shown here")]
    assert "FY2015" in table and "FY2014" in table  # the latest periods are always shown
    assert "FY2000" not in table
    assert "the .xlsx report has every period" in text
    assert all(p.mediabox.width < p.mediabox.height for p in reader.pages)  # no landscape
    assert "1,234,568" in table and "1,234,567,890,123" not in text  # USD millions


def test_a_long_record_table_runs_across_pages_and_says_what_it_left_out() -> None:
    days = tuple(f"2024-{1 + n // 28:02d}-{1 + n % 28:02d}" for n in range(300))
    prices = DataTable("prices[XYZ]", "Yahoo", "date", days, days,
                       (Column("close", "USD", tuple(100.0 + n for n in range(300))),),
                       source_id="S1")
    reader = PdfReader(io.BytesIO(render_bytes(report_with(prices), "pdf")))
    text = "\n".join(p.extract_text() for p in reader.pages)
    assert "1 Jan 2024" in text and "20 Nov 2024" in text  # first and last rows
    assert "240 rows left out" in text
    assert text.count("Close (USD)") >= 2  # the header repeats on the next page


def test_a_missing_pdf_library_is_named_by_the_package_to_install(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "fpdf", None)  # import fpdf now fails
    with pytest.raises(ReportError) as error:
        write_report(report_with(), tmp_path / "r.pdf")
    assert "pip install fpdf2" in str(error.value)
    assert not (tmp_path / "r.pdf").exists()


def test_html_and_pdf_are_known_extensions() -> None:
    assert FORMATS[".html"] == FORMATS[".htm"] == "html" and FORMATS[".pdf"] == "pdf"


def test_a_report_without_tables_has_no_charts_section() -> None:
    page = Page(render_bytes(report_with(), "html").decode())
    assert not page.named("svg") and "Figures" not in page.text and "Data" not in page.text
    assert charts_of([]) == []
