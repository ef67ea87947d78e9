"""The weather tool: current conditions and a short forecast from Open-Meteo.

Two calls over the ``httpx.AsyncClient`` it is given: the geocoding API turns a place name into
coordinates, the forecast API gives the weather there. Both base URLs are configurable (the
tests point them at a loopback fake). A place that is not found, an HTTP error, an unreadable
reply or a timeout becomes a ``ToolError`` whose message the model can act on.

Part of agent/: imports nothing from bot/ or memory/.
"""

from __future__ import annotations

from typing import Any, Literal

import httpx

from agent.tools.fetch import DEFAULT_LIMITS, FetchLimits, get_json
from agent.tools.registry import ToolError, ToolRegistry

__all__ = [
    "DEFAULT_FORECAST_URL",
    "DEFAULT_GEOCODING_URL",
    "MAX_DAYS",
    "describe_weather_code",
    "register_weather",
]

DEFAULT_GEOCODING_URL = "https://geocoding-api.open-meteo.com/v1/search"
DEFAULT_FORECAST_URL = "https://api.open-meteo.com/v1/forecast"
MAX_DAYS = 7
MAX_PLACE_CHARS = 120
CURRENT_FIELDS = (
    "temperature_2m,apparent_temperature,relative_humidity_2m,precipitation,"
    "weather_code,wind_speed_10m"
)
DAILY_FIELDS = "weather_code,temperature_2m_max,temperature_2m_min,precipitation_sum"

_WMO_CODES = {
    0: "clear sky", 1: "mainly clear", 2: "partly cloudy", 3: "overcast",
    45: "fog", 48: "depositing rime fog",
    51: "light drizzle", 53: "moderate drizzle", 55: "dense drizzle",
    56: "light freezing drizzle", 57: "dense freezing drizzle",
    61: "slight rain", 63: "moderate rain", 65: "heavy rain",
    66: "light freezing rain", 67: "heavy freezing rain",
    71: "slight snow fall", 73: "moderate snow fall", 75: "heavy snow fall", 77: "snow grains",
    80: "slight rain showers", 81: "moderate rain showers", 82: "violent rain showers",
    85: "slight snow showers", 86: "heavy snow showers",
    95: "thunderstorm", 96: "thunderstorm with slight hail", 99: "thunderstorm with heavy hail",
}


def describe_weather_code(code: Any) -> str:
    """The WMO weather interpretation code as words."""
    if isinstance(code, (int, float)) and int(code) in _WMO_CODES:
        return _WMO_CODES[int(code)]
    return f"weather code {code}"


def register_weather(
    registry: ToolRegistry,
    *,
    http: httpx.AsyncClient,
    geocoding_url: str = DEFAULT_GEOCODING_URL,
    forecast_url: str = DEFAULT_FORECAST_URL,
    request_timeout_s: float = 10.0,
    limits: FetchLimits = DEFAULT_LIMITS,
) -> None:
    """Add the ``weather`` tool, calling Open-Meteo at the given URLs through ``http`` (its
    replies bounded by ``limits``)."""

    @registry.tool(name="weather")
    async def weather(
        place: str, days: int = 1, units: Literal["celsius", "fahrenheit"] = "celsius"
    ) -> str:
        """Get the current weather and a daily forecast for a place, from Open-Meteo.

        Args:
            place: City or place name, optionally with its country, e.g. "Oslo" or
                "Paris, France".
            days: Number of forecast days, 1 to 7.
            units: Temperature unit.
        """
        name, hint = _split_place(place)
        if not 1 <= days <= MAX_DAYS:
            raise ToolError(f"days must be between 1 and {MAX_DAYS}, got {days}")
        found = await get_json(
            http, geocoding_url,
            {"name": name, "count": 10, "language": "en", "format": "json"},
            service="the weather geocoding service", timeout_s=request_timeout_s, limits=limits,
        )
        location = _pick_location(found.get("results"), hint)
        if location is None:
            raise ToolError(
                f"no place named {place.strip()!r} was found; try the city name alone, "
                "e.g. 'Paris', or a nearby larger city"
            )
        forecast = await get_json(
            http, forecast_url,
            {
                "latitude": location["latitude"],
                "longitude": location["longitude"],
                "current": CURRENT_FIELDS,
                "daily": DAILY_FIELDS,
                "timezone": "auto",
                "forecast_days": days,
                "temperature_unit": units,
                "wind_speed_unit": "kmh",
            },
            service="the weather forecast service", timeout_s=request_timeout_s, limits=limits,
        )
        return _describe(location, forecast)


