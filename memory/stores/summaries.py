"""A channel's running summary: what was said there before the messages a turn still reads.

One row per channel: the summary text, the time of the last buffer message it covers
(``through``; messages stored at that time or before are in it), and how many messages were
folded into it over its life. The bot writes it off the turn's path; `save` is a
compare-and-set so that a summary made from messages that a `/reset` (or a forget) removed
meanwhile, or made in parallel from an older summary, is never stored: it is refused unless
the row still covers what the summary was made from, no forget erased words in the channel
since the messages were read, and the buffer still holds the last message folded. `clear`
removes a channel's summary (a `/reset`), `prune` those that cover only messages past the
buffer's retention.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime

from memory.stores.database import Database, epoch_us, from_epoch_us, require_id, storable_text

__all__ = ["ChannelSummaries", "ChannelSummary"]


@dataclass(frozen=True, slots=True)
class ChannelSummary:
    """A channel's running summary and the last message time it covers."""

    channel_id: str
    text: str
    through: datetime
    folded: int


class ChannelSummaries:
    """Running summaries of channels on a Database."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def get(self, channel_id: str) -> ChannelSummary | None:
        require_id("channel_id", channel_id)
        row = await self._db.fetchone(
            "SELECT summary, through_us, folded FROM channel_summaries WHERE channel_id = ?", (channel_id,))
        if row is None:
            return None
        return ChannelSummary(channel_id, row["summary"], from_epoch_us(row["through_us"]), row["folded"])

    async def forget_mark(self) -> int:
        """The number of the last forget so far: a fold reads it before the messages it folds,
        and gives it to `save`."""
        row = await self._db.fetchone("SELECT MAX(seq) AS seq FROM channel_forgets")
        return int(row["seq"]) if row is not None and row["seq"] is not None else 0

    async def save(self, channel_id: str, text: str, *, through: datetime, folded: int,
                   previous: ChannelSummary | None, forget_mark: int, authors: Collection[str] = (),
                   guild_id: str | None = None) -> bool:
        """Store ``text`` as the channel's summary up to ``through`` if nothing changed since
        ``previous`` was read (None: there was no summary), no forget erased words in the channel
        since ``forget_mark`` (`forget_mark`, read before the messages were), and the buffer still
        holds a message of the channel at ``through``; whether it was stored. ``authors``: the
        people whose messages were folded in (in ``guild_id``'s channel; None: a DM), added to
        those of the summaries before it."""
        require_id("channel_id", channel_id)
        async with self._db.transaction():
            forgot = await self._db.fetchone("SELECT 1 FROM channel_forgets WHERE channel_id = ? AND seq > ? LIMIT 1",
                                             (channel_id, forget_mark))
            if forgot is not None:
                return False
            row = await self._db.fetchone("SELECT through_us FROM channel_summaries WHERE channel_id = ?",
                                          (channel_id,))
            current = None if row is None else row["through_us"]
            if current != (None if previous is None else epoch_us(previous.through)):
                return False
            still = await self._db.fetchone(
                "SELECT 1 FROM buffer_messages WHERE channel_id = ? AND created_at_us = ? LIMIT 1",
                (channel_id, epoch_us(through)))
            if still is None:
                return False
            await self._db.execute(
                "INSERT INTO channel_summaries (channel_id, summary, through_us, folded, updated_at_us) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (channel_id) DO UPDATE SET summary = excluded.summary, "
                "through_us = excluded.through_us, folded = excluded.folded, updated_at_us = excluded.updated_at_us",
                (channel_id, storable_text(text), epoch_us(through), folded, epoch_us(datetime.now(UTC))))
            await self._db.executemany(
                "INSERT OR IGNORE INTO channel_summary_authors (channel_id, author_id, guild_id) VALUES (?, ?, ?)",
                [(channel_id, author, guild_id) for author in sorted(set(authors))])
        return True

    async def prune(self, older_than: datetime) -> int:
        """Delete the summaries that cover only messages from before ``older_than`` (the
        buffer's retention); how many."""
        return await self._db.execute("DELETE FROM channel_summaries WHERE through_us < ?", (epoch_us(older_than),))

    async def clear(self, channel_id: str) -> int:
        """Remove a channel's summary; 1 if there was one, else 0."""
        require_id("channel_id", channel_id)
        return await self._db.execute("DELETE FROM channel_summaries WHERE channel_id = ?", (channel_id,))
