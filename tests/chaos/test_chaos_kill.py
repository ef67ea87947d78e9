"""Short variant of `bench/chaos.py kill`: the real `python -m bot run` killed with SIGKILL once
in each phase of a turn (model call, tool call, memory write, SQLite commit), restarted each
time; the person asks again and is answered; the files hold whole turns and matching memory."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.chaos_kill import PHASES, run_kills

pytestmark = pytest.mark.slow  # starts the real bot process


async def test_a_kill_in_every_phase_of_a_turn_loses_tears_and_leaks_nothing(tmp_path: Path) -> None:
    report = await run_kills(tmp_path, kills=len(PHASES), seed=7)
    assert dict(report.kills) == dict.fromkeys(PHASES, 1)
    assert report.table() == {"turns": 4, "lost": 0, "duplicated": 0, "out of order": 0,
                              "integrity": 0, "leaks": 0, "pings": 0, "crashes": 0}
    assert report.unsettled == 0


async def test_a_killed_bot_leaves_no_chroma_worker_holding_its_folder(tmp_path: Path) -> None:
    report = await run_kills(tmp_path, kills=1, seed=3)  # the embedded Chroma in its worker (the default)
    assert report.children >= 2  # the worker was there at each kill
    assert report.orphans == 0   # and went with its parent: the restarted bot had the folder alone
    assert report.table()["lost"] == 0 and report.table()["leaks"] == 0
