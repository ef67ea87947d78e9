"""Agent settings read from a mapping (the environment, or a .env file loaded into it).

Only agent/__main__ touches os.environ; everything else passes a Mapping in, so tests never
patch the environment. Errors name the variable and never echo the API key.

Part of agent/: imports nothing from bot/ or memory/.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlsplit

from agent.errors import ConfigError

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_GEOCODING_URL",
    "DEFAULT_FORECAST_URL",
    "AgentSettings",
    "load_agent_settings",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_GEOCODING_URL = "https://geocoding-api.open-meteo.com/v1/search"
DEFAULT_FORECAST_URL = "https://api.open-meteo.com/v1/forecast"

Protocol = Literal["text", "native"]


@dataclass(frozen=True, slots=True)
class AgentSettings:
    """Everything agent/ needs to know about its endpoint, loop and tools."""

    base_url: str = DEFAULT_BASE_URL
    api_key: str = field(default="", repr=False)
    model: str = ""
    protocol: Protocol = "text"
    temperature: float = 0.2
    timeout_s: float = 60.0
    max_retries: int = 3
    max_steps: int = 8
    tool_timeout_s: float = 15.0
    searxng_url: str | None = None
    open_meteo_geocoding_url: str = DEFAULT_GEOCODING_URL
    open_meteo_forecast_url: str = DEFAULT_FORECAST_URL

    @property
    def uses_default_endpoint(self) -> bool:
        return urlsplit(self.base_url).hostname == "api.openai.com"

    @property
    def is_configured(self) -> bool:
        """True when a model is named (and, for api.openai.com, a key is given)."""
        if not self.model:
            return False
        return bool(self.api_key) or not self.uses_default_endpoint

    def missing(self) -> str:
        """One line saying what to set, or "" when configured."""
        if self.is_configured:
            return ""
        needed = [] if self.model else ["LLM_MODEL"]
        if self.uses_default_endpoint and not self.api_key:
            needed.append("OPENAI_API_KEY")
        return (
            f"no model endpoint configured: set {' and '.join(needed)} "
            f"(and OPENAI_BASE_URL for a server other than {DEFAULT_BASE_URL}) "
            "in the environment or in .env"
        )


def _get(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name)
    if value is None:
        return None
    value = value.strip()
    return value or None


def _url(env: Mapping[str, str], name: str, default: str | None) -> str | None:
    value = _get(env, name)
    if value is None:
        return default
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"{name} is not a valid http(s) URL: {value!r}")
    return value.rstrip("/")


def _float(env: Mapping[str, str], name: str, default: float, *, low: float, high: float) -> float:
    value = _get(env, name)
    if value is None:
        return default
    try:
        number = float(value)
    except ValueError:
        raise ConfigError(f"{name} is not a number: {value!r}") from None
    if not math.isfinite(number) or not low <= number <= high:
        raise ConfigError(f"{name} must be between {low:g} and {high:g}, got {value!r}")
    return number


def _int(env: Mapping[str, str], name: str, default: int, *, low: int, high: int) -> int:
    value = _get(env, name)
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        raise ConfigError(f"{name} is not a whole number: {value!r}") from None
    if not low <= number <= high:
        raise ConfigError(f"{name} must be between {low} and {high}, got {value!r}")
    return number


def load_agent_settings(env: Mapping[str, str]) -> AgentSettings:
    """Read and validate the agent's variables; raise ConfigError naming the first bad one.

    Empty values count as unset. A missing LLM_MODEL is not an error here (the bot may start
    without a model to report it); check `is_configured` / `missing()` before running.
    """
    protocol = (_get(env, "LLM_PROTOCOL") or "text").lower()
    if protocol not in ("text", "native"):
        raise ConfigError(f"LLM_PROTOCOL must be 'text' or 'native', got {protocol!r}")
    api_key = _get(env, "OPENAI_API_KEY") or ""
    if any(ch.isspace() for ch in api_key):
        raise ConfigError("OPENAI_API_KEY contains whitespace; check the value (not shown)")
    return AgentSettings(
        base_url=_url(env, "OPENAI_BASE_URL", DEFAULT_BASE_URL) or DEFAULT_BASE_URL,
        api_key=api_key,
        model=_get(env, "LLM_MODEL") or "",
        protocol=protocol,  # type: ignore[arg-type]
        temperature=_float(env, "LLM_TEMPERATURE", 0.2, low=0.0, high=2.0),
        timeout_s=_float(env, "LLM_TIMEOUT_S", 60.0, low=0.001, high=3600.0),
        max_retries=_int(env, "LLM_MAX_RETRIES", 3, low=0, high=20),
        max_steps=_int(env, "AGENT_MAX_STEPS", 8, low=1, high=100),
        tool_timeout_s=_float(env, "TOOL_TIMEOUT_S", 15.0, low=0.001, high=3600.0),
        searxng_url=_url(env, "SEARXNG_URL", None),
        open_meteo_geocoding_url=_url(env, "OPEN_METEO_GEOCODING_URL", DEFAULT_GEOCODING_URL)
        or DEFAULT_GEOCODING_URL,
        open_meteo_forecast_url=_url(env, "OPEN_METEO_FORECAST_URL", DEFAULT_FORECAST_URL)
        or DEFAULT_FORECAST_URL,
    )
