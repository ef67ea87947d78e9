"""Memory writes of concurrent turns, coalesced into one ``add_many`` call.

Part of bot/: used by bot.turn_store.persistence; knows only the MemoryAdder Protocol (the
semantic memory, or a test's gated store).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Protocol

from memory.semantic import AddItem

__all__ = ["CoalescingAdder", "MemoryAdder"]

class MemoryAdder(Protocol):
    """Adds items (user_id, text, metadata, scope) in one call; the ids in order."""

    async def add_many(self, items: Sequence[AddItem]) -> list[str]: ...


_Entry = tuple[list[AddItem], "asyncio.Future[list[str]]"]


class CoalescingAdder:
    """While one add_many is in flight, the items of other turns queue and go together in the
    next call (why: docs/decisions/0004-coalesced-memory-adds.md). Each turn still gets
    exactly its own item ids back; if a call fails, every turn in that batch gets the error
    (and stores nothing else)."""

    def __init__(self, memory: MemoryAdder, max_items: int = 64) -> None:
        self._memory = memory
        self._max_items = max_items
        self._queue: list[_Entry] = []
        self._writer: asyncio.Task[None] | None = None

    async def add_many(self, items: list[AddItem]) -> list[str]:
        future: asyncio.Future[list[str]] = asyncio.get_running_loop().create_future()
        self._queue.append((items, future))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write(), name="memory-writer")
        return await future

    async def _write(self) -> None:
        while self._queue:
            batch: list[_Entry] = []
            count = 0
            while self._queue and (not batch or count + len(self._queue[0][0]) <= self._max_items):
                entry = self._queue.pop(0)
                batch.append(entry)
                count += len(entry[0])
            try:
                ids = await self._memory.add_many([item for items, _ in batch for item in items])
            except Exception as exc:
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                continue
            start = 0
            for items, future in batch:
                if not future.done():
                    future.set_result(ids[start:start + len(items)])
                start += len(items)
