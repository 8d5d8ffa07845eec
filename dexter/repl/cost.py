"""Estimated cost of runs from the catalog's prices (US dollars per million tokens)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from dexter.config import ConfigError, Settings
from dexter.events import Done
from dexter.providers.registry import ModelInfo, resolve_model
from dexter.render.format import stats_line


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


def stats_with_cost(done: Done, info: ModelInfo | None) -> str:
    """The closing line of a run, with ``· ~$0.0123`` when the model's price is known."""
    line = stats_line(done)
    cost = usage_cost(done.token_usage, info)
    return f"{line} · ~{format_cost(cost)}" if cost is not None else line


@dataclass
class CostTracker:
    """Token and cost totals over the session's runs."""

    runs: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    unpriced_models: set[str] = field(default_factory=set)

    def add(self, model_name: str, usage: Mapping[str, int], info: ModelInfo | None) -> None:
        """Count one run."""
        self.runs += 1
        self.input_tokens += usage.get("input_tokens", 0)
        self.output_tokens += usage.get("output_tokens", 0)
        cost = usage_cost(usage, info)
        if cost is None:
            if usage.get("input_tokens", 0) or usage.get("output_tokens", 0):
                self.unpriced_models.add(model_name)
        else:
            self.cost += cost

    def reset(self) -> None:
        """Start counting again."""
        self.runs = self.input_tokens = self.output_tokens = 0
        self.cost = 0.0
        self.unpriced_models.clear()
