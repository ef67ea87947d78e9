"""Typed readers for settings given as an environment mapping, shared by agent/, memory/ and bot/.

Each reader takes the mapping (never os.environ), the variable's name and its default. A value
that is unset, empty or only spaces gives the default; any other value is stripped, parsed and
checked, or refused with SettingError, whose text is one line starting with the variable's name
and showing the bad value (read_secret never shows it). Each package's loader re-raises
SettingError as its own ConfigError, so callers still see only that package's errors.

Shared: imports only the standard library, nothing from agent/, memory/ or bot/, so agent/ and
memory/ can both use it and still never import each other or bot/.

Why not pydantic / pydantic-settings (installed with chromadb and openai): the contract here
is "empty counts as unset" and one line per bad variable in our own words. pydantic's lax
parsing accepts what these readers refuse ("1.0" as a whole number, "t" or "n" as booleans),
its HttpUrl rewrites the value (adds a trailing slash, drops a default port), and its errors
state only the bound that failed ("less than or equal to 2"), not the range. Getting the same
behaviour back needed a pre-filter for empty values, custom validators for URLs, secrets,
hosts and Discord ids anyway, and a table turning each pydantic error type back into our
message: more code than these readers, for worse messages.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TypeVar
from urllib.parse import urlsplit

__all__ = [
    "SettingError",
    "read_bool",
    "read_choice",
    "read_float",
    "read_int",
    "read_secret",
    "read_str",
    "read_url",
]

D = TypeVar("D")

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


class SettingError(ValueError):
    """A variable's value is refused; str() is one line that starts with the variable's name."""

    def __init__(self, name: str, problem: str) -> None:
        super().__init__(f"{name} {problem}")
        self.name = name
        self.problem = problem


def read_str(env: Mapping[str, str], name: str, default: D) -> str | D:
    """The value without surrounding spaces, or ``default`` when it is unset or blank."""
    value = env.get(name)
    if value is None or not value.strip():
        return default
    return value.strip()


def _number(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _range(low: float, high: float | None) -> str:
    return f">= {_number(low)}" if high is None else f"between {_number(low)} and {_number(high)}"


def read_int(
    env: Mapping[str, str], name: str, default: D, *, low: int, high: int | None = None
) -> int | D:
    """A whole number from ``low`` to ``high`` (no upper limit when ``high`` is None)."""
    raw = read_str(env, name, None)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SettingError(name, f"is not a whole number: {raw!r}") from None
    if value < low or (high is not None and value > high):
        raise SettingError(name, f"must be {_range(low, high)}: {raw!r}")
    return value


def read_float(
    env: Mapping[str, str],
    name: str,
    default: D,
    *,
    low: float,
    high: float | None = None,
    positive: bool = False,
) -> float | D:
    """A finite number from ``low`` to ``high``; ``positive`` also refuses exactly 0."""
    raw = read_str(env, name, None)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SettingError(name, f"is not a number: {raw!r}") from None
    if not math.isfinite(value):
        raise SettingError(name, f"is not a finite number: {raw!r}")
    if value < low or (high is not None and value > high) or (positive and value <= 0):
        raise SettingError(name, f"must be {'> 0' if positive else _range(low, high)}: {raw!r}")
    return value


def read_bool(env: Mapping[str, str], name: str, default: D) -> bool | D:
    """true/false, also 1/0, yes/no, on/off, in any case."""
    raw = read_str(env, name, None)
    if raw is None:
        return default
    if raw.lower() in _TRUE:
        return True
    if raw.lower() in _FALSE:
        return False
    raise SettingError(name, f"must be true or false: {raw!r}")


def read_choice(env: Mapping[str, str], name: str, allowed: tuple[str, ...], default: D) -> str | D:
    """One of ``allowed``, matched in any case and returned as spelled in ``allowed``."""
    raw = read_str(env, name, None)
    if raw is None:
        return default
    for choice in allowed:
        if raw.lower() == choice.lower():
            return choice
    raise SettingError(name, f"must be one of {', '.join(allowed)}: {raw!r}")


def read_url(env: Mapping[str, str], name: str, default: D) -> str | D:
    """An http(s) URL naming a host, returned without trailing slashes."""
    raw = read_str(env, name, None)
    if raw is None:
        return default
    try:
        parts = urlsplit(raw)
        valid = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:  # e.g. an unclosed IPv6 bracket
        valid = False
    if not valid:
        raise SettingError(name, f"is not a valid http(s) URL: {raw!r}")
    return raw.rstrip("/")


def read_secret(env: Mapping[str, str], name: str, default: D) -> str | D:
    """A key or token: refused, without showing it, when it holds spaces or control characters."""
    raw = read_str(env, name, None)
    if raw is None:
        return default
    if any(ch.isspace() for ch in raw) or not raw.isprintable():
        raise SettingError(name, "contains spaces or control characters (value not shown)")
    return raw
