"""The calculator tool: exact integer and decimal arithmetic over a parsed expression tree.

No ``eval``: the expression is parsed with ``ast`` and only numbers, arithmetic operators,
parentheses, the constants ``pi``/``e`` and a short list of functions are evaluated. Integers
stay exact integers; numbers with a decimal point are ``Decimal`` (so 0.1 + 0.2 is 0.3);
``/`` of integers gives an integer when it divides exactly. Work is bounded: powers and
factorials whose result would exceed ``MAX_DIGITS`` digits are refused *before* computing,
so ``9**9**9`` answers at once with an error instead of hanging. ``^`` means power.

Part of agent/: imports nothing from bot/ or memory/.
"""

from __future__ import annotations

import ast
import decimal
import math
from collections.abc import Callable
from decimal import Decimal
from typing import Union

from agent.tools.registry import ToolError, ToolRegistry

__all__ = [
    "MAX_DIGITS",
    "MAX_EXPRESSION_CHARS",
    "CalculatorError",
    "evaluate",
    "format_number",
    "register_calculator",
]

MAX_DIGITS = 4000  # results and intermediates; also keeps int -> str under Python's 4300 limit
MAX_EXPRESSION_CHARS = 1000
MAX_DEPTH = 60
_FACTORIAL_MAX = 10**300  # math.lgamma takes a float (at most about 1.8e308)
PRECISION = 40  # significant digits of decimal results

Number = Union[int, Decimal]

_CONTEXT = decimal.Context(
    prec=PRECISION,
    rounding=decimal.ROUND_HALF_EVEN,
    Emax=MAX_DIGITS,
    Emin=-MAX_DIGITS,
    traps=[decimal.Overflow, decimal.InvalidOperation, decimal.DivisionByZero],
)
_PI = Decimal("3.14159265358979323846264338327950288419716939937510")
_E = Decimal("2.71828182845904523536028747135266249775724709369995")
_CONSTANTS: dict[str, Number] = {"pi": _PI, "e": _E, "tau": 2 * _PI}
_LOG10_2 = math.log10(2)


class CalculatorError(ToolError):
    """The expression cannot be evaluated; the message says why, for the model."""


def evaluate(expression: str) -> Number:
    """Evaluate an arithmetic expression exactly; raise CalculatorError with a clear reason."""
    if not isinstance(expression, str) or not expression.strip():
        raise CalculatorError("empty expression; write one such as '(2 + 3) * 4'")
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise CalculatorError(
            f"expression too long ({len(expression)} characters; the limit is "
            f"{MAX_EXPRESSION_CHARS})"
        )
    source = (
        expression.strip()
        .replace("^", "**")
        .replace("×", "*")
        .replace("÷", "/")
        .replace("−", "-")
    )
    try:
        tree = ast.parse(source, mode="eval")
    except (SyntaxError, ValueError) as exc:
        raise CalculatorError(
            f"could not read {expression.strip()[:80]!r}: {getattr(exc, 'msg', exc)}; "
            "use numbers, + - * / // % ** ( ) and functions such as sqrt(2)"
        ) from None
    except (RecursionError, MemoryError):
        raise CalculatorError("expression is nested too deeply") from None
    if _depth(tree) > MAX_DEPTH:
        raise CalculatorError(f"expression is nested too deeply (limit {MAX_DEPTH} levels)")
    with decimal.localcontext(_CONTEXT):
        try:
            return _Evaluator(source).visit(tree.body)
        except ZeroDivisionError:
            raise CalculatorError("division by zero") from None
        except decimal.DivisionByZero:
            raise CalculatorError("division by zero") from None
        except decimal.Overflow:
            raise CalculatorError(f"result is too large (more than {MAX_DIGITS} digits)") from None
        except decimal.InvalidOperation:
            raise CalculatorError("the result is undefined (for example 0.0 / 0)") from None


def format_number(value: Number) -> str:
    """A number as text: integers in full, decimals without exponent where readable."""
    if isinstance(value, int):
        return str(value)
    if value.is_zero():
        return "0"
    normalized = value.normalize(_CONTEXT)
    if -30 <= normalized.adjusted() <= 60:
        text = format(normalized, "f")
        return text
    return format(normalized, "E")


