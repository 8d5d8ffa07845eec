"""Valuation functions of the calculator, against values worked out by hand."""

from __future__ import annotations

from decimal import Decimal

import pytest

from dexter.tools.base import ToolFailure
from dexter.tools.calculator import CalculatorTool
from dexter.tools.evaluator import evaluate


def refused(expression: str) -> str:
    with pytest.raises(ToolFailure) as info:
        evaluate(expression)
    return str(info.value)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        # 121 / 1.1**2 = 121 / 1.21 = 100
        ("pv(0.1, 2, 121)", "100"),
        ("pv(10%, 2, 121)", "100"),
        # zero periods: the flow itself
        ("pv(0.1, 0, 55)", "55"),
        # 110 / 1.1 + 121 / 1.21 = 100 + 100
        ("npv(0.1, 110, 121)", "200"),
        # at 0% the flows are just summed: -50 + 30 + 30 = 10
        ("npv(0, -50, 30, 30)", "10"),
        # a list of flows is flattened like sum([...])
        ("npv(0.1, [110, 121])", "200"),
        # 600/1000 * 10% + 400/1000 * 5% * (1 - 25%) = 0.06 + 0.015
        ("wacc(600, 400, 0.10, 0.05, 0.25)", "0.075"),
        ("wacc(600, 400, 10%, 5%, 25%)", "0.075"),
        # all equity: the cost of equity
        ("wacc(1000, 0, 0.09, 0.04, 0.21)", "0.09"),
        # 100 * 1.02 / (0.10 - 0.02) = 102 / 0.08
        ("gordon_tv(100, 0.10, 0.02)", "1275"),
        # 50 * 12
        ("exit_tv(50, 12)", "600"),
        # flows 110, 121 at 10%, no growth: npv = 200; TV = 121 / 0.1 = 1210,
        # discounted 2 years: 1210 / 1.21 = 1000; total 1200
        ("dcf(0.1, 0, 110, 121)", "1200"),
        # (120 - 100) / 100 * 100
        ("growth(120, 100)", "20"),
        ("growth(90, 100)", "-10"),
        # from a loss: (-50 - -100) / |-100| * 100 = +50
        ("growth(-50, -100)", "50"),
        # 25 / 200 * 100
        ("margin(25, 200)", "12.5"),
        ("margin(-10, 40)", "-25"),
        # sqrt(1.21) - 1 = 10%
        ("cagr(100, 121, 2)", "10"),
    ],
)
def test_finance_functions_against_hand_computed_values(expression: str, expected: str) -> None:
    assert evaluate(expression) == Decimal(expected)


def test_dcf_with_growth_matches_its_parts() -> None:
    # 100 / 1.1 = 90.90909..., TV = 100 * 1.05 / 0.05 = 2100, 2100 / 1.1 = 1909.0909...
    # total = 2000 exactly (100 + 2100 = 2200, / 1.1)
    assert evaluate("dcf(0.1, 0.05, 100)") == Decimal(2000)
    assert evaluate("npv(0.1, 100) + pv(0.1, 1, gordon_tv(100, 0.1, 0.05))") == Decimal(2000)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("gordon_tv(100, 0.02, 0.02)", "must be above the growth rate"),
        ("gordon_tv(100, 0.02, 0.03)", "must be above the growth rate"),
        ("dcf(0.03, 0.04, 100, 110)", "must be above the growth rate"),
        ("cagr(100, 200, 0)", "years must be positive"),
        ("pv(-1, 2, 100)", "rate must be above -1"),
        ("pv(0.1, -1, 100)", "must not be negative"),
        ("npv(0.1)", "npv got 1 argument(s); use npv(rate, cf1, cf2, ...)"),
        ("wacc(0, 0, 0.1, 0.05, 0.2)", "equity plus debt is 0"),
        ("wacc(-5, 10, 0.1, 0.05, 0.2)", "must not be negative"),
        ("wacc(5, 10, 0.1, 0.05, 21)", "tax rate must be a fraction"),
        ("exit_tv(50, 0)", "multiple must be positive"),
        ("growth(10, 0)", "old value is 0"),
        ("margin(10, 0)", "is 0, so a margin is undefined"),
        ("pv(0.1, 5000, 1)", "too many"),
    ],
)
def test_bad_inputs_say_what_is_wrong(expression: str, message: str) -> None:
    assert message in refused(expression)


def test_the_tool_description_documents_every_finance_function() -> None:
    description = CalculatorTool.description
    for usage in ("pv(rate, periods, cf)", "npv(rate, cf1, cf2, ...)",
                  "wacc(equity, debt, cost_of_equity, cost_of_debt, tax_rate)",
                  "gordon_tv(cf, rate, growth)", "exit_tv(metric, multiple)",
                  "dcf(rate, growth, cf1, ..., cfn)", "growth(new, old)", "margin(part, whole)",
                  "cagr(start, end, years)"):
        assert usage in description
