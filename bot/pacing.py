"""Turns that become ready at the same moment start their heavy step one per loop iteration.

asyncio runs, in one iteration of its loop, every callback that was ready when the iteration
began, and whatever becomes ready meanwhile (a heartbeat that discord.py's keep-alive thread
hands over, the next gateway frame) waits for the next iteration. When many turns wake
together (a burst of questions lets MAX_CONCURRENT_TURNS of them through at once, and their
buffer reads come back together), each then builds its memory search or its first model
request (the openai client's request building, a new connection: milliseconds each) before
its next await, and all of that lands in one iteration: the loop held for as long as they all
take. ``LoopPacer.wait`` lets one waiter through per loop iteration, in arrival order, so that
an iteration holds one such step at most; a waiter alone passes after one turn of the loop.

Part of bot/: plain asyncio.
"""

from __future__ import annotations

import asyncio

__all__ = ["LoopPacer"]


class LoopPacer:
    """A FIFO gate: waiters pass one at a time, one loop iteration apart."""

    def __init__(self) -> None:
        self._lock = asyncio.Lock()   # FIFO, and a cancelled waiter leaves the queue

    async def wait(self) -> None:
        """Return once the waiters ahead have passed and the loop has turned once since."""
        async with self._lock:
            # Held across one turn of the loop: the next waiter is woken by the release and
            # runs an iteration later, while this one goes on with its step.
            await asyncio.sleep(0)
