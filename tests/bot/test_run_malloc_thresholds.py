"""`python -m bot run`, the real entry point, pins glibc's malloc thresholds before it serves
(memory.malloc_thresholds; what pinning does is tested in tests/memory/test_malloc_thresholds.py)."""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memory.malloc_thresholds import THRESHOLD_BYTES
from tests.bot.test_shutdown import bot_env, finish, start
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.openai_server import FakeOpenAI
from tests.memory.test_malloc_thresholds import needs_glibc


@pytest.fixture
async def dc() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord() as server:
        yield server


@needs_glibc
async def test_python_m_bot_run_pins_the_thresholds_before_it_serves(dc: FakeDiscord, fake: FakeOpenAI,
                                                                      tmp_path: Path) -> None:
    env = bot_env(fake, tmp_path / "data", DISCORD_TOKEN=dc.token, DISCORD_API_BASE_URL=dc.api_base)
    proc = await start(["run"], env, tmp_path)
    await dc.wait_until_connected(timeout=60)
    proc.send_signal(signal.SIGTERM)
    code, _, err = await finish(proc)
    assert code == 0, err
    said = [line for line in err.splitlines() if "malloc thresholds:" in line]
    assert len(said) == 1 and f"malloc thresholds: pinned at {THRESHOLD_BYTES} bytes" in said[0], err
