"""FakeOpenMeteo: a loopback fake of Open-Meteo's geocoding and forecast APIs (aiohttp).

Real HTTP on 127.0.0.1 and a random port, so the weather tool's real ``httpx`` client, query
encoding, status handling and JSON parsing all run. Replies have the shape of the real APIs.

Endpoints
    GET /v1/search     geocoding: ``name`` looked up (case-insensitively) in ``fake.places``;
                       unknown names give ``{"generationtime_ms": ...}`` with no "results",
                       as the real API does
    GET /v1/forecast   ``current`` and ``daily`` blocks for ``forecast_days`` days, in the
                       requested ``temperature_unit``

Use
    async with FakeOpenMeteo() as fake:
        register_weather(reg, http=client, geocoding_url=fake.geocoding_url,
                         forecast_url=fake.forecast_url)
        fake.fail("forecast", 500, {"error": True, "reason": "boom"})  # next forecast calls
        fake.garbage("geocoding")                   # 200 with an HTML body
        fake.delay("forecast", 2.0)                 # answer after 2 s
        fake.requests                                # [(endpoint, {query params}), ...]
"""

from __future__ import annotations

import asyncio
import json
from datetime import date, timedelta
from typing import Any

from aiohttp import web

from tests.fakes.loopback import LoopbackServer

__all__ = ["FakeOpenMeteo", "DEFAULT_PLACES"]

DEFAULT_PLACES: dict[str, list[dict[str, Any]]] = {
    "oslo": [
        {"id": 3143244, "name": "Oslo", "latitude": 59.91273, "longitude": 10.74609,
         "country_code": "NO", "country": "Norway", "admin1": "Oslo", "timezone": "Europe/Oslo"},
    ],
    "paris": [
        {"id": 2988507, "name": "Paris", "latitude": 48.85341, "longitude": 2.3488,
         "country_code": "FR", "country": "France", "admin1": "Île-de-France",
         "timezone": "Europe/Paris"},
        {"id": 4717560, "name": "Paris", "latitude": 33.66094, "longitude": -95.55551,
         "country_code": "US", "country": "United States", "admin1": "Texas",
         "timezone": "America/Chicago"},
    ],
}
START_DAY = date(2026, 11, 30)


class FakeOpenMeteo(LoopbackServer):
    """Loopback Open-Meteo; see the module docstring."""

    def __init__(self, places: dict[str, list[dict[str, Any]]] | None = None) -> None:
        super().__init__()
        self.places = dict(DEFAULT_PLACES if places is None else places)
        self.requests: list[tuple[str, dict[str, str]]] = []
        self._overrides: dict[str, tuple[int, str, str]] = {}
        self._delays: dict[str, float] = {}

    # -- scripting ---------------------------------------------------------------------------

    def fail(self, endpoint: str, status: int, body: Any = None) -> FakeOpenMeteo:
        """Answer every later call of ``endpoint`` ("geocoding"/"forecast") with ``status``."""
        payload = json.dumps(body if body is not None else {"error": True, "reason": "fake"})
        self._overrides[endpoint] = (status, payload, "application/json")
        return self

    def garbage(self, endpoint: str, text: str = "<html>bad gateway</html>") -> FakeOpenMeteo:
        """Answer every later call of ``endpoint`` with 200 and a non-JSON body."""
        self._overrides[endpoint] = (200, text, "text/html")
        return self

    def delay(self, endpoint: str, seconds: float) -> FakeOpenMeteo:
        """Wait ``seconds`` before answering calls of ``endpoint``."""
        self._delays[endpoint] = seconds
        return self

    def params(self, endpoint: str) -> list[dict[str, str]]:
        """The query parameters of each request made to ``endpoint``, in order."""
        return [p for e, p in self.requests if e == endpoint]

    # -- addresses and routes ----------------------------------------------------------------

    @property
    def geocoding_url(self) -> str:
        return f"{self.base_url}/v1/search"

    @property
    def forecast_url(self) -> str:
        return f"{self.base_url}/v1/forecast"

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/v1/search", self._geocoding)
        app.router.add_get("/v1/forecast", self._forecast)

    # -- handlers ----------------------------------------------------------------------------

    async def _answer(self, endpoint: str, request: web.Request) -> web.Response | None:
        self.requests.append((endpoint, dict(request.query)))
        if seconds := self._delays.get(endpoint):
            await asyncio.sleep(seconds)
        if endpoint in self._overrides:
            status, text, content_type = self._overrides[endpoint]
            return web.Response(status=status, text=text, content_type=content_type)
        return None

    async def _geocoding(self, request: web.Request) -> web.Response:
        if (override := await self._answer("geocoding", request)) is not None:
            return override
        name = request.query.get("name", "")
        if len(name) < 2:
            return web.json_response(
                {"error": True, "reason": "Parameter 'name' must have at least 2 characters"},
                status=400,
            )
        count = int(request.query.get("count", "10"))
        results = self.places.get(name.strip().lower(), [])[:count]
        body: dict[str, Any] = {"generationtime_ms": 0.4}
        if results:
            body["results"] = results
        return web.json_response(body)

    async def _forecast(self, request: web.Request) -> web.Response:
        if (override := await self._answer("forecast", request)) is not None:
            return override
        q = request.query
        try:
            latitude, longitude = float(q["latitude"]), float(q["longitude"])
            days = int(q.get("forecast_days", "7"))
        except (KeyError, ValueError):
            return web.json_response(
                {"error": True, "reason": "latitude and longitude are required numbers"},
                status=400,
            )
        fahrenheit = q.get("temperature_unit") == "fahrenheit"

        def temp(celsius: float) -> float:
            return round(celsius * 9 / 5 + 32, 1) if fahrenheit else celsius

        unit = "°F" if fahrenheit else "°C"
        body: dict[str, Any] = {"latitude": latitude, "longitude": longitude,
                                "timezone": "Europe/Oslo", "utc_offset_seconds": 3600}
        if "current" in q:
            body["current_units"] = {"time": "iso8601", "temperature_2m": unit,
                                     "apparent_temperature": unit, "relative_humidity_2m": "%",
                                     "precipitation": "mm", "weather_code": "wmo code",
                                     "wind_speed_10m": "km/h"}
            body["current"] = {"time": "2026-11-30T10:00", "interval": 900,
                               "temperature_2m": temp(3.5), "apparent_temperature": temp(1.0),
                               "relative_humidity_2m": 81, "precipitation": 0.0,
                               "weather_code": 3, "wind_speed_10m": 12.4}
        if "daily" in q:
            codes = [61, 3, 0, 71, 95, 2, 45]
            body["daily_units"] = {"time": "iso8601", "weather_code": "wmo code",
                                   "temperature_2m_max": unit, "temperature_2m_min": unit,
                                   "precipitation_sum": "mm"}
            body["daily"] = {
                "time": [(START_DAY + timedelta(days=i)).isoformat() for i in range(days)],
                "weather_code": [codes[i % len(codes)] for i in range(days)],
                "temperature_2m_max": [temp(5.0 + i) for i in range(days)],
                "temperature_2m_min": [temp(-1.0 + i) for i in range(days)],
                "precipitation_sum": [round(2.5 - 0.5 * i, 1) for i in range(days)],
            }
        return web.json_response(body)
