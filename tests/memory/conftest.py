"""Shared fixtures for the memory tests: real SQLite files in a temporary folder, and (from
fixtures_semantic) the embedding model loaded once per session, a settable clock, a memory in a
temporary folder and a real Chroma server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memory.stores.buffer import BufferedMessage, ChannelBuffer
from memory.stores.database import Database
from memory.stores.traces import TraceRecord, TraceStore
from tests.memory.fixtures_semantic import chroma_server, clock, local_embedder, memory  # noqa: F401  (fixtures)

T0 = datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "bot.sqlite3"


@pytest.fixture
async def db(db_path: Path) -> AsyncIterator[Database]:
    async with Database.open(db_path) as database:
        yield database


@pytest.fixture
def buffer(db: Database) -> ChannelBuffer:
    return ChannelBuffer(db)


@pytest.fixture
def traces(db: Database) -> TraceStore:
    return TraceStore(db)


@pytest.fixture
def make_message() -> Callable[..., BufferedMessage]:
    """BufferedMessage factory: message(i) is said i seconds after T0 in channel "100"."""

    def make(i: int = 0, **fields: Any) -> BufferedMessage:
        values: dict[str, Any] = {
            "channel_id": "100",
            "guild_id": "900",
            "author_id": "42",
            "author_name": "Ann",
            "role": "user",
            "content": f"message {i}",
            "created_at": T0 + timedelta(seconds=i),
            "message_id": None,
        }
        values.update(fields)
        return BufferedMessage(**values)

    return make


@pytest.fixture
def make_trace() -> Callable[..., TraceRecord]:
    """TraceRecord factory: trace(i) is created i seconds after T0 by user "42" in channel "100"."""

    def make(i: int = 0, **fields: Any) -> TraceRecord:
        values: dict[str, Any] = {
            "trace_id": f"trace-{i}",
            "channel_id": "100",
            "guild_id": "900",
            "user_id": "42",
            "question": f"question {i}?",
            "events": [
                {"type": "model_called", "step": 1, "elapsed_ms": 12.5, "content": "Thought: ..."},
                {"type": "run_ended", "outcome": "answered", "answer": f"answer {i}", "steps": 1},
            ],
            "outcome": "answered",
            "answer": f"answer {i}",
            "steps": 1,
            "prompt_tokens": 120,
            "completion_tokens": 30,
            "elapsed_ms": 250.0,
            "created_at": T0 + timedelta(seconds=i),
        }
        values.update(fields)
        return TraceRecord(**values)

    return make
