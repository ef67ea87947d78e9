"""Erasing a person's words from the SQLite file, in one transaction.

What the file keeps of what a person said: their rows in channel buffers (questions to the bot,
and chatter kept with BUFFER_ALL_MESSAGES), the bot's answers to them there, their traces (the
question with its attachments' text and images' descriptions, the steps, the answer), and
memory writes of their turns deferred while the semantic memory was down (the items' text), their
pending reminders (what to say or ask them later), and the running summaries of the channels
where they still have messages (a summary mixes everyone's words, so it goes whole; the next one
is made from what remains). It notes the channels it erased words in (``channel_forgets``), so that
a summary folded from messages read before it is not stored after it (memory.stores.summaries).
``PersonErasure.erase`` deletes all of those, in every place or in one server, and returns how
many of each; the semantic memory's items are the caller's (its own store). Deleted content is
zeroed in the file (memory.stores.database sets ``secure_delete``) and the WAL is checkpointed and
emptied after an erasure, so the words are gone from the bytes on disk too.

The bot's answer to a question is the "assistant" row stored with it: in the same channel, at
the same time, right after it (the turn stores both at once); that pairing is how an answer is
found to be someone's. Token counts (memory.stores.usage) hold no words and are kept for the budgets.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from memory.stores.database import Database, epoch_us, require_id

__all__ = ["ErasedRows", "PersonErasure"]

log = logging.getLogger(__name__)

# "AND guild_id = ?" is added for an erasure in one server (rows of DMs have no guild id)
_REPLIES = """
DELETE FROM buffer_messages WHERE role = 'assistant' AND EXISTS (
    SELECT 1 FROM buffer_messages AS q
    WHERE q.author_id = ? AND q.role = 'user' AND q.channel_id = buffer_messages.channel_id
      AND q.created_at_us = buffer_messages.created_at_us AND q.id < buffer_messages.id
      AND NOT EXISTS (SELECT 1 FROM buffer_messages AS x
                      WHERE x.channel_id = q.channel_id AND x.id > q.id AND x.id < buffer_messages.id))
"""
_MESSAGES = "DELETE FROM buffer_messages WHERE author_id = ? AND role IN ('user', 'other')"
_DEFERRED = ("DELETE FROM memory_writes WHERE deferred_json IS NOT NULL AND user_id = ? AND trace_id IN "
             "(SELECT trace_id FROM traces WHERE user_id = ?{guild})")
_DEFERRED_EVERYWHERE = "DELETE FROM memory_writes WHERE deferred_json IS NOT NULL AND user_id = ?"
_TRACES = "DELETE FROM traces WHERE user_id = ?"
_REMINDERS = "DELETE FROM reminders WHERE user_id = ?"
_TIMEZONE = "DELETE FROM user_timezones WHERE user_id = ?"  # a person's own setting, not a server's
# the summaries that folded in the person's words, and (summaries made before their authors were
# kept) those of channels where the buffer still holds their messages
# the channels where the person's words are erased, for a fold that read them to see (m013);
# "{guild}" as above
_FORGOTTEN_IN = ("INSERT INTO channel_forgets (channel_id, at_us) SELECT DISTINCT channel_id, ? FROM buffer_messages "
                 "WHERE author_id = ? AND role IN ('user', 'other'){guild}")
_FORGETS_PRUNE = "DELETE FROM channel_forgets WHERE at_us < ?"
FORGETS_KEPT = timedelta(days=1)  # far longer than a fold (one model call) takes
_SUMMARIES = ("DELETE FROM channel_summaries WHERE channel_id IN (SELECT channel_id FROM buffer_messages "
              "WHERE author_id = ? AND role IN ('user', 'other'){guild}) OR channel_id IN "
              "(SELECT channel_id FROM channel_summary_authors WHERE author_id = ?{guild})")


@dataclass(frozen=True, slots=True)
class ErasedRows:
    """How many rows of each kind an erasure deleted."""

    messages: int = 0         # the person's own buffer rows
    replies: int = 0          # the bot's answers to them in buffers
    traces: int = 0
    deferred_writes: int = 0  # memory writes of their turns still to be made
    reminders: int = 0        # their pending reminders and scheduled questions
    summaries: int = 0        # running summaries of channels they spoke in
    time_zones: int = 0       # the time zone they set (an erasure everywhere only)

    @property
    def total(self) -> int:
        return (self.messages + self.replies + self.traces + self.deferred_writes + self.reminders + self.summaries
                + self.time_zones)


class PersonErasure:
    """Deletes a person's rows on a Database."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def erase(self, user_id: str, guild_id: str | None = None) -> ErasedRows:
        """Delete what the file keeps of ``user_id``'s words: everywhere (``guild_id`` None,
        DMs included) or in that server only."""
        require_id("user_id", user_id)
        require_id("guild_id", guild_id, optional=True)
        where = "" if guild_id is None else " AND guild_id = ?"
        place: tuple[str, ...] = () if guild_id is None else (guild_id,)
        async with self._db.transaction():
            if guild_id is None:
                deferred = await self._db.execute(_DEFERRED_EVERYWHERE, (user_id,))
            else:
                deferred = await self._db.execute(_DEFERRED.format(guild=where), (user_id, user_id, *place))
            now = datetime.now(UTC)
            await self._db.execute(_FORGETS_PRUNE, (epoch_us(now - FORGETS_KEPT),))
            await self._db.execute(_FORGOTTEN_IN.format(guild=where), (epoch_us(now), user_id, *place))
            summaries = await self._db.execute(_SUMMARIES.format(guild=where),
                                               (user_id, *place, user_id, *place))
            replies = await self._db.execute(_REPLIES + where, (user_id, *place))
            messages = await self._db.execute(_MESSAGES + where, (user_id, *place))
            traces = await self._db.execute(_TRACES + where, (user_id, *place))
            reminders = await self._db.execute(_REMINDERS + where, (user_id, *place))
            zones = await self._db.execute(_TIMEZONE, (user_id,)) if guild_id is None else 0
        # The WAL still holds the pages written before the delete: copy the zeroed pages into the
        # file and empty the WAL (best effort: a reader of another connection may hold it).
        await self._db.fetchall("PRAGMA wal_checkpoint(TRUNCATE)")
        erased = ErasedRows(messages=messages, replies=replies, traces=traces, deferred_writes=deferred,
                            reminders=reminders, summaries=summaries, time_zones=zones)
        log.info("erased user=%s guild=%s: %d message(s), %d answer(s), %d trace(s), %d deferred write(s), "
                 "%d reminder(s), %d summary(ies), %d time zone(s)", user_id, guild_id or "everywhere", messages, replies,
                 traces, deferred, reminders, summaries, zones)
        return erased
