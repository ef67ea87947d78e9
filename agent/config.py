"""Agent settings read from a mapping (the environment, or a .env file loaded into it).

Only agent/__main__ touches os.environ; everything else passes a Mapping in, so tests never
patch the environment. Values are parsed by the shared envsettings readers (why those and not
pydantic: see its docstring); their SettingError becomes this package's ConfigError, which
names the variable and never echoes the API key.

Part of agent/: imports nothing from bot/ or memory/.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlsplit

from agent.errors import ConfigError
from agent.tools.weather import DEFAULT_FORECAST_URL, DEFAULT_GEOCODING_URL
from envsettings import SettingError, read_choice, read_float, read_int, read_secret, read_str, read_url

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_GEOCODING_URL",
    "DEFAULT_FORECAST_URL",
    "AgentSettings",
    "load_agent_settings",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"

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


def load_agent_settings(env: Mapping[str, str]) -> AgentSettings:
    """Read and validate the agent's variables; raise ConfigError naming the first bad one.

    Empty values count as unset. A missing LLM_MODEL is not an error here (the bot may start
    without a model to report it); check `is_configured` / `missing()` before running.
    """
    try:
        return AgentSettings(
            base_url=read_url(env, "OPENAI_BASE_URL", DEFAULT_BASE_URL),
            api_key=read_secret(env, "OPENAI_API_KEY", ""),
            model=read_str(env, "LLM_MODEL", ""),
            protocol=read_choice(env, "LLM_PROTOCOL", ("text", "native"), "text"),  # type: ignore[arg-type]
            temperature=read_float(env, "LLM_TEMPERATURE", 0.2, low=0.0, high=2.0),
            timeout_s=read_float(env, "LLM_TIMEOUT_S", 60.0, low=0.001, high=3600.0),
            max_retries=read_int(env, "LLM_MAX_RETRIES", 3, low=0, high=20),
            max_steps=read_int(env, "AGENT_MAX_STEPS", 8, low=1, high=100),
            tool_timeout_s=read_float(env, "TOOL_TIMEOUT_S", 15.0, low=0.001, high=3600.0),
            searxng_url=read_url(env, "SEARXNG_URL", None),
            open_meteo_geocoding_url=read_url(env, "OPEN_METEO_GEOCODING_URL", DEFAULT_GEOCODING_URL),
            open_meteo_forecast_url=read_url(env, "OPEN_METEO_FORECAST_URL", DEFAULT_FORECAST_URL),
        )
    except SettingError as exc:
        raise ConfigError(str(exc)) from None
