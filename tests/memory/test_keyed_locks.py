"""memory.keyed_locks: one holder per key, keys independent, and no lock kept for a key nobody
holds or waits for (a waiter cancelled included)."""

from __future__ import annotations

import asyncio

from memory.keyed_locks import KeyedLocks


async def test_a_second_holder_of_the_same_key_waits_for_the_first() -> None:
    locks = KeyedLocks()
    order: list[str] = []

    async def hold(name: str) -> None:
        async with locks.held("alice"):
            order.append(f"{name} in")
            await asyncio.sleep(0.05)
            order.append(f"{name} out")

    await asyncio.gather(hold("first"), hold("second"))

    assert order == ["first in", "first out", "second in", "second out"]


async def test_holders_of_other_keys_do_not_wait() -> None:
    locks = KeyedLocks()
    async with locks.held("alice"):
        async with asyncio.timeout(1):
            async with locks.held("bob"):
                assert len(locks) == 2


async def test_no_lock_is_kept_once_its_holders_and_waiters_are_gone() -> None:
    locks = KeyedLocks()
    async with locks.held("alice"):
        waiter = asyncio.create_task(locks.held("alice").__aenter__())
        await asyncio.sleep(0.01)
        waiter.cancel()
        await asyncio.gather(waiter, return_exceptions=True)
        assert len(locks) == 1
    assert len(locks) == 0
