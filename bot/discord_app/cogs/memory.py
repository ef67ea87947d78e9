"""`/memory show | export | forget`: a person sees, downloads or erases what the bot keeps.

Everything is ephemeral. In a guild it covers what the person said in that guild (in public
and in private answers; everywhere with MEMORY_SCOPE=global), in a DM (private to them)
everything they said anywhere: bot.turn.privacy. Forgetting asks for confirmation first, then
erases all the bot keeps of their words there (bot.forgetting) and says what.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import io
import json
from datetime import UTC, datetime

import discord
from discord import app_commands
from discord.ext import commands

from bot.discord_app.interactions import tell
from bot.discord_app.views import ConfirmView, PagerView, paginate
from bot.turn.memory_tools import memory_entries

if TYPE_CHECKING:  # the concrete services, for types only: cogs only call them
    from bot.services import PersonMemoryService

__all__ = ["MemoryCog"]


def _when(created_at: float | None) -> str:
    if created_at is None:
        return "?"
    return datetime.fromtimestamp(created_at, UTC).strftime("%Y-%m-%d")


class MemoryCog(commands.Cog):
    """The /memory command group."""

    memory = app_commands.Group(name="memory", description="What the bot remembers about you")

    def __init__(self, memory: PersonMemoryService) -> None:
        self.store = memory

    def _ids(self, interaction: discord.Interaction) -> tuple[str, str | None]:
        guild_id = str(interaction.guild_id) if interaction.guild_id is not None else None
        return str(interaction.user.id), guild_id

    @memory.command(name="show", description="See what I remember about you here")
    async def show(self, interaction: discord.Interaction) -> None:
        await interaction.response.defer(ephemeral=True, thinking=True)
        items = await self.store.memory_items(*self._ids(interaction))
        if not items:
            await tell(interaction, "I don't remember anything about you here.")
            return
        lines = [f"{i}. [{_when(entry.created_at)}] {entry.text}" for i, entry in enumerate(memory_entries(items), 1)]
        pages = paginate(lines)
        if len(pages) == 1:
            await interaction.followup.send(pages[0], ephemeral=True)
            return
        view = PagerView(interaction.user.id, pages)
        view.origin = interaction  # the followup fills the deferred original response
        await interaction.followup.send(view.page_text(), view=view, ephemeral=True)

    @memory.command(name="export", description="Download what I remember about you here as JSON")
    async def export(self, interaction: discord.Interaction) -> None:
        await interaction.response.defer(ephemeral=True, thinking=True)
        items = await self.store.memory_export(*self._ids(interaction))
        data = json.dumps({"user_id": str(interaction.user.id), "items": items}, ensure_ascii=False, indent=2)
        file = discord.File(io.BytesIO(data.encode("utf-8")), filename="memory.json")
        await interaction.followup.send(f"{len(items)} item(s).", file=file, ephemeral=True)

    @memory.command(name="forget", description="Erase what I remember about you here")
    async def forget(self, interaction: discord.Interaction) -> None:
        user_id, guild_id = self._ids(interaction)

        async def erase() -> str:
            return (await self.store.memory_forget(user_id, guild_id)).summary()

        view = ConfirmView(interaction.user.id, erase)
        view.origin = interaction
        await interaction.response.send_message(
            "Erase everything I keep of what you said here (memories, your messages and my answers "
            "in channel histories, answer traces, reminders)? This cannot be undone.", view=view, ephemeral=True
        )
