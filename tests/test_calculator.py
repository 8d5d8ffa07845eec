"""The calculator tool: exact arithmetic, percentages, functions, and refusing anything else."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path

import pytest

import dexter.tools.evaluator as calculator_module
from dexter.config import Settings
from dexter.tools.base import ToolContext, ToolFailure
from dexter.tools.calculator import CalculatorTool
from dexter.tools.evaluator import evaluate, format_number, json_number


def value(expression: str) -> Decimal:
    return evaluate(expression)


def refused(expression: str) -> str:
    with pytest.raises(ToolFailure) as info:
        evaluate(expression)
    return str(info.value)


async def run_tool(arguments: dict[str, object]) -> dict[str, object]:
    tool = CalculatorTool()
    ctx = ToolContext(settings=Settings(), cwd=Path.cwd(), home=Path.cwd())
    output = await tool.run(tool.parse_args(arguments), ctx)
    assert isinstance(output, str)
    envelope = json.loads(output)
    data = envelope["data"]
    assert isinstance(data, dict)
    return data


# -- arithmetic -------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("2 + 3 * 4", "14"),
        ("(2 + 3) * 4", "20"),
        ("10 - 2 - 3", "5"),
        ("100 / 10 / 5", "2"),
        ("2 ** 10", "1024"),
        ("2 ** 3 ** 2", "512"),
        ("-2 ** 2", "-4"),
        ("2 ** -1", "0.5"),
        ("-(3 - 5)", "2"),
        ("--3", "3"),
        ("+4 - -4", "8"),
        ("7 - 2 ** 2 * 3 % 5", "5"),
        ("-7 // 2", "-4"),
        ("-7 % 3", "2"),
        ("7.5 // 2", "3"),
        ("1_000_000 * 3", "3000000"),
        ("1.5e3 + 1", "1501"),
    ],
)
def test_precedence_and_operators(expression: str, expected: str) -> None:
    assert value(expression) == Decimal(expected)


def test_decimal_exactness() -> None:
    assert value("0.1 + 0.2") == Decimal("0.3")
    assert value("1.1 * 3") == Decimal("3.3")
    assert value("123456789.123456789 + 0.000000001") == Decimal("123456789.12345679")
    # 28 significant digits: rounding shows only far beyond what "formatted" displays.
    assert value("1 / 3 * 3") == Decimal("0.9999999999999999999999999999")
    assert format_number(value("1 / 3 * 3")) == "1"
    assert format_number(value("sqrt(2) ** 2")) == "2"


def test_long_flat_sums_are_not_deep_nesting() -> None:
    assert value("+".join(["1"] * 900)) == 900


# -- percentages --------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("15%", "0.15"),
        ("200 * 15%", "30"),
        ("10 / 50%", "20"),
        ("1000 * (1 + 5%) ** 2", "1102.5"),
        ("15%-3", "-2.85"),
        ("-5%", "-0.05"),
        ("(1 + 2)%", "0.03"),
        ("sqrt(16)%", "0.04"),
        ("max(10%, 5%)", "0.1"),
        ("12.5 %", "0.125"),
        ("10 % 3", "1"),
        ("10%3", "1"),
        ("15 % -3", "0"),
    ],
)
def test_percentages_and_modulo(expression: str, expected: str) -> None:
    assert value(expression) == Decimal(expected)


# -- functions ------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("abs(-3.5)", "3.5"),
        ("round(2.5)", "3"),
        ("round(-2.5)", "-3"),
        ("round(2.675, 2)", "2.68"),
        ("round(1234.5, -2)", "1200"),
        ("min(3, 1, 2)", "1"),
        ("max(3, 7.5, 2)", "7.5"),
        ("max([1, 5, 2])", "5"),
        ("sum(1, 2, 3.5)", "6.5"),
        ("sqrt(16)", "4"),
        ("log(e)", "1"),
        ("log(8, 2)", "3"),
        ("log(1000, 10)", "3"),
        ("log10(1000)", "3"),
        ("exp(0)", "1"),
        ("pow(2, 0.5)", "1.414213562373095048801688724"),
        ("floor(-2.5)", "-3"),
        ("ceil(2.1)", "3"),
        ("floor(7)", "7"),
        ("pi", "3.141592653589793238462643383"),
        ("e", "2.718281828459045235360287471"),
        ("pct_change(80, 100)", "25"),
        ("pct_change(100, 80)", "-20"),
        ("pct_change(-50, -25)", "50"),  # a loss halved is +50%: divides by |old|
        ("cagr(100, 121, 2)", "10"),  # sqrt(1.21) = 1.1
        ("cagr(100, 100, 7)", "0"),
        ("cagr(100, 0, 3)", "-100"),
    ],
)
def test_functions(expression: str, expected: str) -> None:
    assert value(expression) == Decimal(expected)


def test_cagr_and_log_against_hand_computed_values() -> None:
    # 2 ** (1/5) = 1.148698354997035..., so doubling in 5 years is 14.8698354997...% a year.
    assert abs(value("cagr(100, 200, 5)") - Decimal("14.86983549970350067986")) < Decimal("1e-18")
    # An eightfold rise in 3 years is +100% a year: 8 ** (1/3) = 2.
    assert abs(value("cagr(50, 400, 3)") - 100) < Decimal("1e-20")
    assert abs(value("log(10)") - Decimal("2.302585092994045684017991455")) < Decimal("1e-26")


@pytest.mark.parametrize(
    ("expression", "needle"),
    [
        ("sqrt(-1)", "negative"),
        ("log(0)", "positive"),
        ("log10(-5)", "positive"),
        ("log(2, 1)", "base"),
        ("cagr(0, 10, 2)", "start value must be positive"),
        ("cagr(10, -1, 2)", "end value must not be negative"),
        ("cagr(10, 20, 0)", "years must be positive"),
        ("pct_change(0, 5)", "old value is 0"),
        ("round(1.5, 0.5)", "whole number"),
        ("sqrt(1, 2)", "use sqrt(x)"),
        ("min()", "use min(a, b, ...)"),
        ("round(x=1)", "Keyword arguments"),
        ("(-8) ** (1/3)", "not a real number"),
    ],
)
def test_function_misuse_says_what_to_fix(expression: str, needle: str) -> None:
    assert needle in refused(expression)


# -- guards -----------------------------------------------------------------------------------------

def test_division_by_zero_names_the_expression() -> None:
    assert refused("1 / 0") == "Division by zero in: 1 / 0"
    assert refused("5 // (3 - 3)") == "Division by zero in: 5 // (3 - 3)"
    assert "Division by zero" in refused("5 % 0")
    assert "Division by zero" in refused("0 ** -1")
    assert "Division by zero" in refused("pow(0, -2)")


def test_exponent_limit_boundary() -> None:
    assert value("1 ** 10000") == 1
    assert value("1.0001 ** -10000") > 0
    assert "Exponent 10001 is too large" in refused("1 ** 10001")
    assert "too large" in refused("pow(2, -10001)")


def test_huge_results_are_refused_not_returned_as_infinity() -> None:
    assert value("10 ** 10000") == Decimal("1e10000")
    with pytest.raises(ToolFailure, match="too large to report"):
        json_number(value("10 ** 10000"))
    assert "too large to represent" in refused("(10 ** 10000) ** 10000")
    assert "too large to represent" in refused("exp(10000000)")


def test_expression_length_boundary() -> None:
    at_limit = "+1" * 1000
    assert len(at_limit) == 2000
    assert value(at_limit) == 1000
    message = refused(at_limit + "0")
    assert "2,001 characters" in message and "limit is 2,000" in message


def test_nesting_depth_boundary() -> None:
    assert value("-" * 199 + "1") == -1
    assert "nested more than 200 levels" in refused("-" * 200 + "1")
    assert "nested" in refused("(" * 300 + "1" + ")" * 300)


@pytest.mark.parametrize(
    ("expression", "needle"),
    [
        ("__import__('os')", "Unknown name '__import__'"),
        ("__import__", "Unknown name '__import__'"),
        ("open('f')", "Text (strings) is not allowed"),
        ("(1).real", "Attribute access"),
        ("abs.__class__", "Unknown name '__class__'"),
        ("abs.real", "Attribute access"),
        ("lambda: 1", "Lambdas are not allowed"),
        ("[x for x in (1, 2)]", "Comprehensions are not allowed"),
        ("sum(x for x in (1, 2))", "Comprehensions are not allowed"),
        ("[1, 2][0]", "Indexing"),
        ("'a' + 'b'", "Text (strings) is not allowed"),
        ("b'1'", "Text (strings) is not allowed"),
        ("f'{1}'", "Text (strings) is not allowed"),
        ("(x := 1)", "Assignment"),
        ("1 if 1 else 2", "Conditional"),
        ("1 < 2", "Comparisons"),
        ("1 and 2", "Boolean logic"),
        ("open", "Unknown name 'open'"),
        ("foo(1)", "Unknown function 'foo'"),
        ("ln(2)", "Allowed: functions abs, round"),
        ("True + 1", "not a number"),
        ("2j", "Complex numbers"),
        ("min(*[1, 2])", "Starred is not allowed"),
        ("~1", "unary operator"),
        ("1 & 2", "not supported"),
        ("2 ^ 3", "use **"),
        ("$100 * 2", "no currency symbols"),
        ("5 × 3", "invalid character"),
        ("((1)", "unbalanced parentheses"),
        ("1 +", "Could not parse"),
        ("()", "Empty parentheses"),
        ("", "empty"),
        ("import os", "Could not parse"),
    ],
)
def test_refuses_everything_but_arithmetic(expression: str, needle: str) -> None:
    assert needle in refused(expression)


@pytest.mark.parametrize("expression", ["1,234.5", "(1,234) * 2", "max(1,234)", "sum(1,000,000)"])
def test_thousands_separators_are_refused_as_ambiguous(expression: str) -> None:
    message = refused(expression)
    assert "thousands separator" in message and "max(1, 234)" in message


def test_commas_between_arguments_are_fine_when_not_ambiguous() -> None:
    assert value("max(1, 234)") == 234
    assert value("max(1,23)") == 23
    assert "Unexpected comma" in refused("1, 2")


def test_module_never_uses_eval_exec_or_compile_on_input() -> None:
    source = Path(calculator_module.__file__).read_text(encoding="utf-8")
    assert re.search(r"(?<![\w.])(eval|exec|compile)\(", source) is None


# -- output -------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("number", "precision", "expected"),
    [
        ("1234567.891234", 10, "1,234,567.891"),
        ("60923234567", 10, "60,923,234,567"),  # integer digits are never dropped
        ("-1234.5", 10, "-1,234.5"),
        ("0.3", 10, "0.3"),
        ("0.15", 1, "0.2"),
        ("9.99999", 3, "10"),
        ("0.000123456789012", 10, "0.000123456789"),
        ("0.0000001234", 10, "1.234e-7"),
        ("1267650600228229401496703205376", 10, "1.2676506e+30"),
        ("123456789012345678901", 5, "123,456,789,012,345,678,901"),
        ("1234567890123456789012", 5, "1.2346e+21"),
        ("0", 10, "0"),
    ],
)
def test_format_number(number: str, precision: int, expected: str) -> None:
    assert format_number(Decimal(number), precision) == expected


def test_json_number_int_float_boundary() -> None:
    below = json_number(Decimal(10) ** 28 - 1)
    assert isinstance(below, int) and below == 10**28 - 1
    at = json_number(Decimal(10) ** 28)
    assert isinstance(at, float) and at == 1e28
    assert json_number(Decimal("0.3")) == 0.3
    assert json_number(Decimal("30.00")) == 30


async def test_tool_returns_envelope_with_result_and_formatted() -> None:
    data = await run_tool({"expression": " (130.5 - 60.9) / 60.9 * 100 "})
    assert data["expression"] == "(130.5 - 60.9) / 60.9 * 100"
    assert data["result"] == pytest.approx(114.28571428571429)
    assert data["formatted"] == "114.2857143"
    exact = await run_tool({"expression": "0.1 + 0.2"})
    assert exact["result"] == 0.3
    big = await run_tool({"expression": "60922000000 + 1234567", "precision": 3})
    assert big == {
        "expression": "60922000000 + 1234567", "result": 60923234567,
        "formatted": "60,923,234,567",
    }


async def test_precision_bounds() -> None:
    assert (await run_tool({"expression": "2/3", "precision": 1}))["formatted"] == "0.7"
    assert (await run_tool({"expression": "2/3", "precision": 28}))["formatted"] == (
        "0." + "6" * 27 + "7"
    )
    for bad in (0, 29):
        with pytest.raises(ToolFailure, match="precision"):
            await run_tool({"expression": "1", "precision": bad})
    with pytest.raises(ToolFailure, match="expression"):
        await run_tool({})


def test_tool_registration_flags_and_schema() -> None:
    tool = CalculatorTool()
    assert tool.name == "calculator"
    assert tool.concurrency_safe is True
    assert tool.compactable is False
    assert tool.needs_approval is False
    schema = tool.json_schema()
    assert schema["required"] == ["expression"]
    assert set(schema["properties"]) == {"expression", "precision"}
    assert "cagr(start, end, years)" in tool.description
