"""Estimated cost of model calls from the catalog's prices (US dollars per million tokens).

Below ``repl`` and ``evals`` so both can price runs: the REPL's closing line and ``/cost``,
and ``dexter eval``'s per-question and total spend.
"""

from __future__ import annotations

from collections.abc import Mapping

from dexter.config import ConfigError, Settings
from dexter.providers.registry import ModelInfo, resolve_model


def model_price(model_name: str, settings: Settings) -> ModelInfo | None:
    """The catalog entry with prices for ``model_name``; None when unknown or unpriced."""
    try:
        info = resolve_model(model_name, settings).info
    except ConfigError:
        return None
    if info is None or info.input_price_per_mtok is None or info.output_price_per_mtok is None:
        return None
    return info


def usage_cost(usage: Mapping[str, int], info: ModelInfo | None) -> float | None:
    """Dollars for ``usage`` (``input_tokens``/``output_tokens``) at ``info``'s prices."""
    if info is None or info.input_price_per_mtok is None or info.output_price_per_mtok is None:
        return None
    tokens_in = usage.get("input_tokens", 0)
    tokens_out = usage.get("output_tokens", 0)
    return (tokens_in * info.input_price_per_mtok + tokens_out * info.output_price_per_mtok) / 1e6


def format_cost(usd: float) -> str:
    """``$0.0042`` below a cent, ``$1.23`` above."""
    if usd < 0.01:
        return f"${usd:.4f}"
    return f"${usd:,.2f}"
