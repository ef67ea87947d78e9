"""Undo the memory writes whose turn was never stored, make the ones deferred (memory.stores.write_log).

At start-up every announced write still in the log belongs to a turn of an earlier process
that died before storing it: its items are deleted from the person's semantic memory and the
announcement settled. While the bot runs, a sweep does the same for announcements older than
a grace period (an add that timed out may land at the memory server some time after the turn
was given up), skipping turns that are storing right now. A memory store that cannot be
reached leaves the rest for the next pass. The person whose turn was cut simply asks again.

A deferred write (the turn was stored while the memory store was down, its items kept in the
log) is made by `write_deferred`: whatever of it landed before is deleted, the items are added,
and the row settled; a store still down leaves it for the next pass. A row a forget erased
while its items were being added (bot.forgetting erases the rows before the memory) is
announced again without its items, and they are deleted (here, or by `reconcile_memory` when
the store fails), so that the forget holds. bot.turn_store.TurnStore
calls both at start-up and then on its sweeps.

Part of bot/: joins memory's write log, trace store and semantic memory.
"""

from __future__ import annotations

import logging
from collections.abc import Container
from datetime import datetime

from memory.semantic import UserMemory
from memory.errors import MemoryStoreError
from memory.stores.write_log import MemoryWrite, MemoryWriteLog
from memory.stores.traces import TraceStore

__all__ = ["reconcile_memory", "write_deferred"]

log = logging.getLogger(__name__)


async def reconcile_memory(writes: MemoryWriteLog, traces: TraceStore, memory: UserMemory, *,
                           older_than: datetime | None = None,
                           skip: Container[str] = ()) -> int:
    """Settle the log's leftover writes (announced before `older_than`, when given; none in
    `skip`); returns how many memory items were deleted."""
    deleted = 0
    for write in await writes.unsettled():
        if write.trace_id in skip or (older_than is not None and write.created_at >= older_than):
            continue
        if write.deferred is not None:
            continue  # a stored turn's write still to be made: write_deferred's
        if await traces.get(write.trace_id) is None:
            try:
                items = await _landed(memory, write)
                for item_id in items:
                    deleted += await memory.delete(write.user_id, item_id)
            except MemoryStoreError as exc:
                log.warning("reconcile: the memory store failed (%s); %s and later writes wait "
                            "for the next pass", exc, write.trace_id)
                return deleted
            if items:
                log.info("reconcile: deleted %d memory item(s) of user %s whose turn %s was "
                         "never stored", len(items), write.user_id, write.trace_id)
        await writes.settle(write.trace_id)
    return deleted


async def _landed(memory: UserMemory, write: MemoryWrite) -> list[str]:
    """Ids of the items of `write` that are in the memory now."""
    return [hit.id for hit in await memory.list(write.user_id)
            if hit.metadata.get("trace_id") == write.trace_id]


async def write_deferred(writes: MemoryWriteLog, memory: UserMemory, *,
                         older_than: datetime | None = None) -> int:
    """Make the deferred writes (announced before `older_than`, when given); returns how many
    items were written. Stops at the first store failure (the rest wait for the next pass)."""
    written = 0
    for write in await writes.unsettled():
        if write.deferred is None or (older_than is not None and write.created_at >= older_than):
            continue
        try:
            for item_id in await _landed(memory, write):  # a part that landed before: once only
                await memory.delete(write.user_id, item_id)
            ids = await memory.add_many([(write.user_id, i.text, dict(i.metadata), i.scope)
                                         for i in write.deferred])
        except MemoryStoreError as exc:
            log.info("deferred memory writes wait: the memory store failed (%s)", exc)
            await _undo_later(writes, write)  # forgotten meanwhile: what lands late goes too
            return written
        if not await writes.settle(write.trace_id):
            # A forget erased the row while the items were being added: its own erase of the
            # memory may have run before they landed, so they go now.
            await _undo_later(writes, write)
            try:
                for item_id in ids:
                    await memory.delete(write.user_id, item_id)
            except MemoryStoreError as exc:
                log.warning("the deferred write %s was forgotten while it was made; the memory store "
                            "failed deleting its items (%s): the next pass does", write.trace_id, exc)
                return written
            await writes.settle(write.trace_id)
            log.info("deferred write %s of user %s was forgotten while it was made: its items "
                     "were deleted", write.trace_id, write.user_id)
            continue
        written += len(ids)
        log.info("wrote the %d deferred memory item(s) of turn %s of user %s", len(ids),
                 write.trace_id, write.user_id)
    return written


async def _undo_later(writes: MemoryWriteLog, write: MemoryWrite) -> None:
    """If a forget erased ``write``'s row, announce it again without its items: its turn's
    trace went with the forget, so `reconcile_memory` deletes whatever of it is in the memory,
    on this pass or a later one. A row still here is left as it is (its items wait)."""
    await writes.announce_unless_there(write.trace_id, write.user_id, write.created_at)
