"""Settings of reminders and scheduled questions, from the same env mapping.

Variables (empty values count as unset):
    DEFAULT_TIMEZONE         the zone of people who never ran /remind timezone (an IANA name; default UTC)
    REMINDERS_MAX_PENDING    pending reminders one person may have (default 25)
    REMINDERS_MIN_REPEAT_S   shortest time between two occurrences of a repeating reminder, in
                             seconds (default 3600: at most hourly)

Read by bot.settings.config into ``Settings.reminders``. Part of bot/; imports only envsettings
and zoneinfo.
"""

from __future__ import annotations

import zoneinfo
from collections.abc import Mapping
from dataclasses import dataclass

from envsettings import SettingError, read_int, read_str

__all__ = ["ReminderSettings", "load_reminder_settings"]


@dataclass(frozen=True, slots=True)
class ReminderSettings:
    """See the module docstring for each variable."""

    default_timezone: str = "UTC"
    max_pending: int = 25
    min_repeat_s: int = 3600


def load_reminder_settings(env: Mapping[str, str]) -> ReminderSettings:
    """Read the variables; a bad value raises envsettings.SettingError naming it."""
    zone = read_str(env, "DEFAULT_TIMEZONE", "UTC")
    if zone not in zoneinfo.available_timezones():
        raise SettingError("DEFAULT_TIMEZONE", f"is not an IANA time zone name such as Europe/Paris: {zone!r}")
    return ReminderSettings(
        default_timezone=zone,
        max_pending=read_int(env, "REMINDERS_MAX_PENDING", 25, low=0, high=10_000),
        min_repeat_s=read_int(env, "REMINDERS_MIN_REPEAT_S", 3600, low=60),
    )
