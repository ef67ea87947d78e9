"""The gateway reader gives the event loop back after every frame, so that a burst of events
cannot hold the loop (and with it the heartbeat) for as long as the whole burst takes.

discord.py reads the gateway in one task: ``DiscordWebSocket.poll_event`` takes the next
frame from aiohttp's queue, decompresses, decodes, parses and dispatches it
(``received_message``), and ``Client.connect`` calls it again at once. aiohttp hands over a
frame already buffered without suspending, so when hundreds of events arrive at once (every
person of every channel asking together) the reader handles all of them in one callback, and
the handler tasks they start (a turn queued, an ``/ask`` deferred, a typing indicator) all
take their first step in the loop's next iteration. Whatever else the loop has to run waits
behind both, and that includes the heartbeat: discord.py's keep-alive thread hands each beat
to the loop (``run_coroutine_threadsafe``), and the next is due an interval after that send.

``install_gateway_pacing`` wraps ``poll_event`` so that the reader yields to the loop
(``asyncio.sleep(0)``) after each frame: one loop iteration then holds one frame and the
first steps of the previous frame's handlers, and a heartbeat handed over meanwhile waits
for no more than that. Frames are still handled one at a time, in the order they came.
discord.py has no hook for this, so its class attribute is wrapped once, as
``parse_guard.install_tolerant_json`` does with the decoder. Imports discord.py only.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable

__all__ = ["install_gateway_pacing", "paced"]

PollEvent = Callable[..., Awaitable[None]]


def paced(poll_event: PollEvent) -> PollEvent:
    """`poll_event`, then one turn of the event loop before the caller reads the next frame."""
    @functools.wraps(poll_event)
    async def poll_one_then_yield(*args: object, **kwargs: object) -> None:
        await poll_event(*args, **kwargs)
        await asyncio.sleep(0)  # a bare yield: the loop runs everything already ready first
    poll_one_then_yield.paced = True  # type: ignore[attr-defined]
    return poll_one_then_yield


def install_gateway_pacing() -> None:
    """Make every discord.py gateway connection yield after each frame (once; idempotent)."""
    from discord.gateway import DiscordWebSocket

    if not getattr(DiscordWebSocket.poll_event, "paced", False):
        DiscordWebSocket.poll_event = paced(DiscordWebSocket.poll_event)  # type: ignore[method-assign]
