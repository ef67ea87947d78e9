"""The health line (bot.health): silent while all is well, one line per window with turns,
errors by kind and queue length when turns fail or queue up; logged by the Runtime."""

from __future__ import annotations

import asyncio
import logging

import pytest

from bot.config import load_settings
from bot.health import HealthLog
from bot.runtime import Runtime
from tests.bot.conftest import ask
from tests.fakes.openai_server import FakeOpenAI


def test_a_healthy_window_gives_no_line() -> None:
    health = HealthLog()
    for kind in (None, None, "cooldown", "empty"):  # refusals are the person's doing
        health.record(kind)
    assert health.line(queued=0, in_flight=0) is None


def test_errors_give_one_line_with_counts_by_kind_then_a_fresh_window() -> None:
    health = HealthLog()
    for kind in (None, "timeout", "server_error", "timeout"):
        health.record(kind)
    assert health.line(queued=0, in_flight=1) == (
        "health: turns=4 errors=server_error:1,timeout:2 queued=0 in_flight=1")
    assert health.line(queued=0, in_flight=0) is None


def test_a_queue_alone_is_worth_a_line() -> None:
    health = HealthLog()
    health.record(None)
    assert health.line(queued=7, in_flight=11) == "health: turns=1 errors=none queued=7 in_flight=11"


async def test_the_runtime_logs_the_line_when_turns_fail(
        env: dict[str, str], fake: FakeOpenAI, caplog: pytest.LogCaptureFixture) -> None:
    fake.error(500).error(500)
    async with Runtime(load_settings(env), health_interval_s=0.2) as rt:
        with caplog.at_level(logging.WARNING, logger="bot.runtime"):
            result = await rt.pipeline.handle(ask("hello"))
            await asyncio.sleep(0.5)
    assert result.error_kind == "server_error"
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("health:")]
    assert lines == ["health: turns=1 errors=server_error:1 queued=0 in_flight=0"]
