"""Delivering reminders when they fall due: each occurrence sent once, none lost.

The loop wakes at the soonest due time (or a retry's, or when a reminder is added or a delivery
ends, or every POLL_S at most), and starts one task per due reminder not already on its way, at most
AT_ONCE, reading the due list only as far as it needs. For each occurrence:

1. The front end says whether this process delivers it (``owns``: the shard of its server; DMs
   from shard 0) and whether its person is still let in (``allowed``: not blocked, still on the
   allow-lists); a person no longer let in loses the reminder, with a log line.
2. Its text is chosen and kept in the store before anything is sent (``prepared``): the message,
   or for a scheduled question the answer of a turn run for that person (bot.turn.pipeline, as
   ``scheduled``: their access, memory scope and budget, no cooldown, traced like any answer);
   an occurrence more than LATE_AFTER past its time says so ("late by 2 h").
3. The front end sends it with a nonce made of the reminder and its occurrence, which Discord
   enforces (the same nonce within a few minutes gives back the message already posted), and
   only once the send was accepted is the occurrence closed: a one-off deleted, a repeating
   one moved to its next time after now (occurrences missed while the bot was down are not
   replayed one by one). A crash anywhere before the close sends the same text with the same
   nonce again: posted once. A send that failed for a passing reason is tried again later,
   waiting longer each time (RETRY_S, doubling up to RETRY_MAX_S).

Part of bot/: platform-free (the front end is a ReminderSender); joins bot.reminders and the
turn pipeline.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Literal, Protocol
from zoneinfo import ZoneInfo

from bot.reminders.schedule import late_by, next_after
from bot.reminders.service import Reminders
from bot.turn.requests import TurnRequest
from memory.stores.reminders import Reminder

if TYPE_CHECKING:
    from bot.turn.pipeline import TurnPipeline

__all__ = ["LATE_AFTER", "ReminderDelivery", "ReminderSender", "SendOutcome", "nonce_of"]

log = logging.getLogger(__name__)

POLL_S = 30.0
DUE_PAGE = 100  # due reminders read at once
AT_ONCE = 100  # deliveries in progress at most (after downtime thousands may be due together)
LATE_AFTER = timedelta(minutes=1)
RETRY_S = 5.0
RETRY_MAX_S = 300.0
_RETRY_TURN = ("busy", "shutting_down")  # a scheduled question not run now: ask again later

SendOutcome = Literal["sent", "dropped", "retry"]


class ReminderSender(Protocol):
    """The front end's side of a delivery (Discord, the console)."""

    def owns(self, reminder: Reminder) -> bool:
        """This process delivers ``reminder`` (its shard)."""
        ...

    async def allowed(self, reminder: Reminder) -> bool:
        """Its person may still be answered where it was set."""
        ...

    async def send(self, reminder: Reminder, text: str, nonce: str) -> SendOutcome:
        """Post ``text`` to the person: "sent" once accepted, "dropped" when it can never be
        (logged by the sender), "retry" for a passing failure."""
        ...


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, d = divmod(n, 36)
        out = digits[d] + out
        if n == 0:
            return out


def nonce_of(reminder: Reminder) -> str:
    """The occurrence's nonce (Discord allows 25 characters; a sender may add ".N" per part)."""
    return f"r{_base36(reminder.id)}.{_base36(reminder.due_at_us // 1_000_000)}"


