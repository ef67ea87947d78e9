"""The live status line coalesces updates and always delivers the newest one."""

from __future__ import annotations

import asyncio

from bot.discord_app.status import ThrottledStatus


class Recorder:
    def __init__(self, fail: bool = False) -> None:
        self.edits: list[str] = []
        self.fail = fail

    async def __call__(self, text: str) -> None:
        self.edits.append(text)
        if self.fail:
            raise RuntimeError("429 Too Many Requests")


async def test_a_burst_of_updates_becomes_one_edit_with_the_newest_text() -> None:
    rec = Recorder()
    status = ThrottledStatus(rec, interval_s=60)
    for i in range(10):
        status.update(f"step {i}")
    await status.close()
    assert rec.edits == ["step 9"]


async def test_updates_during_the_wait_are_delivered_on_close() -> None:
    rec = Recorder()
    status = ThrottledStatus(rec, interval_s=60)
    status.update("calling calculator...")
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    status.update("calling weather...")
    status.update("writing the answer...")
    await asyncio.wait_for(status.close(), timeout=5)
    assert rec.edits == ["calling calculator...", "writing the answer..."]


async def test_repeated_text_is_not_edited_again() -> None:
    rec = Recorder()
    status = ThrottledStatus(rec, interval_s=0)
    status.update("thinking...")
    await asyncio.sleep(0.01)
    status.update("thinking...")
    await status.close()
    assert rec.edits == ["thinking..."]


async def test_a_failing_edit_does_not_raise() -> None:
    rec = Recorder(fail=True)
    status = ThrottledStatus(rec, interval_s=0)
    status.update("thinking...")
    await status.close()
    assert rec.edits == ["thinking..."]


async def test_close_without_updates_sends_nothing() -> None:
    rec = Recorder()
    status = ThrottledStatus(rec, interval_s=60)
    await status.close()
    assert rec.edits == []