def register_calculator(registry: ToolRegistry) -> None:
    """Add the ``calculator`` tool to ``registry``."""

    @registry.tool(name="calculator")
    async def calculator(expression: str) -> str:
        """Evaluate an arithmetic expression exactly (integers and decimals, no rounding
        errors). Supports + - * / // % ** (or ^), parentheses, pi, e, and the functions
        sqrt, abs, round, min, max, factorial, floor, ceil, gcd, lcm, exp, ln, log, log10,
        sin, cos, tan.

        Args:
            expression: The expression, for example "(2 + 3) * 4.5" or "sqrt(2) / 3".
        """
        return format_number(evaluate(expression))


def _depth(tree: ast.AST) -> int:
    deepest = 0
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        if level > MAX_DEPTH:
            break
        stack.extend((child, level + 1) for child in ast.iter_child_nodes(node))
    return deepest


def _digits_of(value: Number) -> float:
    """log10 of |value| (0 for values below 1): an estimate of its digit count."""
    if isinstance(value, int):
        return value.bit_length() * _LOG10_2
    if value.is_zero():
        return 0.0
    return max(0.0, float(value.adjusted() + 1))


def _check_size(value: Number) -> Number:
    if _digits_of(value) > MAX_DIGITS + 1:
        raise CalculatorError(f"result is too large (more than {MAX_DIGITS} digits)")
    return value


def _log10_abs(value: Number) -> float:
    """log10 of |value| for a non-zero value, without converting huge ints to float."""
    if isinstance(value, int):
        return math.log10(abs(value))
    return float(abs(value).log10(_CONTEXT))


def _as_float(value: Number) -> float:
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _as_decimal(value: Number) -> Decimal:
    return value if isinstance(value, Decimal) else Decimal(value)


def _as_int(value: Number, what: str) -> int:
    if isinstance(value, int):
        return value
    if value == value.to_integral_value():
        return int(value)
    raise CalculatorError(f"{what} needs a whole number, got {format_number(value)}")


def _tidy(value: Number) -> Number:
    """Integral decimals of moderate size become ints (2.0 * 3 -> 6 stays exact)."""
    if isinstance(value, Decimal) and value == value.to_integral_value() and value.adjusted() < 40:
        return int(value)
    return value


