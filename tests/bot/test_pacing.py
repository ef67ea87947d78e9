"""Work that becomes ready together is spread over loop iterations, a time budget's worth per
iteration (bot.process.pacing), so that an iteration, and a heartbeat waiting behind it, holds no
more than that; each turn passes the gate before its memory search and before its agent.
The clock is the test's: each step "costs" what the test says, nothing is timed."""

from __future__ import annotations

import asyncio

import pytest

from bot.process.pacing import LoopPacer
from bot.process.runtime import Runtime
from tests.bot.conftest import ask
from tests.fakes.openai_server import FakeOpenAI

TOGETHER = 20


class _Clock:
    """Advances by `step` each time it is read: every caller's step costs that much."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


async def _pass_together(pacer: LoopPacer, count: int) -> list[str]:
    """`count` callers woken at once; "pass k" when one passes, "loop" once per iteration."""
    loop = asyncio.get_running_loop()
    order: list[str] = []

    def iteration() -> None:
        order.append("loop")
        if len([o for o in order if o.startswith("pass")]) < count:
            loop.call_soon(iteration)

    async def caller(k: int) -> None:
        await pacer.wait()
        order.append(f"pass {k}")

    loop.call_soon(iteration)
    await asyncio.gather(*(caller(k) for k in range(count)))
    return order


async def test_callers_pass_at_once_while_the_budget_lasts_and_the_rest_in_later_iterations() -> None:
    pacer = LoopPacer(budget_s=0.02, clock=_Clock(step=0.008))  # three steps fit: 0, 8 and 16 ms
    order = await _pass_together(pacer, 7)
    passes = " ".join(o for o in order if o.startswith("pass"))
    assert passes == "pass 0 pass 1 pass 2 pass 3 pass 4 pass 5 pass 6"  # arrival order
    runs = " ".join(order).split("loop")   # what passed in each iteration
    assert [r.split() for r in runs if r.strip()] == [
        ["pass", "0", "pass", "1", "pass", "2"], ["pass", "3", "pass", "4", "pass", "5"], ["pass", "6"]]


async def test_steps_cheaper_than_the_budget_all_pass_in_one_iteration() -> None:
    pacer = LoopPacer(budget_s=0.02, clock=_Clock(step=0.0001))
    order = await _pass_together(pacer, TOGETHER)
    assert "loop" not in order[order.index("pass 0"):order.index(f"pass {TOGETHER - 1}")]


async def test_a_step_dearer_than_the_budget_has_its_iteration_to_itself() -> None:
    pacer = LoopPacer(budget_s=0.02, clock=_Clock(step=0.05))
    order = await _pass_together(pacer, 4)
    assert [o for o in order if o != "loop"] == ["pass 0", "pass 1", "pass 2", "pass 3"]
    between = " ".join(order[order.index("pass 0"):]).split("pass")
    assert all("loop" in gap for gap in between[2:])  # a loop iteration before each later pass


async def test_a_cancelled_caller_leaves_and_the_others_still_pass() -> None:
    pacer = LoopPacer(budget_s=0.0, clock=_Clock(step=0.001))   # one per iteration
    passed: list[int] = []

    async def caller(k: int) -> None:
        await pacer.wait()
        passed.append(k)

    tasks = [asyncio.create_task(caller(k)) for k in range(5)]
    await asyncio.sleep(0)
    tasks[3].cancel()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert sorted(passed) == [0, 1, 2, 4] and isinstance(results[3], asyncio.CancelledError)


def test_a_window_left_open_by_a_stopped_loop_does_not_hold_the_next_loop() -> None:
    clock = _Clock(step=1.0)  # every read is a second later: any open window is spent
    pacer = LoopPacer(budget_s=0.02, clock=clock)
    first = asyncio.new_event_loop()
    try:
        first.run_until_complete(pacer.wait())   # opens a window; its closing never runs
    finally:
        first.close()
    asyncio.run(asyncio.wait_for(pacer.wait(), 5))


@pytest.mark.parametrize("budget_s", [0.0, 0.02])
async def test_every_turn_passes_the_gate_before_its_memory_search_and_its_agent(
        runtime: Runtime, fake: FakeOpenAI, budget_s: float) -> None:
    fake.default_content = "Final Answer: ok"

    class Counting(LoopPacer):
        passed = 0

        async def wait(self) -> None:
            await super().wait()
            Counting.passed += 1

    runtime.pipeline.pacer = Counting(budget_s=budget_s)
    results = await asyncio.gather(*(runtime.pipeline.handle(ask(f"question {k}", user=f"2000000000000001{k:02d}",
                                                                 channel=f"3000000000000001{k:02d}"))
                                     for k in range(TOGETHER)))
    assert [r.text for r in results] == ["ok"] * TOGETHER
    assert Counting.passed == 2 * TOGETHER