class ReminderDelivery:
    """See the module docstring. ``turns`` runs scheduled questions (None: they are not asked,
    their text is sent as it is)."""

    def __init__(self, reminders: Reminders, sender: ReminderSender, *, turns: TurnPipeline | None = None,
                 poll_s: float = POLL_S) -> None:
        self._reminders = reminders
        self._store = reminders.store
        self._sender = sender
        self._turns = turns
        self._poll_s = poll_s
        self._running: dict[int, asyncio.Task[None]] = {}
        # deliveries that ended while the due list was being read: the list may predate their close
        self._ended_during_read: set[int] = set()
        self._retry_at: dict[int, tuple[datetime, float]] = {}  # id -> (not before, last wait)
        self._wake = asyncio.Event()
        reminders.added = self._wake.set

    @property
    def now(self) -> Callable[[], datetime]:
        return self._reminders.now

    def poke(self) -> None:
        """Look for due reminders now (the clock moved, one was added)."""
        self._wake.set()

    async def deliver_due(self, *, wait: bool = True) -> int:
        """Start delivering the occurrences due now that this process owns, up to AT_ONCE in
        progress (a delivery that ends wakes the loop for the next); with ``wait``, return once
        every delivery in progress (these and any started before) is done. How many were started."""
        now = self.now()
        started = []
        self._ended_during_read.clear()
        for reminder in await self._startable(now, AT_ONCE - len(self._running)):
            if len(self._running) >= AT_ONCE:
                break
            if reminder.id in self._running or reminder.id in self._ended_during_read:
                continue  # ended while the list was read: the list may predate its close
            task = asyncio.create_task(self._deliver(reminder), name=f"reminder-{reminder.id}")
            self._running[reminder.id] = task
            task.add_done_callback(lambda _t, rid=reminder.id: self._finished(rid))
            started.append(task)
        if wait and self._running:
            await asyncio.gather(*self._running.values())
        return len(started)

    async def _startable(self, now: datetime, wanted: int) -> list[Reminder]:
        """The occurrences due at ``now`` that this process owns and may start (not on their
        way, not waiting for a retry's time), read a page at a time until ``wanted`` of them are
        found or the due list ends: others' (another shard's, a Discord bot's sharing DATA_DIR)
        due before them never hide its own, and a backlog of thousands is not read whole at
        every wake. Retry times of occurrences no longer due (closed, cancelled) are dropped
        once a read reaches the end."""
        startable: list[Reminder] = []
        owned_ids: set[int] = set()
        page = await self._store.due(now, limit=DUE_PAGE) if wanted > 0 else []
        while page:
            for reminder in page:
                if not self._sender.owns(reminder):
                    continue
                owned_ids.add(reminder.id)
                retry = self._retry_at.get(reminder.id)
                if reminder.id not in self._running and (retry is None or retry[0] <= now):
                    startable.append(reminder)
            if len(startable) >= wanted:
                return startable
            if len(page) < DUE_PAGE:
                break
            page = await self._store.due(now, after=page[-1], limit=DUE_PAGE)
        if wanted > 0:  # the whole due list was read
            self._retry_at = {rid: at for rid, at in self._retry_at.items() if rid in owned_ids}
        return startable

    async def run(self) -> None:
        """Deliver until cancelled (the front end runs this as a task and cancels it on close).
        It sleeps until the soonest of: the next occurrence not yet due, a retry's time, POLL_S;
        a reminder added or a delivery finished wakes it."""
        while True:
            self._wake.clear()  # before reading: a delivery ending meanwhile wakes the next wait
            now = self.now()
            try:
                await self.deliver_due(wait=False)
                upcoming = await self._store.next_due(now)
            except Exception:
                log.exception("reminder delivery failed; trying again shortly")
                upcoming = None
            # a retry time already passed is running or waits for a slot: its end wakes the loop
            wake = [now + timedelta(seconds=self._poll_s),
                    *(at for rid, (at, _) in self._retry_at.items() if at > now and rid not in self._running)]
            if upcoming is not None:
                wake.append(upcoming)
            try:
                await asyncio.wait_for(self._wake.wait(), max((min(wake) - self.now()).total_seconds(), 0.01))
            except TimeoutError:
                pass

    def _finished(self, reminder_id: int) -> None:
        self._running.pop(reminder_id, None)
        self._ended_during_read.add(reminder_id)
        self._wake.set()  # its next occurrence may be the soonest now

    async def stop(self) -> None:
        """Cancel deliveries in progress (each is sent again after a restart: see the docstring)."""
        for task in list(self._running.values()):
            task.cancel()
        await asyncio.gather(*self._running.values(), return_exceptions=True)

    async def _deliver(self, reminder: Reminder) -> None:
        try:
            if not await self._sender.allowed(reminder):
                log.warning("reminder %d of user=%s dropped: the person is no longer let in there",
                            reminder.id, reminder.user_id)
                await self._store.drop(reminder.id)
                return
            text = reminder.prepared
            if text is None:
                text = await self._compose(reminder)
                if text is None or not await self._store.prepare(reminder, text):
                    return  # asked again later, or cancelled meanwhile
            outcome = await self._sender.send(reminder, text, nonce_of(reminder))
            if outcome == "retry":
                self._later(reminder)
                return
            self._retry_at.pop(reminder.id, None)
            await self._close(reminder)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("reminder %d: delivery failed; trying again later", reminder.id)
            self._later(reminder)

    async def _compose(self, reminder: Reminder) -> str | None:
        now = self.now()
        late = now - reminder.due_at
        note = f" ({late_by(late)})" if late > LATE_AFTER else ""
        if not reminder.ask or self._turns is None:
            return f"⏰ Reminder{note}: {reminder.message}"
        request = TurnRequest(user_id=reminder.user_id, display_name=reminder.display_name,
                              guild_id=reminder.guild_id, channel_id=reminder.channel_id, text=reminder.message,
                              private=reminder.by_dm and reminder.guild_id is not None, scheduled=True)
        result = await self._turns.handle(request)
        if result.error_kind in _RETRY_TURN:
            log.info("reminder %d: scheduled question not run now (%s); asking again later",
                     reminder.id, result.error_kind)
            self._later(reminder)
            return None
        return f"⏰ You asked me to answer this now{note}: {reminder.message}\n\n{result.text}"

    async def _close(self, reminder: Reminder) -> None:
        next_due = None
        if reminder.rule is not None:
            after = max(self.now(), reminder.due_at)
            next_due = await next_after(reminder.rule, datetime.fromisoformat(reminder.start_local),
                                        ZoneInfo(reminder.zone), after)
        if await self._store.close(reminder, next_due):
            log.info("reminder %d of user=%s delivered; %s", reminder.id, reminder.user_id,
                     f"next at {next_due.isoformat()}" if next_due else "done")

    def _later(self, reminder: Reminder) -> None:
        _, waited = self._retry_at.get(reminder.id, (None, RETRY_S / 2))
        wait = min(waited * 2, RETRY_MAX_S)
        self._retry_at[reminder.id] = (self.now() + timedelta(seconds=wait), wait)
