"""Turns woken at the same moment start their heavy steps one per event-loop iteration
(bot.pacing), so that an iteration, and a heartbeat waiting behind it, holds one of them at
most; each turn passes the gate before its memory search and before its agent starts."""

from __future__ import annotations

import asyncio

from bot.pacing import LoopPacer
from bot.runtime import Runtime
from tests.bot.conftest import ask
from tests.fakes.openai_server import FakeOpenAI

TOGETHER = 20


async def test_waiters_woken_together_pass_one_per_loop_iteration_in_arrival_order() -> None:
    pacer = LoopPacer()
    loop = asyncio.get_running_loop()
    order: list[tuple[str, int]] = []

    async def turn(k: int) -> None:
        await pacer.wait()
        order.append(("pass", k))
        loop.call_soon(order.append, ("loop", k))  # what became due while this one passed

    await asyncio.gather(*(turn(k) for k in range(TOGETHER)))
    await asyncio.sleep(0)
    assert order == [step for k in range(TOGETHER) for step in (("pass", k), ("loop", k))]


async def test_a_waiter_alone_passes_after_one_turn_of_the_loop() -> None:
    pacer = LoopPacer()
    order: list[str] = []
    asyncio.get_running_loop().call_soon(order.append, "due before")
    await pacer.wait()
    order.append("passed")
    assert order == ["due before", "passed"]


async def test_a_cancelled_waiter_leaves_the_queue_and_the_rest_pass_in_order() -> None:
    pacer = LoopPacer()
    passed: list[int] = []

    async def turn(k: int) -> None:
        await pacer.wait()
        passed.append(k)

    tasks = [asyncio.create_task(turn(k)) for k in range(5)]
    await asyncio.sleep(0)        # all five are queued at the gate now
    tasks[2].cancel()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert passed == [0, 1, 3, 4]
    assert isinstance(results[2], asyncio.CancelledError)
    await asyncio.wait_for(pacer.wait(), 5)  # the gate is free again


class _CountingPacer(LoopPacer):
    def __init__(self) -> None:
        super().__init__()
        self.passed = 0

    async def wait(self) -> None:
        await super().wait()
        self.passed += 1


async def test_every_turn_passes_the_gate_before_its_memory_search_and_its_agent(
        runtime: Runtime, fake: FakeOpenAI) -> None:
    fake.default_content = "Final Answer: ok"
    pacer = runtime.pipeline.pacer = _CountingPacer()
    results = await asyncio.gather(*(runtime.pipeline.handle(ask(f"question {k}", channel=f"3000000000000001{k:02d}"))
                                     for k in range(TOGETHER)))
    assert [r.text for r in results] == ["ok"] * TOGETHER
    assert pacer.passed == 2 * TOGETHER
