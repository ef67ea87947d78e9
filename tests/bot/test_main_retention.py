"""BUFFER_RETENTION_DAYS: the runtime prunes older channel messages at start-up and then on
its interval (daily in production); 0 keeps everything. Real SQLite files."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.settings.config import load_settings
from bot.process.runtime import Runtime
from memory.stores.buffer import BufferedMessage, ChannelBuffer
from memory.stores.database import Database

CHANNEL = "300000000000000009"


def message(text: str, age: timedelta) -> BufferedMessage:
    return BufferedMessage(channel_id=CHANNEL, guild_id=None, author_id="1", author_name="a", role="user",
                           content=text, created_at=datetime.now(UTC) - age)


async def seed(env: dict[str, str], *messages: BufferedMessage) -> None:
    data = Path(env["DATA_DIR"])
    data.mkdir(parents=True, exist_ok=True)
    async with Database.open(data / "bot.sqlite3") as db:
        await ChannelBuffer(db).append_many(list(messages))


async def texts(rt: Runtime) -> list[str]:
    return [m.content for m in await rt.buffer.recent(CHANNEL, limit=100)]


async def test_start_up_prunes_messages_older_than_the_retention(env: dict[str, str],
                                                                 make_runtime: Callable[..., Runtime]) -> None:
    await seed(env, message("old", timedelta(days=10)), message("recent", timedelta(days=2)))
    async with make_runtime(BUFFER_RETENTION_DAYS="5") as rt:
        assert await texts(rt) == ["recent"]


async def test_retention_zero_keeps_everything(env: dict[str, str], make_runtime: Callable[..., Runtime]) -> None:
    await seed(env, message("ancient", timedelta(days=4000)))
    async with make_runtime(BUFFER_RETENTION_DAYS="0") as rt:
        assert await texts(rt) == ["ancient"]


async def test_the_background_task_prunes_again_on_its_interval(env: dict[str, str]) -> None:
    async with Runtime(load_settings({**env, "BUFFER_RETENTION_DAYS": "5"}), prune_interval_s=0.05) as rt:
        await rt.buffer.append(message("became old while running", timedelta(days=6)))
        await rt.buffer.append(message("fresh", timedelta(0)))
        for _ in range(200):
            if await texts(rt) == ["fresh"]:
                break
            await asyncio.sleep(0.05)
        assert await texts(rt) == ["fresh"]


async def test_the_pruning_task_stops_when_the_runtime_closes(env: dict[str, str]) -> None:
    async with Runtime(load_settings({**env, "BUFFER_RETENTION_DAYS": "5"}), prune_interval_s=0.05):
        assert any(t.get_name() == "retention" for t in asyncio.all_tasks())
    assert not any(t.get_name() == "retention" and not t.done() for t in asyncio.all_tasks())
