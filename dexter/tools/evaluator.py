"""The calculator's evaluator: exact Decimal arithmetic over an ``ast`` allowlist.

The expression is parsed with :mod:`ast` and walked over an allowlist of node types; nothing
is ever passed to ``eval``, ``exec`` or ``compile``. Numbers are :class:`decimal.Decimal`
with 28 significant digits, so ``0.1 + 0.2`` is exactly ``0.3``; square roots, logarithms,
exponentials and fractional powers use Decimal's correctly rounded functions too.

Notation rules (the ``calculator`` tool's description tells the model):

- ``15%`` (a ``%`` written right after a number, a name or a closing parenthesis, and
  followed by an operator, ``)``, ``,`` or the end) is a percentage: ``0.15``. Otherwise
  ``%`` is modulo, so write ``10 % 3`` with spaces for a remainder.
- Commas only separate function arguments. Anything that looks like a thousands separator
  (a digit, a comma, then exactly three digits: ``1,234``) is refused as ambiguous, even
  inside a call: ``max(1,234)`` must be written ``max(1, 234)``.
- ``//`` and ``%`` follow Python (floor) semantics; ``round`` rounds half away from zero.
- ``cagr``, ``pct_change``, ``growth`` and ``margin`` return percents (``25`` means +25%);
  the valuation functions (``pv``, ``npv``, ``wacc``, ``gordon_tv``, ``exit_tv``, ``dcf``,
  in :mod:`dexter.tools.finance_math`) take rates as fractions and ``wacc`` returns one.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import (
    ROUND_CEILING,
    ROUND_FLOOR,
    ROUND_HALF_EVEN,
    ROUND_HALF_UP,
    Context,
    Decimal,
    DivisionByZero,
    InvalidOperation,
    Overflow,
    localcontext,
)

from dexter.failures import ToolFailure
from dexter.tools import finance_math

MAX_EXPRESSION_CHARS = 2_000
MAX_DEPTH = 200
MAX_EXPONENT = 10_000
DIGITS = 28
# Fixed notation in "formatted" between these decimal exponents, scientific outside.
FIXED_MIN_EXPONENT = -6
FIXED_MAX_EXPONENT = 20

_PERCENT_FN = "__percent__"
# After these, a "%" cannot be modulo (no right operand), so it is a percentage.
_CLOSES_OPERAND = {")", "]", ",", "*", "/", "**", "//", "%"}
# After + or -, "15%-3" is a percentage but "15 % -3" is modulo: the "%" must touch its operand.
_SIGNS = {"+", "-"}
_THOUSANDS = re.compile(r"\d,\d{3}(?!\d)")

_CONTEXT = Context(
    prec=DIGITS, rounding=ROUND_HALF_EVEN, Emax=999_999, Emin=-999_999,
    traps=[InvalidOperation, DivisionByZero, Overflow],
)
_WIDE = Context(prec=200, rounding=ROUND_HALF_UP, Emax=999_999, Emin=-999_999,
                traps=[InvalidOperation, Overflow])

# Constants carry guard digits beyond DIGITS so that, e.g., log(e) rounds to exactly 1.
PI = Decimal("3.14159265358979323846264338327950288419716939937510")
E = Decimal(1).exp(Context(prec=50))
CONSTANTS: dict[str, Decimal] = {"pi": PI, "e": E}


# ---------------------------------------------------------------------------------------
# Preprocessing: percentages
# ---------------------------------------------------------------------------------------

def _tokens(expression: str) -> list[tokenize.TokenInfo]:
    skip = {tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.COMMENT}
    try:
        tokens = tokenize.generate_tokens(io.StringIO(expression).readline)
        return [tok for tok in tokens if tok.type not in skip]
    except (tokenize.TokenError, SyntaxError) as exc:
        raise ToolFailure(
            f"Could not read the expression {expression!r}: {_token_problem(exc)}. "
            "Check that every parenthesis is closed and only numbers, operators and "
            "the listed functions are used."
        ) from None


def _token_problem(exc: Exception) -> str:
    text = str(exc.args[0]) if exc.args else str(exc)
    return "unbalanced parentheses" if "EOF" in text or "multi-line" in text else text


def _operand_start(tokens: Sequence[tokenize.TokenInfo], end: int) -> int | None:
    """Column where the operand ending at ``tokens[end]`` begins, or None if it is no operand."""
    last = tokens[end]
    if last.type in (tokenize.NUMBER, tokenize.NAME):
        return last.start[1]
    if last.string != ")":
        return None
    depth = 0
    for i in range(end, -1, -1):
        if tokens[i].string == ")":
            depth += 1
        elif tokens[i].string == "(":
            depth -= 1
            if depth == 0:
                before = tokens[i - 1] if i > 0 else None
                if before is not None and before.type == tokenize.NAME:
                    return before.start[1]
                return tokens[i].start[1]
    return None


def rewrite_percentages(expression: str) -> str:
    """Turn postfix percentages into calls of an internal function: ``15%`` -> ``__percent__(15)``."""
    tokens = _tokens(expression)
    opens: dict[int, int] = {}
    closes: set[int] = set()
    for i, tok in enumerate(tokens):
        if tok.string != "%" or i == 0:
            continue
        prev = tokens[i - 1]
        following = tokens[i + 1].string if i + 1 < len(tokens) else ""
        attached = prev.end == tok.start
        ends_operand = following == "" or following in _CLOSES_OPERAND
        if not (ends_operand or (attached and following in _SIGNS)):
            continue
        start = _operand_start(tokens, i - 1)
        if start is not None:
            opens[start] = opens.get(start, 0) + 1
            closes.add(tok.start[1])
    if not closes:
        return expression
    out: list[str] = []
    for col, char in enumerate(expression):
        out.append(f"{_PERCENT_FN}(" * opens.get(col, 0))
        out.append(")" if col in closes else char)
    return "".join(out)


# ---------------------------------------------------------------------------------------
# Functions
# ---------------------------------------------------------------------------------------

def _need(condition: bool, message: str) -> None:
    if not condition:
        raise ToolFailure(message)


def _is_integral(value: Decimal) -> bool:
    return value == value.to_integral_value()


def _power(base: Decimal, exponent: Decimal) -> Decimal:
    _need(abs(exponent) <= MAX_EXPONENT,
          f"Exponent {exponent} is too large (the limit is {MAX_EXPONENT:,}).")
    _need(not (base == 0 and exponent < 0), "Division by zero: 0 raised to a negative power.")
    _need(base >= 0 or _is_integral(exponent),
          f"({base}) ** {exponent} is not a real number (negative base, fractional exponent).")
    return base ** exponent


def _round(value: Decimal, digits: Decimal = Decimal(0)) -> Decimal:
    _need(_is_integral(digits) and abs(digits) <= DIGITS,
          f"round: digits must be a whole number between -{DIGITS} and {DIGITS}, got {digits}.")
    places = int(digits)
    if value.as_tuple().exponent >= -places:  # type: ignore[operator]
        return value
    return +value.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP, context=_WIDE)


def _positive(name: str, value: Decimal) -> Decimal:
    _need(value > 0, f"{name} needs a positive number, got {value}.")
    return value


def _log(value: Decimal, base: Decimal | None = None) -> Decimal:
    _positive("log", value)
    if base is None:
        return value.ln()
    _need(base > 0 and base != 1, f"log: the base must be positive and not 1, got {base}.")
    # Guard digits for the quotient of two rounded logarithms: log(8, 2) must be exactly 3.
    precise = Context(prec=DIGITS + 10)
    return +precise.divide(value.ln(precise), base.ln(precise))


def _sqrt(value: Decimal) -> Decimal:
    _need(value >= 0, f"sqrt of a negative number ({value}) is not a real number.")
    return value.sqrt()


def _cagr(start: Decimal, end: Decimal, years: Decimal) -> Decimal:
    _need(start > 0, f"cagr: the start value must be positive, got {start}.")
    _need(end >= 0, f"cagr: the end value must not be negative, got {end}.")
    _need(years > 0, f"cagr: years must be positive, got {years}.")
    return (_power(end / start, 1 / years) - 1) * 100


def _pct_change(old: Decimal, new: Decimal) -> Decimal:
    _need(old != 0, "pct_change: the old value is 0, so a percent change is undefined.")
    return (new - old) / abs(old) * 100


def _min(*values: Decimal) -> Decimal:
    return min(values)


def _max(*values: Decimal) -> Decimal:
    return max(values)


def _sum(*values: Decimal) -> Decimal:
    return sum(values, Decimal(0))


@dataclass(frozen=True, slots=True)
class _Function:
    impl: Callable[..., Decimal]
    min_args: int
    max_args: int | None  # None: any number (lists are flattened)
    usage: str


FUNCTIONS: dict[str, _Function] = {
    "abs": _Function(abs, 1, 1, "abs(x)"),
    "round": _Function(_round, 1, 2, "round(x, digits)"),
    "min": _Function(_min, 1, None, "min(a, b, ...)"),
    "max": _Function(_max, 1, None, "max(a, b, ...)"),
    "sum": _Function(_sum, 1, None, "sum(a, b, ...)"),
    "sqrt": _Function(_sqrt, 1, 1, "sqrt(x)"),
    "log": _Function(_log, 1, 2, "log(x) or log(x, base)"),
    "log10": _Function(lambda x: _positive("log10", x).log10(), 1, 1, "log10(x)"),
    "exp": _Function(lambda x: x.exp(), 1, 1, "exp(x)"),
    "pow": _Function(_power, 2, 2, "pow(x, y)"),
    "floor": _Function(lambda x: x.to_integral_value(rounding=ROUND_FLOOR), 1, 1, "floor(x)"),
    "ceil": _Function(lambda x: x.to_integral_value(rounding=ROUND_CEILING), 1, 1, "ceil(x)"),
    "cagr": _Function(_cagr, 3, 3, "cagr(start, end, years)"),
    "pct_change": _Function(_pct_change, 2, 2, "pct_change(old, new)"),
    # Valuation math (dexter.tools.finance_math): rates are fractions, 9% is 0.09.
    "pv": _Function(finance_math.pv, 3, 3, "pv(rate, periods, cash_flow)"),
    "npv": _Function(finance_math.npv, 2, None, "npv(rate, cf1, cf2, ...)"),
    "wacc": _Function(finance_math.wacc, 5, 5,
                      "wacc(equity, debt, cost_of_equity, cost_of_debt, tax_rate)"),
    "gordon_tv": _Function(finance_math.gordon_tv, 3, 3, "gordon_tv(cash_flow, rate, growth)"),
    "exit_tv": _Function(finance_math.exit_tv, 2, 2, "exit_tv(metric, multiple)"),
    "dcf": _Function(finance_math.dcf, 3, None, "dcf(rate, growth, cf1, cf2, ...)"),
    "growth": _Function(finance_math.growth, 2, 2, "growth(new, old)"),
    "margin": _Function(finance_math.margin, 2, 2, "margin(part, whole)"),
}

ALLOWED_NAMES = (
    "functions " + ", ".join(FUNCTIONS) + "; constants " + ", ".join(CONSTANTS)
)


# ---------------------------------------------------------------------------------------
# The evaluator
# ---------------------------------------------------------------------------------------

_REFUSED: dict[type[ast.AST], str] = {
    ast.Attribute: "Attribute access (x.y) is not allowed",
    ast.Lambda: "Lambdas are not allowed",
    ast.ListComp: "Comprehensions are not allowed",
    ast.SetComp: "Comprehensions are not allowed",
    ast.DictComp: "Comprehensions are not allowed",
    ast.GeneratorExp: "Comprehensions are not allowed",
    ast.Subscript: "Indexing (x[i]) is not allowed",
    ast.Compare: "Comparisons are not supported",
    ast.BoolOp: "Boolean logic (and/or) is not supported",
    ast.IfExp: "Conditional expressions are not supported",
    ast.NamedExpr: "Assignment (:=) is not allowed",
    ast.Dict: "Dictionaries are not allowed",
    ast.Set: "Sets are not allowed",
    ast.JoinedStr: "Text (strings) is not allowed; use numbers only",
}

_BINARY: dict[type[ast.operator], str] = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
    ast.Mod: "%", ast.Pow: "**",
}

_COMMA_HINT = (
    "Commas only separate function arguments. Write numbers without thousands separators "
    "(1234567.5 or 1_234_567.5), and use one expression per call."
)


def _is_power(node: ast.BinOp) -> bool:
    return isinstance(node.op, ast.Pow)


class _Evaluator:
    def __init__(self, source: str, original: str) -> None:
        self.source = source
        self.original = original

    def refuse(self, node: ast.AST) -> ToolFailure:
        reason = _REFUSED.get(type(node), f"{type(node).__name__} is not allowed")
        return ToolFailure(
            f"{reason} in a calculator expression: {self.original!r}. Use numbers, "
            f"+ - * / // % **, parentheses and {ALLOWED_NAMES}."
        )

    def visit(self, node: ast.AST, depth: int = 0) -> Decimal:
        if depth > MAX_DEPTH:
            raise ToolFailure(
                f"The expression is nested more than {MAX_DEPTH} levels deep; "
                "split it into smaller calculations."
            )
        if isinstance(node, ast.Expression):
            return self.visit(node.body, depth + 1)
        if isinstance(node, ast.Constant):
            return self.constant(node)
        if isinstance(node, ast.Name):
            return self.name(node)
        if isinstance(node, ast.UnaryOp):
            return self.unary(node, depth)
        if isinstance(node, ast.BinOp):
            return self.binary(node, depth)
        if isinstance(node, ast.Call):
            return self.call(node, depth)
        if isinstance(node, ast.Tuple) and not node.elts:
            raise ToolFailure(f"Empty parentheses in {self.original!r}; put a number inside.")
        if isinstance(node, ast.Tuple):
            raise ToolFailure(f"Unexpected comma in {self.original!r}. {_COMMA_HINT}")
        raise self.refuse(node)

    def constant(self, node: ast.Constant) -> Decimal:
        value = node.value
        if isinstance(value, bool) or value is None or value is Ellipsis:
            raise ToolFailure(f"{value!r} is not a number. Use numbers only.")
        if isinstance(value, str | bytes):
            raise ToolFailure(
                f"Text (strings) is not allowed in a calculator expression: {self.original!r}. "
                "Use numbers only, without quotes."
            )
        if isinstance(value, complex):
            raise ToolFailure("Complex numbers (like 2j) are not supported.")
        segment = ast.get_source_segment(self.source, node) or repr(value)
        try:
            return Decimal(segment.replace("_", ""))
        except InvalidOperation:  # hex/octal/binary literals
            return Decimal(int(value)) if isinstance(value, int) else Decimal(repr(value))

    def name(self, node: ast.Name) -> Decimal:
        if node.id in CONSTANTS:
            return CONSTANTS[node.id]
        raise ToolFailure(f"Unknown name {node.id!r}. Allowed: {ALLOWED_NAMES}.")

    def unary(self, node: ast.UnaryOp, depth: int) -> Decimal:
        operand = self.visit(node.operand, depth + 1)
        if isinstance(node.op, ast.USub):
            return -operand
        if isinstance(node.op, ast.UAdd):
            return +operand
        raise ToolFailure(f"The unary operator in {self.original!r} is not supported; use - or +.")

    def binary(self, node: ast.BinOp, depth: int) -> Decimal:
        if _is_power(node):
            left = self.visit(node.left, depth + 1)
            return self.apply(node, left, self.visit(node.right, depth + 1))
        # Walk a left-leaning chain (1 + 2 + 3 + ...) in a loop, so a long flat sum does not
        # count as deep nesting.
        chain = [node]
        while isinstance(chain[-1].left, ast.BinOp) and not _is_power(chain[-1].left):
            chain.append(chain[-1].left)
        value = self.visit(chain[-1].left, depth + 1)
        for link in reversed(chain):
            value = self.apply(link, value, self.visit(link.right, depth + 1))
        return value

    def apply(self, node: ast.BinOp, left: Decimal, right: Decimal) -> Decimal:
        if isinstance(node.op, ast.BitXor):
            raise ToolFailure("^ is not a power operator here; use ** (for example 2 ** 10).")
        symbol = _BINARY.get(type(node.op))
        if symbol is None:
            raise ToolFailure(
                f"Operator {type(node.op).__name__} is not supported; use + - * / // % **."
            )
        if symbol in ("/", "//", "%") and right == 0:
            raise ToolFailure(f"Division by zero in: {self.original}")
        if symbol == "+":
            return left + right
        if symbol == "-":
            return left - right
        if symbol == "*":
            return left * right
        if symbol == "/":
            return left / right
        if symbol == "**":
            return _power(left, right)
        floored = (left / right).to_integral_value(rounding=ROUND_FLOOR)
        return floored if symbol == "//" else left - right * floored

    def call(self, node: ast.Call, depth: int) -> Decimal:
        func = node.func
        if not isinstance(func, ast.Name):
            raise self.refuse(func)
        if func.id == _PERCENT_FN:
            return self.visit(node.args[0], depth + 1) / 100
        spec = FUNCTIONS.get(func.id)
        if spec is None:
            raise ToolFailure(f"Unknown function {func.id!r}. Allowed: {ALLOWED_NAMES}.")
        if node.keywords:
            raise ToolFailure(
                f"Keyword arguments are not supported; pass values in order: {spec.usage}."
            )
        args = self.arguments(node.args, spec, depth)
        count = len(args)
        too_many = spec.max_args is not None and count > spec.max_args
        if count < spec.min_args or too_many:
            raise ToolFailure(f"{func.id} got {count} argument(s); use {spec.usage}.")
        return spec.impl(*args)

    def arguments(self, nodes: list[ast.expr], spec: _Function, depth: int) -> list[Decimal]:
        values: list[Decimal] = []
        for arg in nodes:
            if isinstance(arg, ast.Starred):
                raise self.refuse(arg)
            if isinstance(arg, ast.List | ast.Tuple) and spec.max_args is None:
                values += [self.visit(item, depth + 1) for item in arg.elts]
            else:
                values.append(self.visit(arg, depth + 1))
        return values


def _check_names(tokens: Sequence[tokenize.TokenInfo], expression: str) -> None:
    for tok in tokens:
        if tok.type == tokenize.NAME and tok.string.startswith("_"):
            raise ToolFailure(f"Unknown name {tok.string!r}. Allowed: {ALLOWED_NAMES}.")
        if tok.type == tokenize.STRING:
            raise ToolFailure(
                f"Text (strings) is not allowed in a calculator expression: {expression!r}. "
                "Use numbers only, without quotes."
            )


def _parse(source: str, original: str) -> ast.Expression:
    try:
        return ast.parse(source, mode="eval")
    except SyntaxError as exc:
        where = f" near column {exc.offset}" if exc.offset else ""
        raise ToolFailure(
            f"Could not parse {original!r}: {exc.msg}{where}. Write plain arithmetic (no "
            "currency symbols, units or words) with numbers, + - * / // % **, parentheses "
            f"and {ALLOWED_NAMES}."
        ) from None
    except (RecursionError, MemoryError):
        raise ToolFailure(
            "The expression is too deeply nested to parse; split it into smaller calculations."
        ) from None


def evaluate(expression: str) -> Decimal:
    """Evaluate ``expression`` exactly; raises ``ToolFailure`` saying what to fix."""
    text = " ".join(expression.split())
    if not text:
        raise ToolFailure("The expression is empty; pass something like '2 * (3 + 4)'.")
    if len(text) > MAX_EXPRESSION_CHARS:
        raise ToolFailure(
            f"The expression is {len(text):,} characters long; the limit is "
            f"{MAX_EXPRESSION_CHARS:,}. Split it into smaller calculations."
        )
    separator = _THOUSANDS.search(text)
    if separator:
        raise ToolFailure(
            f"{separator.group()!r} in {text!r} looks like a thousands separator, which is "
            "ambiguous. Write numbers without separators (1234 or 1_234) and put a space "
            "after the commas between function arguments: max(1, 234)."
        )
    _check_names(_tokens(text), text)
    source = rewrite_percentages(text)
    tree = _parse(source, text)
    try:
        with localcontext(_CONTEXT):
            result = _Evaluator(source, text).visit(tree)
            result = +result
    except Overflow:
        raise ToolFailure(f"The result of {text!r} is too large to represent.") from None
    except DivisionByZero:
        raise ToolFailure(f"Division by zero in: {text}") from None
    except InvalidOperation:
        raise ToolFailure(f"{text!r} has no real-number result.") from None
    except RecursionError:
        raise ToolFailure("The expression is too deeply nested; split it up.") from None
    if not result.is_finite():
        raise ToolFailure(f"{text!r} has no finite result.")
    return Decimal(0) if result == 0 else result


# ---------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------

def json_number(value: Decimal) -> int | float:
    """The value as a JSON number: an int when whole and below 10**28, else a float."""
    if _is_integral(value) and abs(value) < Decimal(10) ** DIGITS:
        return int(value)
    number = float(value)
    if number in (float("inf"), float("-inf")):
        raise ToolFailure(f"The result {value} is too large to report as a number.")
    return number


def format_number(value: Decimal, precision: int = 10) -> str:
    """``value`` with thousands separators and ``precision`` significant digits.

    Digits before the decimal point are always kept; very large or very small numbers use
    scientific notation (``1.2345e+30``). Trailing zeros are dropped.
    """
    if value == 0:
        return "0"
    magnitude = value.adjusted()
    if FIXED_MIN_EXPONENT <= magnitude <= FIXED_MAX_EXPONENT:
        places = max(precision - magnitude - 1, 0)
        rounded = value.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP,
                                 context=_WIDE)
        text = format(rounded, ",f")
        return text.rstrip("0").rstrip(".") if "." in text else text
    mantissa, _, exponent = format(value, f".{precision - 1}e").partition("e")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}e{int(exponent):+d}"
