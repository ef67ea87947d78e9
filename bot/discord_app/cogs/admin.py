"""`/reset`: clear this channel's conversation buffer (needs Manage Messages)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.discord_app.interactions import tell

if TYPE_CHECKING:  # the concrete services, for types only: cogs only call them
    from bot.services import ChannelService

__all__ = ["AdminCog"]


class AdminCog(commands.Cog):
    """Channel administration commands."""

    def __init__(self, channels: ChannelService) -> None:
        self.channels = channels

    @app_commands.command(name="reset", description="Forget this channel's conversation (not people's memories)")
    @app_commands.default_permissions(manage_messages=True)
    async def reset(self, interaction: discord.Interaction) -> None:
        """Clear the channel buffer."""
        if interaction.guild_id is not None and not interaction.permissions.manage_messages:
            await tell(interaction, "You need the Manage Messages permission to reset this channel.")
            return
        removed = await self.channels.reset_channel(str(interaction.channel_id))
        await tell(interaction, f"Done: I forgot this channel's last {removed} message(s).", ephemeral=False)
