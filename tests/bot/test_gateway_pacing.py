"""The gateway reader yields to the event loop once the iteration's budget is spent: a burst of
events that arrives in one read no longer holds the loop until the last of them is handled, so
whatever else is due (discord.py's heartbeat, handed to the loop by its keep-alive thread) runs
in between (bot.discord_app.gateway_pacing). Here the budget is nil, so that every frame
spends it (no timing in the test: bot.process.pacing's own tests cover the budget)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from discord.gateway import DiscordWebSocket

from bot.discord_app import gateway_pacing
from bot.discord_app.patches import install_gateway_pacing
from tests.bot.discord_fixtures import BotUnderTest, World

BURST = 50


@pytest.fixture(autouse=True)
def every_frame_spends_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gateway_pacing, "budget_s", 0.0)


async def _burst_order(world: World, running: BotUnderTest) -> list[tuple[str, int]]:
    """Send BURST events in one go; each frame, when parsed, schedules a callback on the loop.
    Returns the order in which frames were parsed and their callbacks ran."""
    loop = asyncio.get_running_loop()
    order: list[tuple[str, int]] = []
    parsers = running.bot._connection.parsers  # type: ignore[attr-defined]
    real = parsers["TYPING_START"]

    def parse(data: dict[str, Any]) -> None:
        k = int(data["n"])
        order.append(("frame", k))
        loop.call_soon(order.append, ("loop", k))   # what else became due meanwhile

    parsers["TYPING_START"] = parse
    try:
        for k in range(BURST):  # no await in between: the fake writes them all in one go
            world.dc._emit("TYPING_START", {"n": k, "channel_id": world.general, "user_id": world.alice},
                           world.guild)
        for _ in range(200):
            if len(order) == 2 * BURST:
                break
            await asyncio.sleep(0.02)
    finally:
        parsers["TYPING_START"] = real
    return order


async def test_the_loop_runs_what_became_due_once_a_burst_spent_the_budget(
        world: World, run_bot: Callable[..., Awaitable[BotUnderTest]]) -> None:
    running = await run_bot()
    order = await _burst_order(world, running)
    assert order == [step for k in range(BURST) for step in (("frame", k), ("loop", k))]


async def test_frames_are_still_handled_one_at_a_time_in_their_order(
        world: World, run_bot: Callable[..., Awaitable[BotUnderTest]]) -> None:
    running = await run_bot()
    order = await _burst_order(world, running)
    assert [k for step, k in order if step == "frame"] == list(range(BURST))


def test_installing_twice_wraps_the_reader_once() -> None:
    install_gateway_pacing()
    once = DiscordWebSocket.received_message
    install_gateway_pacing()
    assert DiscordWebSocket.received_message is once
    assert once.paced and not getattr(once.__wrapped__, "paced", False)  # type: ignore[attr-defined]


class _Connection:
    """Stands for one shard's DiscordWebSocket: what the pacer is kept per."""

    def __init__(self, name: str) -> None:
        self.name = name


async def test_two_connections_with_a_backlog_each_both_keep_reading() -> None:
    read = {"first": 0, "second": 0}

    async def received_message(connection: _Connection, frame: object) -> None:  # a frame already buffered
        read[connection.name] += 1

    receive = gateway_pacing.paced(received_message)

    async def reader(connection: _Connection) -> None:  # discord.py's poll loop: no other await
        while True:
            await receive(connection, {})

    connections = [_Connection("first"), _Connection("second")]
    readers = [asyncio.create_task(reader(c)) for c in connections]
    for _ in range(50):
        await asyncio.sleep(0)
    for task in readers:
        task.cancel()
    await asyncio.gather(*readers, return_exceptions=True)
    assert read["first"] >= 10 and read["second"] >= 10
