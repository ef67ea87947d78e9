"""`bench/chaos.py hostile` as a test (it is short already): the real `python -m bot run` gets
fuzzed gateway payloads, prompt injection the fake model obeys, and forged /trace and /memory;
it never crashes, pings, leaks another person's memory or trace, or leaves one unanswered; a
short reply to another person exports none of their words, and a confirmed forget leaves none
of the person's words in the SQLite file or Chroma."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.chaos_hostile import FUZZ_CASES, run_hostile

pytestmark = pytest.mark.slow  # starts the real bot process


async def test_hostile_input_never_crashes_pings_leaks_or_goes_unanswered(tmp_path: Path) -> None:
    report = await run_hostile(tmp_path)
    assert report.cases == len(FUZZ_CASES)
    assert report.real_unanswered == [] and report.our_errors == []
    assert set(report.dropped) <= {c.name for c in FUZZ_CASES if not c.real}
    assert report.parse_drops >= 1  # the guard was exercised, not bypassed
    assert report.injected_pings_written >= 1 and report.foreign_recalls_refused == 1  # injection obeyed
    assert report.leaks_by_kind() == dict.fromkeys(
        ("secrets shown", "other traces shown", "private words shown", "unquoted injections",
         "items without their turn", "turns without their item",
         "items of another person", "unsettled writes",
         "secrets an MCP server read", "bot environment readable by an MCP server", "DMs of a stranger answered",
         "traces opened past the answer's channel", "third turns run at once", "keys sent to another host",
         "cooldowns set below the operator's", "images fetched during a cooldown",
         "another person's words exported", "forgotten words kept"), 0)
    assert report.forget_said.startswith("Done: I forgot")  # the forget ran: its zero is a real one
    table = report.table()
    assert table["turns"] > 0
    assert {k: v for k, v in table.items() if k != "turns"} == dict.fromkeys(
        ("lost", "duplicated", "out of order", "integrity", "leaks", "pings", "crashes"), 0)
