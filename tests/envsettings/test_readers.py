"""envsettings readers: blank means the default, one-line errors naming the variable, and the
spelling each reader returns. The packages' own config tests cover every real variable."""

from __future__ import annotations

import pytest

from envsettings import SettingError, read_bool, read_choice, read_float, read_int, read_secret, read_str, read_url

READERS = [
    lambda env, d: read_str(env, "X", d),
    lambda env, d: read_int(env, "X", d, low=0),
    lambda env, d: read_float(env, "X", d, low=0.0),
    lambda env, d: read_bool(env, "X", d),
    lambda env, d: read_choice(env, "X", ("a", "b"), d),
    lambda env, d: read_url(env, "X", d),
    lambda env, d: read_secret(env, "X", d),
]


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("env", [{}, {"X": ""}, {"X": " \t "}])
def test_unset_or_blank_gives_the_default(reader, env: dict[str, str]) -> None:
    marker = object()
    assert reader(env, marker) is marker


def test_the_error_starts_with_the_variable_and_keeps_it_apart() -> None:
    with pytest.raises(SettingError) as info:
        read_int({"PORT": " x "}, "PORT", 1, low=1)
    assert str(info.value) == "PORT is not a whole number: 'x'"
    assert (info.value.name, info.value.problem) == ("PORT", "is not a whole number: 'x'")


@pytest.mark.parametrize(
    ("read", "message"),
    [
        (lambda: read_int({"N": "-1"}, "N", 0, low=0), "N must be >= 0: '-1'"),
        (lambda: read_int({"N": "30000001"}, "N", 0, low=0, high=25_000_000),
         "N must be between 0 and 25000000: '30000001'"),
        (lambda: read_float({"F": "5000"}, "F", 1.0, low=0.001, high=3600.0),
         "F must be between 0.001 and 3600: '5000'"),
        (lambda: read_float({"F": "0"}, "F", 1.0, low=0.0, positive=True), "F must be > 0: '0'"),
        (lambda: read_float({"F": "-inf"}, "F", 1.0, low=0.0), "F is not a finite number: '-inf'"),
    ],
)
def test_range_errors_state_the_range_and_the_value(read, message: str) -> None:
    with pytest.raises(SettingError) as info:
        read()
    assert str(info.value) == message


def test_a_choice_comes_back_spelled_as_allowed() -> None:
    assert read_choice({"L": "Debug"}, "L", ("DEBUG", "INFO"), "INFO") == "DEBUG"
    assert read_choice({"P": "NATIVE"}, "P", ("text", "native"), "text") == "native"


def test_a_url_loses_its_trailing_slashes_and_keeps_the_rest() -> None:
    assert read_url({"U": " http://127.0.0.1:8080/v1// "}, "U", None) == "http://127.0.0.1:8080/v1"


def test_a_secret_is_never_shown_in_its_error() -> None:
    with pytest.raises(SettingError) as info:
        read_secret({"TOKEN": "abc\ndef"}, "TOKEN", None)
    assert str(info.value).startswith("TOKEN ") and "abc" not in str(info.value)
