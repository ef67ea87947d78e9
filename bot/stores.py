"""What the bot needs of memory/'s stores, as small Protocols (the turn path and the cogs'
services type their stores with these, not with the concrete classes or ``Any``).

memory.stores.buffer.ChannelBuffer, memory.stores.traces.TraceStore, memory.stores.database.Database and
memory.semantic.UserMemory satisfy them; tests may hand in anything that does.

Part of bot/: imports memory/'s record types only.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from memory.stores.buffer import BufferedMessage
from memory.semantic import AddItem, MemoryHit
from memory.stores.traces import TraceRecord

__all__ = ["BufferStore", "MemoryAdder", "PersonMemoryStore", "TraceStoreLike", "Transactional",
           "UserMemoryStore"]


class BufferStore(Protocol):
    """A channel's message history."""

    async def append(self, msg: BufferedMessage) -> None: ...
    async def append_many(self, msgs: Sequence[BufferedMessage]) -> None: ...
    async def recent(self, channel_id: str, *, limit: int = 40,
                     token_budget: int | None = None) -> list[BufferedMessage]: ...
    async def clear(self, channel_id: str) -> int: ...


class TraceStoreLike(Protocol):
    """One trace per answer."""

    async def save(self, rec: TraceRecord) -> None: ...
    async def attach_message(self, trace_id: str, message_id: str) -> None: ...
    async def get(self, trace_id: str) -> TraceRecord | None: ...
    async def by_message(self, message_id: str) -> TraceRecord | None: ...
    async def last_for(self, user_id: str, channel_id: str) -> TraceRecord | None: ...


class Transactional(Protocol):
    """A database whose ``transaction()`` commits what runs inside, or rolls it all back."""

    def transaction(self) -> AbstractAsyncContextManager[None]: ...


class MemoryAdder(Protocol):
    """Adds items (user_id, text, metadata, scope) in one call; the ids in order."""

    async def add_many(self, items: Sequence[AddItem]) -> list[str]: ...


class PersonMemoryStore(Protocol):
    """What a person may see, export and erase of their own memory."""

    async def list(self, user_id: str, scope: str | None = None) -> list[MemoryHit]: ...
    async def export(self, user_id: str, scope: str | None = None) -> list[dict[str, Any]]: ...
    async def forget(self, user_id: str, scope: str | None = None) -> int: ...


class UserMemoryStore(MemoryAdder, PersonMemoryStore, Protocol):
    """The per-person semantic memory as the turn path uses it."""

    async def search(self, user_id: str, query: str, k: int = 5,
                     scope: str | None = None) -> list[MemoryHit]: ...
    async def delete(self, user_id: str, item_id: str) -> bool: ...
