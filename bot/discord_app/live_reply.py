"""A reply that grows as the model writes it: throttled edits, more messages past 2,000 characters.

`LiveReply` reads the agent's events: the status line of a slash command ("calling
calculator…") until the answer starts, then the answer's text as it streams (AnswerDelta); a
step whose text turns out not to be the answer (a tool call or a correction follows in the same
step) drops its preview. What the messages should show is split with
bot.discord_app.replies.split_message (code blocks closed and reopened across parts; an
unfinished block of the preview is closed for display), and one background task brings the
messages there:

- each message is edited at most once per ``interval_s`` (Discord limits edits; 1.5 s by
  default); a status line shows at once, but the answer's first text waits one interval before
  it is shown, so a fast answer arrives whole rather than as a stub; newer text coalesces while
  an edit waits;
- a 429 is discord.py's to handle (it waits ``retry_after`` and sends that one edit again), so a
  rate-limited edit only takes longer and the text it carries is never dropped; an edit that
  still fails is logged and tried again an interval later, never in a burst;
- ``finish(text)`` stops the task and makes the messages show exactly ``text`` (split), each
  last edit still an interval after the one before; messages the preview had beyond the final
  parts are deleted. So the answer is shown whole, exactly once;
- a target whose messages will become uneditable (an interaction token nearing its 15 minutes)
  says when (`move_in`); at that time, whether or not the model is writing, the reply leaves a
  note in its first message and goes on in new messages on the target's `fallback` (a normal channel message, or a DM for a
  private answer).
- ``wait_first`` (a channel's delivery order, bot.discord_app.delivery_order) is awaited before
  the first message is sent or edited, so an answer never shows before the one asked before it.

Imports agent.events (types) and the pure splitter; never discord.py (the targets give the
messages: bot.discord_app.live_targets).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from agent.events import AgentEvent, AnswerDelta, Nudge, ToolStarted
from bot.discord_app.delivery import EMPTY_ANSWER
from bot.discord_app.replies import split_message
from bot.discord_app.status import status_line

__all__ = ["MOVED_NOTE", "Editable", "LiveOptions", "LiveReply", "ReplyTarget"]

log = logging.getLogger(__name__)

MOVED_NOTE = "(This answer took longer than Discord lets me edit it; it continues in a new message.)"


@dataclass(frozen=True, slots=True)
class LiveOptions:
    """Timing of live replies: the edit interval per message, and how long an interaction's
    token lives (Discord: 15 minutes) less the margin at which a reply moves off it."""

    edit_interval_s: float = 1.5
    token_lifetime_s: float = 15 * 60.0
    token_margin_s: float = 60.0


class Editable(Protocol):
    """A sent message the reply can change (discord.Message, WebhookMessage, InteractionMessage)."""

    async def edit(self, *, content: str) -> object: ...

    async def delete(self) -> None: ...


M = TypeVar("M", bound=Editable)


class ReplyTarget(Protocol[M]):
    """Where a live reply's messages go."""

    async def first(self, text: str) -> M:
        """Show ``text`` as the reply's first message (sent, or the deferred response edited)."""

    async def more(self, text: str) -> M:
        """Send a further message of the reply."""

    def move_in(self) -> float | None:
        """Seconds until the messages must move to `fallback` (they will soon be uneditable):
        0 or less means now, None never."""

    def fallback(self) -> ReplyTarget[M]:
        """Where the reply goes on once it must move."""


@dataclass(slots=True)
class _Slot(Generic[M]):
    message: M
    shown: str
    last: float  # when it was last sent or edited


def _closed(preview: str) -> str:
    """The preview with an unfinished code block closed, so it renders as code meanwhile."""
    fences = sum(1 for line in preview.split("\n") if line.strip().startswith("```"))
    return preview + "\n```" if fences % 2 else preview


