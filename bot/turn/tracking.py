"""The turns in flight, for graceful shutdown: stop accepting, wait until idle, abandon.

bot.process.shutdown drives these three steps; the pipeline enters every turn here. An abandoned
turn's task is cancelled and reported as abandoned, so the pipeline can answer its caller with
the "restarting" sentence instead of letting the cancellation escape (a turn cancelled while
storing finishes storing first: bot.turn_store.persistence).

Part of bot/: plain asyncio.
"""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["TurnTracker"]


class TurnTracker:
    """Counts and holds the tasks of running or queued turns."""

    def __init__(self) -> None:
        self.accepting = True
        self._in_flight = 0
        self._tasks: set[asyncio.Task[Any]] = set()
        self._abandoned: set[asyncio.Task[Any]] = set()
        self._idle = asyncio.Event()
        self._idle.set()

    def enter(self) -> asyncio.Task[Any]:
        """The current task starts a turn; returns it (pass it to ``leave``)."""
        task = asyncio.current_task()
        assert task is not None  # a coroutine awaited under asyncio always runs in a task
        self._in_flight += 1
        self._idle.clear()
        self._tasks.add(task)
        return task

    def abandoned(self, task: asyncio.Task[Any]) -> bool:
        """Whether ``task`` was cancelled by ``abandon_turns`` (then its cancel is undone)."""
        if task not in self._abandoned:
            return False
        task.uncancel()
        return True

    def leave(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        self._abandoned.discard(task)
        self._in_flight -= 1
        if self._in_flight == 0:
            self._idle.set()

    def stop_accepting(self) -> None:
        """New turns get the "restarting" sentence from now on; running ones finish."""
        self.accepting = False

    async def wait_idle(self, timeout_s: float | None = None) -> bool:
        """Wait until no turn is running or queued; False when ``timeout_s`` ran out first."""
        try:
            async with asyncio.timeout(timeout_s):
                await self._idle.wait()
        except TimeoutError:
            return False
        return True

    def abandon_turns(self) -> int:
        """Cancel the turns still running or queued; returns how many."""
        for task in self._tasks:
            self._abandoned.add(task)
            task.cancel()
        return len(self._tasks)

    @property
    def in_flight(self) -> int:
        return self._in_flight
