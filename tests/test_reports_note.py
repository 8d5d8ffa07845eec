"""The research note end to end: one run on real Apple SEC data (annual income and cash flow
statements, eight quarters, the FY2024 10-K's MD&A, two calculations, an answer with a
table and one wrong figure) written by ``dexter ask --output`` in all four formats, read
back the way a reader meets each one: the markdown's text, the HTML page's text and
tags, the PDF's extracted text and links, the workbook's cells.

Expected figures are Apple's published ones (10-K FY2024 and FY2025, 10-Q Q1 FY2025), in
the units a filing prints them in.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from openpyxl import load_workbook
from openpyxl.workbook.workbook import Workbook
from pypdf import PdfReader

from dexter.testing.fakedata import FakeDataServer, RecordedTree
from dexter.testing.fakellm import FakeLLM
from tests.report_helpers import (
    NOTE_ANSWER,
    NOTE_QUESTION,
    SEC_REAL,
    WRONG_FIGURE,
    run_note,
)
from tests.shared_fixtures import built_once

pytestmark = pytest.mark.e2e

FIELD_NAMES = ("cost_of_revenue", "gross_profit", "net_income", "earnings_per_share",
               "net_cash_flow_from_operations", "capital_expenditure", "free_cash_flow",
               "gross_margin", "operating_margin", "net_margin", "weighted_average_shares",
               "selling_general_and_administrative_expenses", "research_and_development",
               "report_period", "fiscal_period", "source_filing", "field_sources")
TOOL_IDS = ("get_financials", "read_filings", "calculator", "get_income_statements",
            "read_10k_items", "web_fetch", "read_file")
INTERNAL_KEYS = ("income_statements[", "cash_flow_statements", "10-K[AAPL", "companyfacts",
                 "submissions/CIK")
TEN_K = "aapl-20240928.htm"
ACCESSION = "0000320193-24-000123"


@dataclass
class Note:
    """The four files of the run and what a reader reads in each."""

    folder: Path
    markdown: str
    html: str
    pdf: str
    pdf_links: list[str]
    book: Workbook
    terminal: str
    """What ``dexter ask --plain`` printed in the markdown run."""

    @property
    def workbook_text(self) -> str:
        return "\n".join(str(c.value) for sheet in self.book.worksheets
                         for row in sheet.iter_rows() for c in row if c.value is not None)

    def texts(self) -> dict[str, str]:
        return {"md": self.markdown, "html": page_text(self.html), "pdf": self.pdf,
                "xlsx": self.workbook_text}


class Page(HTMLParser):
    """The text of an HTML page, its tags with attributes, and its tables as rows of cells
    under the heading before each."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.chunks: list[str] = []
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.tables: list[tuple[str, list[list[str]]]] = []
        self._heading = ""
        self._in: list[str] = []
        self._cell: list[str] | None = None
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))
        self._in.append(tag)
        if tag == "h3":
            self._heading = ""
        elif tag == "table":
            self.tables.append((self._heading, []))
        elif tag == "tr" and self.tables:
            self.tables[-1][1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self.tables:
            self.tables[-1][1][-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        if self._in and self._in[-1] == tag:
            self._in.pop()

    def handle_data(self, data: str) -> None:
        self.chunks.append(data)
        if self._cell is not None:
            self._cell.append(data)
        if "h3" in self._in:
            self._heading += data

    @property
    def text(self) -> str:
        return " ".join("".join(self.chunks).split())

    def table(self, title: str) -> list[list[str]]:
        return next(rows for heading, rows in self.tables if heading.startswith(title))


def page_text(html: str) -> str:
    return Page(html).text


def _run_every_format(folder: Path) -> None:
    """The run once per format, each in a folder and a dexter home of its own. The first
    fetches the SEC responses over HTTP and parses the 10-K; the others start with the
    data cache it filled (from the same data server, so the same cache keys), as a user's
    next run on the same question would: they write the same report from the same data
    without parsing it again (about 1.5 CPU-s each)."""
    terminal = ""
    cache: Path | None = None
    with FakeDataServer(fallback=RecordedTree(SEC_REAL)) as data:
        for name in ("note.md", "note.html", "note.pdf", "note.xlsx"):
            cwd = folder / name.split(".")[1]
            cwd.mkdir()
            if cache is not None:
                shutil.copytree(cache, cwd / ".dexter" / "cache")
            with FakeLLM() as llm:
                run = run_note(llm, cwd, name, data=data)
            assert run.result.code == 0, run.result.stderr
            assert data.requests, "the first run fetched the filings over HTTP"
            terminal = terminal or run.result.stdout
            (folder / name).write_bytes(run.path.read_bytes())
            cache = cache or cwd / ".dexter" / "cache"
    (folder / "terminal.txt").write_text(terminal, encoding="utf-8")


@pytest.fixture(scope="module")
def note(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Note]:
    """The run, once per format, each in its own folder (once for all workers)."""
    folder = built_once(tmp_path_factory, "report-note", _run_every_format)
    reader = PdfReader(folder / "note.pdf")
    links = [str(annot.get_object()["/A"]["/URI"]) for page in reader.pages
             for annot in page.get("/Annots") or [] if "/A" in annot.get_object()
             and "/URI" in annot.get_object()["/A"]]
    yield Note(folder, (folder / "note.md").read_text(encoding="utf-8"),
               (folder / "note.html").read_text(encoding="utf-8"),
               "\n".join(page.extract_text() for page in reader.pages), links,
               load_workbook(folder / "note.xlsx"),
               (folder / "terminal.txt").read_text(encoding="utf-8"))


def md_table(markdown: str, title: str) -> list[list[str]]:
    """The pipe table under the ``### title`` heading, as rows of cells (no emphasis)."""
    block = markdown.split(f"### {title}", 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]
    return [[c.strip().strip("*") for c in line.strip().strip("|").split("|")]
            for line in block.splitlines()
            if line.startswith("|") and not line.startswith("|---")]


def cell(rows: list[list[str]], row_label: str, column: str) -> str:
    header = rows[0]
    row = next(r for r in rows if r[0] == row_label)
    return row[header.index(column)]


def sheet(book: Workbook, title: str) -> Any:
    found = [s for s in book.worksheets if s["A1"].value == title]
    assert found, [s["A1"].value for s in book.worksheets]
    return found[0]


def sheet_value(ws: Any, row_label: str, column: str) -> Any:
    header = next(r for r in ws.iter_rows() if r[0].value in ("Fiscal year", "Fiscal quarter"))
    place = [c.value for c in header].index(column)
    row = next(r for r in ws.iter_rows() if r[0].value == row_label)
    return row[place]


# -- no field name, tool id or internal key reaches a reader ----------------------------


@pytest.mark.parametrize("fmt", ["md", "html", "pdf", "xlsx"])
def test_no_field_name_tool_id_or_internal_key_in_any_format(note: Note, fmt: str) -> None:
    text = note.texts()[fmt]
    found = [name for name in (*FIELD_NAMES, *TOOL_IDS, *INTERNAL_KEYS) if name in text]
    assert found == [], f"{fmt}: {found}"
    assert not re.search(r"\b[a-z]+_[a-z]+_[a-z_]+\b", text), \
        re.findall(r"\b[a-z]+_[a-z]+_[a-z_]+\b", text)[:5]


def test_no_field_name_in_the_html_pages_attributes(note: Note) -> None:
    labels = [attrs.get("aria-label", "") for _, attrs in Page(note.html).tags]
    assert not any("_" in label or "[AAPL" in label for label in labels), labels


# -- statement figures read as a filing prints them ------------------------------------


def test_fy2024_revenue_reads_391_035_in_a_table_captioned_in_millions(note: Note) -> None:
    income = "Apple Inc. — Income statement, annual"
    rows = md_table(note.markdown, income)
    assert cell(rows, "Revenue", "FY2024") == "391,035"
    caption = note.markdown.split(f"### {income}", 1)[1].split("|", 1)[0]
    assert "*USD millions, except per-share; shares in millions*" in caption
    page = Page(note.html)
    assert cell(page.table(income), "Revenue", "FY2024") == "391,035"
    assert f"{income} [S1] USD millions, except per-share" in page.text
    assert re.search(r"USD millions, except per-share; shares in millions\nFiscal year FY2021 "
                     r"FY2022 FY2023 FY2024 FY2025\n.*\nRevenue 365,817 394,328 383,285 "
                     r"391,035 416,161", note.pdf), note.pdf[:3000]
    ws = sheet(note.book, income)
    revenue = sheet_value(ws, "Revenue", "FY2024")
    assert revenue.value == 391_035_000_000 and revenue.number_format.startswith("#,##0,,")
    assert ws["A2"].value.startswith("USD millions, except per-share")


def test_fy2024_capital_expenditure_reads_9_447_in_parentheses(note: Note) -> None:
    cash = "Apple Inc. — Cash flow statement, annual"
    assert cell(md_table(note.markdown, cash), "Capital expenditure", "FY2024") == "(9,447)"
    assert cell(Page(note.html).table(cash), "Capital expenditure", "FY2024") == "(9,447)"
    assert "Capital expenditure (11,085) (10,708) (10,959) (9,447) (12,715)" in note.pdf
    capex = sheet_value(sheet(note.book, cash), "Capital expenditure", "FY2024")
    assert capex.value == -9_447_000_000 and "(#,##0,,)" in capex.number_format


def test_q1_fy2025_diluted_eps_reads_2_40(note: Note) -> None:
    quarters = "Apple Inc. — Income statement, quarterly"
    assert cell(md_table(note.markdown, quarters), "EPS, diluted", "Q1 FY2025") == "2.40"
    assert cell(Page(note.html).table(quarters), "EPS, diluted", "Q1 FY2025") == "2.40"
    table = note.pdf.split(quarters, 1)[1]
    header = next(line for line in table.splitlines() if line.startswith("Fiscal quarter"))
    eps = next(line for line in table.splitlines() if line.startswith("EPS, diluted"))
    periods = header.split()[2:]
    values = eps.split()[2:]
    assert values[[" ".join(p) for p in zip(periods[::2], periods[1::2], strict=True)]
                  .index("Q1 FY2025")] == "2.40"
    eps_cell = sheet_value(sheet(note.book, quarters), "EPS, diluted", "Q1 FY2025")
    assert eps_cell.value == pytest.approx(2.40) and eps_cell.number_format.startswith("#,##0.00")


def test_the_latest_period_is_always_shown_and_no_table_scrolls(note: Note) -> None:
    page = Page(note.html)
    assert not [a for _, a in page.tags if "scroll" in a.get("class", "")]
    assert "overflow-x: auto; margin" not in note.html
    quarterly = page.table("Apple Inc. — Income statement, quarterly")
    assert quarterly[0][-1] == "Q1 FY2026"  # the newest quarter, in every format
    assert "Q1 FY2026" in md_table(note.markdown, "Apple Inc. — Income statement, quarterly")[0]
    assert "Q1 FY2026" in note.pdf.split("Apple Inc. — Income statement, quarterly", 1)[1]


# -- sources that name documents ---------------------------------------------------------


@pytest.mark.parametrize("fmt", ["md", "html", "pdf", "xlsx"])
def test_sources_name_the_10k_document_and_its_accession(note: Note, fmt: str) -> None:
    text = note.texts()[fmt]
    assert TEN_K in text and ACCESSION in text
    assert "Form 10-K for FY2024" in text or "Form 10-K, fiscal year ended" in text


def test_the_document_is_a_link_in_every_format_that_links(note: Note) -> None:
    assert f"[{TEN_K}](<" in note.markdown
    hrefs = [a.get("href", "") for tag, a in Page(note.html).tags if tag == "a"]
    assert any(h.endswith(f"/000032019324000123/{TEN_K}") for h in hrefs), hrefs
    assert any(u.endswith(f"/000032019324000123/{TEN_K}") for u in note.pdf_links)
    documents = [c for row in note.book["Sources"].iter_rows() for c in row
                 if c.value == TEN_K]
    assert documents and documents[0].hyperlink.target.endswith(TEN_K)


def test_a_calculation_names_its_expression_result_and_inputs(note: Note) -> None:
    for text in (note.markdown, page_text(note.html), note.pdf):
        assert "Calculation: Gross margin" in text
        assert "180,683 ÷ 391,035 × 100 = 46.21" in text
        assert "180,683: Gross profit, FY2024 [S1]" in text
        assert "383,285: Revenue, FY2023 [S1]" in text


@pytest.mark.parametrize("fmt", ["md", "html", "pdf", "xlsx"])
def test_sources_are_listed_s1_s2_s3_in_order(note: Note, fmt: str) -> None:
    if fmt == "xlsx":
        ids = [row[0].value for row in note.book["Sources"].iter_rows(min_row=2)]
    elif fmt == "html":
        ids = [a["id"].removeprefix("source-") for tag, a in Page(note.html).tags
               if tag == "li" and a.get("id", "").startswith("source-")]
    else:
        text = note.texts()[fmt]
        listed = text[text.rindex("Sources"):]
        ids = re.findall(r"^\W*\[(S\d+)\]", listed, re.MULTILINE)
    assert ids == ["S1", "S2", "S3", "S4", "S5"], ids


def test_the_terminal_lists_the_sources_in_words_by_id(note: Note) -> None:
    listed = note.terminal[note.terminal.rindex("**Sources**"):].split("\n\n")[1]
    lines = listed.splitlines()
    assert re.findall(r"^- \[(S\d+)\]", listed, re.MULTILINE) == ["S1", "S2", "S3", "S4", "S5"]
    found = [name for name in (*FIELD_NAMES, *TOOL_IDS, *INTERNAL_KEYS) if name in listed]
    assert found == [], found
    # the statement source names the company, statement and periods, and links the 10-K
    assert lines[0].startswith("- [S1] Apple Inc. — Income statement, annual, FY2021–FY2025")
    assert "SEC EDGAR (XBRL company facts)" in lines[0] and lines[0].endswith(".htm")
    assert TEN_K in listed  # the filing read for management's words, by its document
    assert "- [S4] Calculation: Gross margin: 180,683 ÷ 391,035 × 100 = 46.21" in lines


def test_citations_link_to_their_source_in_html_and_pdf(note: Note) -> None:
    hrefs = [a.get("href", "") for tag, a in Page(note.html).tags if tag == "a"]
    assert {f"#source-S{n}" for n in range(1, 6)} <= set(hrefs)
    reader = PdfReader(note.folder / "note.pdf")
    internal = [annot.get_object() for page in reader.pages
                for annot in page.get("/Annots") or [] if "/Dest" in annot.get_object()]
    names = {str(a["/Dest"]) for a in internal}
    assert {f"source-S{n}" for n in range(1, 6)} <= names, names
    assert reader.trailer["/Root"]["/Names"]["/Dests"]  # the destinations exist


# -- the check, at the top ---------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["md", "html", "pdf"])
def test_the_wrong_figure_is_named_above_the_answer(note: Note, fmt: str) -> None:
    text = note.texts()[fmt]
    first_sentence = "Apple's revenue grew 2.0%"
    banner = text.index("1 of 18 figures is not supported by the sources")
    # the sentence names no year: it is the paragraph's (fiscal 2024), whose operating cash
    # flow the cited statement holds
    named = text.index(f"“{WRONG_FIGURE}”: FY2024 operating cash flow is 118.3 billion [S1], "
                       f"not {WRONG_FIGURE}")
    assert banner < named < text.index(first_sentence)


def test_the_banner_and_the_mark_are_highlighted(note: Note) -> None:
    page = Page(note.html)
    assert any(tag == "aside" and "warn" in a.get("class", "") for tag, a in page.tags)
    assert note.html.count('<span class="mark">⚠</span>') >= 3  # banner, flag, in the answer
    assert '<font color="#b45309">' not in note.html
    report = note.book["Report"]
    check = next(r for r in report.iter_rows() if r[0].value == "Check")
    answer = next(r for r in report.iter_rows() if r[0].value == "Answer")
    assert check[0].row < answer[0].row
    flagged = report.cell(row=check[0].row + 1, column=2)
    assert WRONG_FIGURE in flagged.value and flagged.fill.fgColor.rgb.endswith("FFF6E0")


# -- charts ------------------------------------------------------------------------------


def test_chart_titles_name_the_company_periods_and_unit(note: Note) -> None:
    page = Page(note.html)
    titles = [a["aria-label"] for tag, a in page.tags if tag == "svg"]
    assert titles[:4] == ["Apple Inc. — Revenue and net income, FY2021–FY2025 (USD bn)",
                          "Apple Inc. — Margins, FY2021–FY2025 (%)",
                          "Apple Inc. — Diluted EPS, FY2021–FY2025 (USD per share)",
                          "Apple Inc. — Free cash flow, FY2021–FY2025 (USD bn)"]
    assert "Apple Inc. — Revenue and net income, Q2 FY2024–Q1 FY2026 (USD bn)" in titles
    assert len(titles) == 7 and all(t.startswith("Apple Inc. — ") for t in titles)
    flat = " ".join(note.pdf.split())
    for n, title in enumerate(titles, 1):
        assert f"Figure {n}. {title}" in flat, title
    assert len(PdfReader(note.folder / "note.pdf").pages[0].images) == 2  # a figure row


# -- the workbook ------------------------------------------------------------------------


def test_the_workbook_has_no_markdown(note: Note) -> None:
    report = note.book["Report"]
    texts = [str(c.value) for row in report.iter_rows() for c in row
             if isinstance(c.value, str)]
    assert not [t for t in texts if t.startswith(("#", "|", "- ", "* "))
                or "**" in t or "|---" in t or "](" in t], texts
    assert "Summary" in texts and "What management said" in texts
    summary = next(c for row in report.iter_rows() for c in row if c.value == "Summary")
    assert summary.font.b


def test_the_workbook_holds_the_answers_table_as_numbers(note: Note) -> None:
    report = note.book["Report"]
    header = next(r for r in report.iter_rows() if r[1].value == "Fiscal year")
    assert [c.value for c in header[1:5]] == ["Fiscal year", "Revenue ($m)", "Net income ($m)",
                                            "Diluted EPS"]
    fy2024 = next(r for r in report.iter_rows() if r[1].value == "FY2024")
    assert [c.value for c in fy2024[2:5]] == [391_035, 93_736, pytest.approx(6.08)]
    assert all(c.data_type == "n" for c in fy2024[2:5])
    assert fy2024[4].number_format.startswith("0.00")


def test_the_workbook_computes_margins_and_free_cash_flow_with_formulas(note: Note) -> None:
    income = sheet(note.book, "Apple Inc. — Income statement, annual")
    values = evaluate_sheet(income)
    margin = sheet_value(income, "Gross margin", "FY2024")
    assert isinstance(margin.value, str) and margin.value.startswith("=")
    assert values[margin.coordinate] == pytest.approx(180_683 / 391_035)
    growth = next(r for r in income.iter_rows() if r[0].value == "Revenue growth")
    fy2024 = sheet_value(income, "Revenue", "FY2024").column - 1
    assert values[growth[fy2024].coordinate] == pytest.approx(391_035 / 383_285 - 1)
    cash = sheet(note.book, "Apple Inc. — Cash flow statement, annual")
    fcf = sheet_value(cash, "Free cash flow", "FY2024")
    assert fcf.value.startswith("=")
    assert evaluate_sheet(cash)[fcf.coordinate] == pytest.approx(108_807_000_000)


def test_the_workbook_has_readable_sheet_names_and_dates_as_dates(note: Note) -> None:
    names = note.book.sheetnames
    assert names == ["Report", "Apple income statement, annual", "Apple cash flow, annual",
                     "Apple income, quarterly", "Sources"]
    assert all(len(n) <= 31 and "…" not in n and "_" not in n and "[" not in n for n in names)
    income = sheet(note.book, "Apple Inc. — Income statement, annual")
    end = next(r for r in income.iter_rows() if r[0].value == "Period end")
    assert all(c.is_date for c in end[1:6])
    assert end[4].value.date().isoformat() == "2024-09-28"
    assert next(r for r in note.book["Report"].iter_rows() if r[0].value == "Date")[1].is_date


_REFERENCE = re.compile(r"\b([A-Z]{1,2})(\d+)\b")


def evaluate_sheet(ws: Any) -> dict[str, float]:
    """Every formula of ``ws`` computed from its cells: only the arithmetic and the growth
    formula's IF/OR/ABS/SIGN the workbook writes, so a wrong reference shows as a wrong
    number here."""
    values: dict[str, Any] = {c.coordinate: c.value for row in ws.iter_rows() for c in row}

    def value(coordinate: str) -> Any:
        found = values.get(coordinate)
        if isinstance(found, str) and found.startswith("="):
            return compute(found[1:])
        return found

    def compute(expression: str) -> Any:
        growth = re.fullmatch(r'IF\(OR\((\w+)="",(\w+)="",\2=0\),"",\1/ABS\(\2\)-SIGN\(\2\)\)',
                              expression)
        if growth:
            now, then = value(growth.group(1)), value(growth.group(2))
            if now is None or then in (None, 0):
                return None
            return now / abs(then) - (1 if then > 0 else -1)
        arithmetic = _REFERENCE.sub(lambda m: repr(value(m.group(0))), expression)
        assert re.fullmatch(r"[\d.e+\-*/() ]+", arithmetic), arithmetic
        return eval(arithmetic)  # digits and operators only, checked above

    return {k: compute(v[1:]) for k, v in values.items() if isinstance(v, str) and
            v.startswith("=")}


def test_the_answer_fixture_has_one_wrong_figure_and_a_table() -> None:
    assert NOTE_ANSWER.count(WRONG_FIGURE) == 1 and "|---|" in NOTE_ANSWER
    assert "Apple" in NOTE_QUESTION
