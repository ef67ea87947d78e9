"""Reminders as people and the model use them: set one, list, cancel, and a person's time zone.

One place for the rules of a new reminder (its time read in the person's zone, its rule at most
as frequent as REMINDERS_MIN_REPEAT_S, at most REMINDERS_MAX_PENDING of one person pending): the
`remind` tool (bot.reminders.tool) and the /remind commands both go through `Reminders`. A
person's zone is read once from the store and then kept here (it changes only through
`set_zone`); a person who never set one has DEFAULT_TIMEZONE.

Part of bot/: joins memory/'s ReminderStore with bot.reminders.schedule; knows nothing of Discord.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from agent.tools.clock import resolve_zone
from agent.tools.registry import ToolError
from bot.reminders.schedule import ScheduleError, describe, parse_when, plan_rule
from bot.settings.reminders import ReminderSettings
from memory.stores.reminders import NewReminder, Reminder, ReminderLimitReached, ReminderStore

__all__ = ["MAX_MESSAGE_CHARS", "Place", "Reminders"]

log = logging.getLogger(__name__)

MAX_MESSAGE_CHARS = 1500  # with the mention and a "late by" note, one Discord message


@dataclass(frozen=True, slots=True)
class Place:
    """Who set a reminder and where: it is delivered there (``by_dm``: by direct message)."""

    user_id: str
    display_name: str
    guild_id: str | None
    channel_id: str
    by_dm: bool


class Reminders:
    """See the module docstring; ``now`` is the clock (tests move it)."""

    def __init__(self, store: ReminderStore, settings: ReminderSettings, *,
                 now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.store = store
        self.settings = settings
        self.now = now
        self._zones: dict[str, ZoneInfo] = {}
        self.added: Callable[[], None] = lambda: None  # a delivery loop waiting for the next due time listens

    async def zone_of(self, user_id: str) -> ZoneInfo:
        """The person's time zone: theirs, else DEFAULT_TIMEZONE."""
        if (zone := self._zones.get(user_id)) is None:
            name = await self.store.zone(user_id) or self.settings.default_timezone
            zone = self._zones[user_id] = ZoneInfo(name)
        return zone

    async def set_zone(self, user_id: str, name: str) -> ZoneInfo:
        """Keep the IANA zone ``name`` (case and spaces forgiven) as the person's; ScheduleError
        naming a valid example when unknown."""
        try:
            zone = resolve_zone(name) if (name or "").strip() else None
        except ToolError as exc:
            raise ScheduleError(str(exc)) from None
        if zone is None:
            raise ScheduleError("give an IANA time zone name such as Europe/Paris")
        await self.store.set_zone(user_id, zone.key, now=self.now())
        self._zones[user_id] = zone
        return zone

    async def create(self, place: Place, when: str, message: str, repeat: str | None = None,
                     ask: bool = False) -> tuple[Reminder, ZoneInfo]:
        """Store a new reminder; ScheduleError (a sentence) when it cannot be."""
        message = message.strip()
        if not message:
            raise ScheduleError("message is empty; say what to remind them of")
        if len(message) > MAX_MESSAGE_CHARS:
            raise ScheduleError(f"message is {len(message)} characters; keep it under {MAX_MESSAGE_CHARS}")
        zone = await self.zone_of(place.user_id)
        now = self.now()
        due, start_local = parse_when(when, zone)
        rule = None
        if repeat is not None and repeat.strip():
            rule, due = await plan_rule(repeat, start_local, zone, now,
                                        timedelta(seconds=self.settings.min_repeat_s))
        elif due <= now:
            raise ScheduleError(f"{when.strip()[:40]} has already passed: it is now {describe(now, zone)}; "
                                "give a time in the future")
        new = NewReminder(user_id=place.user_id, display_name=place.display_name, guild_id=place.guild_id,
                          channel_id=place.channel_id, by_dm=place.by_dm, message=message, ask=ask, rule=rule,
                          zone=zone.key, start_local=start_local.isoformat(), due_at=due)
        try:
            added = await self.store.add(new, max_pending=self.settings.max_pending, now=now)
        except ReminderLimitReached as exc:
            raise ScheduleError(f"they already have {exc.limit} pending reminders, the most allowed; "
                                "they can cancel some with /remind cancel") from None
        log.info("reminder %d set by user=%s guild=%s due=%s repeat=%s ask=%s", added.id, place.user_id,
                 place.guild_id or "dm", due.isoformat(), rule or "-", ask)
        self.added()
        return added, zone

    async def pending(self, user_id: str) -> list[Reminder]:
        """The person's pending reminders, soonest first."""
        return await self.store.pending_for(user_id)

    async def cancel(self, user_id: str, reminder_id: int) -> bool:
        """Cancel the person's own reminder; False when they have none by that id."""
        cancelled = await self.store.cancel(user_id, reminder_id)
        if cancelled:
            log.info("reminder %d cancelled by user=%s", reminder_id, user_id)
        return cancelled