def _split_place(place: str) -> tuple[str, str]:
    text = " ".join(place.split())
    if not text:
        raise ToolError("place is empty; give a city name such as 'Oslo'")
    if len(text) > MAX_PLACE_CHARS:
        raise ToolError(f"place is too long ({len(text)} characters); give just a city name")
    name, _, hint = text.partition(",")
    return name.strip() or text, hint.strip().lower()


def _pick_location(results: Any, hint: str) -> dict[str, Any] | None:
    if not isinstance(results, list):
        return None
    usable = [
        r for r in results
        if isinstance(r, dict)
        and isinstance(r.get("latitude"), (int, float))
        and isinstance(r.get("longitude"), (int, float))
    ]
    if not usable:
        return None
    if hint:
        for r in usable:
            labels = (r.get("country"), r.get("country_code"), r.get("admin1"), r.get("admin2"))
            if any(isinstance(x, str) and x.lower() == hint for x in labels):
                return r
        for r in usable:
            labels = (r.get("country"), r.get("admin1"))
            if any(isinstance(x, str) and hint in x.lower() for x in labels):
                return r
    return usable[0]


def _describe(location: dict[str, Any], forecast: dict[str, Any]) -> str:
    names: list[str] = []
    for label in (location.get("name"), location.get("admin1"), location.get("country")):
        if isinstance(label, str) and label and label not in names:
            names.append(label)
    where = ", ".join(names) or "the place"
    lines = [f"{where} ({location['latitude']:.2f}, {location['longitude']:.2f})"]
    current = forecast.get("current")
    units = forecast.get("current_units") or {}
    if isinstance(current, dict):
        temp_unit = units.get("temperature_2m", "°C")
        parts = [f"now ({current.get('time', '?')} local): "
                 f"{current.get('temperature_2m', '?')}{temp_unit}"]
        if "apparent_temperature" in current:
            parts.append(f"feels like {current['apparent_temperature']}{temp_unit}")
        if "weather_code" in current:
            parts.append(describe_weather_code(current["weather_code"]))
        if "relative_humidity_2m" in current:
            parts.append(f"humidity {current['relative_humidity_2m']}%")
        if "wind_speed_10m" in current:
            parts.append(f"wind {current['wind_speed_10m']} {units.get('wind_speed_10m', 'km/h')}")
        if "precipitation" in current:
            parts.append(
                f"precipitation {current['precipitation']} {units.get('precipitation', 'mm')}"
            )
        lines.append(", ".join(parts))
    daily = forecast.get("daily")
    daily_units = forecast.get("daily_units") or {}
    if isinstance(daily, dict) and isinstance(daily.get("time"), list):
        temp_unit = daily_units.get("temperature_2m_max", "°C")
        rain_unit = daily_units.get("precipitation_sum", "mm")
        for i, day in enumerate(daily["time"]):
            def at(key: str) -> Any:
                values = daily.get(key)
                return values[i] if isinstance(values, list) and i < len(values) else "?"

            lines.append(
                f"{day}: {describe_weather_code(at('weather_code'))}, "
                f"{at('temperature_2m_min')} to {at('temperature_2m_max')}{temp_unit}, "
                f"precipitation {at('precipitation_sum')} {rain_unit}"
            )
    if len(lines) == 1:
        raise ToolError("the weather forecast service sent no weather data")
    return "\n".join(lines)
