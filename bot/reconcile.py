"""Undo the memory writes whose turn was never stored (see memory.write_log).

At start-up every announced write still in the log belongs to a turn of an earlier process
that died before storing it: its items are deleted from the person's semantic memory and the
announcement settled. While the bot runs, a sweep does the same for announcements older than
a grace period (an add that timed out may land at the memory server some time after the turn
was given up), skipping turns that are storing right now. A memory store that cannot be
reached leaves the rest for the next pass. The person whose turn was cut simply asks again.

Part of bot/: joins memory's write log, trace store and semantic memory.
"""

from __future__ import annotations

import logging
from collections.abc import Container
from datetime import datetime
from typing import Protocol

from memory.errors import MemoryStoreError
from memory.semantic import MemoryHit
from memory.traces import TraceRecord
from memory.write_log import MemoryWriteLog

__all__ = ["reconcile_memory"]

log = logging.getLogger(__name__)


class _Memory(Protocol):
    async def list(self, user_id: str, scope: str | None = None) -> list[MemoryHit]: ...

    async def delete(self, user_id: str, item_id: str) -> bool: ...


class _Traces(Protocol):
    async def get(self, trace_id: str) -> TraceRecord | None: ...


async def reconcile_memory(writes: MemoryWriteLog, traces: _Traces, memory: _Memory, *,
                           older_than: datetime | None = None,
                           skip: Container[str] = ()) -> int:
    """Settle the log's leftover writes (announced before `older_than`, when given; none in
    `skip`); returns how many memory items were deleted."""
    deleted = 0
    for write in await writes.unsettled():
        if write.trace_id in skip or (older_than is not None and write.created_at >= older_than):
            continue
        if await traces.get(write.trace_id) is None:
            try:
                items = [hit.id for hit in await memory.list(write.user_id)
                         if hit.metadata.get("trace_id") == write.trace_id]
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
