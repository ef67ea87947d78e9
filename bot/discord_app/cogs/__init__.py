"""The bot's cogs: mentions, /ask, /trace, /memory, /remind, /reset, /settings, /usage, /docs and /tldr, each owning
its errors.

Handlers translate, the pipeline decides: cogs call the services of bot.interfaces.FrontEndServices
and the discord_app helpers, never the agent or the stores themselves."""

from __future__ import annotations

from bot.discord_app.cogs.admin import AdminCog
from bot.discord_app.cogs.ask import AskCog
from bot.discord_app.cogs.docs import DocsCog
from bot.discord_app.cogs.memory import MemoryCog
from bot.discord_app.cogs.mentions import MentionsCog
from bot.discord_app.cogs.remind import RemindCog
from bot.discord_app.cogs.settings import SettingsCog
from bot.discord_app.cogs.tldr import TldrCog
from bot.discord_app.cogs.trace import TraceCog
from bot.discord_app.cogs.usage import UsageCog

__all__ = ["AdminCog", "AskCog", "DocsCog", "MemoryCog", "MentionsCog", "RemindCog", "SettingsCog", "TldrCog", "TraceCog",
           "UsageCog"]
