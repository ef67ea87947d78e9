"""The health line (bot.process.health): silent while all is well, one line per window with turns,
errors by kind and queue length when turns fail or queue up, and the event loop's worst stall
when it was held long; logged by the Runtime."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from bot.settings.config import load_settings
from bot.process.health import LOOP_LAG_REPORT_S, HealthLog, LoopLag
from bot.process.runtime import Runtime
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
        with caplog.at_level(logging.WARNING, logger="bot.process.runtime"):
            result = await rt.pipeline.handle(ask("hello"))
            await asyncio.sleep(0.5)
    assert result.error_kind == "server_error"
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("health:")]
    assert lines == ["health: turns=1 errors=server_error:1 queued=0 in_flight=0"]


def test_a_stalled_loop_alone_is_worth_a_line_naming_the_stall() -> None:
    health = HealthLog()
    assert health.line(queued=0, in_flight=0, loop_lag_s=0.6) == (
        "health: turns=0 errors=none queued=0 in_flight=0 loop_lag_ms=600")


def test_a_short_stall_is_not_named() -> None:
    health = HealthLog()
    assert health.line(queued=0, in_flight=0, loop_lag_s=LOOP_LAG_REPORT_S / 2) is None
    health.record("timeout")
    assert health.line(queued=0, in_flight=0, loop_lag_s=LOOP_LAG_REPORT_S / 2) == (
        "health: turns=1 errors=timeout:1 queued=0 in_flight=0")


def test_the_loop_lag_monitor_keeps_the_worst_wake_up_of_a_window_then_starts_again() -> None:
    lag = LoopLag()
    for late in (0.01, 0.4, 0.02):
        lag.observe(late)
    assert lag.take_worst() == 0.4
    assert lag.take_worst() == 0.0


async def test_the_loop_lag_monitor_sees_a_callback_that_holds_the_loop() -> None:
    lag = LoopLag(sample_s=0.01)
    monitor = asyncio.create_task(lag.run())
    await asyncio.sleep(0.05)
    lag.take_worst()
    time.sleep(0.3)  # a blocking call on the loop thread, as an embedded store holding the GIL would be
    await asyncio.sleep(0.05)
    monitor.cancel()
    assert lag.take_worst() >= 0.25  # it woke at least that late: the loop was held 0.3 s


async def test_the_runtime_names_a_stalled_loop_in_its_health_line(
        env: dict[str, str], fake: FakeOpenAI, caplog: pytest.LogCaptureFixture) -> None:
    async with Runtime(load_settings(env), health_interval_s=0.5) as rt:
        with caplog.at_level(logging.WARNING, logger="bot.process.runtime"):
            await asyncio.sleep(0.1)
            time.sleep(0.4)  # the loop thread held
            await asyncio.sleep(0.6)
        assert rt.loop_lag.take_worst() < LOOP_LAG_REPORT_S  # the line took the window's worst
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("health:")]
    assert len(lines) == 1 and lines[0].startswith("health: turns=0 errors=none queued=0 in_flight=0 loop_lag_ms=")
    assert int(lines[0].rsplit("=", 1)[1]) >= 300  # held 0.4 s, less the monitor's 0.1 s period
