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
    """Dollars for ``usage`` at ``info``'s prices.

    ``input_tokens`` is the whole prompt; the part of it the provider served from its
    prompt cache (``cache_read_tokens``) or wrote to it (``cache_write_tokens``) is priced
    at the model's cache ratios, the rest at the input price.
    """
    if info is None or info.input_price_per_mtok is None or info.output_price_per_mtok is None:
        return None
    tokens_in = usage.get("input_tokens", 0)
    read = min(max(usage.get("cache_read_tokens", 0), 0), tokens_in)
    written = min(max(usage.get("cache_write_tokens", 0), 0), tokens_in - read)
    fresh = tokens_in - read - written
    prompt = (fresh + read * info.cache_read_ratio + written * info.cache_write_ratio)
    tokens_out = usage.get("output_tokens", 0)
    return (prompt * info.input_price_per_mtok + tokens_out * info.output_price_per_mtok) / 1e6


def format_cost(usd: float) -> str:
    """``$0.0042`` below a cent, ``$1.23`` above."""
    if usd < 0.01:
        return f"${usd:.4f}"
    return f"${usd:,.2f}"
