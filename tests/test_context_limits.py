"""The threshold and which token count it is compared with."""

from __future__ import annotations

import pytest

from dexter.config import ContextSettings
from dexter.context.limits import context_threshold, tokens_in_use


def test_default_window_threshold_is_95000() -> None:
    assert context_threshold(128_000, ContextSettings()) == 95_000


def test_configured_window_and_reserves_move_the_threshold() -> None:
    assert context_threshold(200_000, ContextSettings()) == 167_000
    cfg = ContextSettings(summary_output_reserve_tokens=10_000, autocompact_buffer_tokens=5_000)
    assert context_threshold(128_000, cfg) == 113_000


def test_small_window_keeps_half_of_it() -> None:
    assert context_threshold(40_000, ContextSettings()) == 20_000


def test_non_positive_window_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="context_window"):
        context_threshold(0, ContextSettings())


def test_reported_count_wins_over_the_estimate() -> None:
    assert tokens_in_use(90_000, 50_000) == (90_000, "reported")
    assert tokens_in_use(None, 50_000) == (50_000, "estimate")
    assert tokens_in_use(0, 50_000) == (50_000, "estimate")


def test_growth_since_the_reported_call_is_added() -> None:
    assert tokens_in_use(90_000, 70_000, reported_basis=60_000) == (100_000, "reported+estimate")
    assert tokens_in_use(90_000, 55_000, reported_basis=60_000) == (90_000, "reported")
