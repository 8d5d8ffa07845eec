"""The REPL's cost tracking: the closing line with cost and session totals.

Pricing itself (``model_price``, ``usage_cost``, ``format_cost``) lives in
``dexter.providers.pricing``; it is re-exported here for the REPL's modules.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from dexter.events import Done
from dexter.providers.pricing import format_cost as format_cost
from dexter.providers.pricing import model_price as model_price
from dexter.providers.pricing import usage_cost as usage_cost
from dexter.providers.registry import ModelInfo
from dexter.render.format import stats_line


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
