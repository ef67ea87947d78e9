"""Reminders in the console chat: one end-to-end run in real time (`python -m bot chat` as a
subprocess, the model setting a reminder a few seconds ahead, the chat printing it when it falls
due), and the console delivering only its own user's reminders."""

from __future__ import annotations

import asyncio
import io
import json
import re
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from bot.console.reminders import ConsoleReminderSender
from bot.process.runtime import Runtime
from bot.reminders.delivery import AT_ONCE, ReminderDelivery, SendOutcome
from bot.reminders.service import Place
from bot.settings.config import load_settings
from memory.stores.reminders import NewReminder, Reminder
from tests.bot.test_console import child_env
from tests.fakes.openai_server import FakeOpenAI

pytestmark = pytest.mark.slow  # starts the console chat process: handed out first (tests/conftest.py)


async def test_a_reminder_set_in_the_console_is_printed_when_it_falls_due(
        fake: FakeOpenAI, env: dict[str, str], tmp_path: Path) -> None:
    def model(body: dict[str, Any]) -> str:
        if body["messages"][-1]["content"].startswith("Observation:"):
            return "Final Answer: I will remind you."
        soon = (datetime.now(UTC) + timedelta(seconds=2)).isoformat(timespec="seconds")
        return f'Action: remind\nAction Input: {json.dumps({"when": soon, "message": "stand up"})}'

    fake.responder = model
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "chat", cwd=tmp_path, env=child_env(env),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b"remind me to stand up in two seconds\n")
    await proc.stdin.drain()
    seen = ""
    async with asyncio.timeout(60):
        while "⏰ Reminder: stand up" not in seen:
            line = await proc.stdout.readline()
            assert line, f"the chat ended before the reminder: {seen}"
            seen += line.decode()
    proc.stdin.write(b"/quit\n")
    await proc.stdin.drain()
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    assert "I will remind you." in seen and "reminder #1" in seen
    assert "Traceback" not in err.decode()


async def test_the_console_delivers_only_its_own_users_reminders(env: dict[str, str]) -> None:
    now = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)
    clock = [now]
    out = io.StringIO()
    async with Runtime(load_settings(env), now=lambda: clock[0]) as runtime:
        for user in ("console", "200000000000000001"):
            await runtime.reminders.create(Place(user, user, None, "console", True), "2026-12-03T10:05Z", f"for {user}")
        delivery = ReminderDelivery(runtime.reminders, ConsoleReminderSender(Console(file=out, width=100), "console"))
        clock[0] = now + timedelta(minutes=5)
        assert await delivery.deliver_due() == 1
        assert await runtime.reminders.pending("console") == []
        assert len(await runtime.reminders.pending("200000000000000001")) == 1
    assert "for console" in out.getvalue() and "for 2000" not in out.getvalue()


async def test_the_consoles_due_reminder_is_reached_behind_more_than_a_page_of_others_due_earlier(
        env: dict[str, str]) -> None:
    now = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)
    out = io.StringIO()
    async with Runtime(load_settings(env), now=lambda: now) as runtime:
        store = runtime.reminders.store
        for n in range(150):  # a Discord bot's, sharing DATA_DIR, all due before the console's
            await store.add(NewReminder(
                user_id=f"2000000000000{n:05d}", display_name="someone", guild_id=None, channel_id="300000000000000001",
                by_dm=True, message=f"theirs {n}", ask=False, rule=None, zone="UTC", start_local="",
                due_at=now - timedelta(hours=2, seconds=-n)), max_pending=1, now=now)
        await store.add(NewReminder(
            user_id="console", display_name="console", guild_id=None, channel_id="console", by_dm=True,
            message="ours", ask=False, rule=None, zone="UTC", start_local="", due_at=now - timedelta(hours=1)),
            max_pending=1, now=now)
        delivery = ReminderDelivery(runtime.reminders, ConsoleReminderSender(Console(file=out, width=100), "console"))
        assert await delivery.deliver_due() == 1
        assert await runtime.reminders.pending("console") == []
    assert "ours" in out.getvalue() and "theirs" not in out.getvalue()


class HeldSender(ConsoleReminderSender):
    """The console's sender, whose sends wait until the test lets them through."""

    def __init__(self, out: io.StringIO) -> None:
        super().__init__(Console(file=out, width=100), "console")
        self.release = asyncio.Event()
        self.sending = 0

    async def send(self, reminder: Reminder, text: str, nonce: str) -> SendOutcome:
        self.sending += 1
        await self.release.wait()
        return await super().send(reminder, text, nonce)


