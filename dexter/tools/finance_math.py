"""Valuation math for the calculator: present value, NPV, WACC, terminal values, a DCF.

Each function takes and returns :class:`decimal.Decimal` and raises ``ToolFailure`` with a
message saying what to fix. They run inside the evaluator's Decimal context (28 significant
digits), and :mod:`dexter.tools.evaluator` lists them in its function table.

Conventions (the ``calculator`` description tells the model):

- Rates are fractions: ``0.09`` or ``9%`` (the calculator reads ``9%`` as 0.09).
- Cash flows are at the end of each period; ``npv`` discounts its first flow one period,
  as spreadsheets do (add a flow at time 0 outside the call).
- ``gordon_tv`` grows the final cash flow one period: ``cf * (1 + g) / (r - g)``, the value
  at the end of the final year, not yet discounted.
- ``growth`` and ``margin`` return percents (``25`` means 25%), like ``cagr``.
"""

from __future__ import annotations

from decimal import Decimal

from dexter.failures import ToolFailure

_ONE = Decimal(1)


def _need(condition: bool, message: str) -> None:
    if not condition:
        raise ToolFailure(message)


def _discount_factor(name: str, rate: Decimal, periods: Decimal) -> Decimal:
    _need(rate > -1, f"{name}: the rate must be above -1 (-100%), got {rate}.")
    _need(abs(periods) <= 1_000, f"{name}: {periods} periods is too many (the limit is 1,000).")
    return (_ONE + rate) ** periods


def pv(rate: Decimal, periods: Decimal, cash_flow: Decimal) -> Decimal:
    """Present value of one cash flow received after ``periods`` periods."""
    _need(periods >= 0, f"pv: the number of periods must not be negative, got {periods}.")
    return cash_flow / _discount_factor("pv", rate, periods)


def npv(rate: Decimal, *cash_flows: Decimal) -> Decimal:
    """Net present value of cash flows at the end of periods 1, 2, ... (spreadsheet NPV)."""
    _need(bool(cash_flows), "npv needs a rate and at least one cash flow: npv(rate, cf1, ...).")
    total = Decimal(0)
    for period, flow in enumerate(cash_flows, start=1):
        total += flow / _discount_factor("npv", rate, Decimal(period))
    return total


def wacc(equity: Decimal, debt: Decimal, cost_equity: Decimal, cost_debt: Decimal,
         tax_rate: Decimal) -> Decimal:
    """Weighted average cost of capital, a fraction: E/(E+D)*re + D/(E+D)*rd*(1-tax)."""
    _need(equity >= 0 and debt >= 0,
          f"wacc: equity and debt values must not be negative, got {equity} and {debt}.")
    _need(equity + debt > 0, "wacc: equity plus debt is 0, so the weights are undefined.")
    _need(0 <= tax_rate < 1, f"wacc: the tax rate must be a fraction in [0, 1), got {tax_rate}.")
    total = equity + debt
    return equity / total * cost_equity + debt / total * cost_debt * (_ONE - tax_rate)


def gordon_tv(cash_flow: Decimal, rate: Decimal, growth: Decimal) -> Decimal:
    """Gordon-growth terminal value at the end of the final year: cf * (1 + g) / (r - g)."""
    _need(rate > growth,
          f"gordon_tv: the discount rate ({rate}) must be above the growth rate ({growth}); "
          "otherwise the terminal value is infinite or negative. Use a lower long-term growth.")
    return cash_flow * (_ONE + growth) / (rate - growth)


def exit_tv(metric: Decimal, multiple: Decimal) -> Decimal:
    """Exit-multiple terminal value: the final year's metric (EBITDA, say) times a multiple."""
    _need(multiple > 0, f"exit_tv: the multiple must be positive, got {multiple}.")
    return metric * multiple


def dcf(rate: Decimal, growth: Decimal, *cash_flows: Decimal) -> Decimal:
    """Enterprise value: the NPV of the forecast flows plus the discounted Gordon terminal
    value of the last one, ``npv(r, cf1..cfn) + pv(r, n, gordon_tv(cfn, r, g))``."""
    _need(bool(cash_flows),
          "dcf needs a rate, a growth rate and at least one cash flow: dcf(r, g, cf1, ...).")
    terminal = gordon_tv(cash_flows[-1], rate, growth)
    return npv(rate, *cash_flows) + pv(rate, Decimal(len(cash_flows)), terminal)


def growth(new: Decimal, old: Decimal) -> Decimal:
    """Growth from ``old`` to ``new`` in percent: (new - old) / |old| * 100."""
    _need(old != 0, "growth: the old value is 0, so growth is undefined.")
    return (new - old) / abs(old) * 100


def margin(part: Decimal, whole: Decimal) -> Decimal:
    """``part`` as a percent of ``whole`` (operating income over revenue, say)."""
    _need(whole != 0, "margin: the whole (revenue, say) is 0, so a margin is undefined.")
    return part / whole * 100
