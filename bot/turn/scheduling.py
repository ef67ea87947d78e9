"""Scheduling of turns: a FIFO lock per channel, a global limit on running turns, a limit per
person on turns in flight, cooldowns.

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
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MAX_TURNS_PER_USER", "Admission", "Cooldowns", "TurnScheduler", "UserTurns"]

COOLDOWN_USERS_MAX = 10_000   # past this, people whose window ended are dropped from the map
MAX_TURNS_PER_USER = 2  # lanes (channels, threads) of one person with turns in flight at once


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


class UserTurns:
    """Each person's turns in flight, by lane (the channel whose lock a turn takes), in at most
    ``limit`` lanes at once, so that one person cannot hold every slot: auto-threads give each
    turn a channel of its own, and so a slot of its own. Turns in a lane the person already has
    are let in: they queue behind that lane's turn and hold no second slot meanwhile. A turn in
    a new lane over the limit is refused at once, not queued: waiting, it would hold its
    channel's lock. Only people with a turn in flight are in the map."""

    def __init__(self, limit: int = MAX_TURNS_PER_USER) -> None:
        self.limit = limit
        self._lanes: dict[str, dict[str, int]] = {}  # user -> lane -> turns in it

    def admits(self, user_id: str, lane: str) -> bool:
        lanes = self._lanes.get(user_id, {})
        return lane in lanes or len(lanes) < self.limit

    def try_enter(self, user_id: str, lane: str) -> bool:
        """Count one more turn of ``user_id`` in ``lane``; False (nothing counted) when refused."""
        if not self.admits(user_id, lane):
            return False
        lanes = self._lanes.setdefault(user_id, {})
        lanes[lane] = lanes.get(lane, 0) + 1
        return True

    def leave(self, user_id: str, lane: str) -> None:
        lanes = self._lanes.get(user_id, {})
        if lanes.get(lane, 0) > 1:
            lanes[lane] -= 1
            return
        lanes.pop(lane, None)
        if not lanes:
            self._lanes.pop(user_id, None)

    def in_flight(self, user_id: str) -> int:
        """The person's turns in flight, in all lanes."""
        return sum(self._lanes.get(user_id, {}).values())


@dataclass(slots=True)
class Admission:
    """A turn let in before its costly work starts (downloading and decoding images): its
    person's cooldown is counted and their in-flight slot held until `release` (the turn's
    end, or a failed download). ``place`` is the place's settings read then."""

    user_id: str
    lane: str
    place: Any
    started: float
    _turns: UserTurns = field(repr=False)
    released: bool = False

    def release(self) -> None:
        if not self.released:
            self.released = True
            self._turns.leave(self.user_id, self.lane)


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
