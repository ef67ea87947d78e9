"""The semantic memory's two caches: users' items by size, and recent query vectors.

- `ItemsCache`: an LRU of `UserItems` by user id, bounded by the bytes those items take
  (`UserItems.nbytes`), not by a count of users: one person with 50,000 items weighs as much
  as hundreds with a few. The most recently used user is never evicted, so one user bigger
  than the whole budget is still served from memory while in use (and evicted by anyone else's
  search: a warning names MEMORY_CACHE_MB, once per such user).
- `RecentVectors`: the vectors of the last few search queries, by text (thread-safe LRU).

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Iterable

import numpy as np

from memory.semantic import ranking
from memory.semantic.user_items import UserItems

__all__ = ["ItemsCache", "RecentVectors"]

log = logging.getLogger(__name__)


class ItemsCache:
    """User id -> UserItems, least recently used evicted first once over `max_bytes`.

    The cache keeps each user's size as it last measured it and their running total, so a
    write costs a measure of the users it touched, not of every user cached (summed over
    thousands of people on every write, that was milliseconds on the event loop). Whoever
    grows a cached user's items says so with `resized`."""

    def __init__(self, max_bytes: int) -> None:
        if max_bytes <= 0:
            raise ValueError(f"cache_bytes must be positive, not {max_bytes}")
        self.max_bytes = max_bytes
        self._entries: OrderedDict[str, UserItems] = OrderedDict()
        self._sizes: dict[str, int] = {}
        self._total = 0
        self._over_budget: set[str] = set()  # users told of in the log as larger than the bound

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, user_id: str) -> bool:
        return user_id in self._entries

    @property
    def nbytes(self) -> int:
        """The cached users' sizes as last measured (at `put` or `resized`)."""
        return self._total

    def get(self, user_id: str) -> UserItems | None:
        """The user's items (now the most recently used), or None."""
        entry = self._entries.get(user_id)
        if entry is not None:
            self._entries.move_to_end(user_id)
        return entry

    def peek(self, user_id: str) -> UserItems | None:
        """The user's items without marking them used."""
        return self._entries.get(user_id)

    def put(self, user_id: str, entry: UserItems) -> list[UserItems]:
        """Cache the user's items; returns the users' items evicted to make room (see `trim`)."""
        self._forget_size(user_id)
        self._entries[user_id] = entry
        self._entries.move_to_end(user_id)
        self._measure(user_id, entry)
        return self.trim()

    def resized(self, user_ids: Iterable[str]) -> list[UserItems]:
        """These users' items grew (or shrank): measure them again, then `trim`."""
        for user_id in user_ids:
            entry = self._entries.get(user_id)
            if entry is not None:
                self._forget_size(user_id)
                self._measure(user_id, entry)
        return self.trim()

    def drop(self, user_id: str) -> None:
        self._over_budget.discard(user_id)
        if self._entries.pop(user_id, None) is not None:
            self._forget_size(user_id)

    def clear(self) -> None:
        self._entries.clear()
        self._sizes.clear()
        self._over_budget.clear()
        self._total = 0

    def entries(self) -> list[tuple[str, UserItems]]:
        """(user id, items) of every cached user, least recently used first."""
        return list(self._entries.items())

    def trim(self) -> list[UserItems]:
        """Evict the least recently used users until the rest fit (the newest always stays);
        returns the evicted ones."""
        evicted: list[UserItems] = []
        while self._total > self.max_bytes and len(self._entries) > 1:
            user_id, entry = self._entries.popitem(last=False)
            self._forget_size(user_id)
            evicted.append(entry)
        return evicted

    def _measure(self, user_id: str, entry: UserItems) -> None:
        size = entry.nbytes
        if size > self.max_bytes and user_id not in self._over_budget:
            self._over_budget.add(user_id)
            log.warning("semantic memory: user=%s has %d items taking %d MB, more than MEMORY_CACHE_MB (%d MB): "
                        "anyone else's search evicts them and their next search loads them again; "
                        "raise MEMORY_CACHE_MB", user_id, len(entry), size >> 20, self.max_bytes >> 20)
        self._sizes[user_id] = size
        self._total += size

    def _forget_size(self, user_id: str) -> None:
        self._total -= self._sizes.pop(user_id, 0)


class RecentVectors:
    """The vectors of the last few search queries, by embedded text (thread-safe LRU).

    A turn searches memory with the person's message and then stores that same message: the
    add reuses the query's vector instead of running the model a second time. Texts are keyed
    by `ranking.search_form` (spaces folded, end punctuation trimmed, as plan_query does), so
    "Where to?" stored after searching "Where to?" hits; the vector is the search form's.
    """

    def __init__(self, size: int = 64) -> None:
        self._size = size
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, text: str) -> np.ndarray | None:
        key = ranking.search_form(text)
        with self._lock:
            vector = self._vectors.get(key)
            if vector is not None:
                self._vectors.move_to_end(key)
            return vector

    def put(self, text: str, vector: np.ndarray) -> None:
        key = ranking.search_form(text)
        with self._lock:
            self._vectors[key] = vector
            self._vectors.move_to_end(key)
            while len(self._vectors) > self._size:
                self._vectors.popitem(last=False)
