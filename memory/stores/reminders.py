"""Reminders and scheduled questions, and each person's own time zone, in the SQLite file.

Storage design: one row per pending reminder in ``reminders`` (migration m009_reminders). A row
exists while something is still to be sent: a one-off is deleted once sent, a repeating one
moves its ``due_at_us`` to its next occurrence in the same statement that closes the one sent,
and a cancel deletes it. Every change to a due occurrence names the occurrence it closes
(``id`` and ``due_at_us``), so a cancel or a second process racing a delivery never closes the
wrong one. ``prepared`` holds the text chosen for the due occurrence (an asked question's
answer) before it is sent, so that a send retried after a crash sends the same words. What the
times mean (zones, recurrence rules) is the bot's business (bot.reminders); this store keeps
them and counts a person's pending reminders against a limit in the transaction that adds one.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import logging
import sqlite3
from dataclasses import dataclass
from datetime import datetime

from memory.stores.database import Database, epoch_us, from_epoch_us, require_id, storable_text

__all__ = ["NewReminder", "Reminder", "ReminderLimitReached", "ReminderStore"]

log = logging.getLogger(__name__)


class ReminderLimitReached(Exception):
    """The person already has the most pending reminders allowed."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"at most {limit} pending reminders per person")
        self.limit = limit


@dataclass(frozen=True, slots=True)
class NewReminder:
    """A reminder to store: who, where, what and when (``due_at``: its first occurrence)."""

    user_id: str
    display_name: str
    guild_id: str | None  # None: set in a DM
    channel_id: str
    by_dm: bool  # delivered by DM (set in a DM, or in a private answer)
    message: str
    ask: bool
    rule: str | None  # an RFC 5545 RRULE, None for a one-off
    zone: str  # the IANA zone its times are read in
    start_local: str  # the first occurrence as wall time in ``zone`` (the rule's DTSTART)
    due_at: datetime


@dataclass(frozen=True, slots=True)
class Reminder(NewReminder):
    """A stored reminder: its id, and ``prepared`` (the text of the due occurrence, once chosen)."""

    id: int = 0
    prepared: str | None = None
    created_at: datetime | None = None

    @property
    def due_at_us(self) -> int:
        return epoch_us(self.due_at)


_COLUMNS = ("id, user_id, display_name, guild_id, channel_id, by_dm, message, ask, rule, zone, start_local, "
            "due_at_us, prepared, created_at_us")


def _row(row: sqlite3.Row) -> Reminder:
    return Reminder(user_id=row["user_id"], display_name=row["display_name"], guild_id=row["guild_id"],
                    channel_id=row["channel_id"], by_dm=bool(row["by_dm"]), message=row["message"],
                    ask=bool(row["ask"]), rule=row["rule"], zone=row["zone"], start_local=row["start_local"],
                    due_at=from_epoch_us(row["due_at_us"]), id=int(row["id"]), prepared=row["prepared"],
                    created_at=from_epoch_us(row["created_at_us"]))


