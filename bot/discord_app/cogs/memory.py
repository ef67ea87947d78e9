"""`/memory show | export | forget [item]`: a person sees, downloads or erases what the bot keeps.

Everything is ephemeral. In a guild it covers what the person said in that guild (in public
and in private answers; everywhere with MEMORY_SCOPE=global), in a DM (private to them)
everything they said anywhere: bot.turn.privacy. `show` pages numbered entries with their date,
place and a link to the message, older ones on a subject marked (bot.memory_audit), and a
select menu to forget one entry of the page. `forget` with an entry's number forgets that
entry; without, all the bot keeps of their words there (bot.forgetting). Both ask for
confirmation first, then say what was forgotten.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import asyncio
import io
import json

import discord
from discord import app_commands
from discord.ext import commands

from bot.discord_app.interactions import tell
from bot.discord_app.memory_audit_views import MemoryPagerView, entry_pages, forget_prompt
from bot.discord_app.views import ConfirmView
from bot.memory_audit import AuditEntry

if TYPE_CHECKING:  # the concrete services, for types only: cogs only call them
    from bot.services import PersonMemoryService

__all__ = ["MemoryCog"]


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
        user_id, guild_id = self._ids(interaction)
        entries = await self.store.memory_entries(user_id, guild_id)
        if not entries:
            await tell(interaction, "I don't remember anything about you here.")
            return
        view = MemoryPagerView(interaction.user.id, entry_pages(entries),
                               lambda entry: self._forget_entry(user_id, entry))
        view.origin = interaction  # the followup fills the deferred original response
        await interaction.followup.send(view.page_text(), view=view, ephemeral=True)

    async def _forget_entry(self, user_id: str, entry: AuditEntry) -> str:
        gone = await self.store.forget_items(user_id, entry)
        if not gone:
            return f"Memory {entry.number} was already gone."
        return f"Done: I forgot memory {entry.number} ({gone} item(s)). {_copies_left(entry)}"

    @memory.command(name="export", description="Download what I remember about you here as JSON")
    async def export(self, interaction: discord.Interaction) -> None:
        await interaction.response.defer(ephemeral=True, thinking=True)
        items = await self.store.memory_export(*self._ids(interaction))
        # in a worker thread: a heavy user's 20,000 items took 0.4 s to write out
        data = await asyncio.to_thread(_export_json, str(interaction.user.id), items)
        file = discord.File(io.BytesIO(data), filename="memory.json")
        await interaction.followup.send(f"{len(items)} item(s).", file=file, ephemeral=True)

    @memory.command(name="forget", description="Erase what I remember about you here, or one memory")
    @app_commands.describe(item="The number of one memory in /memory show (default: everything here)")
    async def forget(self, interaction: discord.Interaction,
                     item: app_commands.Range[int, 1, 1_000_000] | None = None) -> None:
        user_id, guild_id = self._ids(interaction)
        if item is not None:
            await self._forget_one(interaction, user_id, guild_id, item)
            return

        async def erase() -> str:
            return (await self.store.memory_forget(user_id, guild_id)).summary()

        view = ConfirmView(interaction.user.id, erase)
        view.origin = interaction
        await interaction.response.send_message(
            "Erase everything I keep of what you said here (memories, your messages and my answers "
            "in channel histories, answer traces, reminders)? This cannot be undone.", view=view, ephemeral=True
        )

    async def _forget_one(self, interaction: discord.Interaction, user_id: str, guild_id: str | None,
                          number: int) -> None:
        """`/memory forget <number>`: the entry of that number in /memory show, after a confirmation."""
        await interaction.response.defer(ephemeral=True, thinking=True)
        entries = await self.store.memory_entries(user_id, guild_id)
        entry = next((e for e in entries if e.number == number), None)
        if entry is None:
            await tell(interaction, f"There is no memory {number} here: `/memory show` lists {len(entries)}.")
            return

        async def erase() -> str:
            return await self._forget_entry(user_id, entry)

        view = ConfirmView(interaction.user.id, erase)
        view.origin = interaction
        await interaction.followup.send(forget_prompt(entry), view=view, ephemeral=True)


def _export_json(user_id: str, items: list[dict[str, Any]]) -> bytes:
    return json.dumps({"user_id": user_id, "items": items}, ensure_ascii=False, indent=2).encode("utf-8")


def _copies_left(entry: AuditEntry) -> str:
    """What still holds the words of one forgotten entry (a private answer left none in a channel)."""
    where = ("the answer's trace" if entry.private and entry.guild_id is not None
             else "the recent conversation where it was said and the answer's trace")
    return f"Your words stay in {where} until they age out; `/memory forget` erases everything."
