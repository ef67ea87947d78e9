"""When a reminder fires: ISO 8601 times read in a person's zone, RFC 5545 rules, and the words
that say a time or a delay to people.

A time without an offset is wall time in the person's zone; a rule's occurrences are computed
in wall time too (python-dateutil's ``rrule``, with the first occurrence as DTSTART), so "every
day at 8" stays at 8 across a daylight-saving change; each occurrence then becomes a UTC instant
(``zoneinfo``: a wall time skipped by a spring-forward change fires an hour later, a repeated one
at its first instant). Rules run in a worker thread with a time limit: dateutil walks a rule
period by period, and a rule that can never match (30 February, hourly) walks to the year 9999
(about 17 s of CPU); such a rule is refused when it gives nothing within the limit, and its
thread is stopped then (`_RuleThread`), so that a few such rules cannot keep the default
executor's threads, which every turn's storing uses, busy.

Part of bot/: uses dateutil and zoneinfo only.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import ctypes
import itertools
import re
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Generic, TypeVar
from zoneinfo import ZoneInfo

from dateutil import rrule

__all__ = ["RULE_TIMEOUT_S", "ScheduleError", "describe", "late_by", "next_after", "parse_when", "plan_rule",
           "wall_time"]

T = TypeVar("T")
RULE_TIMEOUT_S = 2.0
MAX_WHEN_CHARS = 64
MAX_RULE_CHARS = 300
GAPS_CHECKED = 24  # occurrences whose spacing is checked against the shortest repeat allowed
_RULE_TEXT = re.compile(r"^(RRULE:)?[A-Z0-9=;,+\-]+$")
_WHEN_TEXT = re.compile(r"^[0-9T:+\-.,Z ]+$")


class ScheduleError(Exception):
    """A time or a rule that cannot be used; the message says why, for a person or the model."""


def wall_time(moment: datetime, zone: ZoneInfo) -> datetime:
    """``moment`` as naive wall time in ``zone``."""
    return moment.astimezone(zone).replace(tzinfo=None)


def _instant(local: datetime, zone: ZoneInfo) -> datetime:
    return local.replace(tzinfo=zone).astimezone(UTC)


def parse_when(text: str, zone: ZoneInfo) -> tuple[datetime, datetime]:
    """``text`` (ISO 8601: with an offset or Z absolute, without one wall time in ``zone``) as
    (the UTC instant, the wall time in ``zone``); ScheduleError with an example when malformed."""
    raw = (text or "").strip()
    if not raw or len(raw) > MAX_WHEN_CHARS:
        raise ScheduleError("when is empty or too long; give an ISO 8601 date and time such as 2026-12-04T09:00")
    try:
        if not _WHEN_TEXT.fullmatch(raw):
            raise ValueError(raw)
        parsed = datetime.fromisoformat(raw)
    except ValueError:
        raise ScheduleError(
            f"when {raw[:40]!r} is not an ISO 8601 date and time; write it like 2026-12-04T09:00 "
            "(the person's own time zone) or 2026-12-04T08:00Z (UTC)") from None
    if parsed.tzinfo is None:
        return _instant(parsed, zone), parsed
    return parsed.astimezone(UTC), wall_time(parsed, zone)


def _rule(text: str, start_local: datetime) -> rrule.rrule:
    rule = (text or "").strip().upper()
    if not rule or len(rule) > MAX_RULE_CHARS or not _RULE_TEXT.fullmatch(rule):
        raise ScheduleError(
            "repeat must be one RFC 5545 rule such as FREQ=DAILY;BYHOUR=8 or FREQ=WEEKLY;BYDAY=MO")
    try:
        parsed = rrule.rrulestr(rule, dtstart=start_local)
    except (ValueError, TypeError) as exc:
        raise ScheduleError(f"repeat {rule[:60]!r} is not a valid RFC 5545 rule ({exc})") from None
    if not isinstance(parsed, rrule.rrule):
        raise ScheduleError("repeat must be a single RRULE, without DTSTART, RDATE or EXDATE")
    if parsed._freq in (rrule.SECONDLY, rrule.MINUTELY):  # the rule's own frequency (no public accessor)
        raise ScheduleError("repeat may be at most hourly (FREQ=HOURLY, DAILY, WEEKLY, MONTHLY or YEARLY)")
    return parsed


class _GivenUp(BaseException):
    """Raised in a rule's thread once its caller stopped waiting (a BaseException, so that no
    ``except Exception`` of the library swallows it)."""


class _RuleThread(Generic[T]):
    """One rule's ``fn`` in a thread of its own, which `stop` can end mid-walk.

    dateutil's walk never returns to our code until it finds an occurrence, so it is stopped
    from outside: CPython's PyThreadState_SetAsyncExc raises _GivenUp in the thread at its next
    check for pending events, and nothing slows the walk meanwhile (a trace function checking
    a flag on every line made rules 3-5 times slower). A thread of its own, not the default
    executor's: a stop that lands after ``fn`` ends reaches no one else's work. The lock and the
    call in ``_run``'s last lines make it land there at the latest."""

    def __init__(self, fn: Callable[[], T]) -> None:
        self._fn = fn
        self._lock = threading.Lock()
        self._walking: int | None = None  # the thread's id while it may be stopped
        self.result: concurrent.futures.Future[T] = concurrent.futures.Future()

    def start(self) -> None:
        self.result.set_running_or_notify_cancel()  # a waiter's cancel no longer cancels it
        threading.Thread(target=self._run, name="reminder-rule", daemon=True).start()

    def _run(self) -> None:
        with self._lock:
            self._walking = threading.get_ident()
        try:
            try:
                value = self._fn()
            finally:
                with self._lock:
                    self._walking = None
                    _pending_events_checked()  # a stop sent before the lock was taken lands here
            self.result.set_result(value)
        except _GivenUp:
            return  # nobody waits any more
        except BaseException as exc:
            self.result.set_exception(exc)

    def stop(self) -> None:
        with self._lock:
            if self._walking is not None:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._walking),
                                                           ctypes.py_object(_GivenUp))


