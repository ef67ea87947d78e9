"""Scheduling of turns: a FIFO lock per channel, a global limit on running turns, cooldowns.

The channel's lock comes first, then a slot of the global MAX_CONCURRENT_TURNS semaphore, so
that a queue of one busy channel waits without holding slots other channels could use.
asyncio.Lock wakes waiters in FIFO order: one channel is answered in order. A channel's lock
lives in the map only while some turn holds or waits for it (bounded by the turns in flight).

Part of bot/: plain asyncio, knows nothing of the agent, the stores or Discord.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

__all__ = ["Cooldowns", "TurnScheduler"]

COOLDOWN_USERS_MAX = 10_000   # past this, people whose window ended are dropped from the map


@dataclass(slots=True)
class _ChannelSlot:
    lock: asyncio.Lock
    users: int = 0


class TurnScheduler:
    """Channel locks and the global slot limit; ``running`` counts turns holding a slot."""

    def __init__(self, max_concurrent: int) -> None:
        self._slots: dict[str, _ChannelSlot] = {}
        self._semaphore = asyncio.Semaphore(max_concurrent)
        self.running = 0

    @contextlib.asynccontextmanager
    async def channel(self, channel_id: str) -> AsyncIterator[None]:
        """Hold the channel's lock (FIFO); the lock leaves the map with its last user."""
        slot = self._slots.get(channel_id)
        if slot is None:
            slot = self._slots[channel_id] = _ChannelSlot(asyncio.Lock())
        slot.users += 1
        try:
            async with slot.lock:
                yield
        finally:
            slot.users -= 1
            if slot.users == 0 and self._slots.get(channel_id) is slot:
                del self._slots[channel_id]

    @contextlib.asynccontextmanager
    async def turn(self, channel_id: str) -> AsyncIterator[None]:
        """The channel's lock, then a global slot, for one turn."""
        async with self.channel(channel_id), self._semaphore:
            self.running += 1
            try:
                yield
            finally:
                self.running -= 1


class Cooldowns:
    """When each person last started a turn; ``cooling_down`` is asked with the cooldown of
    the place (USER_COOLDOWN_S, or a server's own), 0 meaning none."""

    def __init__(self) -> None:
        self._last: dict[str, float] = {}

    def cooling_down(self, user_id: str, now: float, cooldown_s: float) -> bool:
        """True when ``user_id`` started a turn less than ``cooldown_s`` ago; else records
        ``now`` as their latest turn and returns False."""
        if cooldown_s <= 0:
            return False
        last = self._last.get(user_id)
        if last is not None and now - last < cooldown_s:
            return True
        if len(self._last) > COOLDOWN_USERS_MAX:
            self._last = {u: t for u, t in self._last.items() if now - t < cooldown_s}
        self._last[user_id] = now
        return False
