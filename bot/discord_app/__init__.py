"""The Discord front end: translates Discord events into pipeline requests and sends answers.

Handlers translate; the pipeline (bot.turn.pipeline) decides. Nothing in agent/ or memory/ imports
this package; it is the only part of bot/ that imports discord.py.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import discord
from discord.ext import commands

from bot.settings.config import Settings
from bot.discord_app.client import create_bot
from bot.errors import ConfigError
from bot.process.runtime import Runtime
from bot.process.shutdown import StopSignal, serve_until_stopped

__all__ = ["create_bot", "run_discord"]

log = logging.getLogger(__name__)

DELIVERY_GRACE_S = 10.0   # after the drain, for the last answers to reach Discord


def _handler_tasks() -> set[asyncio.Task[Any]]:
    """discord.py's running event handlers (a mention being answered) and slash commands."""
    me = asyncio.current_task()
    return {t for t in asyncio.all_tasks()
            if t is not me and not t.done()
            and (t.get_name().startswith("discord.py: on_") or t.get_name() == "CommandTree-invoker")}


async def _deliver_and_close(bot: commands.Bot) -> None:
    """Let handlers send what the drained turns answered (replies, "restarting"), then log out."""
    pending = _handler_tasks()
    if pending:
        _, late = await asyncio.wait(pending, timeout=DELIVERY_GRACE_S)
        if late:
            log.warning("shutdown: %d Discord handler(s) still running; closing anyway", len(late))
    await bot.close()


async def run_discord(settings: Settings, stop: StopSignal | None = None) -> None:
    """Open the stores, log in and serve until the connection is closed or ``stop`` is
    requested (then shut down gracefully: see bot.process.shutdown); the stores close on the way out."""
    if not settings.discord_token:
        raise ConfigError("DISCORD_TOKEN is not set; the Discord bot cannot log in")
    async with Runtime(settings) as runtime:
        bot = create_bot(runtime.services, settings, budget=runtime.budget, reminders=runtime.reminders)
        async with bot:
            try:
                serve = bot.start(settings.discord_token)
                if stop is None:
                    await serve
                else:
                    await serve_until_stopped(serve, runtime.pipeline.tracker, stop,
                                              timeout_s=settings.shutdown_timeout_s,
                                              finish=lambda _task: _deliver_and_close(bot))
            except discord.LoginFailure:
                raise ConfigError("DISCORD_TOKEN was not accepted by Discord (check the bot token)") from None
            except discord.PrivilegedIntentsRequired:
                raise ConfigError(
                    "MESSAGE_CONTENT_INTENT (or BUFFER_ALL_MESSAGES) needs the Message Content intent: "
                    "enable it for the bot in the Discord developer portal, or set both to false"
                ) from None
