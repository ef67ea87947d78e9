"""The memory write log: a turn's semantic-memory write announced in SQLite before it is made.

The semantic memory (Chroma) and the SQLite file cannot share a transaction. So a turn first
commits a row (trace id, user id) here, then adds its items to the memory (their metadata
carry the trace id), then stores its buffer rows and trace in one SQLite transaction that also
deletes the row. A row that is still here names a write whose turn was never stored: the
process died between the two stores, or an add that timed out was given up and landed
later. Reconciling (bot.turn_store.reconcile) deletes that write's items and then the row, so an item
never outlives its turn, and a stored turn always has its items.

When the memory store cannot be reached, the turn is stored anyway and its items are kept in
the row instead (`defer`, in the turn's own transaction): the row then names a write still to
be made, which bot.turn_store.reconcile makes (first deleting whatever of it landed) before settling it.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memory.stores.database import Database, epoch_us, from_epoch_us, require_id

__all__ = ["DeferredItem", "MemoryWrite", "MemoryWriteLog"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class DeferredItem:
    """One memory item of a deferred write, as the semantic memory's add takes it."""

    text: str
    metadata: Mapping[str, Any]
    scope: str | None


@dataclass(frozen=True, slots=True)
class MemoryWrite:
    """One announced write: the items of `user_id` whose metadata `trace_id` is this one;
    `deferred` holds them when the turn is stored and the write is still to be made."""

    trace_id: str
    user_id: str
    created_at: datetime
    deferred: tuple[DeferredItem, ...] | None = None


class MemoryWriteLog:
    """Announced, not yet settled memory writes on a Database."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def announce(self, trace_id: str, user_id: str, when: datetime) -> None:
        """Commit the row before the write is made (its own transaction unless inside one)."""
        require_id("trace_id", trace_id)
        require_id("user_id", user_id)
        await self._db.execute(
            "INSERT INTO memory_writes (trace_id, user_id, created_at_us) VALUES (?, ?, ?)",
            (trace_id, user_id, epoch_us(when)))

    async def announce_unless_there(self, trace_id: str, user_id: str, when: datetime) -> bool:
        """`announce`, unless the row is still here (then it is left as it is); whether it was added."""
        require_id("trace_id", trace_id)
        require_id("user_id", user_id)
        return await self._db.execute(
            "INSERT INTO memory_writes (trace_id, user_id, created_at_us) VALUES (?, ?, ?)"
            " ON CONFLICT (trace_id) DO NOTHING", (trace_id, user_id, epoch_us(when))) > 0

    async def settle(self, trace_id: str) -> bool:
        """Drop the row: the turn is stored, or its items are gone. False if there was none."""
        require_id("trace_id", trace_id)
        return await self._db.execute("DELETE FROM memory_writes WHERE trace_id = ?", (trace_id,)) > 0

    async def defer(self, trace_id: str, items: Sequence[DeferredItem]) -> bool:
        """Keep the items of an announced write to be made later (call it in the transaction
        that stores the turn). False if the write was not announced."""
        require_id("trace_id", trace_id)
        payload = json.dumps([[i.text, dict(i.metadata), i.scope] for i in items])
        return await self._db.execute("UPDATE memory_writes SET deferred_json = ? WHERE trace_id = ?",
                                      (payload, trace_id)) > 0

    async def unsettled(self) -> list[MemoryWrite]:
        """Every row still here, oldest first."""
        rows = await self._db.fetchall(
            "SELECT trace_id, user_id, created_at_us, deferred_json FROM memory_writes"
            " ORDER BY created_at_us, trace_id")
        return [MemoryWrite(r["trace_id"], r["user_id"], from_epoch_us(r["created_at_us"]),
                            _items(r["deferred_json"])) for r in rows]


def _items(payload: str | None) -> tuple[DeferredItem, ...] | None:
    if payload is None:
        return None
    return tuple(DeferredItem(text, metadata, scope) for text, metadata, scope in json.loads(payload))
