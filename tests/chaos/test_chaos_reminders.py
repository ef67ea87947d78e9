"""Short variant of `bench/chaos.py kill`'s reminder rounds: the real `python -m bot run` killed
with SIGKILL at each point of a delivery (at random, right after Discord created a reminder's
message, during a scheduled question's model call), restarted each time; every reminder is
posted exactly once, to its person only, and none is left pending."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.chaos_reminders import REMINDER_PHASES, run_reminder_kills

pytestmark = pytest.mark.slow  # starts the real bot process


async def test_a_kill_at_each_point_of_a_delivery_loses_and_doubles_no_reminder(tmp_path: Path) -> None:
    report = await run_reminder_kills(tmp_path, kills=len(REMINDER_PHASES), count=9, seed=5)
    assert sum(report.kills.values()) == len(REMINDER_PHASES)
    assert report.table() == {"turns": 9, "lost": 0, "duplicated": 0, "out of order": 0,
                              "integrity": 0, "leaks": 0, "pings": 0, "crashes": 0}
    assert report.delivered == 9 and report.questions == 3
