"""`/remind list | cancel | timezone`: a person sees and cancels their own reminders, and sets
the time zone their times are read in.

Everything is ephemeral and about the person running the command only: the list shows their
pending reminders with the next time in their zone, `cancel` offers (autocomplete) and cancels
only theirs, `timezone` takes an IANA name (autocomplete from the installed zones, validated)
and without one shows the zone in use (DEFAULT_TIMEZONE until they set one).
"""

from __future__ import annotations

import zoneinfo

import discord
from discord import app_commands
from discord.ext import commands

from agent.tools.clock import zone_names
from bot.discord_app.interactions import tell
from bot.discord_app.views import PagerView, excerpt, paginate
from bot.reminders.schedule import ScheduleError, describe
from bot.reminders.service import Reminders
from memory.stores.reminders import Reminder

__all__ = ["RemindCog"]

CHOICES = 25  # Discord shows at most 25 autocomplete choices
SHOWN_CHARS = 120


class RemindCog(commands.Cog):
    """The /remind command group."""

    remind = app_commands.Group(name="remind", description="Your reminders and scheduled questions")

    def __init__(self, reminders: Reminders) -> None:
        self.reminders = reminders

    async def _line(self, reminder: Reminder, zone: zoneinfo.ZoneInfo) -> str:
        kind = "question" if reminder.ask else "reminder"
        repeat = f", repeats {reminder.rule}" if reminder.rule else ""
        where = "by DM" if reminder.by_dm else f"in <#{reminder.channel_id}>"
        return (f"#{reminder.id} · {describe(reminder.due_at, zone)} · {kind}{repeat}, {where}: "
                f"{excerpt(reminder.message, SHOWN_CHARS)}")

    @remind.command(name="list", description="See your pending reminders and scheduled questions")
    async def list_(self, interaction: discord.Interaction) -> None:
        await interaction.response.defer(ephemeral=True, thinking=True)
        user_id = str(interaction.user.id)
        pending = await self.reminders.pending(user_id)
        if not pending:
            await tell(interaction, "You have no pending reminders. Ask me to remind you of something!")
            return
        zone = await self.reminders.zone_of(user_id)
        lines = [await self._line(r, zone) for r in pending]
        pages = paginate(lines)
        if len(pages) == 1:
            await interaction.followup.send(pages[0], ephemeral=True)
            return
        view = PagerView(interaction.user.id, pages)
        view.origin = interaction
        await interaction.followup.send(view.page_text(), view=view, ephemeral=True)

    @remind.command(name="cancel", description="Cancel one of your reminders")
    @app_commands.describe(reminder="The reminder to cancel")
    async def cancel(self, interaction: discord.Interaction, reminder: int) -> None:
        if await self.reminders.cancel(str(interaction.user.id), reminder):
            await tell(interaction, f"Cancelled reminder #{reminder}.")
        else:
            await tell(interaction, f"You have no pending reminder #{reminder}; see /remind list.")

    @cancel.autocomplete("reminder")
    async def _own_reminders(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[int]]:
        user_id = str(interaction.user.id)
        zone = await self.reminders.zone_of(user_id)
        wanted = current.strip().lower().lstrip("#")
        choices = []
        for r in await self.reminders.pending(user_id):
            name = excerpt(f"#{r.id} {r.due_at.astimezone(zone):%a %d %b %H:%M} · {r.message}", 100)
            if wanted in name.lower():
                choices.append(app_commands.Choice(name=name, value=r.id))
        return choices[:CHOICES]

    @remind.command(name="timezone", description="Set the time zone your reminders' times are read in")
    @app_commands.describe(zone="An IANA time zone such as Europe/Paris; leave out to see yours")
    async def timezone(self, interaction: discord.Interaction, zone: str | None = None) -> None:
        user_id = str(interaction.user.id)
        if zone is None:
            current = await self.reminders.zone_of(user_id)
            await tell(interaction, f"Your time zone is {current.key}; it is {describe(self.reminders.now(), current)}.")
            return
        try:
            chosen = await self.reminders.set_zone(user_id, zone)
        except ScheduleError as exc:
            await tell(interaction, f"That did not work: {exc}.")
            return
        await tell(interaction, f"Your time zone is now {chosen.key}; it is {describe(self.reminders.now(), chosen)}.")

    @timezone.autocomplete("zone")
    async def _zones(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        wanted = current.strip().lower().replace(" ", "_")
        names = sorted(n for n in zone_names().values() if wanted in n.lower())  # read from disk once
        return [app_commands.Choice(name=n, value=n) for n in names[:CHOICES]]
