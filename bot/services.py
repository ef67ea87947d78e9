"""The services behind the front ends' commands other than a turn: traces, a person's own
memory, a channel's buffer (the interfaces of bot.interfaces).

Part of bot/: joins memory/'s stores; knows nothing of Discord.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

from bot.forgetting import Forgotten, forget_person
from bot.memory_audit import AuditEntry, RecalledMemory, audit_entries, recalled_memories
from bot.settings.place import PlaceSettingsService
from bot.turn.memory_reach import export_reach, list_reach
from bot.turn.privacy import MemoryPolicy, Reach
from bot.turn.scheduling import TurnScheduler
from memory.semantic import MemoryHit, UserMemory
from memory.stores.buffer import BufferedMessage, ChannelBuffer
from memory.stores.erasure import PersonErasure
from memory.stores.summaries import ChannelSummaries
from memory.stores.traces import TraceRecord, TraceStore

__all__ = ["ChannelService", "PersonMemoryService", "TraceService"]

CHATTER_MAX_CHARS = 4000


class TraceService:
    """Traces by id, by answer message, and a person's last one in a channel.

    A front end shows an answer before its turn is stored and before the stored trace is linked
    to the message that carries it; it holds ``answering`` over that time, and ``last_trace``
    for the same person and channel waits for it (at most ``settle_wait_s``), so that a
    `/trace` sent as the answer appears opens that answer's trace, not the one before it."""

    def __init__(self, traces: TraceStore, *, settle_wait_s: float = 10.0) -> None:
        self._traces = traces
        self._settle_wait_s = settle_wait_s
        self._on_the_way: dict[tuple[str, str], set[asyncio.Event]] = {}

    @asynccontextmanager
    async def answering(self, user_id: str, channel_id: str) -> AsyncIterator[None]:
        """Held from a turn's start until its answer is delivered and its trace linked."""
        # no await before the yield: the mention cog enters this with no suspension between
        # taking its channel's delivery slot and queueing the turn
        key, settled = (user_id, channel_id), asyncio.Event()
        turns = self._on_the_way.setdefault(key, set())
        turns.add(settled)
        try:
            yield
        finally:  # no await here: a cancelled turn still releases its waiters
            turns.discard(settled)
            if not turns:
                del self._on_the_way[key]
            settled.set()

    async def attach_message(self, trace_id: str, message_id: str) -> None:
        """Link a stored trace to the message that carries its answer."""
        await self._traces.attach_message(trace_id, message_id)

    async def trace_for_message(self, message_id: str) -> TraceRecord | None:
        return await self._traces.by_message(message_id)

    async def last_trace(self, user_id: str, channel_id: str) -> TraceRecord | None:
        # the answers on their way when asked (not those of turns begun while it waits)
        on_the_way = list(self._on_the_way.get((user_id, channel_id), ()))
        with contextlib.suppress(TimeoutError):  # a turn still running: its answer is not out yet either
            async with asyncio.timeout(self._settle_wait_s):
                for settled in on_the_way:
                    await settled.wait()
        return await self._traces.last_for(user_id, channel_id)

    async def get_trace(self, trace_id: str) -> TraceRecord | None:
        return await self._traces.get(trace_id)


