"""Answer tables: numeric columns right-aligned, text columns and code blocks untouched."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from dexter.render.tables import (
    align_numeric_columns,
    answer_markdown,
    is_numeric_column,
    looks_numeric,
)

TABLE = """| Company | Revenue | Growth | Note |
|---|---|---|---|
| NVIDIA | $130.5B | 114% | AI chips |
| AMD | $25.8B | 14% | — |
| Intel | 53,101 | -2.1% | n/a |
"""


@pytest.mark.parametrize("cell", [
    "1", "1,234", "$130.5B", "-2.1%", "+3.5 %", "(12)", "1.8x", "€4.2bn", "**42**",
    "0.25", ".5", "~300", "12 bps",
])
def test_numeric_cells(cell: str) -> None:
    assert looks_numeric(cell)


@pytest.mark.parametrize("cell", ["NVIDIA", "FY2024 Q3", "n/a", "1-2 years", "AI chips", ""])
def test_non_numeric_cells(cell: str) -> None:
    assert not looks_numeric(cell)


def test_numeric_column_needs_more_than_half_of_meaningful_cells() -> None:
    assert not is_numeric_column(["1", "2", "a", "b"])  # exactly half
    assert is_numeric_column(["1", "2", "3", "a", "b"])  # 3 of 5
    assert is_numeric_column(["1", "—", "n/a", "-", ""])  # placeholders count neither way
    assert not is_numeric_column(["—", "n/a"])


def test_numeric_columns_get_right_aligned_delimiters() -> None:
    lines = align_numeric_columns(TABLE).splitlines()
    assert lines[1] == "|---|---:|---:|---|"
    assert lines[0] == TABLE.splitlines()[0]
    assert lines[2:] == TABLE.splitlines()[2:]


def test_explicit_alignment_is_kept() -> None:
    text = "| a | b |\n|:--|:-:|\n| 1 | 2 |\n| 3 | 4 |\n"
    assert align_numeric_columns(text) == text


def test_tables_inside_code_blocks_are_untouched() -> None:
    text = "```\n| a | b |\n|---|---|\n| x | 1 |\n```\n"
    assert align_numeric_columns(text) == text


def test_tables_without_outer_pipes_and_in_quotes() -> None:
    text = "Co | Rev\n--|--\nA | 3%\nB | 4%\n\n> | x | y |\n> |---|---|\n> | a | 1 |\n"
    lines = align_numeric_columns(text).splitlines()
    assert lines[1] == "--|--:"
    assert lines[6] == "> |---|---:|"


def render(text: str, width: int = 80) -> list[str]:
    console = Console(record=True, width=width, force_terminal=False, color_system=None,
                      file=io.StringIO())
    console.print(answer_markdown(text))
    return console.export_text().splitlines()


def test_rendered_numbers_line_up_on_the_right() -> None:
    lines = render(TABLE)
    rows = {name: next(line for line in lines if line.lstrip().startswith(name))
            for name in ("NVIDIA", "AMD", "Intel")}
    ends = {name: row.index(value) + len(value)
            for name, row, value in ((n, rows[n], v) for n, v in
                                     (("NVIDIA", "$130.5B"), ("AMD", "$25.8B"),
                                      ("Intel", "53,101")))}
    assert len(set(ends.values())) == 1
    starts = {rows["NVIDIA"].index("AI chips"), rows["AMD"].index("—"),
              rows["Intel"].index("n/a")}
    assert len(starts) == 1  # the text column stays left-aligned


def test_narrow_table_renders_without_error() -> None:
    lines = render(TABLE, width=40)
    assert all(len(line) <= 40 for line in lines)
    assert any("NVIDIA" in line for line in lines)
