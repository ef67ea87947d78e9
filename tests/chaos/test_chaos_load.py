"""Short variant of `bench/chaos.py load`: the real `python -m bot run`, 20 channels with 3 people
each asking at once (two mentions, one /ask), a fast model, Discord's buckets and random 429s on
sends and edits: every question answered once and in order, rate limits and heartbeats kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.chaos_load import run_load

pytestmark = pytest.mark.slow  # starts the real bot process


async def test_many_channels_at_once_are_answered_once_in_order_within_discords_limits(tmp_path: Path) -> None:
    report = await run_load(tmp_path, channels=20, rounds=1, latency_s=(0.05, 0.2), inject_429=0.1)
    assert report.table() == {"turns": 60, "lost": 0, "duplicated": 0, "out of order": 0,
                              "integrity": 0, "leaks": 0, "pings": 0, "crashes": 0}
    assert report.sent_429 > 0 and report.never_retried == 0  # the 429s were served, and retried
    assert report.discord_violations() == dict.fromkeys(report.discord_violations(), 0)
    assert report.heartbeats >= 1 and len(report.queued_ms) == 60
    (bot_mb, tree_mb), = report.rss_rounds  # one round: the bot, and with it its Chroma worker
    assert tree_mb > bot_mb > 0
