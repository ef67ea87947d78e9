"""The current_time tool: the date and time now in an IANA time zone (zoneinfo + tzdata).

Zone names are matched against the installed zone list, forgiving case and spaces
("europe/paris", "America/New York"); anything else is refused with an example of a valid
name, never looked up as a file path.

Part of agent/: imports nothing from bot/ or memory/.
"""

from __future__ import annotations

import asyncio
import functools
import zoneinfo
from collections.abc import Callable
from datetime import UTC, datetime

from agent.tools.registry import ToolError, ToolRegistry

__all__ = ["describe_time", "register_clock", "resolve_zone", "zone_names"]

_ALIASES = {"utc": "UTC", "gmt": "UTC", "z": "UTC", "zulu": "UTC", "universal": "UTC"}


@functools.cache
def zone_names() -> dict[str, str]:
    """Lower-cased key -> canonical IANA name, for every installed zone."""
    return {name.lower(): name for name in zoneinfo.available_timezones()}


def resolve_zone(name: str) -> zoneinfo.ZoneInfo:
    """The ZoneInfo for an IANA name (case and spaces forgiven); ToolError when unknown."""
    key = (name or "").strip().replace(" ", "_")
    if not key:
        key = "UTC"
    if key.lower() in _ALIASES:
        return zoneinfo.ZoneInfo(_ALIASES[key.lower()])
    canonical = zone_names().get(key.lower())
    if canonical is None:
        shown = name.strip()[:60]
        raise ToolError(
            f"unknown time zone {shown!r}; use an IANA name written Area/City, such as "
            "'Europe/Paris', 'America/New_York', 'Asia/Tokyo', or 'UTC'"
        )
    return zoneinfo.ZoneInfo(canonical)


def describe_time(moment: datetime, zone: zoneinfo.ZoneInfo) -> str:
    """One line such as 'Monday 30 November 2026, 01:20:15 CET (UTC+01:00), Europe/Paris'."""
    local = moment.astimezone(zone)
    offset = local.strftime("%z")
    offset = f"UTC{offset[:3]}:{offset[3:]}" if offset else "UTC+00:00"
    return (
        f"{local.strftime('%A')} {local.day} {local.strftime('%B %Y, %H:%M:%S')} "
        f"{local.tzname()} ({offset}), {zone.key}; ISO {local.isoformat(timespec='seconds')}"
    )


def register_clock(
    registry: ToolRegistry, *, now: Callable[[], datetime] = lambda: datetime.now(UTC)
) -> None:
    """Add the ``current_time`` tool; ``now`` is the clock (tests pass a fixed one)."""

    @registry.tool(name="current_time")
    async def current_time(timezone: str = "UTC") -> str:
        """Get the current date, weekday and time in a time zone.

        Args:
            timezone: IANA time zone name such as "Europe/Paris" or "America/New_York";
                "UTC" when not given.
        """
        await asyncio.to_thread(zone_names)  # the first call reads the zone list from disk
        return describe_time(now(), resolve_zone(timezone))
