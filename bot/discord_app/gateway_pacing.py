"""The gateway reader gives the event loop back once a loop iteration's time budget is spent, so
that a burst of events cannot hold the loop (and with it the heartbeat) for the whole burst.

discord.py reads the gateway in one task: ``DiscordWebSocket.poll_event`` takes the next
frame from aiohttp's queue and ``received_message`` decompresses, decodes, parses and
dispatches it; ``Client.connect`` calls ``poll_event`` again at once. aiohttp hands over a
frame already buffered without suspending, so when hundreds of events arrive at once (every
person of every channel asking together) the reader handles all of them in one callback, and
the handler tasks they start (a turn queued, an ``/ask`` deferred, a typing indicator) all
take their first step in the loop's next iteration. Whatever else the loop has to run waits
behind both, and that includes the heartbeat: discord.py's keep-alive thread hands each beat
to the loop (``run_coroutine_threadsafe``), and the next is due an interval after that send.

``paced`` wraps ``received_message`` so that the reader passes its
connection's ``bot.process.pacing.LoopPacer`` before it handles each frame: it reads on while the loop iteration's
budget lasts (a burst of cheap frames is still read in a few iterations) and past it yields,
so one iteration holds about a budget's worth of frames, and a heartbeat handed over meanwhile
waits for no more than that and the first steps of their handlers. Frames are still handled
one at a time, in the order they came. discord.py has no hook for this, so its class
attribute is wrapped once (bot.discord_app.patches.install_gateway_pacing).
Imports bot.process.pacing only; bot.discord_app.patches installs it.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Awaitable, Callable

from bot.process.pacing import PACE_BUDGET_S, LoopPacer

__all__ = ["paced"]

Receive = Callable[..., Awaitable[None]]

budget_s = PACE_BUDGET_S   # each connection's reads per loop iteration (tests set 0)
# One pacer per gateway connection: shards sharing one would let the first reader with a backlog
# spend every iteration's budget, and the others (their heartbeat acks too) would starve.
_pacers: weakref.WeakKeyDictionary[object, LoopPacer] = weakref.WeakKeyDictionary()


def paced(received_message: Receive) -> Receive:
    """`received_message`, once the connection's pacer let the frame through in this iteration."""
    @functools.wraps(received_message)
    async def receive_within_budget(connection: object, *args: object, **kwargs: object) -> None:
        pacer = _pacers.get(connection)
        if pacer is None:
            pacer = _pacers[connection] = LoopPacer(budget_s)
        await pacer.wait()
        await received_message(connection, *args, **kwargs)
    receive_within_budget.paced = True  # type: ignore[attr-defined]
    return receive_within_budget

