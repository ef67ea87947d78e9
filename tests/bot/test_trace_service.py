"""TraceService.last_trace waits for the person's answer still on its way in that channel
(``answering``), at most its settle wait; other people and channels do not wait. A real
TraceStore on a SQLite file."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.services import TraceService
from memory.stores.database import Database
from memory.stores.traces import TraceRecord, TraceStore

T0 = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)


def trace(i: int, *, user_id: str = "42", channel_id: str = "100") -> TraceRecord:
    return TraceRecord(trace_id=f"trace-{i}", channel_id=channel_id, guild_id="900", user_id=user_id,
                       question=f"question {i}?", events=[], outcome="answered", answer=f"answer {i}",
                       steps=1, prompt_tokens=1, completion_tokens=1, elapsed_ms=1.0,
                       created_at=T0 + timedelta(seconds=i))


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[TraceStore]:
    async with Database.open(tmp_path / "bot.sqlite3") as db:
        traces = TraceStore(db)
        await traces.save(trace(1))
        yield traces


async def _stored_while_answering(service: TraceService, store: TraceStore, user_id: str,
                                  channel_id: str) -> asyncio.Task[TraceRecord | None]:
    """Ask for user 42's last trace in channel 100 while ``user_id`` is being answered in
    ``channel_id``; their trace-2 is stored and the answer settles 0.2 s later. The task."""
    async with service.answering(user_id, channel_id):
        asked = asyncio.create_task(service.last_trace("42", "100"))
        await asyncio.sleep(0.2)
        await store.save(trace(2, user_id=user_id, channel_id=channel_id))
    return asked


async def test_last_trace_waits_for_the_answer_on_its_way_there(store: TraceStore) -> None:
    service = TraceService(store)
    asked = await _stored_while_answering(service, store, "42", "100")
    found = await asked
    assert found is not None and found.trace_id == "trace-2"


@pytest.mark.parametrize(("user_id", "channel_id"), [("43", "100"), ("42", "101")])
async def test_another_persons_or_channels_answer_is_not_waited_for(store: TraceStore, user_id: str,
                                                                    channel_id: str) -> None:
    service = TraceService(store)
    asked = await _stored_while_answering(service, store, user_id, channel_id)
    found = await asked
    assert found is not None and found.trace_id == "trace-1"


async def test_an_answer_slower_than_the_settle_wait_gives_the_last_stored(store: TraceStore) -> None:
    service = TraceService(store, settle_wait_s=0.05)
    async with service.answering("42", "100"):
        found = await service.last_trace("42", "100")
    assert found is not None and found.trace_id == "trace-1"


async def test_overlapping_answers_are_all_waited_for(store: TraceStore) -> None:
    service = TraceService(store)
    first_done = asyncio.Event()

    async def first() -> None:
        async with service.answering("42", "100"):
            await first_done.wait()

    running = asyncio.create_task(first())
    await asyncio.sleep(0)
    async with service.answering("42", "100"):
        asked = asyncio.create_task(service.last_trace("42", "100"))
    await asyncio.sleep(0.1)
    assert not asked.done()   # the first answer is still on its way
    await store.save(trace(2))
    first_done.set()
    await running
    found = await asked
    assert found is not None and found.trace_id == "trace-2"


async def test_a_cancelled_answer_releases_its_waiters(store: TraceStore) -> None:
    service = TraceService(store)
    entered = asyncio.Event()

    async def answer() -> None:
        async with service.answering("42", "100"):
            entered.set()
            await asyncio.Event().wait()

    running = asyncio.create_task(answer())
    await entered.wait()
    asked = asyncio.create_task(service.last_trace("42", "100"))
    running.cancel()
    found = await asyncio.wait_for(asked, 5)
    assert found is not None and found.trace_id == "trace-1"


async def test_an_answer_begun_after_the_ask_is_not_waited_for(store: TraceStore) -> None:
    service = TraceService(store)
    first_done, later_done = asyncio.Event(), asyncio.Event()

    async def answer(done: asyncio.Event) -> None:
        async with service.answering("42", "100"):
            await done.wait()

    first = asyncio.create_task(answer(first_done))
    await asyncio.sleep(0)
    asked = asyncio.create_task(service.last_trace("42", "100"))
    await asyncio.sleep(0)       # the ask has taken the answers on their way
    later = asyncio.create_task(answer(later_done))
    await asyncio.sleep(0)
    first_done.set()
    found = await asyncio.wait_for(asked, 5)   # not held by the later answer
    assert found is not None and found.trace_id == "trace-1"
    later_done.set()
    await asyncio.gather(first, later)
