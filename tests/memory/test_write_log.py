"""memory.stores.write_log: announced memory writes, settled with their turn (real SQLite file)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memory.stores.database import Database
from memory.stores.write_log import DeferredItem, MemoryWriteLog
from tests.memory.conftest import T0


async def test_announced_writes_are_listed_oldest_first_until_settled(db: Database) -> None:
    log = MemoryWriteLog(db)
    await log.announce("t-late", "u1", T0 + timedelta(seconds=5))
    await log.announce("t-early", "u2", T0)
    assert [(w.trace_id, w.user_id, w.created_at) for w in await log.unsettled()] == [
        ("t-early", "u2", T0), ("t-late", "u1", T0 + timedelta(seconds=5))]
    assert await log.settle("t-early") is True
    assert await log.settle("t-early") is False  # settling twice is harmless
    assert [w.trace_id for w in await log.unsettled()] == ["t-late"]


async def test_a_settle_inside_a_rolled_back_transaction_leaves_the_write_announced(db: Database) -> None:
    log = MemoryWriteLog(db)
    await log.announce("t1", "u1", T0)
    with pytest.raises(RuntimeError):
        async with db.transaction():
            await log.settle("t1")
            raise RuntimeError("the turn's commit failed")
    assert [w.trace_id for w in await log.unsettled()] == ["t1"]


async def test_a_trace_id_is_announced_once(db: Database) -> None:
    log = MemoryWriteLog(db)
    await log.announce("t1", "u1", T0)
    with pytest.raises(Exception, match="UNIQUE"):
        await log.announce("t1", "u1", T0)


async def test_announcing_unless_there_leaves_a_row_still_there_with_its_items(db: Database) -> None:
    log = MemoryWriteLog(db)
    await log.announce("t1", "u1", T0)
    assert await log.defer("t1", [DeferredItem("kept", {}, None)])
    assert await log.announce_unless_there("t1", "u1", T0 + timedelta(hours=1)) is False
    assert [(w.created_at, w.deferred) for w in await log.unsettled()] == [(T0, (DeferredItem("kept", {}, None),))]
    assert await log.settle("t1")
    assert await log.announce_unless_there("t1", "u1", T0) is True
    assert [(w.trace_id, w.deferred) for w in await log.unsettled()] == [("t1", None)]


@pytest.mark.parametrize("trace_id, user_id", [("", "u1"), ("t1", " "), (None, "u1")])
async def test_blank_ids_are_refused(db: Database, trace_id: object, user_id: str) -> None:
    with pytest.raises((TypeError, ValueError)):
        await MemoryWriteLog(db).announce(trace_id, user_id, T0)  # type: ignore[arg-type]


async def test_deferred_items_come_back_with_their_write_until_settled(db: Database) -> None:
    log = MemoryWriteLog(db)
    await log.announce("t1", "u1", T0)
    items = [DeferredItem("I live in Oslo 🇳🇴", {"kind": "exchange", "trace_id": "t1"}, "guild:9"),
             DeferredItem("", {}, None)]
    assert await log.defer("t1", items) is True
    assert await log.defer("t-never-announced", items) is False
    [write] = await log.unsettled()
    assert write.deferred == tuple(items)
    assert await log.settle("t1") and await log.unsettled() == []
