"""`bench/chaos.py hostile`, the agent's side, as a test with short replies: the real
`python -m bot run` gets every hostile reply shape from the model and calls an MCP tool whose
schema pattern backtracks for ever in Python's `re`; every question is answered, the MCP call
comes back as a clean error, nothing is logged as an error or a traceback. (Stalls are the
bench's figure, at 100 KB: never a timed assert here.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.chaos_hostile_agent import HOSTILE, run_hostile_agent

pytestmark = pytest.mark.slow  # starts the real bot process and an MCP server


async def test_hostile_replies_and_a_backtracking_mcp_schema_are_answered_cleanly(tmp_path: Path) -> None:
    report = await run_hostile_agent(tmp_path, size=2_000)
    assert report.replies == len(HOSTILE)
    assert report.unanswered == []
    assert report.mcp_clean_error
    assert (report.tracebacks, report.our_errors, report.crashes) == (0, [], 0)