class ReminderStore:
    """Pending reminders and people's time zones on a Database."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(self, new: NewReminder, *, max_pending: int, now: datetime) -> Reminder:
        """Store ``new``; ReminderLimitReached when its person has ``max_pending`` already
        (counted in the same transaction, so two adds at once cannot both pass the limit)."""
        require_id("user_id", new.user_id)
        require_id("channel_id", new.channel_id)
        require_id("guild_id", new.guild_id, optional=True)
        if not new.message.strip():
            raise ValueError("message must not be empty")
        async with self._db.transaction():
            row = await self._db.fetchone("SELECT COUNT(*) AS n FROM reminders WHERE user_id = ?", (new.user_id,))
            if row is not None and int(row["n"]) >= max_pending:
                raise ReminderLimitReached(max_pending)
            await self._db.execute(
                "INSERT INTO reminders (user_id, display_name, guild_id, channel_id, by_dm, message, ask, rule, "
                "zone, start_local, due_at_us, created_at_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (new.user_id, storable_text(new.display_name), new.guild_id, new.channel_id, int(new.by_dm),
                 storable_text(new.message), int(new.ask), new.rule, new.zone, new.start_local,
                 epoch_us(new.due_at), epoch_us(now)))
            added = await self._db.fetchone(f"SELECT {_COLUMNS} FROM reminders WHERE id = last_insert_rowid()")
        assert added is not None  # inserted in this transaction
        return _row(added)

    async def get(self, reminder_id: int) -> Reminder | None:
        row = await self._db.fetchone(f"SELECT {_COLUMNS} FROM reminders WHERE id = ?", (reminder_id,))
        return _row(row) if row is not None else None

    async def pending_for(self, user_id: str) -> list[Reminder]:
        """The person's pending reminders, soonest first."""
        rows = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM reminders WHERE user_id = ? ORDER BY due_at_us, id", (user_id,))
        return [_row(r) for r in rows]

    async def due(self, now: datetime, *, after: Reminder | None = None, limit: int = 100) -> list[Reminder]:
        """Reminders whose occurrence is due at ``now``, oldest first: the first ``limit``, or
        with ``after`` (the last of a page read before) the next ``limit`` after it."""
        start = (after.due_at_us, after.id) if after is not None else (-1, 0)
        rows = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM reminders WHERE due_at_us <= ? AND (due_at_us, id) > (?, ?) "
            "ORDER BY due_at_us, id LIMIT ?", (epoch_us(now), *start, limit))
        return [_row(r) for r in rows]

    async def next_due(self, after: datetime) -> datetime | None:
        """When the soonest occurrence due after ``after`` falls due (None: none)."""
        row = await self._db.fetchone("SELECT MIN(due_at_us) AS t FROM reminders WHERE due_at_us > ?",
                                      (epoch_us(after),))
        return from_epoch_us(row["t"]) if row is not None and row["t"] is not None else None

    async def prepare(self, reminder: Reminder, text: str) -> bool:
        """Keep ``text`` as what the due occurrence of ``reminder`` says; False when that
        occurrence is no longer pending (cancelled, or closed by another process)."""
        changed = await self._db.execute(
            "UPDATE reminders SET prepared = ? WHERE id = ? AND due_at_us = ?",
            (storable_text(text), reminder.id, reminder.due_at_us))
        return changed == 1

    async def close(self, reminder: Reminder, next_due: datetime | None) -> bool:
        """The due occurrence of ``reminder`` was sent (or dropped): move it to ``next_due``, or
        delete it when there is none. False when that occurrence was not pending any more."""
        if next_due is None:
            changed = await self._db.execute(
                "DELETE FROM reminders WHERE id = ? AND due_at_us = ?", (reminder.id, reminder.due_at_us))
        else:
            changed = await self._db.execute(
                "UPDATE reminders SET due_at_us = ?, prepared = NULL WHERE id = ? AND due_at_us = ?",
                (epoch_us(next_due), reminder.id, reminder.due_at_us))
        return changed == 1

    async def cancel(self, user_id: str, reminder_id: int) -> bool:
        """Delete the person's reminder ``reminder_id``; False when they have none by that id."""
        return await self._db.execute(
            "DELETE FROM reminders WHERE id = ? AND user_id = ?", (reminder_id, user_id)) == 1

    async def drop(self, reminder_id: int) -> bool:
        """Delete a reminder that can never be delivered (its person is no longer let in)."""
        return await self._db.execute("DELETE FROM reminders WHERE id = ?", (reminder_id,)) == 1

    async def zone(self, user_id: str) -> str | None:
        """The person's own time zone (an IANA name), None when they never set one."""
        row = await self._db.fetchone("SELECT zone FROM user_timezones WHERE user_id = ?", (user_id,))
        return row["zone"] if row is not None else None

    async def set_zone(self, user_id: str, zone: str, *, now: datetime) -> None:
        require_id("user_id", user_id)
        require_id("zone", zone)
        await self._db.execute(
            "INSERT INTO user_timezones (user_id, zone, updated_at_us) VALUES (?, ?, ?) "
            "ON CONFLICT (user_id) DO UPDATE SET zone = excluded.zone, updated_at_us = excluded.updated_at_us",
            (user_id, zone, epoch_us(now)))
