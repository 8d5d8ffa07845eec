"""How the figure check reads the words and tables around a figure, rule by rule, on real
sources (Apple's and Tesla's statements fetched by dexter's finance tools from the real SEC
responses): a unit stated in a table's first header cell or its caption, product numbers,
the ways writers name operating cash flow and gross profit, basis-point changes, a period
stated after the figure's metric, and a company's legal name with its comma."""

from __future__ import annotations

import pytest

from dexter.evidence.ledger import SourceLedger
from dexter.evidence.verify import verify_answer
from dexter.tools.base import ToolOutput
from tests.figure_sources import ledger_for, shared_outputs


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ToolOutput]:
    return shared_outputs(tmp_path_factory)


def statuses(ledger: SourceLedger, answer: str) -> list[tuple[str, str]]:
    return [(f.claim.text, f.status) for f in verify_answer(answer, ledger).figures]


# -- a unit stated once for the whole table ---------------------------------------------------

def test_a_percent_in_the_first_header_cell_is_every_bare_cells_unit(
        outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["TSLA-income-annual"], outputs)
    # Tesla: gross margin 21.0% (2020), 25.3% (2021); operating margin 6.3%, 12.1%
    table = ("| Profitability (%) | 2020 | 2021 |\n|---|---|---|\n"
             "| Gross margin | 21.0 | 25.3 |\n| Operating margin | 6.3 | 12.1 |\n\nSource: [S1]")
    assert statuses(ledger, table) == [("21.0", "supported"), ("25.3", "supported"),
                                       ("6.3", "supported"), ("12.1", "supported")]
    # the unit binds: a margin of another line is still caught
    swapped = table.replace("| 6.3 | 12.1 |", "| 21.0 | 12.1 |")
    assert statuses(ledger, swapped)[2] == ("21.0", "misattributed")


def test_a_percent_in_the_caption_is_every_bare_cells_unit(
        outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["AAPL-income-annual"], outputs)
    # Apple: gross margin 44.1% (FY2023), 46.2% (FY2024); operating margin 29.8%, 31.5%
    for caption in ("Apple's margins, per cent of net sales [S1]",
                    "Margins (%) — Apple Inc. [S1]"):
        answer = (f"{caption}\n\n| | FY2023 | FY2024 |\n|---|---|---|\n"
                  "| Gross margin | 44.1 | 46.2 |\n| Operating margin | 29.8 | 31.5 |\n")
        assert [s for _, s in statuses(ledger, answer)] == ["supported"] * 4, caption


def test_a_captions_scale_reaches_rows_whose_names_hold_ratio_letters(
        outputs: dict[str, ToolOutput]) -> None:
    ledger = ledger_for(["AAPL-cash-annual"], outputs)
    # "operations" holds the letters of "ratio", "generated" those of "rate": neither
    # makes the row a ratio that a caption's "$ in billions" must not scale
    answer = ("Cash flows, $ in billions [S1]\n\n| | FY2024 | FY2025 |\n|---|---|---|\n"
              "| Cash generated from operations | 118.3 | 111.5 |\n"
              "| Capital expenditures | 9.4 | 12.7 |\n")
    assert [s for _, s in statuses(ledger, answer)] == ["supported"] * 4

