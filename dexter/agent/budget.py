"""Spending limits: stop before a request that would take a run (or a session) past them.

The check runs before every model request. It adds what the session's earlier runs spent
(``Conversation.spent_*``), what this run spent so far (every call: the answer's, the
flush's and the compaction's), and what the next request would cost: its estimated input
plus an output allowance of :data:`OUTPUT_ALLOWANCE` tokens. A cost limit needs the
model's price; without one the run is refused at once with a message saying to use a token
limit instead. See docs/architecture.md ("State and who changes it") and README "Budgets".
"""

from __future__ import annotations

from dataclasses import dataclass

from dexter.config import LimitsSettings
from dexter.providers.pricing import format_cost
from dexter.providers.registry import ModelInfo

OUTPUT_ALLOWANCE = 1_000
"""Output tokens counted for the next request when checking a limit."""


@dataclass(frozen=True, slots=True)
class Spend:
    """Tokens and dollars (None: no price known) spent so far."""

    tokens: int
    usd: float | None


def next_request_cost(input_tokens: int, price: ModelInfo | None) -> float | None:
    """Dollars the next request would cost (its input plus the output allowance)."""
    if price is None or price.input_price_per_mtok is None or price.output_price_per_mtok is None:
        return None
    return (input_tokens * price.input_price_per_mtok
            + OUTPUT_ALLOWANCE * price.output_price_per_mtok) / 1e6


def over_budget(limits: LimitsSettings, spent: Spend, next_input: int,
                price: ModelInfo | None, model: str) -> str | None:
    """Why the next request must not be sent (the message the run ends with), or None."""
    tokens_after = spent.tokens + next_input + OUTPUT_ALLOWANCE
    if limits.max_tokens and tokens_after > limits.max_tokens:
        return (f"Stopped before the next request: it would take the run past the limit of "
                f"{limits.max_tokens:,} tokens ({spent.tokens:,} used so far, about "
                f"{next_input + OUTPUT_ALLOWANCE:,} more needed). Everything fetched is kept "
                "in the scratchpad; raise the limit with --max-tokens or [limits] max_tokens.")
    if not limits.max_cost_usd:
        return None
    cost = next_request_cost(next_input, price)
    if cost is None or spent.usd is None:
        return (f"The cost limit of {format_cost(limits.max_cost_usd)} cannot be kept: no price "
                f"is known for {model}. Use a token limit instead (--max-tokens).")
    if spent.usd + cost > limits.max_cost_usd:
        return (f"Stopped before the next request: it would take the run past the budget of "
                f"{format_cost(limits.max_cost_usd)} ({format_cost(spent.usd)} spent so far, "
                f"about {format_cost(cost)} more needed). Everything fetched is kept in the "
                "scratchpad; raise the budget with --max-cost or [limits] max_cost_usd.")
    return None
