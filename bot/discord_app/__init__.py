"""The Discord front end: translates Discord events into pipeline requests and sends answers.

Handlers translate; the pipeline (bot.pipeline) decides. Nothing in agent/ or memory/ imports
this package; it is the only part of bot/ that imports discord.py.
"""

from __future__ import annotations

import logging

import discord

from bot.config import Settings
from bot.discord_app.client import create_bot
from bot.errors import ConfigError
from bot.runtime import Runtime

__all__ = ["create_bot", "run_discord"]

log = logging.getLogger(__name__)


async def run_discord(settings: Settings) -> None:
    """Open the stores, log in and serve until the connection is closed."""
    if not settings.discord_token:
        raise ConfigError("DISCORD_TOKEN is not set; the Discord bot cannot log in")
    async with Runtime(settings) as runtime:
        bot = create_bot(runtime.pipeline, settings)
        async with bot:
            try:
                await bot.start(settings.discord_token)
            except discord.LoginFailure:
                raise ConfigError("DISCORD_TOKEN was not accepted by Discord (check the bot token)") from None
            except discord.PrivilegedIntentsRequired:
                raise ConfigError(
                    "BUFFER_ALL_MESSAGES needs the Message Content intent: enable it for the bot "
                    "in the Discord developer portal, or set BUFFER_ALL_MESSAGES=false"
                ) from None
