"""bot.reminders.schedule: times without an offset are the person's wall time, rules stay on wall
time across daylight-saving changes, too frequent or dead rules are refused with a sentence
that says what to write instead, and delays read as people write them."""

from __future__ import annotations

import asyncio
import sys
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from bot.reminders.schedule import ScheduleError, describe, late_by, next_after, parse_when, plan_rule

PARIS = ZoneInfo("Europe/Paris")
HOUR = timedelta(hours=1)
NOW = datetime(2026, 3, 27, 12, 0, tzinfo=UTC)  # a Friday; Paris moves to summer time on Sunday 29


def test_a_time_without_offset_is_wall_time_in_the_persons_zone() -> None:
    due, local = parse_when("2026-03-28T08:00", PARIS)
    assert due == datetime(2026, 3, 28, 7, 0, tzinfo=UTC) and local == datetime(2026, 3, 28, 8, 0)


@pytest.mark.parametrize("text", ["2026-03-28T07:00Z", "2026-03-28T09:00+02:00", "2026-03-28 07:00:00+00:00"])
def test_a_time_with_an_offset_is_absolute(text: str) -> None:
    due, local = parse_when(text, PARIS)
    assert due == datetime(2026, 3, 28, 7, 0, tzinfo=UTC) and local == datetime(2026, 3, 28, 8, 0)


@pytest.mark.parametrize("text", ["", "tomorrow at 9", "2026-13-45T99:00", "9am", "x" * 10_000, "2026-03-28T08:00\x00"])
def test_a_malformed_time_says_how_to_write_one(text: str) -> None:
    with pytest.raises(ScheduleError, match=r"ISO 8601 date and time such as 2026-12-04T09:00|like 2026-12-04T09:00"):
        parse_when(text, PARIS)


async def test_a_daily_rule_stays_at_eight_local_across_the_spring_change() -> None:
    rule, first = await plan_rule("FREQ=DAILY;BYHOUR=8;BYMINUTE=0", datetime(2026, 3, 28, 8, 0), PARIS, NOW, HOUR)
    second = await next_after(rule, datetime(2026, 3, 28, 8, 0), PARIS, first)
    assert first == datetime(2026, 3, 28, 7, 0, tzinfo=UTC)   # 08:00 CET
    assert second == datetime(2026, 3, 29, 6, 0, tzinfo=UTC)  # 08:00 CEST
    assert [t.astimezone(PARIS).hour for t in (first, second)] == [8, 8]


async def test_an_hourly_rule_fires_once_for_the_hour_skipped_in_spring() -> None:
    start = datetime(2026, 3, 29, 1, 0)
    rule, first = await plan_rule("FREQ=HOURLY", start, PARIS, NOW, HOUR)
    times = [first]
    for _ in range(3):
        times.append(await next_after(rule, start, PARIS, times[-1]))
    assert len(set(times)) == 4 and times == sorted(times)  # 02:00 does not exist: no instant twice
    assert [t.astimezone(PARIS).hour for t in times] == [1, 3, 4, 5]


async def test_a_rule_that_starts_in_the_past_fires_next_after_now() -> None:
    rule, first = await plan_rule("FREQ=WEEKLY;BYDAY=MO", datetime(2026, 1, 5, 9, 0), PARIS, NOW, HOUR)
    assert first == datetime(2026, 3, 30, 7, 0, tzinfo=UTC) and rule == "FREQ=WEEKLY;BYDAY=MO"


@pytest.mark.parametrize("rule", ["FREQ=MINUTELY", "FREQ=SECONDLY;INTERVAL=3600", "FREQ=HOURLY;BYMINUTE=0,30",
                                  "FREQ=DAILY;BYHOUR=8,9;BYMINUTE=0,15"])
async def test_a_rule_more_frequent_than_hourly_is_refused(rule: str) -> None:
    with pytest.raises(ScheduleError, match="at most"):
        await plan_rule(rule, datetime(2026, 3, 28, 8, 0), PARIS, NOW, HOUR)


async def test_the_shortest_repeat_is_a_setting() -> None:
    with pytest.raises(ScheduleError, match="at most every 1 d"):
        await plan_rule("FREQ=HOURLY;INTERVAL=12", datetime(2026, 3, 28, 8, 0), PARIS, NOW, timedelta(days=1))


@pytest.mark.parametrize("rule, problem", [
    ("FREQ=DAILY;UNTIL=20200101T000000", "never fires after now"),
    # dateutil walks to year 9999 to find that 30 February never comes: whether that ends within
    # RULE_TIMEOUT_S depends on the machine's load, and either refusal names the problem
    ("FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30", "never fires after now|no time soon enough .does the rule ever match"),
    ("FREQ=DAILY\nEXDATE:20260329T080000", "one RFC 5545 rule"),
    ("DTSTART:20260101T000000\nRRULE:FREQ=DAILY", "one RFC 5545 rule"),
    ("FREQ=FORTNIGHTLY", "not a valid RFC 5545 rule"),
    ("FREQ=DAILY;BYHOUR=99", "not a valid RFC 5545 rule"),
    ("", "one RFC 5545 rule"),
    ("FREQ=DAILY;" * 100, "one RFC 5545 rule"),
])
async def test_a_dead_or_malformed_rule_is_refused_with_a_reason(rule: str, problem: str) -> None:
    with pytest.raises(ScheduleError, match=problem):
        await plan_rule(rule, datetime(2026, 3, 28, 8, 0), PARIS, NOW, HOUR)


def _walking_a_rule() -> bool:
    """Whether some thread is running dateutil's rrule now."""
    for frame in sys._current_frames().values():
        while frame is not None:
            if frame.f_code.co_filename.endswith(("dateutil/rrule.py", "dateutil\\rrule.py")):
                return True
            frame = frame.f_back
    return False


async def test_a_rule_that_never_matches_is_refused_and_its_thread_stops_walking() -> None:
    with pytest.raises(ScheduleError, match="does the rule ever match"):
        await plan_rule("FREQ=HOURLY;BYMONTH=2;BYMONTHDAY=30", datetime(2026, 3, 28, 8, 0), PARIS, NOW, HOUR)
    for _ in range(20):  # it stops at its next line; unstopped, it walks on for seconds (to 9999)
        if not _walking_a_rule():
            break
        await asyncio.sleep(0.05)
    assert not _walking_a_rule()


async def test_a_rule_whose_asker_stops_waiting_stops_walking() -> None:
    asking = asyncio.create_task(
        plan_rule("FREQ=HOURLY;BYMONTH=2;BYMONTHDAY=30", datetime(2026, 3, 28, 8, 0), PARIS, NOW, HOUR))
    for _ in range(100):
        if _walking_a_rule():
            break
        await asyncio.sleep(0.01)
    asking.cancel()  # a turn's timeout, or shutdown
    with pytest.raises(asyncio.CancelledError):
        await asking
    for _ in range(20):
        if not _walking_a_rule():
            break
        await asyncio.sleep(0.05)
    assert not _walking_a_rule()


def test_delays_and_times_read_as_people_write_them() -> None:
    assert late_by(timedelta(hours=2, seconds=40)) == "late by 2 h"
    assert late_by(timedelta(days=1, hours=3, minutes=5)) == "late by 1 d 3 h"
    assert late_by(timedelta(minutes=5)) == "late by 5 min"
    assert describe(NOW, PARIS) == "Friday 27 March 2026, 13:00 CET (Europe/Paris)"
