"""The items cache (memory.semantic.caches.ItemsCache): bounded by the bytes its users' items take, as
last measured, evicting the least recently used; a user's growth counts once it is resized."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from memory.semantic.caches import ItemsCache
from memory.semantic.chroma_backend import StoredItem
from memory.semantic.user_items import UserItems


def items_of(count: int, first: int = 0) -> UserItems:
    entry = UserItems()
    grow(entry, count, first)
    return entry


def grow(entry: UserItems, count: int, first: int) -> None:
    new = [StoredItem(f"id{n}", f"text {n}", {"scope": "dm", "created_at": float(n)}) for n in range(first, first + count)]
    entry.append(new, np.ones((count, 8), np.float32))


def test_the_total_is_the_sum_of_the_cached_users_sizes_through_puts_drops_and_resizes() -> None:
    cache = ItemsCache(10**9)
    a, b = items_of(10), items_of(30)
    cache.put("a", a)
    cache.put("b", b)
    cache.put("a", a)  # the same user again: counted once
    assert cache.nbytes == a.nbytes + b.nbytes

    grow(a, 50, 100)
    assert cache.nbytes < a.nbytes + b.nbytes  # not measured again yet
    cache.resized(["a", "nobody"])
    assert cache.nbytes == a.nbytes + b.nbytes

    cache.drop("b")
    cache.drop("b")
    assert cache.nbytes == a.nbytes and len(cache) == 1
    cache.clear()
    assert cache.nbytes == 0 and len(cache) == 0


def test_a_cached_user_grown_past_the_bound_evicts_the_least_recently_used_when_resized() -> None:
    a, b, c = items_of(10), items_of(10), items_of(10)
    cache = ItemsCache(3 * a.nbytes + 1)
    for user_id, entry in (("a", a), ("b", b), ("c", c)):
        assert cache.put(user_id, entry) == []
    cache.get("a")  # b is now the least recently used

    grow(c, 5, 1000)  # now over the bound by less than one user
    assert c.nbytes < 2 * a.nbytes
    evicted = cache.resized(["c"])

    assert evicted == [b] and "b" not in cache and "a" in cache and "c" in cache
    assert cache.nbytes == a.nbytes + c.nbytes


def test_the_most_recent_user_stays_even_when_larger_than_the_whole_bound() -> None:
    cache = ItemsCache(1)
    cache.put("a", items_of(5))
    big = items_of(500)
    evicted = cache.put("big", big)

    assert len(evicted) == 1 and list(dict(cache.entries())) == ["big"]
    assert cache.nbytes == big.nbytes


def test_a_user_larger_than_the_whole_bound_is_told_of_once_naming_the_setting(
        caplog: pytest.LogCaptureFixture) -> None:
    cache = ItemsCache(items_of(50).nbytes)
    big = items_of(500)
    with caplog.at_level(logging.WARNING, logger="memory.semantic.caches"):
        cache.put("big", big)
        cache.put("a", items_of(5))
        cache.put("big", big)
        cache.resized(["big"])

    [warning] = caplog.records
    assert "user=big has 500 items" in warning.getMessage() and "raise MEMORY_CACHE_MB" in warning.getMessage()


def test_clearing_empties_the_cache_and_its_total() -> None:
    cache = ItemsCache(10**9)
    cache.put("a", items_of(3))
    cache.clear()
    assert len(cache) == 0 and cache.nbytes == 0 and cache.trim() == []


def test_a_bound_that_is_not_positive_is_refused() -> None:
    with pytest.raises(ValueError, match="cache_bytes"):
        ItemsCache(0)
