"""Answers of one channel reach Discord in the order their turns were queued.

The pipeline runs one channel's turns one at a time, in order, but a turn's answer is sent
after its turn returns, and sends and edits go through different rate-limit buckets (a
channel's messages, an interaction's webhook). So a reply held back by a 429 could appear after
the next question's `/ask` answer. `DeliveryOrder.take(channel_id)`, called with no await
between it and the turn joining the pipeline's queue, gives the turn a `DeliverySlot`: its
`wait()` returns once every earlier slot of that channel was released (or after `MAX_WAIT_S`,
logged, so that a delivery stuck on a dead connection cannot hold a channel for ever), and
`release()` (idempotent; call it in a `finally`) lets the next one go. A turn refused before
it was queued (`TurnResult.unqueued`) calls `unordered()` and goes out at once.

Part of bot/discord_app/.
"""

from __future__ import annotations

import asyncio
import logging

__all__ = ["MAX_WAIT_S", "DeliveryOrder", "DeliverySlot"]

log = logging.getLogger(__name__)

MAX_WAIT_S = 30.0


class DeliverySlot:
    """One turn's place in its channel's delivery order."""

    def __init__(self, order: DeliveryOrder, channel_id: int, previous: asyncio.Future[None] | None,
                 mine: asyncio.Future[None]) -> None:
        self._order = order
        self._channel_id = channel_id
        self._previous = previous  # what wait() still has to wait for
        self._upstream = previous  # what this slot's release passes on to the next one
        self._mine = mine
        self._released = False

    async def wait(self) -> None:
        """Until the channel's earlier answers are delivered (at most `MAX_WAIT_S`)."""
        previous, self._previous = self._previous, None
        if previous is None or previous.done():
            return
        try:
            await asyncio.wait_for(asyncio.shield(previous), self._order.max_wait_s)
        except TimeoutError:
            self._upstream = None  # the next ones need not wait for the stuck one again
            log.warning("channel %s: an earlier answer is still being delivered after %.0f s; "
                        "this one goes out now", self._channel_id, self._order.max_wait_s)

    def unordered(self) -> None:
        """This answer never joined the channel's queue (a refusal): it goes out without waiting."""
        self._previous = None

    def release(self) -> None:
        """This answer is delivered (or given up): the channel's next one may go once the
        earlier ones are delivered too."""
        if self._released:
            return
        self._released = True
        upstream, self._upstream = self._upstream, None
        if upstream is None or upstream.done():
            _done(self._mine)
        else:
            upstream.add_done_callback(lambda _: _done(self._mine))
        self._mine.add_done_callback(lambda _: self._order._released(self._channel_id, self._mine))


def _done(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class DeliveryOrder:
    """The delivery order of every channel's answers (one per front end)."""

    def __init__(self, *, max_wait_s: float = MAX_WAIT_S) -> None:
        self.max_wait_s = max_wait_s
        self._last: dict[int, asyncio.Future[None]] = {}  # channel -> its latest slot's future

    @property
    def channels(self) -> int:
        """Channels with an answer not yet delivered."""
        return len(self._last)

    def take(self, channel_id: int) -> DeliverySlot:
        """The next slot of `channel_id` (synchronous: take it where the turn is queued)."""
        mine: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        previous = self._last.get(channel_id)
        self._last[channel_id] = mine
        return DeliverySlot(self, channel_id, previous, mine)

    def _released(self, channel_id: int, future: asyncio.Future[None]) -> None:
        if self._last.get(channel_id) is future:
            del self._last[channel_id]  # the channel's latest: nothing waits behind it
