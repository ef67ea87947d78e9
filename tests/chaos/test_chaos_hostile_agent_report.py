"""How the hostile agent part of `bench/chaos.py` counts (no bot started): a late heartbeat is
a figure of its own, not a crash in the table, and a heartbeat stamped late because the
harness's own loop stalled is not counted against the bot."""

from __future__ import annotations

from types import SimpleNamespace

from bench.chaos_hostile_agent import STALL_LIMIT_S, AgentHostileReport, grade_heartbeats
from tests.fakes.discord_server import Heartbeat


def world_with(beats: list[Heartbeat], interval_s: float = 0.25) -> SimpleNamespace:
    return SimpleNamespace(dc=SimpleNamespace(heartbeat_interval_ms=interval_s * 1000, heartbeats=beats))


def test_late_heartbeats_are_not_crashes_in_the_table() -> None:
    report = AgentHostileReport(replies=33, stalls=5, stalls_bot_side=5, mcp_clean_error=True)
    assert report.table()["crashes"] == 0


def test_exits_tracebacks_errors_and_an_unclean_mcp_call_are_crashes_in_the_table() -> None:
    report = AgentHostileReport(replies=33, crashes=1, tracebacks=2, our_errors=["x ERROR bot.y: z"],
                                mcp_clean_error=False)
    assert report.table()["crashes"] == 5


def test_a_heartbeat_late_by_more_than_the_limit_is_a_stall_as_stamped_and_on_the_bot_side() -> None:
    late = 0.25 + STALL_LIMIT_S + 0.1
    report = AgentHostileReport()
    grade_heartbeats(world_with([Heartbeat(1, 10.0), Heartbeat(1, 10.25), Heartbeat(1, 10.25 + late)]), report, 0.0)
    assert (report.stalls, report.stalls_bot_side) == (1, 1)


def test_a_heartbeat_stamped_late_because_the_harness_loop_stalled_is_not_the_bots() -> None:
    late = 0.25 + STALL_LIMIT_S + 0.1
    report = AgentHostileReport(harness_stalls=[(10.3, 10.25 + late)])  # this loop asleep until the stamp
    grade_heartbeats(world_with([Heartbeat(1, 10.0), Heartbeat(1, 10.25), Heartbeat(1, 10.25 + late)]), report, 0.0)
    assert (report.stalls, report.stalls_bot_side) == (1, 0)


def test_a_new_connections_hello_starts_its_count_afresh_and_beats_before_the_start_are_ignored() -> None:
    beats = [Heartbeat(1, 1.0), Heartbeat(1, 9.0), Heartbeat(2, 20.0, hello=True), Heartbeat(2, 20.25)]
    report = AgentHostileReport()
    grade_heartbeats(world_with(beats), report, since=5.0)
    assert (report.stalls, report.stalls_bot_side) == (0, 0)