def _pending_events_checked() -> None:
    """A Python call: entering it, the interpreter raises an exception sent to this thread."""


async def _in_thread(fn: Callable[[], T]) -> T:
    rule = _RuleThread(fn)
    rule.start()
    try:
        return await asyncio.wait_for(asyncio.wrap_future(rule.result), RULE_TIMEOUT_S)
    except TimeoutError:
        raise ScheduleError("repeat finds no time soon enough (does the rule ever match?); "
                            "give a simpler rule") from None
    finally:
        rule.stop()  # timed out, or its waiter cancelled (a turn's timeout, shutdown); nothing once it ended


async def plan_rule(text: str, start_local: datetime, zone: ZoneInfo, now: datetime,
                    min_repeat: timedelta) -> tuple[str, datetime]:
    """Check the rule ``text`` from ``start_local`` (wall time in ``zone``): it must fire after
    ``now`` and never more often than ``min_repeat``. Returns the rule as stored and its first
    occurrence after ``now`` (UTC)."""
    parsed = _rule(text, start_local)

    def upcoming() -> list[datetime]:
        return list(itertools.islice(parsed, GAPS_CHECKED))

    times = await _in_thread(upcoming)
    for earlier, later in itertools.pairwise(times):
        if later - earlier < min_repeat:
            raise ScheduleError(f"repeat fires more often than allowed (at most every "
                                f"{_span(min_repeat)}); choose a rule with fewer occurrences")
    first = await next_after(str(parsed).split("\n")[-1], start_local, zone, now - timedelta(microseconds=1))
    if first is None:
        raise ScheduleError("repeat never fires after now (its UNTIL or COUNT has passed)")
    return str(parsed).split("\n")[-1].removeprefix("RRULE:"), first


async def next_after(rule: str, start_local: datetime, zone: ZoneInfo, after: datetime) -> datetime | None:
    """The rule's first occurrence strictly after ``after`` (UTC), or None when it has ended."""
    parsed = _rule(rule, start_local)

    def find() -> datetime | None:
        candidate = parsed.after(wall_time(after, zone) - timedelta(hours=3), inc=True)
        while candidate is not None and _instant(candidate, zone) <= after:  # DST folds: compare instants
            candidate = parsed.after(candidate)
        return None if candidate is None else _instant(candidate, zone)

    return await _in_thread(find)


def describe(moment: datetime, zone: ZoneInfo) -> str:
    """'Friday 4 December 2026, 09:00 CET (Europe/Paris)'."""
    local = moment.astimezone(zone)
    return f"{local:%A} {local.day} {local:%B %Y, %H:%M} {local.tzname()} ({zone.key})"


def _span(delta: timedelta) -> str:
    minutes = int(delta.total_seconds() // 60)
    days, rest = divmod(minutes, 24 * 60)
    hours, minutes = divmod(rest, 60)
    parts = [f"{days} d" if days else "", f"{hours} h" if hours else "", f"{minutes} min" if minutes else ""]
    return " ".join(p for p in parts if p) or "less than a minute"


def late_by(delta: timedelta) -> str:
    """'late by 2 h', 'late by 1 d 3 h', 'late by 5 min' (whole minutes, the largest two units)."""
    words = _span(delta).split(" ")
    return "late by " + " ".join(words[:4])
