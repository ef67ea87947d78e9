"""`/trace [message]`: the step-by-step trace of an earlier answer, in a thread under it.

The message is a link or an id; by default, the caller's last answer in this channel. Only the
person who asked, or a member with Manage Messages in the guild of the answer, may open the
trace of someone's answer.
"""

from __future__ import annotations

import discord
from discord import app_commands
from discord.ext import commands

from bot.discord_app.delivery import post_trace
from bot.discord_app.interactions import parse_message_ref, tell
from bot.interfaces import TraceAccess

__all__ = ["TraceCog"]


class TraceCog(commands.Cog):
    """The /trace command."""

    def __init__(self, bot: commands.Bot, traces: TraceAccess) -> None:
        self.bot = bot
        self.traces = traces

    @staticmethod
    def _moderates(interaction: discord.Interaction, guild_id: str | None) -> bool:
        """Manage Messages counts in the guild of the answer only (and a DM has no moderators)."""
        return (guild_id is not None and str(interaction.guild_id) == guild_id
                and interaction.permissions.manage_messages)

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
        if record.user_id != str(interaction.user.id) and not self._moderates(interaction, record.guild_id):
            await tell(interaction, "Only the person who asked, or someone with Manage Messages, can see that trace.")
            return
        if record.message_id is None:
            await tell(interaction, "That answer was private, so its trace cannot be posted in a thread.")
            return
        channel = self.bot.get_channel(int(record.channel_id)) or await self.bot.fetch_channel(int(record.channel_id))
        if not isinstance(channel, discord.abc.Messageable):
            await tell(interaction, "I can't reach the channel of that answer any more.")
            return
        try:
            anchor = await channel.fetch_message(int(record.message_id))
        except discord.NotFound:
            await tell(interaction, "That answer's message was deleted, so there is nothing to attach the trace to.")
            return
        where = await post_trace(anchor, record)
        if isinstance(where, discord.Thread):
            await tell(interaction, f"Trace posted in {where.mention}.")
        else:
            await tell(interaction, "Trace posted below the answer.")
