"""A channel's answers are delivered in the order their turns were queued (bot.discord_app.delivery_order)."""

from __future__ import annotations

import asyncio
import logging

import pytest

from bot.discord_app.delivery_order import DeliveryOrder


async def _delivered(order: DeliveryOrder, channel: int, name: str, log: list[str],
                     hold: asyncio.Event | None = None) -> None:
    slot = order.take(channel)
    try:
        if hold is not None:
            await hold.wait()  # e.g. a send held back by a 429
        await slot.wait()
        log.append(name)
    finally:
        slot.release()


async def test_a_later_answer_waits_for_the_earlier_one_of_its_channel() -> None:
    order, log, held = DeliveryOrder(), [], asyncio.Event()
    first = asyncio.create_task(_delivered(order, 1, "first", log, held))
    await asyncio.sleep(0)  # the first slot is taken
    second = asyncio.create_task(_delivered(order, 1, "second", log))
    await asyncio.sleep(0.05)
    assert log == []  # the second is ready but waits
    held.set()
    await asyncio.gather(first, second)
    assert log == ["first", "second"]
    assert order.channels == 0  # nothing left behind


async def test_other_channels_do_not_wait() -> None:
    order, log, held = DeliveryOrder(), [], asyncio.Event()
    first = asyncio.create_task(_delivered(order, 1, "one", log, held))
    await asyncio.sleep(0)
    await asyncio.wait_for(_delivered(order, 2, "two", log), 1)
    assert log == ["two"]
    held.set()
    await first


async def test_a_failed_delivery_releases_its_channel() -> None:
    order, log = DeliveryOrder(), []

    async def failing() -> None:
        slot = order.take(1)
        try:
            raise RuntimeError("send failed")
        finally:
            slot.release()

    with pytest.raises(RuntimeError):
        await failing()
    await asyncio.wait_for(_delivered(order, 1, "next", log), 1)
    assert log == ["next"]


async def test_a_refusal_that_was_never_queued_goes_out_at_once() -> None:
    order = DeliveryOrder()
    earlier = order.take(1)
    refused = order.take(1)
    refused.unordered()
    await asyncio.wait_for(refused.wait(), 1)  # not behind `earlier`, still undelivered
    refused.release()
    earlier.release()
    await asyncio.sleep(0.01)  # the release callbacks ran
    assert order.channels == 0


async def test_a_stuck_earlier_delivery_holds_a_channel_only_so_long(caplog: pytest.LogCaptureFixture) -> None:
    order = DeliveryOrder(max_wait_s=0.05)
    stuck = order.take(7)
    later = order.take(7)
    with caplog.at_level(logging.WARNING, logger="bot.discord_app.delivery_order"):
        await asyncio.wait_for(later.wait(), 1)
    assert "channel 7" in caplog.text and "still being delivered" in caplog.text
    later.release()
    stuck.release()
    await asyncio.sleep(0.01)  # the release callbacks ran
    assert order.channels == 0


async def test_an_answer_released_early_still_keeps_the_later_ones_behind_the_earlier() -> None:
    order = DeliveryOrder()
    a, b, c = order.take(1), order.take(1), order.take(1)
    b.release()  # b gave up before its turn came (released twice: harmless)
    b.release()
    waiting = asyncio.create_task(c.wait())
    await asyncio.sleep(0.05)
    assert not waiting.done()  # c still waits for a
    a.release()
    await asyncio.wait_for(waiting, 1)
    c.release()
    await asyncio.sleep(0.01)  # the release callbacks ran
    assert order.channels == 0


async def test_a_refusal_keeps_the_answers_around_it_in_order() -> None:
    order = DeliveryOrder()
    earlier, refused, later = order.take(1), order.take(1), order.take(1)
    refused.unordered()
    refused.release()
    waiting = asyncio.create_task(later.wait())
    await asyncio.sleep(0.05)
    assert not waiting.done()  # the refusal did not let `later` past `earlier`
    earlier.release()
    await asyncio.wait_for(waiting, 1)
    later.release()


async def test_many_concurrent_answers_of_one_channel_keep_their_order() -> None:
    order, log = DeliveryOrder(), []
    holds = [asyncio.Event() for _ in range(50)]
    tasks = []
    for n, hold in enumerate(holds):
        tasks.append(asyncio.create_task(_delivered(order, 1, str(n), log, hold)))
        await asyncio.sleep(0)
    for hold in reversed(holds):  # ready in the opposite order
        hold.set()
        await asyncio.sleep(0)
    await asyncio.gather(*tasks)
    assert log == [str(n) for n in range(50)]
