"""`/trace [message]`: the memories an earlier answer recalled, and its step-by-step trace in a thread under it.

The message is a link or an id; by default, the caller's last answer in this channel. Only the
person who asked, or a member with Manage Messages in the channel of the answer (not merely in
the channel where /trace is run), may open the trace of someone's answer. The memories it
recalled (each with its rank, when and where it was said, an excerpt and a link to the message)
are the asker's own: they are shown to the asker alone, ephemerally, never in the thread nor to
a moderator; a memory forgotten since shows as forgotten.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.discord_app.delivery import post_trace
from bot.discord_app.interactions import parse_message_ref, tell
from bot.discord_app.memory_audit_views import recalled_lines
from bot.discord_app.views import paginate

if TYPE_CHECKING:  # the concrete services, for types only: cogs only call them
    from bot.services import PersonMemoryService, TraceService
    from memory.stores.traces import TraceRecord

__all__ = ["TraceCog"]


class TraceCog(commands.Cog):
    """The /trace command."""

    def __init__(self, bot: commands.Bot, traces: TraceService, memory: PersonMemoryService) -> None:
        self.bot = bot
        self.traces = traces
        self.memory = memory

    async def _recalled_pages(self, record: TraceRecord) -> list[str]:
        """The memories the answer recalled, as pages for its asker."""
        recalled = await self.memory.recalled(record)
        if not recalled:
            return ["No memories were recalled for that answer."]
        return paginate(["Memories recalled for that answer (only you see this):", *recalled_lines(recalled)])

    @staticmethod
    async def _reply(interaction: discord.Interaction, status: str, pages: list[str]) -> None:
        """One ephemeral reply: what became of the steps, then the asker's memories (more
        pages, if any, after it)."""
        first = f"{status}\n\n{pages[0]}" if pages else status
        if pages and len(first) > 2000:
            first, pages = status, [pages[0], *pages]
        await tell(interaction, first)
        for page in pages[1:]:
            await tell(interaction, page)

    @staticmethod
    def _moderates(interaction: discord.Interaction, guild_id: str | None, channel: object) -> bool:
        """Manage Messages counts in the channel of the answer only (and a DM has no moderators)."""
        member = interaction.user
        return (guild_id is not None and str(interaction.guild_id) == guild_id
                and isinstance(member, discord.Member)
                and isinstance(channel, (discord.abc.GuildChannel, discord.Thread))
                and channel.permissions_for(member).manage_messages)

    async def _channel(self, channel_id: str) -> object | None:
        try:
            return self.bot.get_channel(int(channel_id)) or await self.bot.fetch_channel(int(channel_id))
        except (discord.NotFound, discord.Forbidden):
            return None

    @app_commands.command(name="trace", description="Show how an answer was reached, step by step")
    @app_commands.describe(message="A link to the answer or its id (default: your last answer here)")
    async def trace(self, interaction: discord.Interaction, message: str | None = None) -> None:
        """Show an answer's trace in a thread."""
        await interaction.response.defer(ephemeral=True, thinking=True)
        if message:
            message_id = parse_message_ref(message)
            if message_id is None:
                await tell(interaction, "That is not a message link or id.")
                return
            record = await self.traces.trace_for_message(message_id)
        else:
            record = await self.traces.last_trace(str(interaction.user.id), str(interaction.channel_id))
        if record is None:
            await tell(interaction, "I have no trace for that answer.")
            return
        channel = await self._channel(record.channel_id)
        if record.user_id != str(interaction.user.id) and not self._moderates(interaction, record.guild_id, channel):
            await tell(interaction, "Only the person who asked, or someone with Manage Messages in the "
                                    "answer's channel, can see that trace.")
            return
        pages = await self._recalled_pages(record) if record.user_id == str(interaction.user.id) else []
        if record.message_id is None:
            await self._reply(interaction, "That answer was private, so its trace cannot be posted in a thread.", pages)
            return
        if not isinstance(channel, discord.abc.Messageable):
            await self._reply(interaction, "I can't reach the channel of that answer any more.", pages)
            return
        try:
            anchor = await channel.fetch_message(int(record.message_id))
        except discord.NotFound:
            await self._reply(interaction, "That answer's message was deleted, so there is nothing to attach "
                                           "the trace to.", pages)
            return
        where = await post_trace(anchor, record)
        if isinstance(where, discord.Thread):
            await self._reply(interaction, f"Trace posted in {where.mention}.", pages)
        else:
            await self._reply(interaction, "Trace posted below the answer.", pages)
