"""The pipeline's coalescing memory writer (pure logic, with a small in-test double store)."""

from __future__ import annotations

import asyncio

import pytest

from bot.turn_store.coalescing import CoalescingAdder


class GatedStore:
    """add_many waits for `gate`, records each call's items, fails on items containing "bad"."""

    def __init__(self) -> None:
        self.calls: list[list[tuple]] = []
        self.gate = asyncio.Event()
        self.counter = 0

    async def add_many(self, items: list[tuple]) -> list[str]:
        self.calls.append(list(items))
        await self.gate.wait()
        if any("bad" in item[1] for item in items):
            raise RuntimeError("store down")
        ids = [f"id{self.counter + i}" for i in range(len(items))]
        self.counter += len(items)
        return ids


def item(text: str) -> tuple:
    return ("u", text, None, "dm")


async def test_writes_queued_behind_one_in_flight_go_together_and_each_gets_its_ids() -> None:
    store = GatedStore()
    adder = CoalescingAdder(store)
    first = asyncio.create_task(adder.add_many([item("a")]))
    await asyncio.sleep(0)
    later = [asyncio.create_task(adder.add_many([item(f"b{i}"), item(f"c{i}")])) for i in range(3)]
    await asyncio.sleep(0)
    store.gate.set()
    assert await first == ["id0"]
    assert [await t for t in later] == [["id1", "id2"], ["id3", "id4"], ["id5", "id6"]]
    assert [len(c) for c in store.calls] == [1, 6]


async def test_a_failed_batch_fails_only_its_own_turns() -> None:
    store = GatedStore()
    adder = CoalescingAdder(store, max_items=2)
    bad = asyncio.create_task(adder.add_many([item("bad one")]))
    await asyncio.sleep(0)
    good = asyncio.create_task(adder.add_many([item("fine"), item("also fine")]))
    await asyncio.sleep(0)
    store.gate.set()
    with pytest.raises(RuntimeError, match="store down"):
        await bad
    assert await good == ["id0", "id1"]


async def test_a_queue_longer_than_max_items_goes_in_several_calls_each_within_the_bound() -> None:
    store = GatedStore()
    adder = CoalescingAdder(store, max_items=4)
    first = asyncio.create_task(adder.add_many([item("a")]))
    await asyncio.sleep(0)
    later = [asyncio.create_task(adder.add_many([item(f"b{i}"), item(f"c{i}")])) for i in range(3)]
    await asyncio.sleep(0)
    store.gate.set()
    assert await first == ["id0"]
    assert [await t for t in later] == [["id1", "id2"], ["id3", "id4"], ["id5", "id6"]]
    assert [len(c) for c in store.calls] == [1, 4, 2]
