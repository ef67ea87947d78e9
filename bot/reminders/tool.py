"""The `remind` tool: the model sets a reminder or a scheduled question for the person asking.

Who and where come from the turn (the runtime's ToolContext and whether the answer is private),
never from the model: the tool has no user or channel parameter. A reminder set in a DM or in a
private answer is delivered by DM. The reminder is stored when the tool runs (not with the rest
of the turn): the observation tells the model, and so the person, that it is set and when it
will fire in their zone, and a turn that fails afterwards leaves it listed in /remind list.

Part of bot/: joins agent/ (tools) and bot.reminders.service.
"""

from __future__ import annotations

import dataclasses

from agent.tools.registry import Tool, ToolContext, ToolError, ToolFn, ToolRegistry
from bot.reminders.schedule import ScheduleError, describe
from bot.reminders.service import Place, Reminders

__all__ = ["ReminderTools"]


class ReminderTools:
    """The `remind` tool of one Reminders; `for_turn` binds it to a turn's privacy."""

    def __init__(self, reminders: Reminders, *, timeout_s: float | None = None) -> None:
        self.reminders = reminders
        self._tool = Tool.from_function(_remind_in(reminders, private=False), timeout_s=timeout_s)

    def for_turn(self, *, private: bool) -> ToolRegistry:
        """A registry with `remind`; ``private`` (a private answer) delivers by DM."""
        registry = ToolRegistry()
        registry.register(dataclasses.replace(self._tool, fn=_remind_in(self.reminders, private=private)))
        return registry


def _remind_in(reminders: Reminders, *, private: bool) -> ToolFn:

    async def remind(ctx: ToolContext, when: str, message: str, repeat: str | None = None,
                     ask: bool = False) -> str:
        """Remind this person of something later, or ask yourself a question for them later.

        Args:
            when: ISO 8601 date and time of the (first) reminder, e.g. "2026-12-04T09:00"; without
                an offset it is the person's own time zone, with one (or Z) it is absolute
            message: what to tell them then (or, with ask, the question to answer then)
            repeat: an RFC 5545 recurrence rule for a repeating reminder, e.g. "FREQ=DAILY;BYHOUR=8"
                or "FREQ=WEEKLY;BYDAY=MO"; leave out for a one-off
            ask: true to answer message as their question at that time (with tools) and post the answer
        """
        place = Place(user_id=ctx.user_id, display_name=ctx.display_name or ctx.user_id, guild_id=ctx.guild_id,
                      channel_id=ctx.channel_id, by_dm=private or ctx.guild_id is None)
        try:
            added, zone = await reminders.create(place, when, message, repeat, ask)
        except ScheduleError as exc:
            raise ToolError(str(exc)) from None
        what = "question scheduled" if added.ask else "reminder set"
        repeats = f", then repeating by {added.rule}" if added.rule else ""
        where = "by direct message" if place.by_dm else "here, mentioning only them"
        return (f"{what.capitalize()} (#{added.id}): first at {describe(added.due_at, zone)}{repeats}; "
                f"it will be posted {where}.")

    return remind
