"""One asyncio lock per key (a person, a server), kept only while someone holds or waits for it.

Used by the semantic memory (one reader or cache update of a person's items at a time) and the
server documents (one change to a server's documents at a time). The stdlib has no keyed lock;
a dict of locks that never forgets its keys grows with every person ever seen.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

__all__ = ["KeyedLocks"]


@dataclass(slots=True)
class _Held:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    users: int = 0  # holding or waiting


class KeyedLocks:
    """`async with locks.held(key):` one holder per key at a time."""

    def __init__(self) -> None:
        self._locks: dict[str, _Held] = {}

    def __len__(self) -> int:
        return len(self._locks)

    @contextlib.asynccontextmanager
    async def held(self, key: str) -> AsyncIterator[None]:
        entry = self._locks.setdefault(key, _Held())
        entry.users += 1
        try:
            async with entry.lock:
                yield
        finally:
            entry.users -= 1
            if not entry.users:
                del self._locks[key]
