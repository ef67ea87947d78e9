"""Register the built-in tools (calculator, current_time, weather, web_search) on a registry.

``web_search`` is registered only when a SearxNG URL is configured. URLs come either from an
``AgentSettings``-like object (read by attribute, so this module does not import agent.config)
or from keyword arguments, which win when both are given.

Part of agent/: imports nothing from bot/ or memory/.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx

from agent.tools.calculator import register_calculator
from agent.tools.clock import register_clock
from agent.tools.fetch import DEFAULT_LIMITS, FetchLimits
from agent.tools.registry import ToolRegistry
from agent.tools.weather import DEFAULT_FORECAST_URL, DEFAULT_GEOCODING_URL, register_weather
from agent.tools.web_search import register_web_search

__all__ = ["register_builtin_tools"]


def register_builtin_tools(
    registry: ToolRegistry,
    settings: Any = None,
    http: httpx.AsyncClient | None = None,
    *,
    searxng_url: str | None = None,
    geocoding_url: str | None = None,
    forecast_url: str | None = None,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    fetch_limits: FetchLimits = DEFAULT_LIMITS,
) -> None:
    """Add the built-in tools to ``registry``.

    Call as ``register_builtin_tools(registry, settings, http)`` with an AgentSettings
    (``searxng_url``, ``open_meteo_geocoding_url``, ``open_meteo_forecast_url``), or as
    ``register_builtin_tools(registry, http=client, searxng_url=..., geocoding_url=...,
    forecast_url=...)``. ``http`` is the client the weather and search tools use; its owner
    closes it. ``fetch_limits`` bounds what their services send back (size, redirects, and
    where redirects may lead: by default public addresses only).
    """
    if http is None:
        raise TypeError("register_builtin_tools needs an httpx.AsyncClient as http")
    searxng = searxng_url or getattr(settings, "searxng_url", None)
    geocoding = (
        geocoding_url or getattr(settings, "open_meteo_geocoding_url", None)
        or DEFAULT_GEOCODING_URL
    )
    forecast = (
        forecast_url or getattr(settings, "open_meteo_forecast_url", None) or DEFAULT_FORECAST_URL
    )
    register_calculator(registry)
    register_clock(registry, now=now)
    register_weather(registry, http=http, geocoding_url=geocoding, forecast_url=forecast,
                     limits=fetch_limits)
    if searxng:
        register_web_search(registry, http=http, searxng_url=searxng, limits=fetch_limits)
