"""bot.settings.reminders: DEFAULT_TIMEZONE, REMINDERS_MAX_PENDING and REMINDERS_MIN_REPEAT_S read
with their defaults; a bad value stops start-up with one line naming the variable."""

from __future__ import annotations

import pytest

from bot.settings.config import ConfigError, load_settings
from bot.settings.reminders import ReminderSettings

BASE = {"LLM_MODEL": "m"}


def test_the_defaults_are_utc_25_pending_and_hourly() -> None:
    assert load_settings(BASE).reminders == ReminderSettings("UTC", 25, 3600)


def test_the_three_settings_are_read() -> None:
    settings = load_settings({**BASE, "DEFAULT_TIMEZONE": "Europe/Paris", "REMINDERS_MAX_PENDING": "3",
                              "REMINDERS_MIN_REPEAT_S": "86400"})
    assert settings.reminders == ReminderSettings("Europe/Paris", 3, 86400)


@pytest.mark.parametrize("name, value", [
    ("DEFAULT_TIMEZONE", "Mars/Olympus"), ("DEFAULT_TIMEZONE", "../../etc/passwd"), ("DEFAULT_TIMEZONE", "Europe"),
    ("REMINDERS_MAX_PENDING", "-1"), ("REMINDERS_MAX_PENDING", "lots"), ("REMINDERS_MIN_REPEAT_S", "59"),
])
def test_a_bad_value_names_its_variable(name: str, value: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings({**BASE, name: value})
    assert str(info.value).startswith(name) and "\n" not in str(info.value)