class LiveReply(Generic[M]):
    """The messages of one reply; see the module docstring."""

    def __init__(self, target: ReplyTarget[M], *, interval_s: float = 1.5, show_status: bool = True,
                 preface: str = "", clock: Callable[[], float] = time.monotonic,
                 wait_first: Callable[[], Awaitable[None]] | None = None) -> None:
        self._target = target
        self._wait_first = wait_first  # awaited before the first message is sent or edited
        self._interval = interval_s
        self._show_status = show_status
        self._preface = preface
        self._clock = clock
        self._slots: list[_Slot[M]] = []
        self._status: str | None = None
        self._step: int | None = None
        self._preview = ""
        self._pending_since: float | None = None  # first text waiting for the first message
        self._send_after = 0.0  # a failed send is tried again only after this time
        self._changed = asyncio.Event()
        self._closing = asyncio.Event()
        self._task = asyncio.create_task(self._run(), name="live-reply")

    @property
    def messages(self) -> list[M]:
        """The reply's messages, in order."""
        return [slot.message for slot in self._slots]

    def feed(self, event: AgentEvent) -> None:
        """Take one agent event (anything but a delta, a tool call or a status is ignored)."""
        if isinstance(event, AnswerDelta):
            if event.step != self._step:
                self._step, self._preview = event.step, ""
            self._preview += event.text
        elif isinstance(event, (ToolStarted, Nudge)) and event.step == self._step:
            self._preview = ""  # that step's text was not the answer after all
        if self._show_status and (line := status_line(event)) is not None:
            self._status = line
        if self._pending_since is None and self._preview:
            self._pending_since = self._clock()
        self._changed.set()

    async def finish(self, text: str) -> list[M]:
        """Show exactly ``text``; returns the messages that carry it, in order."""
        await self._stop()
        await self._sync(text)
        return self.messages

    async def abandon(self) -> None:
        """Stop editing, leaving the messages as they are (the turn failed; it says so itself)."""
        await self._stop()

    async def _stop(self) -> None:
        self._closing.set()
        self._changed.set()
        await self._task

    def _wanted(self, final: str | None) -> list[str]:
        if final is not None:
            body = final
        elif self._preview:
            body = _closed(self._preview)
        else:
            body = self._status or ""
        text = f"{self._preface}\n\n{body}" if self._preface and body.strip() else (self._preface or body)
        parts = split_message(text)
        if final is not None and not parts:
            return [EMPTY_ANSWER]
        return parts

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):  # the move time came: sync (and move) then
                await asyncio.wait_for(self._changed.wait(), self._target.move_in())
            self._changed.clear()
            if self._closing.is_set():
                return
            wait = await self._sync(None)
            if wait is not None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._closing.wait(), wait)
                self._changed.set()

    async def _sync(self, final: str | None) -> float | None:
        """Bring the messages towards what they should show; the seconds until an edit that
        had to wait may go (None: nothing waits). With ``final`` every wait is served here."""
        if self._wait_first is not None:
            wait_first, self._wait_first = self._wait_first, None
            await wait_first()
        if (move_in := self._target.move_in()) is not None and move_in <= 0:
            await self._move()
        wanted = self._wanted(final)
        wait: float | None = None
        for i, text in enumerate(wanted):
            now = self._clock()
            if i < len(self._slots):
                slot = self._slots[i]
                if slot.shown == text:
                    continue
                if (due := slot.last + self._interval - now) > 0:
                    if final is None:
                        wait = due if wait is None else min(wait, due)
                        continue
                    await asyncio.sleep(due)
                await self._edit(slot, text, final is not None)
                continue
            if final is None:
                due = self._send_after - now
                if not self._slots and self._pending_since is not None:
                    due = max(due, self._pending_since + self._interval - now)
                if due > 0:
                    wait = due if wait is None else min(wait, due)
                    break
            if not await self._send(text, final is not None):
                break
        if final is not None:
            await _delete_all(self._slots[len(wanted):])  # stale extra parts of the preview
            del self._slots[len(wanted):]
        return wait

    async def _edit(self, slot: _Slot[M], text: str, final: bool) -> None:
        try:
            await slot.message.edit(content=text)
        except Exception:
            if not final:  # progress is best effort: try again an interval later
                log.warning("live reply: an edit failed; trying again later", exc_info=True)
                slot.last = self._clock()
                return
            log.warning("live reply: the last edit failed; sending that part anew", exc_info=True)
            stale, slot.message = slot.message, await self._target.more(text)
            await _delete_all([_Slot(stale, "", 0.0)])
        slot.shown, slot.last = text, self._clock()

    async def _send(self, text: str, final: bool) -> bool:
        try:
            message = await (self._target.more(text) if self._slots else self._target.first(text))
        except Exception:
            if final:
                raise
            log.warning("live reply: sending a part failed; trying again later", exc_info=True)
            self._send_after = self._clock() + self._interval
            return False
        self._slots.append(_Slot(message, text, self._clock()))
        return True

    async def _move(self) -> None:
        """The target's time is up: leave a note in the first message, drop the others, go on
        in new messages on the fallback."""
        old, self._slots, expiring = self._slots, [], self._target
        self._target = expiring.fallback()
        self._pending_since = self._clock() - self._interval  # the fallback's first message goes at once
        if not old:  # nothing shown yet: the note becomes the first message (a deferred response)
            try:
                await expiring.first(MOVED_NOTE)
            except Exception:
                log.warning("live reply: could not leave the note before moving", exc_info=True)
            return
        if (due := old[0].last + self._interval - self._clock()) > 0:
            await asyncio.sleep(due)
        try:
            await old[0].message.edit(content=MOVED_NOTE)
        except Exception:  # the answer still goes out on the fallback
            log.warning("live reply: could not leave the note in the first message", exc_info=True)
        await _delete_all(old[1:])
        log.info("live reply: moved to %s before the interaction token expired", type(self._target).__name__)


async def _delete_all(slots: list[_Slot[M]]) -> None:
    """Delete messages the answer no longer needs; one that fails stays, logged (the answer is
    whole without it)."""
    for slot in slots:
        try:
            await slot.message.delete()
        except Exception:
            log.warning("live reply: could not delete a stale part", exc_info=True)
