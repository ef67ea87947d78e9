"""The channel buffer: what was just said in each channel, kept in SQLite across restarts.

One row per message. ``recent`` returns a channel's most recent window, oldest first, bounded
by a count and optionally by an approximate token budget (memory.tokens); the window is always
contiguous and loses its oldest messages first. When the newest message alone exceeds the
budget it is returned alone, cut to the budget with a visible marker (memory.tokens
.truncate_to_tokens), because the latest turn matters most; the stored row is never changed.
History stays on disk until ``prune`` (the retention setting) or ``clear``.

Content that is empty or only whitespace is refused with ValueError: it carries nothing for
the model, and some model endpoints reject empty messages (a caller with an attachment-only
message should describe the attachment instead). Any other text is stored exactly, including
NUL bytes and zero-width or right-to-left marks; lone surrogates become U+FFFD. Ids are opaque
strings (Discord snowflakes, or any other id such as the console's). Appending a message id
already stored for the channel does nothing, so a replayed Discord event is not stored twice.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Literal

from memory.stores.database import Database, epoch_us, from_epoch_us, require_id, storable_text
from memory.tokens import estimate_tokens, truncate_to_tokens

__all__ = ["BufferedMessage", "ChannelBuffer", "MessageSize"]

log = logging.getLogger(__name__)

ROLES = ("user", "assistant", "other")
PRUNE_BATCH = 5000

RECENT_SQL = (
    "SELECT * FROM buffer_messages WHERE channel_id = ? AND created_at_us > ? AND created_at_us < ? "
    "ORDER BY created_at_us DESC, id DESC LIMIT ?"
)
COUNT_SQL = "SELECT COUNT(*) AS n FROM buffer_messages WHERE channel_id = ? AND created_at_us > ?"
SIZES_SQL = (  # estimate_tokens: memory.tokens, registered on the connection (memory.stores.database)
    "SELECT created_at_us, estimate_tokens(content) AS tokens FROM buffer_messages "
    "WHERE channel_id = ? AND created_at_us > ? ORDER BY created_at_us DESC, id DESC LIMIT ?"
)
_EARLIEST, _LATEST = -(2**63), 2**63 - 1  # created_at_us bounds when none is given
PRUNE_SQL = (
    "DELETE FROM buffer_messages WHERE id IN "
    "(SELECT id FROM buffer_messages WHERE created_at_us < ? LIMIT ?)"
)

# a message deleted on Discord: the person's row, then the answer stored with it (the channel's
# next row, an assistant's, of the same time)
_DROP_MESSAGE = "DELETE FROM buffer_messages WHERE id = ?"
_FIND_MESSAGE = ("SELECT id, channel_id, created_at_us FROM buffer_messages "
                 "WHERE channel_id IN (?, ?) AND message_id = ? AND role IN ('user', 'other')")
_DROP_ANSWER = ("DELETE FROM buffer_messages WHERE id = (SELECT id FROM buffer_messages WHERE channel_id = ? "
                "AND id > ? ORDER BY id LIMIT 1) AND role = 'assistant' AND created_at_us = ?")

_INSERT = """
INSERT INTO buffer_messages
    (channel_id, guild_id, author_id, author_name, role, content, created_at_us, message_id)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (channel_id, message_id) WHERE message_id IS NOT NULL DO NOTHING
"""


@dataclass(frozen=True, slots=True)
class BufferedMessage:
    """One message of a channel's conversation."""

    channel_id: str
    guild_id: str | None  # None = a DM
    author_id: str
    author_name: str
    role: Literal["user", "assistant", "other"]
    content: str
    created_at: datetime  # timezone-aware
    message_id: str | None = None


@dataclass(frozen=True, slots=True)
class MessageSize:
    """A message's time and estimated tokens (memory.tokens), read without its text."""

    created_at: datetime
    tokens: int


def _row_of(msg: BufferedMessage) -> tuple[object, ...]:
    """Validate ``msg`` and return its row; raises TypeError/ValueError naming the field."""
    if not isinstance(msg, BufferedMessage):
        raise TypeError(f"expected a BufferedMessage, got {type(msg).__name__}")
    require_id("channel_id", msg.channel_id)
    require_id("guild_id", msg.guild_id, optional=True)
    require_id("author_id", msg.author_id)
    require_id("message_id", msg.message_id, optional=True)
    if not isinstance(msg.author_name, str):
        raise TypeError(f"author_name must be a str, got {type(msg.author_name).__name__}")
    if msg.role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}: {msg.role!r}")
    if not isinstance(msg.content, str):
        raise TypeError(f"content must be a str, got {type(msg.content).__name__}")
    if not msg.content.strip():
        raise ValueError("content is empty or only whitespace; describe what was sent instead")
    return (
        msg.channel_id,
        msg.guild_id,
        msg.author_id,
        storable_text(msg.author_name),
        msg.role,
        storable_text(msg.content),
        epoch_us(msg.created_at),
        msg.message_id,
    )


