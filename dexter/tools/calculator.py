"""``calculator``: exact, deterministic arithmetic so the model stops doing mental math.

The evaluation (an ``ast`` allowlist over :class:`decimal.Decimal`, no ``eval``) lives in
:mod:`dexter.tools.evaluator`; this module is the tool: its description, parameters and the
JSON it returns.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from dexter.tools.base import Tool, ToolContext, format_result
from dexter.tools.evaluator import DIGITS, evaluate, format_number, json_number

DESCRIPTION = (
    "Evaluate an arithmetic expression exactly (28 significant digits) and return the number. "
    "Use it for every calculation instead of doing math in your head: growth rates, ratios, "
    "margins, sums, per-share figures.\n"
    "Operators: + - * / // (floor division) % (modulo) ** (power), parentheses, unary minus. "
    "Percentages: 15% means 0.15 (a % right after a number and not followed by a number); "
    "write modulo with spaces: 10 % 3.\n"
    "Numbers: plain (1234567.89) or with underscores (1_234_567.89), scientific 1.5e9. "
    "Commas only separate function arguments; put a space after them (max(1, 234)). "
    "Thousands separators like 1,234 are refused.\n"
    "Functions: abs(x), round(x, digits=0) (half away from zero), min(a, b, ...), "
    "max(a, b, ...), sum(a, b, ...), sqrt(x), log(x) (natural) or log(x, base), log10(x), "
    "exp(x), pow(x, y), floor(x), ceil(x), "
    "cagr(start, end, years) -> compound annual growth in percent, "
    "pct_change(old, new) -> percent change ((new - old) / |old| * 100), "
    "growth(new, old) -> the same in percent, margin(part, whole) -> part / whole * 100. "
    "Constants: pi, e.\n"
    "Valuation (rates as fractions: 0.09 or 9%; cash flows at period ends): "
    "pv(rate, periods, cf) -> cf / (1 + rate)**periods; "
    "npv(rate, cf1, cf2, ...) -> sum of cf_t / (1 + rate)**t for t = 1, 2, ... "
    "(add a time-0 flow outside the call); "
    "wacc(equity, debt, cost_of_equity, cost_of_debt, tax_rate) -> "
    "E/(E+D)*re + D/(E+D)*rd*(1 - tax), a fraction; "
    "gordon_tv(cf, rate, growth) -> cf * (1 + growth) / (rate - growth), the terminal value "
    "at the end of the final year of the final year's cf (rate must exceed growth); "
    "exit_tv(metric, multiple) -> metric * multiple; "
    "dcf(rate, growth, cf1, ..., cfn) -> npv of the flows plus pv(rate, n, gordon_tv(cfn, "
    "rate, growth)), an enterprise value.\n"
    "Example: cagr(26.97, 130.5, 2), (60.9 - 27.0) / 27.0 * 100, or dcf(9%, 2.5%, 100, 110, 120)."
)


class CalculatorParams(BaseModel):
    """Arguments of the ``calculator`` tool."""

    expression: str = Field(
        description="The arithmetic expression, e.g. '(130.5 - 60.9) / 60.9 * 100'."
    )
    precision: int = Field(
        default=10, ge=1, le=DIGITS,
        description="Significant digits in the formatted result (integer digits are always kept).",
    )


class CalculatorTool(Tool[CalculatorParams]):
    """Exact arithmetic on an expression; see ``DESCRIPTION``."""

    name: ClassVar[str] = "calculator"
    source_kind: ClassVar[Literal["calculation"]] = "calculation"
    description: ClassVar[str] = DESCRIPTION
    params: ClassVar[type[BaseModel]] = CalculatorParams
    concurrency_safe: ClassVar[bool] = True
    compactable: ClassVar[bool] = False

    async def run(self, args: CalculatorParams, ctx: ToolContext) -> str:
        """Evaluate the expression and return ``{expression, result, formatted}``."""
        value = evaluate(args.expression)
        data: dict[str, Any] = {
            "expression": args.expression.strip(),
            "result": json_number(value),
            "formatted": format_number(value, args.precision),
        }
        return format_result(data)

    def evidence(self, content: str) -> str:
        """Only the result counts as evidence: the expression's figures need their own."""
        try:
            data = json.loads(content)["data"]
            return f"{data['result']} {data['formatted']}"
        except (ValueError, KeyError, TypeError):
            return ""
