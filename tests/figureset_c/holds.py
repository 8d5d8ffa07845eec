"""What each of set C's sources holds: spec -> (ticker, statement, fiscal periods). No dexter
import (the oracle and the generator read it)."""

from __future__ import annotations

from collections.abc import Sequence


def _fy(a: int, b: int) -> tuple[str, ...]:
    return tuple(f"FY{y}" for y in range(a, b + 1))


def _q(pairs: Sequence[tuple[int, int]]) -> tuple[str, ...]:
    return tuple(f"Q{q} FY{y}" for q, y in pairs)


HOLDS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "AAPL-inc-a": ("AAPL", "income", _fy(2021, 2025)),
    "AAPL-inc-q": ("AAPL", "income", _q([(2, 2024), (3, 2024), (4, 2024), (1, 2025), (2, 2025),
                                         (3, 2025), (4, 2025), (1, 2026)])),
    "AAPL-inc-ttm": ("AAPL", "income", ("TTM Q1 FY2026", "TTM Q4 FY2025")),
    "AAPL-cf-a": ("AAPL", "cash", _fy(2022, 2025)),
    "TSLA-inc-a": ("TSLA", "income", _fy(2016, 2021)),
    "TSLA-inc-q": ("TSLA", "income", _q([(4, 2020), (1, 2021), (2, 2021), (3, 2021), (4, 2021),
                                         (1, 2022), (2, 2022), (3, 2022)])),
    "TSLA-cf-a": ("TSLA", "cash", _fy(2016, 2021)),
}
"""What each spec's result holds, read off the tool's output once by hand (the periods its
table shows); the oracle uses it to know which source a figure may cite."""
