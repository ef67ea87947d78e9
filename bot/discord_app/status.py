"""A live status line ("calling calculator...") edited at most about once per interval.

Discord rate-limits message edits, so progress is coalesced: `update` only records the newest
text, and one background task pushes the newest text through `edit`, then waits `interval`
before the next push. `close` delivers the last pending text (or, with ``flush=False``, drops
it: the answer is about to replace the status anyway) and stops the task. An edit that fails is
logged and dropped: progress is a courtesy and must never end a turn. Imports agent.events for
the event types only; never discord.py (the edit is given).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from agent.events import AgentEvent, Nudge, ToolFinished, ToolStarted

__all__ = ["ThrottledStatus", "status_line"]

log = logging.getLogger(__name__)


class ThrottledStatus:
    """Coalescing, rate-limited editor of one status message."""

    def __init__(self, edit: Callable[[str], Awaitable[object]], interval_s: float = 1.0) -> None:
        self._edit = edit
        self._interval_s = interval_s
        self._latest: str | None = None
        self._sent: str | None = None
        self._changed = asyncio.Event()
        self._closed = False
        self._discard = False
        self._closing = asyncio.Event()
        self._task = asyncio.create_task(self._run(), name="status-editor")

    def update(self, text: str) -> None:
        """Record `text` as the newest status; it is sent on the next allowed edit."""
        if self._closed or text == self._latest:
            return
        self._latest = text
        self._changed.set()

    async def close(self, *, flush: bool = True) -> None:
        """Stop editing; first send the pending status, if any, unless ``flush`` is false.

        An edit already under way is awaited, so nothing edits the message after this returns.
        """
        self._discard = not flush
        self._closed = True
        self._closing.set()
        self._changed.set()
        await self._task

    async def _run(self) -> None:
        while True:
            await self._changed.wait()
            self._changed.clear()
            if self._closed and self._discard:
                return
            text = self._latest
            if text is not None and text != self._sent:
                try:
                    await self._edit(text)
                except Exception:  # progress is best effort; the answer still goes out
                    log.warning("status edit failed", exc_info=True)
                self._sent = text
            if self._closed and (self._discard or self._latest == self._sent):
                return
            if not self._closed:
                with contextlib.suppress(TimeoutError):  # the interval passed: edit again
                    await asyncio.wait_for(self._closing.wait(), self._interval_s)


def status_line(event: AgentEvent) -> str | None:
    """The status text an agent event shows while a slash command works (None: no change).

    The deferred response already reads "thinking"; a tool call shows its name while it runs,
    and still names it once done (a fast tool's two updates coalesce into one edit, which
    should not hide which tool ran). The final answer needs no status: it replaces the line.
    """
    if isinstance(event, ToolStarted):
        return f"calling {event.tool}…"
    if isinstance(event, ToolFinished):
        return f"{event.tool} done, thinking…"
    if isinstance(event, Nudge):
        return "thinking…"
    return None
