"""Graceful shutdown on SIGTERM/SIGINT, shared by the Discord bot and the console chat.

    stop = StopSignal()
    with stop.installed():                         # SIGTERM and SIGINT now request a stop
        await serve_until_stopped(serve(), pipeline.tracker, stop, timeout_s=60, finish=close_front_end)

On the first signal: the pipeline stops taking new turns (newcomers get the "restarting"
sentence), the running and queued turns get up to ``timeout_s`` (SHUTDOWN_TIMEOUT_S, default
60, under the unit's TimeoutStopSec=90) to finish; the ones still unfinished then are abandoned
(their callers answer with the "restarting" sentence; nothing half-written is kept, see
bot.turn.tracking); then ``finish`` lets the front end deliver and close, and the
stores are closed by the caller's Runtime. A second signal abandons the turns at once.

Part of bot/: knows the turn tracker's lifecycle methods (bot.turn.tracking), nothing of Discord.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from bot.turn.tracking import TurnTracker

__all__ = ["StopSignal", "serve_until_stopped"]

log = logging.getLogger(__name__)

ABANDON_GRACE_S = 5.0   # for abandoned turns to hand their "restarting" sentence back


class StopSignal:
    """A stop request: set by a signal (see ``installed``) or by ``request()``."""

    def __init__(self) -> None:
        self._stop = asyncio.Event()
        self._hurry = asyncio.Event()
        self.reason: str | None = None

    def request(self, reason: str = "stop requested") -> None:
        """First call: stop gracefully. Any later call: abandon the running turns now."""
        if self._stop.is_set():
            log.warning("%s again: abandoning the running turns now", reason)
            self._hurry.set()
            return
        self.reason = reason
        self._stop.set()

    async def wait(self) -> None:
        await self._stop.wait()

    async def wait_hurry(self) -> None:
        await self._hurry.wait()

    @contextlib.contextmanager
    def installed(self, signals: tuple[signal.Signals, ...] = (signal.SIGTERM, signal.SIGINT)) -> Iterator[StopSignal]:
        """Route ``signals`` to ``request`` on the running loop while the block runs."""
        loop = asyncio.get_running_loop()
        for sig in signals:
            loop.add_signal_handler(sig, self.request, sig.name)
        try:
            yield self
        finally:
            for sig in signals:
                loop.remove_signal_handler(sig)


async def _drain(turns: TurnTracker, stop: StopSignal, timeout_s: float) -> None:
    turns.stop_accepting()
    busy = turns.in_flight
    log.info("%s: no new turns; waiting up to %.0f s for %d running turn(s)",
             stop.reason, timeout_s, busy)
    idle = asyncio.create_task(turns.wait_idle(timeout_s))
    hurry = asyncio.create_task(stop.wait_hurry())
    try:
        await asyncio.wait({idle, hurry}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        hurry.cancel()
    finished = idle.done() and idle.result()
    if not finished:
        idle.cancel()
        abandoned = turns.abandon_turns()
        log.warning("shutdown: %d turn(s) unfinished after %.0f s, answered with the restarting "
                    "message", abandoned, timeout_s)
        if not await turns.wait_idle(ABANDON_GRACE_S):
            log.error("shutdown: %d turn(s) did not end after being abandoned", turns.in_flight)


async def serve_until_stopped(serve: Awaitable[Any], turns: TurnTracker, stop: StopSignal, *,
                              timeout_s: float,
                              finish: Callable[[asyncio.Task[Any]], Awaitable[None]] | None = None) -> Any:
    """Run ``serve`` until it ends by itself or ``stop`` is requested, then drain the turns.

    ``finish(serve_task)`` ends the front end after the drain (e.g. deliver the last replies
    and close the Discord client); without it the serve task is cancelled. Returns what
    ``serve`` returned, or None when it was stopped.
    """
    task = asyncio.ensure_future(serve)
    waiter = asyncio.create_task(stop.wait())
    try:
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
    if task.done():
        return task.result()
    await _drain(turns, stop, timeout_s)
    if finish is not None:
        await finish(task)
    if not task.done():
        task.cancel()
    try:
        return await task
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise
        return None
    finally:
        log.info("shutdown: front end closed")
