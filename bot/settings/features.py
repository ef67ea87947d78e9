"""Settings of the image, live-answer and daily-budget features, from the same env mapping.

Variables (empty values count as unset):
    LLM_VISION           the default model (LLM_MODEL) can read images (default false)
    IMAGE_MAX_BYTES      largest image attachment sent to the model (default 5000000)
    IMAGE_MAX_COUNT      images of one message sent to the model (default 4)
    USER_DAILY_TOKENS    tokens one person may use per UTC day, everywhere together (0 = no limit)
    GUILD_DAILY_TOKENS   tokens one server may use per UTC day, all its people together (0 = no limit)

Server documents, /tldr and the running summary: bot.settings.knowledge (``knowledge``).

Read by bot.settings.config into ``Settings.features``; kept apart so that these features' settings have
one owner. Part of bot/; imports only envsettings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from bot.settings.knowledge import KnowledgeSettings, load_knowledge_settings
from envsettings import read_bool, read_int

__all__ = ["FeatureSettings", "load_feature_settings"]


@dataclass(frozen=True, slots=True)
class FeatureSettings:
    """See the module docstring for each variable."""

    llm_vision: bool = False
    image_max_bytes: int = 5_000_000
    image_max_count: int = 4
    user_daily_tokens: int = 0
    guild_daily_tokens: int = 0
    knowledge: KnowledgeSettings = field(default_factory=KnowledgeSettings)


def load_feature_settings(env: Mapping[str, str]) -> FeatureSettings:
    """Read the variables; a bad value raises envsettings.SettingError naming it."""
    return FeatureSettings(
        llm_vision=read_bool(env, "LLM_VISION", False),
        image_max_bytes=read_int(env, "IMAGE_MAX_BYTES", 5_000_000, low=1, high=50_000_000),
        image_max_count=read_int(env, "IMAGE_MAX_COUNT", 4, low=1, high=20),
        user_daily_tokens=read_int(env, "USER_DAILY_TOKENS", 0, low=0),
        guild_daily_tokens=read_int(env, "GUILD_DAILY_TOKENS", 0, low=0),
        knowledge=load_knowledge_settings(env),
    )