def _message_of(row: sqlite3.Row) -> BufferedMessage:
    return BufferedMessage(
        channel_id=row["channel_id"],
        guild_id=row["guild_id"],
        author_id=row["author_id"],
        author_name=row["author_name"],
        role=row["role"],
        content=row["content"],
        created_at=from_epoch_us(row["created_at_us"]),
        message_id=row["message_id"],
    )


class ChannelBuffer:
    """Per-channel message history on a Database."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def append(self, msg: BufferedMessage) -> None:
        """Store one message (a message id already stored for the channel is ignored)."""
        await self._db.execute(_INSERT, _row_of(msg))

    async def append_many(self, msgs: Sequence[BufferedMessage]) -> None:
        """Store messages in one transaction: all of them, or none if any is invalid."""
        rows = [_row_of(msg) for msg in msgs]
        if rows:
            await self._db.executemany(_INSERT, rows)

    async def recent(
        self, channel_id: str, *, limit: int = 40, token_budget: int | None = None,
        after: datetime | None = None, before: datetime | None = None,
    ) -> list[BufferedMessage]:
        """The channel's latest messages, oldest first: at most ``limit`` of them, and at most
        ``token_budget`` estimated tokens of content when a budget is given; only those stored
        after ``after`` and before ``before`` when given."""
        require_id("channel_id", channel_id)
        if limit < 0:
            raise ValueError(f"limit must be >= 0: {limit}")
        if token_budget is not None and token_budget < 0:
            raise ValueError(f"token_budget must be >= 0: {token_budget}")
        if limit == 0 or token_budget == 0:
            return []
        rows = await self._db.fetchall(RECENT_SQL, (channel_id, _EARLIEST if after is None else epoch_us(after),
                                                    _LATEST if before is None else epoch_us(before), limit))
        newest_first = [_message_of(row) for row in rows]
        if token_budget is not None:
            newest_first = _within_budget(newest_first, token_budget)
        newest_first.reverse()
        return newest_first

    async def count(self, channel_id: str, *, after: datetime | None = None) -> int:
        """How many messages the channel holds (stored after ``after`` when given)."""
        require_id("channel_id", channel_id)
        row = await self._db.fetchone(COUNT_SQL, (channel_id, _EARLIEST if after is None else epoch_us(after)))
        return int(row["n"]) if row is not None else 0

    async def sizes(self, channel_id: str, *, limit: int, after: datetime | None = None) -> list[MessageSize]:
        """The time and estimated tokens of the channel's latest ``limit`` messages (stored after
        ``after`` when given), oldest first: their text is measured in SQL, never read."""
        require_id("channel_id", channel_id)
        rows = await self._db.fetchall(SIZES_SQL, (channel_id, _EARLIEST if after is None else epoch_us(after), limit))
        return [MessageSize(from_epoch_us(row["created_at_us"]), int(row["tokens"])) for row in reversed(rows)]

    async def clear(self, channel_id: str) -> int:
        """Delete a channel's messages; returns how many were deleted."""
        require_id("channel_id", channel_id)
        deleted = await self._db.execute("DELETE FROM buffer_messages WHERE channel_id = ?", (channel_id,))
        log.info("cleared %d buffered messages of channel %s", deleted, channel_id)
        return deleted

    async def drop_message(self, message_id: str, channel_id: str, thread_id: str) -> int:
        """Delete a person's message that was deleted on Discord, kept in ``channel_id`` or in
        ``thread_id`` (a question that opened a thread is kept in it), and the answer stored
        with it; returns how many rows were deleted (0: it was never kept)."""
        for value, name in ((message_id, "message_id"), (channel_id, "channel_id"), (thread_id, "thread_id")):
            require_id(name, value)
        async with self._db.transaction():
            row = await self._db.fetchone(_FIND_MESSAGE, (channel_id, thread_id, message_id))
            if row is None:
                return 0
            deleted = await self._db.execute(_DROP_MESSAGE, (row["id"],))
            deleted += await self._db.execute(_DROP_ANSWER, (row["channel_id"], row["id"], row["created_at_us"]))
        log.info("dropped a message deleted on Discord from channel %s (%d row(s))", row["channel_id"], deleted)
        return deleted

    async def prune(self, older_than: datetime) -> int:
        """Delete messages created before ``older_than`` in all channels; returns how many.

        Deletes in batches, each its own transaction, so a large prune never holds the write
        lock for long (inside a caller's transaction it is all one).
        """
        total = await self._db.delete_in_batches(PRUNE_SQL, epoch_us(older_than), PRUNE_BATCH)
        if total:
            log.info("pruned %d buffered messages older than %s", total, older_than.isoformat())
        return total


def _within_budget(newest_first: list[BufferedMessage], budget: int) -> list[BufferedMessage]:
    kept: list[BufferedMessage] = []
    used = 0
    for msg in newest_first:
        cost = estimate_tokens(msg.content)
        if used + cost > budget:
            break
        kept.append(msg)
        used += cost
    if kept or not newest_first:
        return kept
    cut = truncate_to_tokens(newest_first[0].content, budget)
    return [] if cut is None else [replace(newest_first[0], content=cut)]
