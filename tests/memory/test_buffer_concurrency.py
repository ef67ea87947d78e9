"""Many concurrent writers (tasks of different channels, one or two Databases on one file)
lose nothing and never see "database is locked"."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from memory.stores.buffer import BufferedMessage, ChannelBuffer
from memory.stores.database import Database
from memory.stores.traces import TraceRecord, TraceStore

from tests.memory.conftest import T0

CHANNELS = 50
PER_CHANNEL = 20


def message(channel: int, i: int) -> BufferedMessage:
    return BufferedMessage(
        channel_id=f"ch{channel}",
        guild_id="900",
        author_id=f"user{channel}",
        author_name=f"User {channel}",
        role="user" if i % 2 == 0 else "assistant",
        content=f"channel {channel} message {i}",
        created_at=T0 + timedelta(milliseconds=i),
        message_id=f"{channel}-{i}",
    )


async def write_channel(buffer: ChannelBuffer, channel: int) -> None:
    for i in range(PER_CHANNEL):
        await buffer.append(message(channel, i))
        await asyncio.sleep(0)


async def assert_every_message_kept(buffer: ChannelBuffer, db: Database) -> None:
    for channel in range(CHANNELS):
        window = await buffer.recent(f"ch{channel}", limit=PER_CHANNEL * 2)
        assert [m.content for m in window] == [f"channel {channel} message {i}" for i in range(PER_CHANNEL)]
    assert (await db.fetchone("SELECT count(*) FROM buffer_messages"))[0] == CHANNELS * PER_CHANNEL


async def test_fifty_channels_writing_through_one_database_lose_nothing(db: Database) -> None:
    buffer = ChannelBuffer(db)
    await asyncio.gather(*(write_channel(buffer, c) for c in range(CHANNELS)))
    await assert_every_message_kept(buffer, db)


async def test_fifty_channels_writing_through_two_databases_on_one_file_lose_nothing(db_path: Path) -> None:
    async with Database.open(db_path) as first, Database.open(db_path) as second:
        buffers = [ChannelBuffer(first), ChannelBuffer(second)]
        await asyncio.gather(*(write_channel(buffers[c % 2], c) for c in range(CHANNELS)))
        await assert_every_message_kept(buffers[0], first)
        await assert_every_message_kept(buffers[1], second)


async def test_concurrent_turns_written_in_transactions_keep_buffer_and_trace_together(
    db_path: Path, make_trace: Callable[..., TraceRecord]
) -> None:
    async with Database.open(db_path) as first, Database.open(db_path) as second:

        async def turns(db: Database, channel: int) -> None:
            buffer, traces = ChannelBuffer(db), TraceStore(db)
            for i in range(0, PER_CHANNEL, 2):
                async with db.transaction():
                    await buffer.append(message(channel, i))
                    await buffer.append(message(channel, i + 1))
                    await traces.save(make_trace(i, trace_id=f"t-{channel}-{i}", channel_id=f"ch{channel}"))

        await asyncio.gather(*(turns(first if c % 2 else second, c) for c in range(CHANNELS)))
        await assert_every_message_kept(ChannelBuffer(first), first)
        assert (await first.fetchone("SELECT count(*) FROM traces"))[0] == CHANNELS * PER_CHANNEL // 2


async def test_readers_during_concurrent_writes_see_whole_prefixes(db: Database) -> None:
    buffer = ChannelBuffer(db)
    seen: list[list[str]] = []

    async def read_while_writing() -> None:
        for _ in range(40):
            seen.append([m.content for m in await buffer.recent("ch0", limit=PER_CHANNEL)])
            await asyncio.sleep(0)

    await asyncio.gather(write_channel(buffer, 0), read_while_writing())
    expected = [f"channel 0 message {i}" for i in range(PER_CHANNEL)]
    assert all(window == expected[: len(window)] for window in seen)