async def test_deliveries_run_at_most_at_once_at_a_time_and_each_is_sent_once(env: dict[str, str]) -> None:
    now = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)
    out = io.StringIO()
    async with Runtime(load_settings(env), now=lambda: now) as runtime:
        for n in range(AT_ONCE + 20):  # due together, as after a long downtime
            await runtime.reminders.store.add(NewReminder(
                user_id="console", display_name="console", guild_id=None, channel_id="console", by_dm=True,
                message=f"ours {n}", ask=False, rule=None, zone="UTC", start_local="",
                due_at=now - timedelta(minutes=1, seconds=n)), max_pending=AT_ONCE + 20, now=now)
        sender = HeldSender(out)
        delivery = ReminderDelivery(runtime.reminders, sender)

        assert await delivery.deliver_due(wait=False) == AT_ONCE
        async with asyncio.timeout(30):  # each started delivery reaches its send
            while sender.sending < AT_ONCE:
                await asyncio.sleep(0.01)
        assert await delivery.deliver_due(wait=False) == 0  # none ended: nothing more starts
        assert sender.sending == AT_ONCE
        sender.release.set()
        for _ in range(3):  # as the loop does, woken by the deliveries that end
            await delivery.deliver_due()
        assert await runtime.reminders.pending("console") == []
    shown = out.getvalue()
    assert all(len(re.findall(rf"\bours {n}\b", shown)) == 1 for n in range(AT_ONCE + 20))  # each once


class RetryThenHeldSender(HeldSender):
    """Its first send is a passing failure; later ones wait until released."""

    async def send(self, reminder: Reminder, text: str, nonce: str) -> SendOutcome:
        if self.sending == 0:
            self.sending += 1
            return "retry"
        return await super().send(reminder, text, nonce)


class CountedDueReads:
    """Counts the pages of due reminders the runtime's store is asked for."""

    def __init__(self, runtime: Runtime) -> None:
        self.pages = 0
        read_due = runtime.reminders.store.due

        async def counted(now: datetime, *, after: Reminder | None = None, limit: int = 100) -> list[Reminder]:
            self.pages += 1
            return await read_due(now, after=after, limit=limit)

        runtime.reminders.store.due = counted  # type: ignore[method-assign]


async def test_a_retry_on_its_way_leaves_the_loop_asleep_until_it_ends(env: dict[str, str]) -> None:
    now = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)
    clock = [now]
    out = io.StringIO()
    async with Runtime(load_settings(env), now=lambda: clock[0]) as runtime:
        await runtime.reminders.store.add(NewReminder(
            user_id="console", display_name="console", guild_id=None, channel_id="console", by_dm=True,
            message="again", ask=False, rule=None, zone="UTC", start_local="", due_at=now - timedelta(minutes=1)),
            max_pending=1, now=now)
        sender = RetryThenHeldSender(out)
        delivery = ReminderDelivery(runtime.reminders, sender, poll_s=60)
        reads = CountedDueReads(runtime)
        loop = asyncio.create_task(delivery.run())
        try:
            async with asyncio.timeout(30):
                while sender.sending < 1:
                    await asyncio.sleep(0.01)
                clock[0] = now + timedelta(hours=1)  # past the retry's time
                delivery.poke()
                while sender.sending < 2:  # the retry is on its way, held
                    await asyncio.sleep(0.01)
            before = reads.pages
            await asyncio.sleep(0.5)
            assert reads.pages - before <= 1  # it sleeps: the retry's past time no longer wakes it every 10 ms
            sender.release.set()
            async with asyncio.timeout(30):
                while await runtime.reminders.pending("console"):
                    await asyncio.sleep(0.01)
        finally:
            loop.cancel()
            await asyncio.gather(loop, return_exceptions=True)


async def test_a_backlog_of_due_reminders_is_read_only_as_far_as_the_deliveries_it_can_start(
        env: dict[str, str]) -> None:
    now = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)
    async with Runtime(load_settings(env), now=lambda: now) as runtime:
        for n in range(AT_ONCE * 4):  # due together after a long downtime: four pages
            await runtime.reminders.store.add(NewReminder(
                user_id="console", display_name="console", guild_id=None, channel_id="console", by_dm=True,
                message=f"ours {n}", ask=False, rule=None, zone="UTC", start_local="",
                due_at=now - timedelta(minutes=1, seconds=n)), max_pending=AT_ONCE * 4, now=now)
        sender = HeldSender(io.StringIO())
        delivery = ReminderDelivery(runtime.reminders, sender)
        reads = CountedDueReads(runtime)
        try:
            assert await delivery.deliver_due(wait=False) == AT_ONCE
            assert reads.pages == 1  # the first page held as many as may run at once
            assert await delivery.deliver_due(wait=False) == 0
            assert reads.pages == 1  # none can start: nothing read
        finally:
            sender.release.set()
            await delivery.stop()
