"""One typing indicator per channel, however many turns of that channel are waiting or running.

discord.py's `typing()` posts POST /channels/{id}/typing at once and again every 5 seconds
while its block runs. Held per message, a burst of mentions (several people of a channel, many
channels at once) makes one request per message at once and keeps re-posting for every
turn still queued, all on the event loop that must also acknowledge slash commands within
Discord's 3 seconds; Discord shows one indicator per channel anyway. `ChannelTyping.shown(where)`
keeps one background indicator per channel while at least one turn there holds it. A failing
indicator is logged and ends; the turns go on without it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

import discord

__all__ = ["ChannelTyping"]

log = logging.getLogger(__name__)


class ChannelTyping:
    """Shared typing indicators, one per channel (or thread) id."""

    def __init__(self) -> None:
        self._holders: dict[int, int] = {}
        self._tasks: dict[int, asyncio.Task[None]] = {}

    @property
    def showing(self) -> int:
        """Channels with an indicator running."""
        return len(self._tasks)

    @contextlib.asynccontextmanager
    async def shown(self, where: discord.abc.Messageable, channel_id: int) -> AsyncIterator[None]:
        """The indicator shows in `where` (whose id is `channel_id`) while any holder is inside."""
        self._holders[channel_id] = self._holders.get(channel_id, 0) + 1
        if channel_id not in self._tasks:
            self._tasks[channel_id] = asyncio.create_task(_keep_typing(where), name=f"typing-{channel_id}")
        try:
            yield
        finally:
            left = self._holders[channel_id] - 1
            if left:
                self._holders[channel_id] = left
            else:
                del self._holders[channel_id]
                self._tasks.pop(channel_id).cancel()


async def _keep_typing(where: discord.abc.Messageable) -> None:
    try:
        async with where.typing():
            await asyncio.Future()  # until cancelled by the last holder
    except discord.HTTPException:  # the indicator failed; the answers still go out
        log.warning("typing indicator failed in channel %s", getattr(where, "id", "?"), exc_info=True)
