"""tests.clock.Clock, the hand-moved clock the tests share: it reads what was set, and moves on
by a timedelta whether it holds epoch seconds or a datetime."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.clock import Clock


def test_a_clock_of_epoch_seconds_moves_on_by_a_timedelta() -> None:
    clock = Clock(1_780_000_000.0)
    clock.advance(days=1, seconds=5)
    assert clock() == 1_780_000_000.0 + 86_405.0


def test_a_clock_of_datetimes_reads_what_was_set_and_moves_on() -> None:
    start = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)
    clock = Clock(start)
    clock.now = start + timedelta(minutes=5)
    clock.advance(hours=1)
    assert clock() == start + timedelta(hours=1, minutes=5)
