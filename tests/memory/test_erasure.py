"""memory.stores.erasure: a person's rows (buffer messages, the bot's answers to them, traces, deferred
writes) are deleted everywhere or in one server, nobody else's; checked by reading the file
with sqlite3 itself; and TraceStore.prune keeps traces for the retention period only."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from memory.stores.buffer import BufferedMessage, ChannelBuffer
from memory.stores.database import Database
from memory.stores.erasure import ErasedRows, PersonErasure
from memory.stores.summaries import ChannelSummaries
from memory.stores.traces import TraceRecord, TraceStore
from memory.stores.write_log import DeferredItem, MemoryWriteLog
from tests.memory.conftest import T0

ANN, BEN = "42", "43"
GUILD, OTHER = "900", "901"


def pair(make: Callable[..., BufferedMessage], i: int, who: str, text: str, *, guild: str | None = GUILD,
         channel: str = "100") -> list[BufferedMessage]:
    """A question and the bot's answer, as the turn store stores them (same time, in order)."""
    return [make(i, author_id=who, content=text, guild_id=guild, channel_id=channel),
            make(i, author_id="assistant", author_name="assistant", role="assistant",
                 content=f"answer to {text}", guild_id=guild, channel_id=channel)]


def rows(path: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(path) as conn:
        return conn.execute(sql).fetchall()


@pytest.fixture
async def seeded(db: Database, buffer: ChannelBuffer, traces: TraceStore, make_message, make_trace) -> Database:
    await buffer.append_many([*pair(make_message, 1, ANN, "ann here"), *pair(make_message, 2, BEN, "ben here"),
                              make_message(3, author_id=ANN, role="other", content="ann chatter"),
                              *pair(make_message, 4, ANN, "ann there", guild=OTHER, channel="200"),
                              *pair(make_message, 5, ANN, "ann in a dm", guild=None, channel="300")])
    for i, (who, guild) in enumerate([(ANN, GUILD), (BEN, GUILD), (ANN, OTHER), (ANN, None)]):
        await traces.save(make_trace(i, user_id=who, guild_id=guild, question=f"{who} asked {i}"))
    writes = MemoryWriteLog(db)
    for trace_id, who in (("trace-0", ANN), ("trace-1", BEN), ("trace-2", ANN)):
        await writes.announce(trace_id, who, T0)
        await writes.defer(trace_id, [DeferredItem(f"{who} deferred words", {"kind": "exchange"}, None)])
    return db


async def test_erasing_everywhere_leaves_nothing_of_the_person_and_everything_of_others(
        seeded: Database, db_path: Path) -> None:
    erased = await PersonErasure(seeded).erase(ANN)
    assert erased == ErasedRows(messages=4, replies=3, traces=3, deferred_writes=2)
    contents = [c for (c,) in rows(db_path, "SELECT content FROM buffer_messages")]
    assert contents == ["ben here", "answer to ben here"]
    assert rows(db_path, "SELECT user_id FROM traces") == [(BEN,)]
    assert rows(db_path, "SELECT user_id FROM memory_writes") == [(BEN,)]


async def test_erasing_in_one_server_keeps_the_persons_other_places(seeded: Database, db_path: Path) -> None:
    erased = await PersonErasure(seeded).erase(ANN, GUILD)
    assert erased == ErasedRows(messages=2, replies=1, traces=1, deferred_writes=1)
    left = rows(db_path, "SELECT content FROM buffer_messages ORDER BY id")
    assert [c for (c,) in left] == ["ben here", "answer to ben here", "ann there", "answer to ann there",
                                    "ann in a dm", "answer to ann in a dm"]
    assert sorted(q for (q,) in rows(db_path, "SELECT question FROM traces")) == [
        f"{ANN} asked 2", f"{ANN} asked 3", f"{BEN} asked 1"]
    assert sorted(rows(db_path, "SELECT trace_id FROM memory_writes")) == [("trace-1",), ("trace-2",)]


async def test_an_answer_not_stored_right_after_the_persons_question_is_not_theirs(
        db: Database, buffer: ChannelBuffer, make_message, db_path: Path) -> None:
    await buffer.append_many([make_message(1, author_id=ANN), make_message(1, author_id=BEN, role="other"),
                              make_message(1, author_id="assistant", role="assistant", content="to ben")])
    assert (await PersonErasure(db).erase(ANN)).replies == 0
    assert [c for (c,) in rows(db_path, "SELECT content FROM buffer_messages")] == ["message 1", "to ben"]


async def test_an_announced_write_of_a_turn_in_flight_stays_for_the_reconcile(db: Database, db_path: Path) -> None:
    await MemoryWriteLog(db).announce("t-running", ANN, T0)  # not deferred: its items are on their way
    assert (await PersonErasure(db).erase(ANN)).deferred_writes == 0
    assert rows(db_path, "SELECT trace_id FROM memory_writes") == [("t-running",)]


async def test_a_person_with_nothing_stored_erases_nothing(db: Database) -> None:
    assert (await PersonErasure(db).erase(ANN)).total == 0


async def test_a_malformed_user_id_is_refused(db: Database) -> None:
    with pytest.raises(ValueError):
        await PersonErasure(db).erase("")


async def test_prune_deletes_traces_older_than_the_cutoff_only(traces: TraceStore, make_trace: Callable[..., TraceRecord],
                                                              db_path: Path) -> None:
    for i in range(5):
        await traces.save(make_trace(i, created_at=T0 + timedelta(days=i)))
    assert await traces.prune(T0 + timedelta(days=3)) == 3
    assert sorted(rows(db_path, "SELECT trace_id FROM traces")) == [("trace-3",), ("trace-4",)]
    assert await traces.prune(T0) == 0


async def test_a_forget_drops_the_running_summaries_of_channels_the_person_spoke_in(
        seeded: Database, buffer: ChannelBuffer) -> None:
    summaries = ChannelSummaries(seeded)
    for channel in ("100", "200"):
        [last] = await buffer.recent(channel, limit=1)
        assert await summaries.save(channel, f"summary of {channel}", through=last.created_at, folded=2,
                                    previous=None, forget_mark=0)
    erased = await PersonErasure(seeded).erase(ANN, GUILD)
    assert erased.summaries == 1
    assert await summaries.get("100") is None
    assert await summaries.get("200") is not None  # the other server's channel: not this erasure's
