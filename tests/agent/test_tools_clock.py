"""The current_time tool: IANA zones through zoneinfo, clear errors for unknown ones."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agent.tools.clock import register_clock
from agent.tools.registry import ToolContext, ToolRegistry

CTX = ToolContext(user_id="1", channel_id="2", guild_id="3")
FIXED = datetime(2026, 7, 14, 12, 30, 5, tzinfo=UTC)


@pytest.fixture
def registry() -> ToolRegistry:
    reg = ToolRegistry()
    register_clock(reg, now=lambda: FIXED)
    return reg


async def test_default_zone_is_utc(registry: ToolRegistry) -> None:
    result = await registry.call("current_time", {}, CTX)
    assert result.ok
    assert result.observation == (
        "Tuesday 14 July 2026, 12:30:05 UTC (UTC+00:00), UTC; ISO 2026-07-14T12:30:05+00:00"
    )


async def test_named_zone_with_summer_time(registry: ToolRegistry) -> None:
    result = await registry.call("current_time", {"timezone": "Europe/Paris"}, CTX)
    assert result.observation == (
        "Tuesday 14 July 2026, 14:30:05 CEST (UTC+02:00), Europe/Paris; "
        "ISO 2026-07-14T14:30:05+02:00"
    )


async def test_zone_crossing_the_date_line(registry: ToolRegistry) -> None:
    result = await registry.call("current_time", {"timezone": "Pacific/Kiritimati"}, CTX)
    assert "Wednesday 15 July 2026, 02:30:05" in result.observation
    assert "(UTC+14:00)" in result.observation


@pytest.mark.parametrize(
    ("written", "canonical"),
    [("europe/paris", "Europe/Paris"), ("America/New York", "America/New_York"),
     ("gmt", "UTC"), ("  Asia/Tokyo ", "Asia/Tokyo"), ("", "UTC")],
)
async def test_zone_names_forgive_case_and_spaces(
    registry: ToolRegistry, written: str, canonical: str
) -> None:
    result = await registry.call("current_time", {"timezone": written}, CTX)
    assert result.ok and f"), {canonical}; ISO" in result.observation


async def test_plain_input_from_the_parser_is_the_zone(registry: ToolRegistry) -> None:
    result = await registry.call("current_time", {"input": "Asia/Tokyo"}, CTX)
    assert result.ok and "21:30:05 JST" in result.observation


@pytest.mark.parametrize(
    "zone", ["Mars/Olympus", "Paris", "../../etc/passwd", "/etc/localtime", "Europe", "x" * 5000]
)
async def test_unknown_zone_explains_how_to_write_one(registry: ToolRegistry, zone: str) -> None:
    result = await registry.call("current_time", {"timezone": zone}, CTX)
    assert not result.ok
    assert result.observation.startswith("Error: unknown time zone ")
    assert "'Europe/Paris'" in result.observation and "Area/City" in result.observation
    assert len(result.observation) < 300


async def test_real_clock_is_used_by_default() -> None:
    reg = ToolRegistry()
    register_clock(reg)
    result = await reg.call("current_time", {"timezone": "UTC"}, CTX)
    assert result.ok and f"{datetime.now(UTC).year}" in result.observation