class _Evaluator:
    """Walks an ``ast`` expression, allowing only arithmetic."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.functions: dict[str, Callable[..., Number]] = {
            "sqrt": self._sqrt, "abs": lambda x: abs(x), "round": self._round,
            "min": self._min, "max": self._max, "factorial": self._factorial,
            "floor": self._floor, "ceil": self._ceil, "gcd": self._gcd, "lcm": self._lcm,
            "exp": lambda x: self._float_fn(math.exp, x, "exp"),
            "ln": self._ln, "log": self._log, "log10": lambda x: self._log(x, 10),
            "sin": lambda x: self._float_fn(math.sin, x, "sin"),
            "cos": lambda x: self._float_fn(math.cos, x, "cos"),
            "tan": lambda x: self._float_fn(math.tan, x, "tan"),
        }

    def visit(self, node: ast.AST) -> Number:
        if isinstance(node, ast.Constant):
            return self._constant(node)
        if isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, (ast.UAdd, ast.USub)):
                raise CalculatorError(f"{_describe(node.op)} is not allowed; use arithmetic only")
            value = self.visit(node.operand)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.BinOp):
            return self._binop(node)
        if isinstance(node, ast.Name):
            if node.id in _CONSTANTS:
                return _CONSTANTS[node.id]
            raise CalculatorError(
                f"unknown name {node.id!r}; only numbers and the constants pi, e, tau are allowed"
            )
        if isinstance(node, ast.Call):
            return self._call(node)
        raise CalculatorError(f"{_describe(node)} is not allowed; use arithmetic only")

    def _constant(self, node: ast.Constant) -> Number:
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise CalculatorError(f"{type(value).__name__} values are not allowed; use numbers")
        if isinstance(value, int):
            return _check_size(value)
        text = ast.get_source_segment(self.source, node) or repr(value)
        try:
            return _CONTEXT.plus(Decimal(text.replace("_", "")))
        except decimal.InvalidOperation:
            return _CONTEXT.plus(Decimal(repr(value)))

    def _binop(self, node: ast.BinOp) -> Number:
        op = node.op
        left = self.visit(node.left)
        right = self.visit(node.right)
        if isinstance(op, ast.Pow):
            return self._power(left, right)
        if isinstance(op, ast.Add):
            result = left + right
        elif isinstance(op, ast.Sub):
            result = left - right
        elif isinstance(op, ast.Mult):
            if _digits_of(left) + _digits_of(right) > MAX_DIGITS + 2:
                raise CalculatorError(f"result is too large (more than {MAX_DIGITS} digits)")
            result = left * right
        elif isinstance(op, ast.Div):
            if isinstance(left, int) and isinstance(right, int):
                if right == 0:
                    raise ZeroDivisionError
                quotient, remainder = divmod(left, right)
                result = quotient if remainder == 0 else _as_decimal(left) / _as_decimal(right)
            else:
                result = _as_decimal(left) / _as_decimal(right)
        elif isinstance(op, ast.FloorDiv):
            if isinstance(left, int) and isinstance(right, int):
                result = left // right
            else:
                quotient = _as_decimal(left) / _as_decimal(right)
                result = int(quotient.to_integral_value(rounding=decimal.ROUND_FLOOR))
        elif isinstance(op, ast.Mod):
            if isinstance(left, int) and isinstance(right, int):
                result = left % right
            else:
                dl, dr = _as_decimal(left), _as_decimal(right)
                floor = (dl / dr).to_integral_value(rounding=decimal.ROUND_FLOOR)
                result = dl - dr * floor
        else:
            raise CalculatorError(f"operator {_describe(op)} is not allowed; use + - * / // % **")
        return _check_size(_tidy(result))

    def _power(self, base: Number, exponent: Number) -> Number:
        exponent = _tidy(exponent)
        if base == 0:
            if exponent < 0:
                raise ZeroDivisionError
            return 1 if exponent == 0 else base
        estimate = _log10_abs(base) * _as_float(exponent)
        if estimate > MAX_DIGITS:
            raise CalculatorError(
                f"{format_number(base)[:20]} ** {format_number(exponent)[:20]} would have about "
                f"{estimate:.3g} digits; the limit is {MAX_DIGITS}"
            )
        if estimate < -MAX_DIGITS:
            raise CalculatorError(
                f"{format_number(base)[:20]} ** {format_number(exponent)[:20]} is too close to "
                f"zero (about 10 ** {estimate:.3g})"
            )
        if isinstance(exponent, int):
            if isinstance(base, int):
                if exponent >= 0:
                    return _check_size(base**exponent)
                return Decimal(1) / Decimal(base ** -exponent)
            return _check_size(_tidy(base**exponent))
        if base < 0:
            raise CalculatorError("a negative number to a fractional power is not a real number")
        return _check_size(_tidy(_CONTEXT.power(_as_decimal(base), exponent)))

    def _call(self, node: ast.Call) -> Number:
        if isinstance(node.func, ast.Constant):
            raise CalculatorError("write multiplication explicitly, e.g. 2*(3) instead of 2(3)")
        if not isinstance(node.func, ast.Name):
            raise CalculatorError(f"{_describe(node.func)} cannot be called; use e.g. sqrt(2)")
        name = node.func.id
        if name not in self.functions:
            raise CalculatorError(
                f"unknown function {name!r}; available: {', '.join(sorted(self.functions))}"
            )
        if node.keywords:
            raise CalculatorError(f"{name}() takes no keyword arguments")
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise CalculatorError(f"{name}() takes plain arguments")
        args = [self.visit(a) for a in node.args]
        try:
            return _check_size(self.functions[name](*args))
        except TypeError:
            raise CalculatorError(f"wrong number of arguments for {name}()") from None

    # --- functions ---------------------------------------------------------------------------

    @staticmethod
    def _sqrt(x: Number) -> Number:
        if x < 0:
            raise CalculatorError("sqrt of a negative number is not a real number")
        if isinstance(x, int):
            root = math.isqrt(x)
            if root * root == x:
                return root
        return _as_decimal(x).sqrt(_CONTEXT)

    @staticmethod
    def _round(x: Number, places: Number = 0) -> Number:
        n = _as_int(places, "round()'s places")
        if abs(n) > 100:
            raise CalculatorError("round() places must be between -100 and 100")
        if isinstance(x, int) and n >= 0:
            return x
        quantum = Decimal(1).scaleb(-n)
        rounded = _as_decimal(x).quantize(quantum, rounding=decimal.ROUND_HALF_UP,
                                          context=_CONTEXT)
        return _tidy(rounded) if n <= 0 else rounded

    @staticmethod
    def _min(*args: Number) -> Number:
        if not args:
            raise CalculatorError("min() needs at least one argument")
        return min(args)

    @staticmethod
    def _max(*args: Number) -> Number:
        if not args:
            raise CalculatorError("max() needs at least one argument")
        return max(args)

    @staticmethod
    def _factorial(x: Number) -> Number:
        n = _as_int(x, "factorial()")
        if n < 0:
            raise CalculatorError("factorial() needs a non-negative whole number")
        if n > _FACTORIAL_MAX:  # n! has far more than MAX_DIGITS digits: no estimate needed
            raise CalculatorError(
                f"factorial({format_number(n)[:30]}) would have more than {MAX_DIGITS} digits"
            )
        digits = math.lgamma(n + 1) / math.log(10) if n > 1 else 0.0
        if digits > MAX_DIGITS:
            raise CalculatorError(
                f"factorial({n}) would have about {digits:.3g} digits; the limit is {MAX_DIGITS}"
            )
        return math.factorial(n)

    @staticmethod
    def _floor(x: Number) -> Number:
        return x if isinstance(x, int) else int(x.to_integral_value(rounding=decimal.ROUND_FLOOR))

    @staticmethod
    def _ceil(x: Number) -> Number:
        return x if isinstance(x, int) else int(x.to_integral_value(rounding=decimal.ROUND_CEILING))

    @staticmethod
    def _gcd(*args: Number) -> Number:
        return math.gcd(*(_as_int(a, "gcd()") for a in args))

    @staticmethod
    def _lcm(*args: Number) -> Number:
        values = [_as_int(a, "lcm()") for a in args]
        if sum(_digits_of(v) for v in values) > MAX_DIGITS:
            raise CalculatorError(f"result is too large (more than {MAX_DIGITS} digits)")
        return math.lcm(*values)

    @staticmethod
    def _ln(x: Number) -> Number:
        if x <= 0:
            raise CalculatorError("ln() needs a positive number")
        return _as_decimal(x).ln(_CONTEXT)

    @staticmethod
    def _log(x: Number, base: Number = _E) -> Number:
        if x <= 0 or base <= 0 or base == 1:
            raise CalculatorError("log() needs a positive number and a positive base other than 1")
        if base == 10:
            return _tidy(_as_decimal(x).log10(_CONTEXT))
        wide = _CONTEXT.copy()
        wide.prec = PRECISION + 10
        quotient = wide.divide(_as_decimal(x).ln(wide), _as_decimal(base).ln(wide))
        return _tidy(_CONTEXT.plus(quotient))

    @staticmethod
    def _float_fn(fn: Callable[[float], float], x: Number, name: str) -> Number:
        try:
            result = fn(float(x))
        except (OverflowError, ValueError):
            raise CalculatorError(f"{name}({format_number(x)[:30]}) is out of range") from None
        if math.isinf(result) or math.isnan(result):
            raise CalculatorError(f"{name}({format_number(x)[:30]}) is out of range")
        return Decimal(repr(result))


def _describe(node: ast.AST) -> str:
    names = {
        "Attribute": "attribute access", "Subscript": "indexing", "Lambda": "a lambda",
        "Compare": "a comparison", "BoolOp": "and/or", "IfExp": "an if-expression",
        "ListComp": "a comprehension", "GeneratorExp": "a comprehension",
        "DictComp": "a comprehension", "SetComp": "a comprehension", "List": "a list",
        "Tuple": "a tuple", "Dict": "a dict", "Set": "a set", "JoinedStr": "an f-string",
        "NamedExpr": "an assignment", "Await": "await", "Yield": "yield", "Starred": "*args",
        "BitXor": "^ (xor)", "BitAnd": "&", "BitOr": "|", "LShift": "<<", "RShift": ">>",
        "MatMult": "@", "Invert": "~", "Not": "not",
    }
    kind = type(node).__name__
    return names.get(kind, kind)
