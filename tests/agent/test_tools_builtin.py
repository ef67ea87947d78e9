"""register_builtin_tools: which tools appear, and that they reach the configured services."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import httpx
import pytest

from agent.config import load_agent_settings
from agent.tools import ToolContext, ToolRegistry, register_builtin_tools
from tests.fakes.open_meteo import FakeOpenMeteo
from tests.fakes.searxng import FakeSearxNG

CTX = ToolContext(user_id="1", channel_id="2", guild_id="3")


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


async def test_without_a_searxng_url_web_search_is_not_registered(
    http: httpx.AsyncClient,
) -> None:
    reg = ToolRegistry()
    register_builtin_tools(reg, http=http)
    assert reg.names() == ["calculator", "current_time", "weather"]


async def test_with_keyword_urls_every_tool_reaches_its_service(http: httpx.AsyncClient) -> None:
    async with FakeOpenMeteo() as meteo, FakeSearxNG() as searx:
        reg = ToolRegistry()
        register_builtin_tools(
            reg, http=http, searxng_url=searx.base_url, geocoding_url=meteo.geocoding_url,
            forecast_url=meteo.forecast_url, now=lambda: datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        )
        assert reg.names() == ["calculator", "current_time", "weather", "web_search"]
        assert (await reg.call("calculator", {"expression": "2**64"}, CTX)).observation == str(
            2**64
        )
        clock = await reg.call("current_time", {}, CTX)
        assert clock.observation.startswith("Friday 2 January 2026, 03:04:05 UTC")
        weather = await reg.call("weather", {"place": "Oslo"}, CTX)
        assert weather.ok and weather.observation.startswith("Oslo, Norway")
        search = await reg.call("web_search", {"query": "oslo"}, CTX)
        assert search.ok and search.observation.startswith("1. Result 1 about oslo")
    assert len(meteo.requests) == 2 and len(searx.requests) == 1


async def test_agent_settings_supply_the_urls(http: httpx.AsyncClient) -> None:
    async with FakeOpenMeteo() as meteo, FakeSearxNG() as searx:
        settings = load_agent_settings({
            "SEARXNG_URL": searx.base_url,
            "OPEN_METEO_GEOCODING_URL": meteo.geocoding_url,
            "OPEN_METEO_FORECAST_URL": meteo.forecast_url,
        })
        reg = ToolRegistry()
        register_builtin_tools(reg, settings, http)
        assert "web_search" in reg
        assert (await reg.call("weather", {"place": "Paris"}, CTX)).ok
        assert (await reg.call("web_search", {"query": "q"}, CTX)).ok
    assert [e for e, _ in meteo.requests] == ["geocoding", "forecast"]
    assert searx.requests == [{"q": "q", "format": "json"}]


def test_an_http_client_is_required() -> None:
    with pytest.raises(TypeError, match="httpx.AsyncClient"):
        register_builtin_tools(ToolRegistry())


async def test_catalog_is_json_schema_for_every_builtin(http: httpx.AsyncClient) -> None:
    reg = ToolRegistry()
    register_builtin_tools(reg, http=http, searxng_url="http://127.0.0.1:9")
    for spec in (tool.spec() for tool in reg):
        assert spec["description"]
        assert spec["parameters"]["type"] == "object"
        assert spec["parameters"]["additionalProperties"] is False
    weather = reg.get("weather").parameters
    assert weather["required"] == ["place"]
    assert weather["properties"]["units"]["enum"] == ["celsius", "fahrenheit"]
