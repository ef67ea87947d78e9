"""What other processes sharing a Chroma server wrote: per-user versions and a change feed.

- `Versions`: a write counter per user. A load of a user's items that started before a write
  (ours, or one learned from the feed) ended is not cached, so a cache entry never misses a
  write that happened while it was being read.
- `ChangeFeed`: every add, delete and forget is also recorded, as a small record (user id,
  operation, item ids or scope, time, the writing process's origin id), in a sibling
  collection `<collection>__changes` on the same Chroma server. Each process polls it at most
  once per `interval_s` (`UserMemory` polls at the start of a search or list when the last
  poll is older than that), reading only the records since its last poll (less a look-back
  for clock skew and slow writers) and skipping its own: it then applies just those ids to
  the users it has cached. So an item added (or deleted, or forgotten) by another process is
  seen by every search that starts at least `interval_s` (default 1 s) after that process's
  call returned, without reloading anything else. Records older than `retention_s` are pruned;
  a process that could not poll for longer than that drops its whole cache instead.

Times in the records are wall-clock epoch seconds of the machines involved: processes on
machines whose clocks differ by more than `lookback_s` may miss each other's records.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memory.semantic.chroma_backend import ChromaStore
from memory.semantic.chroma_process import ChromaProcess

__all__ = ["FEED_SUFFIX", "Change", "ChangeFeed", "Versions"]

log = logging.getLogger(__name__)

FEED_SUFFIX = "__changes"
OPS = ("add", "delete", "forget")


class Versions:
    """A write counter per user (loop thread only)."""

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}

    def of(self, user_id: str) -> int:
        return self._counts.get(user_id, 0)

    def bump(self, user_id: str) -> int:
        self._counts[user_id] = count = self._counts.get(user_id, 0) + 1
        return count


@dataclass(frozen=True, slots=True)
class Change:
    """One write of another process: `item_ids` for add/delete, `scope` for forget (None = all)."""

    user_id: str
    op: str
    item_ids: tuple[str, ...]
    scope: str | None


class ChangeFeed:
    """The change records of every process using one collection (blocking; run in a worker)."""

    def __init__(self, log_store: ChromaStore | ChromaProcess, *, interval_s: float = 1.0, lookback_s: float = 10.0,
                 retention_s: float = 3_600.0, clock: Callable[[], float] = time.time) -> None:
        if interval_s <= 0 or lookback_s <= 0 or retention_s <= 2 * lookback_s:
            raise ValueError("the change feed needs interval_s > 0, lookback_s > 0 and retention_s > 2 * lookback_s")
        self.origin = uuid.uuid4().hex
        self.interval_s = interval_s
        self._store = log_store
        self._lookback_s = lookback_s
        self._retention_s = retention_s
        self._clock = clock
        self._last_poll = clock()
        self._last_prune = self._last_poll
        self._seen: dict[str, float] = {}

    def publish(self, user_id: str, op: str, item_ids: Sequence[str] = (), scope: str | None = None) -> None:
        """Record a write of this process (after it is in the store)."""
        if op not in OPS:
            raise ValueError(f"unknown change: {op!r}")
        meta = {"user_id": user_id, "op": op, "origin": self.origin, "at": self._clock(),
                "scope": scope or "", "all_scopes": scope is None}
        self._store.add([uuid.uuid4().hex], [[0.0]], [" ".join(item_ids)], [meta])

    def poll(self) -> list[Change] | None:
        """Other processes' changes since the last poll, oldest first; None when the last
        successful poll is so old that records may have been pruned (drop every cached user)."""
        now = self._clock()
        if now - self._last_poll > self._retention_s - self._lookback_s:
            self._last_poll = now
            self._seen.clear()
            return None
        since = self._last_poll - self._lookback_s
        records = self._store.get(where={"at": {"$gte": since}})
        self._last_poll = now
        self._seen = {rid: at for rid, at in self._seen.items() if at >= since}
        fresh = []
        for record in records:
            meta = record.metadata
            if record.id in self._seen or meta.get("origin") == self.origin or meta.get("op") not in OPS:
                continue
            self._seen[record.id] = float(meta.get("at", now))
            fresh.append((float(meta.get("at", now)), record))
        if now - self._last_prune > self._lookback_s:
            self._store.delete_where({"at": {"$lt": now - self._retention_s}})
            self._last_prune = now
        fresh.sort(key=lambda pair: pair[0])
        return [Change(str(r.metadata["user_id"]), str(r.metadata["op"]), tuple(r.text.split()),
                       None if r.metadata.get("all_scopes") else str(r.metadata.get("scope", "")))
                for _, r in fresh]
