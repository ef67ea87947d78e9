"""`/tldr [messages] [hours]`: a short summary of this channel's recent conversation, shown only
to the person who asked (bot.knowledge.tldr says what it reads and what it leaves out)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.discord_app.replies import split_message

if TYPE_CHECKING:
    from bot.knowledge.tldr import ChannelDigests

__all__ = ["TldrCog"]


class TldrCog(commands.Cog):
    """The /tldr command."""

    def __init__(self, digests: ChannelDigests) -> None:
        self.digests = digests

    @app_commands.command(name="tldr", description="Sum up this channel's recent conversation (only you see it)")
    @app_commands.describe(messages="How many recent messages to read", hours="Only messages from the last hours")
    async def tldr(self, interaction: discord.Interaction, messages: app_commands.Range[int, 1, 5000] | None = None,
                   hours: app_commands.Range[float, 0.1, 720.0] | None = None) -> None:
        await interaction.response.defer(ephemeral=True, thinking=True)
        guild_id = str(interaction.guild_id) if interaction.guild_id is not None else None
        digest = await self.digests.tldr(str(interaction.user.id), guild_id, str(interaction.channel_id),
                                         messages=messages, hours=hours)
        for part in split_message(digest.text):
            await interaction.followup.send(part, ephemeral=True,
                                            allowed_mentions=discord.AllowedMentions.none())
