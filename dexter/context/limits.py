"""The context threshold and the token count it is compared with."""

from __future__ import annotations

from typing import Literal

from dexter.config import ContextSettings

TokenSource = Literal["reported", "reported+estimate", "estimate"]

DEFAULT_CONTEXT_WINDOW = 128_000
"""The window assumed for a model nobody configured."""


def context_threshold(window: int, cfg: ContextSettings) -> int:
    """Tokens the view may use before manageContextThreshold acts.

    ``window - summary_output_reserve_tokens - autocompact_buffer_tokens`` (128,000 gives
    95,000), but never below half the window: for a small window the reserves would
    otherwise leave nothing (or a negative threshold).
    """
    if window <= 0:
        raise ValueError(
            f"context window must be a positive number of tokens, got {window}; "
            "set [context] context_window or [context_windows] in the config"
        )
    threshold = window - cfg.summary_output_reserve_tokens - cfg.autocompact_buffer_tokens
    return max(threshold, window // 2)


def tokens_in_use(
    last_reported_input: int | None,
    estimate: int,
    reported_basis: int | None = None,
) -> tuple[int, TokenSource]:
    """How many tokens the view uses, and where that number came from.

    The provider's reported input count for the last call wins when there is one (it is
    exact for that request). When ``reported_basis`` is given (the estimate of the view as
    it was sent with that call), whatever the view gained since is added as an estimate:
    without it, the tool results appended after the call would be invisible until the next
    call reported them. With no reported count, the estimate is used.
    """
    if last_reported_input is None or last_reported_input <= 0:
        return estimate, "estimate"
    if reported_basis is None:
        return last_reported_input, "reported"
    grown = estimate - reported_basis
    if grown <= 0:
        return last_reported_input, "reported"
    return last_reported_input + grown, "reported+estimate"
