"""TurnStore: one finished turn stored whole, or not at all (memory items, buffer rows,
trace), and what turns cut before they were stored left behind, settled at start and by a sweep.

The order: first the memory write is announced in SQLite (memory.stores.write_log), then the exchange
(and facts the person asked to keep) goes to semantic memory (writes of concurrent turns
coalesced into one add_many: bot.turn_store.coalescing), then the user message + answer (buffer), the
trace and the settling of the announcement in ONE SQLite transaction; if that transaction
fails the memory items just added are deleted again (compensation). An announcement left
unsettled (a crash between the stores, an add that timed out yet landed) is undone at start
(`TurnStore.__aenter__`) and, while the bot runs, by a sweep for announcements older than
RECONCILE_GRACE_S (bot.turn_store.reconcile). A memory store that cannot be reached for the add
defers the write: the items go into the announcement in that same transaction and are written
at start and every DEFERRED_INTERVAL_S once older than DEFERRED_GRACE_S. Both graces derive
from the memory's own limit on a call (memory.config.OP_TIMEOUT_S): an add given up then has
landed or never will, so it is neither undone while it may land nor made twice. Question and answer are stored together at the end of the turn
(same time, in order), so the buffer holds whole exchanges in the order the channel answered
them. A turn cancelled while storing finishes storing before the cancellation goes on.

The person's message and facts carry what the memory ranks by (who said it, the lines of their
conversation just before it, its relative dates resolved: bot.turn_store.recall_fields); the
trace keeps which memories the turn recalled (by id and rank, for /trace).

A private answer (a private /ask, bot.turn.requests) stores no buffer rows: it never reaches the
channel's conversation, so no other person's turn reads it; its memory items go to the scope
bot.turn.privacy gives it. A turn that did not end answered (step limit, no usable answer) stores its trace only: a
non-answer in the buffer would be inherited by every later turn of the channel, and nothing
was learned.

Part of bot/: joins memory/'s stores; knows nothing of the agent's loop
or of Discord.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import unicodedata
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from agent.events import AgentEvent, RunEnded
from bot.turn_store.coalescing import CoalescingAdder
from bot.turn_store.recall_fields import before_lines, recall_fields
from bot.errors import sentence_for
from bot.turn.history import answered_person
from bot.turn.privacy import MemoryPolicy, Visibility
from bot.turn.requests import TurnRequest
from bot.turn_store.reconcile import reconcile_memory, write_deferred
from memory.config import OP_TIMEOUT_S
from memory.stores.buffer import BufferedMessage, ChannelBuffer
from memory.stores.database import Database
from memory.errors import StoreUnavailable
from memory.semantic import AddItem, UserMemory
from memory.stores.traces import Recalled, TraceRecord, TraceStore
from memory.semantic.item_text import kept_metadata
from memory.stores.write_log import DeferredItem, MemoryWriteLog

__all__ = ["CONTEXT_MAX_AGE_S", "TurnStore", "exchange_items", "has_visible_text"]

log = logging.getLogger(__name__)

EXCHANGE_QUESTION_CHARS = 2000
EXCHANGE_ANSWER_CHARS = 4000
SHORT_MESSAGE_WORDS = 8          # a message this short is stored with the one before it
CONTEXT_CHARS = 500              # of that message (metadata strings over 2,000 are refused)
CONTEXT_MAX_AGE_S = 3 * 3600.0   # an older message before it is another conversation
RECONCILE_INTERVAL_S = 300.0
RECONCILE_GRACE_S = 20 * OP_TIMEOUT_S  # far past the memory's limit on a call: a given-up add is over
DEFERRED_INTERVAL_S = 10.0             # deferred writes (the store was down) are tried this often
DEFERRED_GRACE_S = OP_TIMEOUT_S + DEFERRED_INTERVAL_S  # past the memory's limit: the failed add is over


def exchange_items(req: TurnRequest, question: str, answer: str, trace_id: str, *,
                   previous: str | None = None, previous_theirs: bool = False,
                   visibility: Visibility = "public") -> list[tuple[str, dict[str, Any]]]:
    """What one answered exchange puts in the person's semantic memory: [(text, metadata)].

    - The person's message (kind "exchange"), with its Discord `message_id` when it was one
      (a slash command's question is not a message). When it is short (at most SHORT_MESSAGE_WORDS
      words) and `previous` (what it answered: the channel's message before it, see
      ``_context_of``) is given, that text rides along as metadata `context`,
      which the memory embeds and keyword-indexes with the text while showing the text alone:
      "Yes! It was amazing" is found by what it answered. When `previous_theirs` (another
      person's message, or the bot's answer to another person) it goes as
      `index_only_context` instead: the memory indexes the item by it but does not keep it,
      so no other person's words are stored, shown or exported as this person's.
    - The bot's answer (kind "reply"), with the person's message as its context, so that
      "what did you recommend for dinner?" finds what the bot said.

    Both record their ``visibility`` ("public", or "private" for a DM or a private answer:
    bot.turn.privacy); the memory adds the owner (`user_id`) and the scope.
    Why these units: docs/decisions/0005-exchange-items.md.
    """
    q = _clip(question, EXCHANGE_QUESTION_CHARS)
    message: dict[str, Any] = {"channel_id": req.channel_id, "trace_id": trace_id, "kind": "exchange",
                               "visibility": visibility}
    if req.message_id:  # the person's Discord message: /memory show and /trace link to it
        message["message_id"] = req.message_id
    if previous and previous.strip() and len(question.split()) <= SHORT_MESSAGE_WORDS:
        message["index_only_context" if previous_theirs else "context"] = _clip(" ".join(previous.split()),
                                                                                CONTEXT_CHARS)
    reply = {"channel_id": req.channel_id, "trace_id": trace_id, "kind": "reply", "visibility": visibility,
             "context": _clip(" ".join(question.split()), CONTEXT_CHARS)}
    return [(q, message), (_clip(answer, EXCHANGE_ANSWER_CHARS), reply)]


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + " [...]"


def has_visible_text(text: str) -> bool:
    """False for text of only whitespace and invisible format characters (zero-width, bidi
    marks: Unicode category Cf): nothing to answer, and nothing the memory would store."""
    return any(not ch.isspace() and unicodedata.category(ch) != "Cf" for ch in text)


def _context_of(last_two: Sequence[BufferedMessage], user_id: str, question: str,
                now: datetime) -> tuple[str | None, bool]:
    """What a short message answered, for its context, and whether it is another person's: the
    last of ``last_two`` (the channel's last messages before this turn), for a short message
    only, and only if said within CONTEXT_MAX_AGE_S. Another person's message, or the bot's
    answer to another person, is theirs: the item is indexed by it and does not keep it."""
    if len(question.split()) > SHORT_MESSAGE_WORDS or not last_two:
        return None, False
    last = last_two[-1]
    if (now - last.created_at).total_seconds() > CONTEXT_MAX_AGE_S:
        return None, False
    author = answered_person(last_two, len(last_two) - 1) if last.role == "assistant" else last.author_id
    return last.content, author != user_id


class TurnStore:
    """Stores finished turns; ``storing`` names the turns between announce and settle.

    Entered (``async with``), it settles what earlier processes left in the write log, then
    sweeps the log in the background until it is left; unentered (a pipeline of its own in
    tests), it only stores."""

    def __init__(self, buffer: ChannelBuffer, traces: TraceStore, db: Database,
                 memory: UserMemory, writes: MemoryWriteLog, *,
                 now: Callable[[], datetime], policy: MemoryPolicy | None = None) -> None:
        self._buffer = buffer
        self._traces = traces
        self._db = db
        self._memory = memory
        self.writes = writes
        self._adder = CoalescingAdder(memory)
        self._now = now
        self._policy = policy or MemoryPolicy()
        self._storing: set[str] = set()
        self._sweepers: list[asyncio.Task[None]] = []

    async def __aenter__(self) -> TurnStore:
        if undone := await reconcile_memory(self.writes, self._traces, self._memory):
            log.warning("start-up: undid %d memory item(s) of turns cut before they were stored", undone)
        if written := await write_deferred(self.writes, self._memory):
            log.info("start-up: wrote %d deferred memory item(s)", written)
        self._sweepers = [
            asyncio.create_task(self._every(RECONCILE_INTERVAL_S, self._sweep_cut_turns,
                                            "reconciling memory writes failed"), name="memory-reconcile"),
            asyncio.create_task(self._every(DEFERRED_INTERVAL_S, self._write_deferred,
                                            "writing deferred memory items failed"), name="memory-deferred")]
        return self

    async def __aexit__(self, *exc: object) -> None:
        for task in self._sweepers:
            task.cancel()
        for task in self._sweepers:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._sweepers = []

    async def _every(self, interval_s: float, work: Callable[[], Awaitable[Any]], failed: str) -> None:
        while True:
            await asyncio.sleep(interval_s)
            try:
                await work()
            except Exception:
                log.exception("%s; trying again next time", failed)

    async def _sweep_cut_turns(self) -> int:
        return await reconcile_memory(self.writes, self._traces, self._memory, skip=self.storing,
                                      older_than=self._now() - timedelta(seconds=RECONCILE_GRACE_S))

    async def _write_deferred(self) -> int:
        return await write_deferred(self.writes, self._memory,
                                    older_than=self._now() - timedelta(seconds=DEFERRED_GRACE_S))

    @property
    def storing(self) -> frozenset[str]:
        """Trace ids of the turns storing right now (their memory writes are not left over)."""
        return frozenset(self._storing)

    async def persist(self, req: TurnRequest, question: str, end: RunEnded,
                      events: Sequence[AgentEvent], trace_id: str, facts: list[str], *,
                      remember: bool = True, recalled: Sequence[Recalled] = ()) -> None:
        """Persist, shielded: a turn cancelled while it is being stored (shutdown) finishes
        the write (or its compensation) before the cancellation goes on. ``remember`` False
        (memory switched off for the place) stores no memory items; ``recalled`` (the memories
        the turn recalled) goes into its trace."""
        task = asyncio.ensure_future(self._persist(req, question, end, events, trace_id, facts, remember,
                                                   tuple(recalled)))
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            if not task.done():
                log.info("turn channel=%s cancelled while storing; finishing the write first",
                         req.channel_id)
                with contextlib.suppress(Exception):
                    await task
            raise

    async def _persist(self, req: TurnRequest, question: str, end: RunEnded,
                       events: Sequence[AgentEvent], trace_id: str, facts: list[str],
                       remember: bool, recalled: tuple[Recalled, ...] = ()) -> None:
        answered = end.outcome == "answered"
        answer = end.answer.strip() or sentence_for(end.outcome)
        when = self._now()
        added: list[str] = []
        deferred: list[DeferredItem] = []
        announced = False
        self._storing.add(trace_id)
        try:
            if answered and remember:
                last_two = await self._buffer.recent(req.channel_id, limit=2)  # the turn's rows are not stored yet
                previous, theirs = _context_of(last_two, req.user_id, question, when)
                place = self._policy.store_scope(req.guild_id, req.private)
                visibility = self._policy.visibility(req.guild_id, req.private)
                facts = [fact for fact in facts if has_visible_text(fact)]  # an invisible one is refused
                before = [] if previous and previous.strip() else before_lines(last_two, req.user_id, when,
                                                                                CONTEXT_MAX_AGE_S)
                said, *kept = await self._recall_fields(req, question, facts, when, before)
                items: list[AddItem] = [
                    (req.user_id, text, {**meta, **said} if meta["kind"] == "exchange" else meta, place)
                    for text, meta in exchange_items(req, question, answer, trace_id, previous=previous,
                                                     previous_theirs=theirs, visibility=visibility)]
                items += [(req.user_id, fact, {"channel_id": req.channel_id, "trace_id": trace_id,
                                               "kind": "fact", "visibility": visibility, **fields}, place)
                          for fact, fields in zip(facts, kept, strict=True)]
                await self.writes.announce(trace_id, req.user_id, when)
                announced = True
                # A failed add stays announced: one that timed out may still land (reconcile).
                try:
                    added = await self._adder.add_many(items)
                except StoreUnavailable as exc:  # the turn is stored, its items kept for later
                    log.warning("turn channel=%s: memory write deferred: %s", req.channel_id, exc)
                    # another person's words (an index-only context) are not kept for later:
                    # only the hashes of their terms, as the stored item would keep them
                    deferred = [DeferredItem(text, kept_metadata(meta), scope) for _, text, meta, scope in items]
            await self._store_turn(req, question, answer, end, events, trace_id, when, added, announced,
                                   deferred, recalled)
        finally:
            self._storing.discard(trace_id)

    async def _store_turn(self, req: TurnRequest, question: str, answer: str, end: RunEnded,
                          events: Sequence[AgentEvent], trace_id: str, when: datetime,
                          added: list[str], announced: bool, deferred: Sequence[DeferredItem] = (),
                          recalled: tuple[Recalled, ...] = ()) -> None:
        """Buffer rows, trace and the settling of the memory write (or its deferred items,
        written later by bot.turn_store.reconcile): one SQLite transaction."""
        answered = end.outcome == "answered"
        record = TraceRecord(
            trace_id=trace_id, channel_id=req.channel_id, guild_id=req.guild_id,
            user_id=req.user_id, question=question, events=[e.to_dict() for e in events],
            outcome=end.outcome, answer=end.answer, steps=end.steps,
            prompt_tokens=end.usage.prompt_tokens, completion_tokens=end.usage.completion_tokens,
            elapsed_ms=end.elapsed_ms, created_at=when, message_id=None,
            interaction_id=req.interaction_id, recalled=recalled,
        )
        try:
            async with self._db.transaction():
                if answered and not req.private:  # a private answer stays out of the channel
                    await self._buffer.append_many([
                        BufferedMessage(channel_id=req.channel_id, guild_id=req.guild_id,
                                        author_id=req.user_id, author_name=req.display_name,
                                        role="user", content=question, created_at=when,
                                        message_id=req.message_id),
                        BufferedMessage(channel_id=req.channel_id, guild_id=req.guild_id,
                                        author_id="assistant", author_name="assistant",
                                        role="assistant", content=answer, created_at=when),
                    ])
                if deferred:
                    await self.writes.defer(trace_id, deferred)
                elif announced:
                    await self.writes.settle(trace_id)
                await self._traces.save(record)
        except BaseException:
            if announced and await self._undo_memory(req.user_id, added):
                with contextlib.suppress(Exception):  # left announced, the reconcile settles it
                    await self.writes.settle(trace_id)
            raise

    async def _recall_fields(self, req: TurnRequest, question: str, facts: Sequence[str], when: datetime,
                             before: Sequence[str]) -> list[dict[str, str]]:
        """bot.turn_store.recall_fields for the person's message (with ``before``, the lines of
        their own conversation before it), then for each fact: computed in a worker thread
        (dateparser)."""
        texts = [question, *facts]
        return await asyncio.to_thread(lambda: [
            recall_fields(req.display_name, text, when, before if n == 0 else ()) for n, text in enumerate(texts)])

    async def _undo_memory(self, user_id: str, item_ids: Sequence[str]) -> bool:
        """Delete the items just added; True when every one is gone."""
        undone = True
        for item_id in item_ids:
            try:
                await self._memory.delete(user_id, item_id)
            except Exception:
                undone = False
                log.error("could not undo memory item %s of user %s after a failed turn; "
                          "the start-up reconcile will", item_id, user_id, exc_info=True)
        return undone
