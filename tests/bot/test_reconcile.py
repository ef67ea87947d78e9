"""Memory writes whose turn was never stored are undone (bot.turn_store.reconcile, memory.stores.write_log).

A crash between the Chroma add and the SQLite commit, or an add that timed out and landed
afterwards, leaves items without their turn; the start-up reconcile (and the sweep) delete
them. Real Runtime, real SQLite file, real embedded Chroma, the fake model's embeddings."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.forgetting import forget_person
from bot.turn.pipeline import TurnPipeline
from bot.turn.privacy import Reach
from bot.turn_store.reconcile import reconcile_memory, write_deferred
from bot.process.runtime import Runtime
from memory.semantic import open_user_memory, scope_for
from memory.stores.erasure import PersonErasure
from memory.stores.write_log import DeferredItem
from tests.bot.conftest import ALICE, GUILD, ask
from tests.fakes.flaky_model import FlakyModel

CHANNEL = "300000000000000001"
REMEMBER = 'Thought: keep it.\nAction: remember\nAction Input: {"fact": "Their bike is blue"}'


@pytest.fixture
async def fake() -> AsyncIterator[FlakyModel]:  # the conftest's `env` points at this one
    async with FlakyModel() as server:
        yield server


async def cut_turn(rt: Runtime, trace_id: str, text: str) -> None:
    """What a turn killed between its two stores leaves: announced, added, never committed."""
    await rt.writes.announce(trace_id, ALICE, datetime.now(UTC))
    await rt.user_memory.add(ALICE, text, {"trace_id": trace_id, "kind": "exchange"}, scope=scope_for(GUILD))


async def test_a_write_whose_turn_was_never_stored_is_undone_at_start_up(
        make_runtime: Callable[..., Runtime]) -> None:
    async with make_runtime() as rt:
        await cut_turn(rt, "t-cut", "the question of a cut turn")
        await rt.user_memory.add(ALICE, "an older item from before the log", {"kind": "note"})
    async with make_runtime() as rt:
        assert [h.text for h in await rt.user_memory.list(ALICE)] == ["an older item from before the log"]
        assert await rt.writes.unsettled() == []


async def test_a_stored_turn_keeps_its_items_and_leaves_nothing_announced(
        make_runtime: Callable[..., Runtime], fake: FlakyModel) -> None:
    fake.reply(REMEMBER).reply("Final Answer: noted")
    async with make_runtime() as rt:
        result = await rt.pipeline.handle(ask("Remember my bike is blue."))
        assert result.ok and await rt.writes.unsettled() == []
    async with make_runtime() as rt:
        items = await rt.user_memory.list(ALICE)
        assert sorted(h.metadata["kind"] for h in items) == ["exchange", "fact", "reply"]
        assert {h.metadata["trace_id"] for h in items} == {result.trace_id}


async def test_an_add_that_timed_out_but_landed_later_is_written_once(
        runtime: Runtime, fake: FlakyModel, tmp_path: Path) -> None:
    """The add's embedding answers after the memory's 0.5 s timeout: the turn is answered and
    stored with its write deferred, yet the worker thread finishes the add a second later.
    Making the deferred write deletes what landed first, so each item exists once."""
    async def slow_fact(texts: list[str]) -> None:
        if any(t.endswith("Their bike is blue") for t in texts):  # the fact ("Alice: ..."), embedded when stored
            await asyncio.sleep(1.5)

    fake.before_embed = slow_fact
    folder = tmp_path / "slow-chroma"
    memory = await asyncio.to_thread(open_user_memory, folder, settings=runtime.settings.memory,
                                     op_timeout_s=0.5)
    try:
        pipeline = TurnPipeline(runtime.agent, runtime.buffer, runtime.traces, runtime.db, memory,
                                runtime.settings)
        fake.reply(REMEMBER).reply("Final Answer: noted")
        result = await pipeline.handle(ask("Remember my bike is blue."))
        assert result.ok and result.text == "noted"  # recall worked; only the write was late
        await asyncio.sleep(2.0)  # the given-up add lands
    finally:
        await memory.close()
    [write] = await runtime.writes.unsettled()
    assert write.trace_id == result.trace_id and write.deferred is not None
    assert [m.content for m in await runtime.buffer.recent(CHANNEL)] == ["Remember my bike is blue.", "noted"]

    fake.before_embed = None
    memory = await asyncio.to_thread(open_user_memory, folder, settings=runtime.settings.memory)
    try:
        assert len(await memory.list(ALICE)) == 3  # landed late
        assert await reconcile_memory(runtime.writes, runtime.traces, memory) == 0  # not its job
        assert await write_deferred(runtime.writes, memory) == 3
        items = await memory.list(ALICE)
        assert sorted(h.metadata["kind"] for h in items) == ["exchange", "fact", "reply"]
        assert {h.metadata["trace_id"] for h in items} == {result.trace_id}
        assert await runtime.writes.unsettled() == []
    finally:
        await memory.close()


async def test_a_forget_while_a_deferred_write_is_being_made_leaves_nothing_of_it(
        runtime: Runtime, fake: FlakyModel) -> None:
    await runtime.writes.announce("t-deferred", ALICE, datetime.now(UTC))
    fact = DeferredItem("Their bike is blue", {"trace_id": "t-deferred", "kind": "fact"}, scope_for(GUILD))
    assert await runtime.writes.defer("t-deferred", [fact])
    embedding, forgotten = asyncio.Event(), asyncio.Event()

    async def held_until_forgotten(texts: list[str]) -> None:
        if any("bike is blue" in t for t in texts):
            embedding.set()
            await forgotten.wait()

    fake.before_embed = held_until_forgotten
    making = asyncio.create_task(write_deferred(runtime.writes, runtime.user_memory))
    await asyncio.wait_for(embedding.wait(), 10)  # the write's add is under way
    said = await forget_person(runtime.user_memory, PersonErasure(runtime.db), ALICE, Reach(None))
    assert said.deferred_writes == 1
    forgotten.set()
    await asyncio.wait_for(making, 10)
    assert await runtime.user_memory.list(ALICE) == []  # the add that landed after the forget is undone
    assert await runtime.writes.unsettled() == []


async def test_a_memory_store_that_is_down_keeps_the_announcement_for_the_next_pass(
        runtime: Runtime) -> None:
    await cut_turn(runtime, "t-cut", "a cut turn")
    await runtime.user_memory.close()
    assert await reconcile_memory(runtime.writes, runtime.traces, runtime.user_memory) == 0
    assert [w.trace_id for w in await runtime.writes.unsettled()] == ["t-cut"]


async def test_the_sweep_spares_turns_storing_now_and_writes_within_the_grace(runtime: Runtime) -> None:
    await cut_turn(runtime, "t-storing", "a turn storing right now")
    await cut_turn(runtime, "t-recent", "a write still within the grace")
    old = datetime.now(UTC) + timedelta(seconds=1)  # both announced before this
    assert await reconcile_memory(runtime.writes, runtime.traces, runtime.user_memory,
                                  older_than=old - timedelta(hours=1)) == 0
    assert await reconcile_memory(runtime.writes, runtime.traces, runtime.user_memory,
                                  older_than=old, skip={"t-storing"}) == 1
    assert [w.trace_id for w in await runtime.writes.unsettled()] == ["t-storing"]
    assert [h.metadata["trace_id"] for h in await runtime.user_memory.list(ALICE)] == ["t-storing"]


async def test_a_failed_sqlite_write_undoes_the_items_and_settles_its_announcement(
        runtime: Runtime, fake: FlakyModel) -> None:
    await runtime.db.execute(
        "CREATE TRIGGER refuse_traces BEFORE INSERT ON traces BEGIN SELECT RAISE(ABORT, 'disk full'); END")
    fake.reply(REMEMBER).reply("Final Answer: noted")
    result = await runtime.pipeline.handle(ask("Remember my bike is blue."))
    assert not result.ok
    assert await runtime.user_memory.list(ALICE) == [] and await runtime.writes.unsettled() == []

