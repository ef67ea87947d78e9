"""The weather tool against a loopback fake of Open-Meteo, through a real httpx client."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from agent.tools.registry import ToolContext, ToolRegistry
from agent.tools.weather import CURRENT_FIELDS, DAILY_FIELDS, register_weather
from tests.fakes.open_meteo import FakeOpenMeteo

CTX = ToolContext(user_id="1", channel_id="2", guild_id="3")


@pytest.fixture
async def meteo() -> AsyncIterator[FakeOpenMeteo]:
    async with FakeOpenMeteo() as fake:
        yield fake


@pytest.fixture
async def registry(meteo: FakeOpenMeteo) -> AsyncIterator[ToolRegistry]:
    async with httpx.AsyncClient() as http:
        reg = ToolRegistry(default_timeout_s=5)
        register_weather(reg, http=http, geocoding_url=meteo.geocoding_url,
                         forecast_url=meteo.forecast_url, request_timeout_s=0.5)
        yield reg


async def test_current_weather_and_forecast_for_a_place(
    registry: ToolRegistry, meteo: FakeOpenMeteo
) -> None:
    result = await registry.call("weather", {"place": "Oslo"}, CTX)
    assert result.ok, result.observation
    assert result.observation == (
        "Oslo, Norway (59.91, 10.75)\n"
        "now (2026-11-30T10:00 local): 3.5°C, feels like 1.0°C, overcast, humidity 81%, "
        "wind 12.4 km/h, precipitation 0.0 mm\n"
        "2026-11-30: slight rain, -1.0 to 5.0°C, precipitation 2.5 mm"
    )


async def test_query_parameters_sent_to_both_apis(
    registry: ToolRegistry, meteo: FakeOpenMeteo
) -> None:
    await registry.call("weather", {"place": "  oslo ", "days": 3}, CTX)
    assert meteo.params("geocoding") == [
        {"name": "oslo", "count": "10", "language": "en", "format": "json"}
    ]
    assert meteo.params("forecast") == [{
        "latitude": "59.91273", "longitude": "10.74609", "current": CURRENT_FIELDS,
        "daily": DAILY_FIELDS, "timezone": "auto", "forecast_days": "3",
        "temperature_unit": "celsius", "wind_speed_unit": "kmh",
    }]


async def test_several_days_are_listed(registry: ToolRegistry) -> None:
    result = await registry.call("weather", {"place": "Oslo", "days": 3}, CTX)
    lines = result.observation.splitlines()
    assert [line.split(":")[0] for line in lines[2:]] == ["2026-11-30", "2026-12-01", "2026-12-02"]


async def test_fahrenheit_is_requested_and_shown(
    registry: ToolRegistry, meteo: FakeOpenMeteo
) -> None:
    result = await registry.call("weather", {"place": "Oslo", "units": "fahrenheit"}, CTX)
    assert "38.3°F" in result.observation
    assert meteo.params("forecast")[0]["temperature_unit"] == "fahrenheit"


async def test_country_after_a_comma_picks_among_same_named_places(
    registry: ToolRegistry, meteo: FakeOpenMeteo
) -> None:
    result = await registry.call("weather", {"place": "Paris, Texas"}, CTX)
    assert result.observation.startswith("Paris, Texas, United States (33.66, -95.56)")
    assert meteo.params("geocoding")[0]["name"] == "Paris"
    france = await registry.call("weather", {"place": "Paris, FR"}, CTX)
    assert france.observation.startswith("Paris, Île-de-France, France")


async def test_plain_input_from_the_parser_is_the_place(registry: ToolRegistry) -> None:
    result = await registry.call("weather", {"input": "Oslo"}, CTX)
    assert result.ok and result.observation.startswith("Oslo, Norway")


async def test_unknown_place_is_a_clear_observation(
    registry: ToolRegistry, meteo: FakeOpenMeteo
) -> None:
    result = await registry.call("weather", {"place": "Atlantis"}, CTX)
    assert not result.ok
    assert result.observation == (
        "Error: no place named 'Atlantis' was found; try the city name alone, e.g. 'Paris', "
        "or a nearby larger city"
    )
    assert meteo.params("forecast") == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"place": "   "}, "Error: place is empty"),
        ({"place": "x" * 500}, "Error: place is too long (500 characters)"),
        ({"place": "Oslo", "days": 0}, "Error: days must be between 1 and 7, got 0"),
        ({"place": "Oslo", "days": 30}, "Error: days must be between 1 and 7, got 30"),
        ({"place": "Oslo", "units": "kelvin"}, "Error: bad arguments for weather: units:"),
        ({"place": 42}, "Error: bad arguments for weather: place: 42 is not of type 'string'"),
    ],
)
async def test_bad_arguments_are_refused_without_calling_out(
    registry: ToolRegistry, meteo: FakeOpenMeteo, args: dict, message: str
) -> None:
    result = await registry.call("weather", args, CTX)
    assert not result.ok and result.observation.startswith(message)
    assert meteo.requests == []


async def test_http_error_with_reason_is_reported(
    registry: ToolRegistry, meteo: FakeOpenMeteo
) -> None:
    meteo.fail("forecast", 400, {"error": True, "reason": "Latitude must be in range"})
    result = await registry.call("weather", {"place": "Oslo"}, CTX)
    assert result.observation == (
        "Error: the weather forecast service answered HTTP 400: Latitude must be in range"
    )


async def test_server_error_is_reported(registry: ToolRegistry, meteo: FakeOpenMeteo) -> None:
    meteo.fail("geocoding", 503, {"oops": 1})
    result = await registry.call("weather", {"place": "Oslo"}, CTX)
    assert result.observation == "Error: the weather geocoding service answered HTTP 503"


async def test_unreadable_reply_is_reported(registry: ToolRegistry, meteo: FakeOpenMeteo) -> None:
    meteo.garbage("forecast")
    result = await registry.call("weather", {"place": "Oslo"}, CTX)
    assert result.observation == "Error: the weather forecast service sent an unreadable reply"


async def test_slow_service_times_out_with_a_clear_message(
    registry: ToolRegistry, meteo: FakeOpenMeteo
) -> None:
    meteo.delay("geocoding", 3.0)
    result = await registry.call("weather", {"place": "Oslo"}, CTX)
    assert result.observation == "Error: the weather geocoding service timed out; try again later"


async def test_unreachable_service_is_reported() -> None:
    async with FakeOpenMeteo() as fake:
        dead_url = fake.geocoding_url  # the port is closed once the fake stops
    async with httpx.AsyncClient() as http:
        reg = ToolRegistry()
        register_weather(reg, http=http, geocoding_url=dead_url, forecast_url=dead_url)
        result = await reg.call("weather", {"place": "Oslo"}, CTX)
    assert result.observation == (
        "Error: the weather geocoding service is unreachable (ConnectError); try again later"
    )


async def test_results_without_coordinates_count_as_not_found() -> None:
    async with FakeOpenMeteo(places={"nowhere": [{"name": "Nowhere"}]}) as fake, \
            httpx.AsyncClient() as http:
        reg = ToolRegistry()
        register_weather(reg, http=http, geocoding_url=fake.geocoding_url,
                         forecast_url=fake.forecast_url)
        result = await reg.call("weather", {"place": "Nowhere"}, CTX)
    assert result.observation.startswith("Error: no place named 'Nowhere' was found")