class PersonMemoryService:
    """A person's memory here: where it reaches is bot.turn.privacy's ``MemoryPolicy.manage`` (a
    server's own `memory` setting counts); a forget erases their words there everywhere the
    bot keeps them (bot.forgetting), the SQLite ``rows`` included."""

    def __init__(self, memory: UserMemory, *, policy: MemoryPolicy | None = None,
                 places: PlaceSettingsService | None = None, rows: PersonErasure | None = None) -> None:
        self._memory = memory
        self._policy = policy or MemoryPolicy()
        self._places = places
        self._rows = rows

    def reach(self, guild_id: str | None) -> Reach:
        """What the person's memory commands cover here."""
        setting = None
        if guild_id is not None and self._places is not None:
            setting = self._places.for_place(guild_id, ()).memory  # the server's own value
        return self._policy.manage(guild_id, setting)

    async def memory_items(self, user_id: str, guild_id: str | None) -> list[MemoryHit]:
        """What the bot remembers of this person here, oldest first."""
        return await list_reach(self._memory, user_id, self.reach(guild_id))

    async def memory_export(self, user_id: str, guild_id: str | None) -> list[dict[str, Any]]:
        """The same items as JSON-safe dicts: id, text, scope, created_at (ISO), metadata."""
        return await export_reach(self._memory, user_id, self.reach(guild_id))

    async def memory_forget(self, user_id: str, guild_id: str | None) -> Forgotten:
        """Erase what the bot keeps of this person's words here; what was erased, by kind."""
        return await forget_person(self._memory, self._rows, user_id, self.reach(guild_id))

    async def memory_entries(self, user_id: str, guild_id: str | None) -> list[AuditEntry]:
        """The same items as numbered entries (bot.memory_audit): what /memory show lists. Built
        in a worker thread: it reads every item's words, which for a heavy user takes long
        enough to hold up every other turn and Discord's heartbeat."""
        return await asyncio.to_thread(audit_entries, await self.memory_items(user_id, guild_id))

    async def forget_items(self, user_id: str, entry: AuditEntry) -> int:
        """Delete the items of ``entry``, one of this person's entries listed by `memory_entries`
        (so theirs, in the place it was listed for); how many were deleted. An item gone since, or
        another person's, is left alone (UserMemory.delete is per person)."""
        return sum([await self._memory.delete(user_id, item_id) for item_id in dict.fromkeys(entry.item_ids)])

    async def recalled(self, record: TraceRecord) -> list[RecalledMemory]:
        """The memories ``record``'s answer recalled, as its asker's memory holds them now."""
        if not record.recalled:
            return []
        found = await self._memory.get(record.user_id, [r.item_id for r in record.recalled])
        items = {hit.id: hit for hit in found}
        return recalled_memories(record.recalled, items)


class ChannelService:
    """Clearing a channel's buffer (after the turn running there), and keeping chatter."""

    def __init__(self, buffer: ChannelBuffer, scheduler: TurnScheduler, *,
                 now: Callable[[], datetime], summaries: ChannelSummaries | None = None) -> None:
        self._buffer = buffer
        self._summaries = summaries
        self._scheduler = scheduler
        self._now = now

    async def reset_channel(self, channel_id: str) -> int:
        """Clear a channel's buffer and running summary (after any turn running there);
        returns messages removed."""
        async with self._scheduler.channel(channel_id):
            if self._summaries is not None:
                await self._summaries.clear(channel_id)
            return await self._buffer.clear(channel_id)

    async def messages_deleted(self, channel_id: str, message_ids: Sequence[str]) -> int:
        """Messages deleted on Discord leave the channel's conversation, each with the answer kept
        with it (a running summary that folded one in keeps what it made of it); rows removed.
        A question that opened a thread of its own (auto-thread) is kept in that thread, whose id
        is the message's. Each after the turns queued before it in either place: one of them may
        be storing it."""
        dropped = 0
        for message_id in message_ids:
            async with self._scheduler.channel(channel_id):
                pass  # not held for the thread's turn: the channel's own turns go on meanwhile
            async with self._scheduler.channel(message_id):
                dropped += await self._buffer.drop_message(message_id, channel_id, message_id)
        return dropped

    async def record_chatter(self, *, user_id: str, display_name: str, guild_id: str | None,
                             channel_id: str, text: str, message_id: str | None = None) -> bool:
        """Keep another person's message (not addressed to the bot) as channel context, role
        "other" (BUFFER_ALL_MESSAGES). Empty text is ignored; long text is cut. Returns whether
        something was stored."""
        text = text.strip()
        if not text:
            return False
        if len(text) > CHATTER_MAX_CHARS:
            text = text[:CHATTER_MAX_CHARS] + " [...]"
        await self._buffer.append(BufferedMessage(
            channel_id=channel_id, guild_id=guild_id, author_id=user_id, author_name=display_name,
            role="other", content=text, created_at=self._now(), message_id=message_id))
        return True
