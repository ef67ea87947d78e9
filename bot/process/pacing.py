"""Work that becomes ready at the same moment is spread over event-loop iterations, a time
budget's worth per iteration, so that no iteration (and no heartbeat waiting behind it) is
held for as long as a whole burst takes.

asyncio runs, in one iteration of its loop, every callback that was ready when the iteration
began; whatever becomes ready meanwhile (a heartbeat that discord.py's keep-alive thread hands
over, the next gateway frame) waits for the next iteration. When many turns wake together (a
burst of questions lets MAX_CONCURRENT_TURNS of them through at once, and their buffer reads
come back together), each then builds its memory search or its first model request (the
openai client's request building, a new connection: milliseconds each) before its next await,
and all of that lands in one iteration.

``LoopPacer.wait`` is called before such a step. The first caller of an iteration opens the
iteration's window; later callers pass at once while less than ``budget_s`` has gone by since
then (the steps that passed before them included), and past it they wait for the next
iteration, where the first of them opens a new window. Work that is cheaper than the budget is
not slowed at all; a burst is cut into budget-sized iterations, with everything else the loop
has to run in between. (A gate of one step per iteration was tried first: on a busy machine it
cut the bot's throughput to a few turns a second, iterations there being long.)

Part of bot/: plain asyncio.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

__all__ = ["PACE_BUDGET_S", "LoopPacer"]

# paced work per loop iteration: the event loop's stall target (issue 9: worst stall 20 ms), so
# a burst of gateway frames or of released turns never holds one iteration past it
PACE_BUDGET_S = 0.02


class LoopPacer:
    """Let callers through while their loop iteration's budget lasts; the rest a turn later."""

    def __init__(self, budget_s: float = PACE_BUDGET_S, clock: Callable[[], float] = time.perf_counter) -> None:
        self.budget_s = budget_s
        self._clock = clock
        self._opened: float | None = None               # when this iteration's window opened
        self._loop: asyncio.AbstractEventLoop | None = None

    async def wait(self) -> None:
        """Return in this iteration if its budget is not spent yet, else in a later one."""
        loop = asyncio.get_running_loop()
        while True:
            now = self._clock()
            if self._opened is None or self._loop is not loop:   # the first caller of an iteration
                self._opened, self._loop = now, loop
                loop.call_soon(self._close)   # runs at the start of the next iteration
                return
            if now - self._opened < self.budget_s:
                return
            await asyncio.sleep(0)   # a bare yield: one turn of the loop

    def _close(self) -> None:
        self._opened = None
