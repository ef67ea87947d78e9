"""The calculator tool: exact arithmetic on a parsed tree, bounded, hostile input refused."""

from __future__ import annotations

import pytest

from agent.tools.calculator import (
    MAX_DIGITS,
    CalculatorError,
    evaluate,
    format_number,
    register_calculator,
)
from agent.tools.registry import ToolContext, ToolRegistry

CTX = ToolContext(user_id="1", channel_id="2", guild_id=None)


def calc(expression: str) -> str:
    return format_number(evaluate(expression))


@pytest.fixture
def registry() -> ToolRegistry:
    reg = ToolRegistry()
    register_calculator(reg)
    return reg


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("0.1 + 0.2", "0.3"),
        ("1.1 * 1.1", "1.21"),
        ("2 + 3 * 4", "14"),
        ("(2 + 3) * 4", "20"),
        ("10 / 4", "2.5"),
        ("10 / 5", "2"),
        ("7 // 2", "3"),
        ("-7 // 2", "-4"),
        ("-7.5 // 2", "-4"),
        ("-7 % 3", "2"),
        ("7.5 % 2", "1.5"),
        ("2 ** 10", "1024"),
        ("2 ^ 10", "1024"),
        ("2 ** -3", "0.125"),
        ("-3 ** 2", "-9"),
        ("+5 - -5", "10"),
        ("3 × 4 ÷ 2 − 1", "5"),
        ("1e5 * 3", "300000"),
        ("1_000 + 1", "1001"),
    ],
)
def test_exact_arithmetic(expression: str, expected: str) -> None:
    assert calc(expression) == expected


def test_big_integers_are_exact() -> None:
    assert calc("2 ** 200") == str(2**200)
    assert calc("123456789012345678901234567890 * 987654321098765432109876543210") == str(
        123456789012345678901234567890 * 987654321098765432109876543210
    )


def test_non_terminating_division_gives_forty_significant_digits() -> None:
    assert calc("1 / 3") == "0." + "3" * 40


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("sqrt(16)", "4"),
        ("sqrt(2)", "1.41421356237309504880168872420969807857"),
        ("0.0 ** 0", "1"),
        ("abs(-3.5)", "3.5"),
        ("round(2.675, 2)", "2.68"),
        ("round(2.5)", "3"),
        ("min(3, 1.5, 2)", "1.5"),
        ("max(3, 1.5, 2)", "3"),
        ("factorial(20)", "2432902008176640000"),
        ("floor(-2.5)", "-3"),
        ("ceil(2.1)", "3"),
        ("gcd(12, 18)", "6"),
        ("lcm(4, 6)", "12"),
        ("log(8, 2)", "3"),
        ("log10(1000)", "3"),
        ("ln(e)", "1"),
        ("round(pi, 5)", "3.14159"),
    ],
)
def test_functions_and_constants(expression: str, expected: str) -> None:
    assert calc(expression) == expected


def test_factorial_of_a_thousand_is_computed_in_full() -> None:
    assert len(calc("factorial(1000)")) == 2568


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("9**9**9", "9 ** 387420489 would have about 3.7e+08 digits"),
        ("99999 ** 99999", "would have about"),
        ("factorial(10000)", "factorial(10000) would have about 3.57e+04 digits"),
        ("factorial(100000000000)", "factorial(100000000000) would have about"),
        ("1.5 ** 30000", "would have about"),
        ("2 ** -100000", "too close to zero"),
        ("0.5 ** 100000", "too close to zero"),
        ("10 ** 3000 * 10 ** 3000", f"more than {MAX_DIGITS} digits"),
        ("1e999999", "too large"),
        ("exp(100000)", "out of range"),
    ],
)
def test_results_beyond_the_size_limit_are_refused_before_computing(
    expression: str, message: str
) -> None:
    with pytest.raises(CalculatorError) as info:
        evaluate(expression)
    assert message in str(info.value)


