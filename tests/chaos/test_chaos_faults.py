"""Short variant of `bench/chaos.py faults`: the real `python -m bot run` under model faults in
bursts (500, no answer, cut JSON, empty choices), gateway drops mid-turn and a full disk (a
size-limited tmpfs; mounting it needs root, as the deploy tests do): every question gets one
reply, the answer or one sentence, in time; the SQLite file stays whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.chaos_faults import run_faults
from tests.fakes.flaky_model import FAULT_KINDS

pytestmark = [
    pytest.mark.slow,  # starts the real bot process
    pytest.mark.needs("mount", root="mount a size-limited tmpfs as the bot's data folder"),
]


async def test_faults_give_one_reply_in_time_and_keep_the_file_whole(tmp_path: Path) -> None:
    report = await run_faults(tmp_path, burst=2, drops=1, disk_questions=1, outage_s=0)
    assert report.faults_served == dict.fromkeys(FAULT_KINDS, 2)
    assert (report.gateway_drops, report.resumes) == (1, 1)
    assert report.disk_full_refused + report.disk_full_stored == 2
    assert report.disk_full_refused == 0 or report.disk_full_log_lines > 0  # a refusal says why
    assert report.table() == {"turns": report.questions, "lost": 0, "duplicated": 0, "out of order": 0,
                              "integrity": 0, "leaks": 0, "pings": 0, "crashes": 0}
    assert report.answered > 0
