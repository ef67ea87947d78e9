"""The image and budget settings: defaults, and one clear error naming a bad variable."""

from __future__ import annotations

import pytest

from bot.settings.features import FeatureSettings, load_feature_settings
from envsettings import SettingError


def test_unset_or_empty_variables_give_the_defaults() -> None:
    assert load_feature_settings({}) == FeatureSettings()
    assert load_feature_settings({"LLM_VISION": " ", "USER_DAILY_TOKENS": ""}) == FeatureSettings()


def test_values_are_read() -> None:
    got = load_feature_settings({"LLM_VISION": "true", "IMAGE_MAX_BYTES": "1000", "IMAGE_MAX_COUNT": "2",
                                 "USER_DAILY_TOKENS": "50000", "GUILD_DAILY_TOKENS": "200000"})
    assert got == FeatureSettings(True, 1000, 2, 50_000, 200_000)


@pytest.mark.parametrize(("name", "value"), [
    ("LLM_VISION", "sometimes"), ("IMAGE_MAX_BYTES", "0"), ("IMAGE_MAX_COUNT", "0"),
    ("IMAGE_MAX_COUNT", "21"), ("USER_DAILY_TOKENS", "-1"), ("GUILD_DAILY_TOKENS", "1e6"),
])
def test_a_bad_value_is_refused_naming_the_variable(name: str, value: str) -> None:
    with pytest.raises(SettingError) as info:
        load_feature_settings({name: value})
    assert str(info.value).startswith(name) and value in str(info.value)