@pytest.mark.parametrize("expression", ["1 / 0", "5 // 0", "5 % 0", "1.5 / 0", "0 ** -1"])
def test_division_by_zero_is_a_clear_error(expression: str) -> None:
    with pytest.raises(CalculatorError, match="^division by zero$"):
        evaluate(expression)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("__import__('os').system('ls')", "attribute access cannot be called"),
        ("__import__('os')", "unknown function '__import__'"),
        ("().__class__.__bases__", "attribute access is not allowed"),
        ("(lambda: 1)()", "a lambda cannot be called"),
        ("lambda: 1", "a lambda is not allowed"),
        ("x + 1", "unknown name 'x'"),
        ("open", "unknown name 'open'"),
        ("'a' * 10", "str values are not allowed"),
        ("[1, 2]", "a list is not allowed"),
        ("[x for x in range(10**9)]", "a comprehension is not allowed"),
        ("1 if 1 else 2", "an if-expression is not allowed"),
        ("1 < 2", "a comparison is not allowed"),
        ("~5", "~ is not allowed"),
        ("5 & 3", "operator & is not allowed"),
        ("True + 1", "bool values are not allowed"),
        ("1j * 2", "complex values are not allowed"),
        ("sqrt(x=4)", "takes no keyword arguments"),
        ("sqrt(4, 5)", "wrong number of arguments for sqrt()"),
        ("2(3)", "write multiplication explicitly"),
        ("2 +", "could not read"),
        ("import os", "could not read"),
        ("", "empty expression"),
        ("   ", "empty expression"),
        ("1+" * 600 + "1", "expression too long"),
        ("-" * 200 + "1", "nested too deeply"),
        ("sqrt(-1)", "not a real number"),
        ("(-8) ** (1/3)", "not a real number"),
        ("factorial(2.5)", "needs a whole number"),
        ("factorial(-1)", "non-negative"),
        ("0.0 / 0", "undefined"),
    ],
)
def test_hostile_and_invalid_input_is_refused_clearly(expression: str, message: str) -> None:
    with pytest.raises(CalculatorError) as info:
        evaluate(expression)
    assert message in str(info.value)


@pytest.mark.parametrize("expression", ["factorial(10**400)", "factorial(1e400)",
                                        "factorial(10**3999) % 3", "2 ** factorial(10**400)"])
def test_the_factorial_of_a_huge_number_is_refused_by_its_size(expression: str) -> None:
    with pytest.raises(CalculatorError, match="more than 4000 digits"):
        evaluate(expression)


async def test_a_huge_factorial_is_an_observation_and_logs_no_traceback(
    registry: ToolRegistry, caplog: pytest.LogCaptureFixture,
) -> None:
    result = await registry.call("calculator", {"expression": "factorial(10**400)"}, CTX)
    assert not result.ok
    assert result.observation.startswith("Error: factorial(1000000000") and "4000 digits" in result.observation
    assert not [r for r in caplog.records if r.exc_info]


async def test_the_tool_returns_the_number_as_text(registry: ToolRegistry) -> None:
    result = await registry.call("calculator", {"expression": "0.1 + 0.2"}, CTX)
    assert (result.ok, result.observation) == (True, "0.3")


async def test_the_tool_reports_refusals_as_errors(registry: ToolRegistry) -> None:
    result = await registry.call("calculator", {"expression": "9**9**9"}, CTX)
    assert not result.ok
    assert result.observation.startswith("Error: 9 ** 387420489 would have about")


async def test_plain_text_input_from_the_parser_reaches_the_expression(
    registry: ToolRegistry,
) -> None:
    result = await registry.call("calculator", {"input": "6 * 7"}, CTX)
    assert (result.ok, result.observation) == (True, "42")


def test_schema_asks_for_one_expression_string(registry: ToolRegistry) -> None:
    params = registry.get("calculator").parameters
    assert params["required"] == ["expression"]
    assert params["properties"]["expression"]["type"] == "string"
