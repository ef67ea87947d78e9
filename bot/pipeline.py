"""The turn pipeline: one person's message in, one answer (or one clear sentence) out.

Platform-free, shared by the console chat and the Discord front end. The path of a turn:

1. Refuse empty text (nothing stored; text of only invisible marks, zero-width or bidi, is
   empty too) and a person who asks again within USER_COOLDOWN_S
   (a polite sentence, not queued).
2. Take the channel's lock, then a slot of the global MAX_CONCURRENT_TURNS semaphore. The lock
   comes first so that a queue of one busy channel waits without holding slots other channels
   could use. asyncio.Lock wakes waiters in FIFO order: one channel is answered in order. A
   channel's lock lives in the map only while some turn holds or waits for it (bounded by the
   turns in flight).
3. Read the channel's buffer window, recall the person's memories for this place, fit all of
   it to MAX_CONTEXT_TOKENS (bot.context_budget), run the agent with per-turn memory tools,
   streaming every event to ``on_event`` (a failing callback is logged, never fatal). A memory
   store that cannot be reached does not stop the turn: it is answered without memories, and
   the answer says so in one line (bot.errors.with_memory_notice).
4. Persist, so that no half turn is kept: first the memory write is announced in SQLite
   (memory.write_log), then the exchange (and facts the person asked to keep) goes to
   semantic memory (writes of concurrent turns coalesced into one add_many), then the user
   message + answer (buffer), the trace and the settling of the announcement in ONE SQLite
   transaction; if that transaction fails the memory items just added are deleted again. A
   memory store that cannot be reached at that point defers the write: the items go into the
   announcement in that same transaction, and bot.reconcile writes them later. An
   announcement left unsettled (a crash between the stores, an add that timed out yet
   landed) is undone by bot.reconcile at start-up. Question and answer are
   stored together at the end of the turn (same time, in order), so the buffer holds whole
   exchanges in the order the channel answered them. A model or store failure stores nothing
   and returns one sentence (bot.errors). A turn cancelled while storing finishes storing.

Step limit / no usable answer: the agent ends honestly, so the trace IS stored (the person can
open it and see why), but neither the buffer nor semantic memory gets the turn: a non-answer in
the buffer would be inherited by every later turn of the channel, and nothing was learned.

Part of bot/: joins agent/ and memory/; knows nothing of Discord.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
import unicodedata
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from agent.errors import LLMError
from agent.events import AgentEvent, AnswerDelta, RunEnded
from agent.prompt import build_system_prompt
from agent.loop import Agent
from agent.tools.registry import ToolContext
from bot.config import Settings
from bot.context_budget import fit_context
from bot.errors import sentence_for, with_memory_notice
from bot.health import HealthLog
from bot.memory_tools import MemoryTools
from bot.requests import TurnRequest, TurnResult
from memory.buffer import BufferedMessage
from memory.errors import MemoryStoreError, StoreUnavailable
from memory.semantic import MemoryHit, scope_for
from memory.tokens import estimate_tokens
from memory.traces import TraceRecord
from memory.write_log import DeferredItem, MemoryWriteLog

__all__ = ["EventCallback", "TurnPipeline", "exchange_items"]

log = logging.getLogger(__name__)

EventCallback = Callable[[AgentEvent], Awaitable[None]]

RECALL_K = 5
RECALL_QUERY_CHARS = 2000      # a huge question searches memory by its start
MEMORY_LINE_CHARS = 900        # agent.prompt cuts memory lines at 1000 characters
RUN_RESERVE_FRACTION = 0.25     # left for the run's own steps and the answer
EXCHANGE_QUESTION_CHARS = 2000
EXCHANGE_ANSWER_CHARS = 4000
SHORT_MESSAGE_WORDS = 8          # a message this short is stored with the one before it
CONTEXT_CHARS = 500              # of that message (metadata strings over 2,000 are refused)
CONTEXT_MAX_AGE_S = 3 * 3600.0   # an older message before it is another conversation
CHATTER_MAX_CHARS = 4000


def exchange_items(req: TurnRequest, question: str, answer: str, trace_id: str, *,
                   previous: str | None = None) -> list[tuple[str, dict[str, Any]]]:
    """What one answered exchange puts in the person's semantic memory: [(text, metadata)].

    - The person's message (kind "exchange"). When it is short (at most SHORT_MESSAGE_WORDS
      words) and `previous` (the channel's message before it) is given, that message rides
      along as metadata `context`, which the memory embeds and keyword-indexes with the text
      while showing the text alone: "Yes! It was amazing" is found by what it answered.
    - The bot's answer (kind "reply"), with the person's message as its context, so that
      "what did you recommend for dinner?" finds what the bot said.

    bench/retrieval_eval.py measured these units on both of its datasets (figures in
    bench/README.md): the message alone recalls better than the whole exchange as one text,
    and the reply as an item of its own does not dilute the recall of what the person said.
    """
    q = _clip(question, EXCHANGE_QUESTION_CHARS)
    message: dict[str, Any] = {"channel_id": req.channel_id, "trace_id": trace_id, "kind": "exchange"}
    if previous and previous.strip() and len(question.split()) <= SHORT_MESSAGE_WORDS:
        message["context"] = _clip(" ".join(previous.split()), CONTEXT_CHARS)
    reply = {"channel_id": req.channel_id, "trace_id": trace_id, "kind": "reply",
             "context": _clip(" ".join(question.split()), CONTEXT_CHARS)}
    return [(q, message), (_clip(answer, EXCHANGE_ANSWER_CHARS), reply)]


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + " [...]"


def has_visible_text(text: str) -> bool:
    """False for text of only whitespace and invisible format characters (zero-width, bidi
    marks: Unicode category Cf): nothing to answer, and nothing the memory would store."""
    return any(not ch.isspace() and unicodedata.category(ch) != "Cf" for ch in text)


@dataclass(slots=True)
class _ChannelSlot:
    lock: asyncio.Lock
    users: int = 0


class _CoalescingAdder:
    """Memory writes of concurrent turns, coalesced: while one add_many is in flight, the
    items of other turns queue and go together in the next call. Measured once (3 rounds, local
    MiniLM, embedded Chroma, the 2-core box): add_many of 4 items 38-57 ms, 4 single adds
    111-168 ms, one add 28-34 ms; the worst event-loop stall was alike either way (11-21 ms),
    so the gain is total time, not shorter stalls. Each turn still gets exactly its own item
    ids back; if a call fails, every turn in that batch gets the error (and stores nothing
    else)."""

    def __init__(self, memory: Any, max_items: int = 64) -> None:
        self._memory = memory
        self._max_items = max_items
        self._queue: list[tuple[list[tuple], asyncio.Future[list[str]]]] = []
        self._writer: asyncio.Task[None] | None = None

    async def add_many(self, items: list[tuple]) -> list[str]:
        future: asyncio.Future[list[str]] = asyncio.get_running_loop().create_future()
        self._queue.append((items, future))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write(), name="memory-writer")
        return await future

    async def _write(self) -> None:
        while self._queue:
            batch: list[tuple[list[tuple], asyncio.Future[list[str]]]] = []
            count = 0
            while self._queue and (not batch or count + len(self._queue[0][0]) <= self._max_items):
                entry = self._queue.pop(0)
                batch.append(entry)
                count += len(entry[0])
            try:
                ids = await self._memory.add_many([item for items, _ in batch for item in items])
            except Exception as exc:
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                continue
            start = 0
            for items, future in batch:
                if not future.done():
                    future.set_result(ids[start:start + len(items)])
                start += len(items)


class _TurnFailed(Exception):
    """Internal: a turn ends with one sentence of this kind."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


class TurnPipeline:
    """Runs turns; see the module docstring for the path and its guarantees."""

    def __init__(self, agent: Agent, buffer: Any, traces: Any, db: Any,
                 user_memory: Any, settings: Settings, *,
                 clock: Callable[[], float] = time.monotonic,
                 now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self._agent = agent
        self._buffer = buffer
        self._traces = traces
        self._db = db
        self._memory = user_memory
        self._writes = MemoryWriteLog(db)
        self._storing: set[str] = set()  # trace ids of turns between announce and settle
        self._settings = settings
        self._clock = clock
        self._now = now
        self._memory_tools = MemoryTools(user_memory,
                                         global_scope=settings.memory.memory_scope == "global",
                                         k=RECALL_K, timeout_s=settings.agent.tool_timeout_s)
        self._adder = _CoalescingAdder(user_memory)
        self._slots: dict[str, _ChannelSlot] = {}
        self._semaphore = asyncio.Semaphore(settings.max_concurrent_turns)
        self._last_turn: dict[str, float] = {}
        self._accepting = True
        self._in_flight = 0
        self._running = 0  # turns holding a slot of the semaphore
        self.health = HealthLog()
        self._turn_tasks: set[asyncio.Task[Any]] = set()
        self._abandoned: set[asyncio.Task[Any]] = set()
        self._idle = asyncio.Event()
        self._idle.set()
        # the agent's own system prompt (tools, persona) without memories: what every run sends
        system_prompt = build_system_prompt(agent.tools.merged(self._memory_tools.for_turn([])),
                                            protocol=agent.protocol, persona=agent.persona)
        prompt_tokens = estimate_tokens(system_prompt)
        self._context_budget = int(settings.max_context_tokens * (1 - RUN_RESERVE_FRACTION)) - prompt_tokens

    # -- the turn -------------------------------------------------------------------------

    async def handle(self, req: TurnRequest, on_event: EventCallback | None = None) -> TurnResult:
        """Answer one request; never raises for model or store failures (only on cancel)."""
        started = self._clock()
        question = req.text.strip()
        if not has_visible_text(question):
            return self._refusal("empty", started)
        if not self._accepting:
            return self._refusal("shutting_down", started)
        if self._cooling_down(req.user_id, started):
            return self._refusal("cooldown", started)

        self._in_flight += 1
        self._idle.clear()
        task = asyncio.current_task()
        assert task is not None  # a coroutine awaited under asyncio always runs in a task
        self._turn_tasks.add(task)
        try:
            async with self._channel_lock(req.channel_id), self._semaphore:
                queued_ms = (self._clock() - started) * 1000.0
                self._running += 1
                try:
                    result = await self._turn(req, question, on_event, started)
                finally:
                    self._running -= 1
            result = dataclasses.replace(result, queued_ms=queued_ms)
        except asyncio.CancelledError:
            if task not in self._abandoned:
                raise
            task.uncancel()  # abandoned at shutdown: the person is told, nothing was stored
            result = self._refusal("shutting_down", started)
        finally:
            self._turn_tasks.discard(task)
            self._abandoned.discard(task)
            self._in_flight -= 1
            if self._in_flight == 0:
                self._idle.set()
        self.health.record(result.error_kind)
        log.info("turn channel=%s user=%s steps=%d tokens=%d duration_ms=%.0f queued_ms=%.0f "
                 "recall_ms=%.0f store_ms=%.0f outcome=%s%s", req.channel_id, req.user_id,
                 result.steps, result.total_tokens, result.elapsed_ms, result.queued_ms,
                 result.recall_ms, result.store_ms, result.outcome,
                 f" error={result.error_kind}" if result.error_kind else "")
        log.debug("turn channel=%s question=%r answer=%r", req.channel_id, question, result.text)
        return result

    async def _turn(self, req: TurnRequest, question: str, on_event: EventCallback | None,
                    started: float) -> TurnResult:
        events: list[AgentEvent] = []
        end: RunEnded | None = None
        memories_used = 0
        try:
            try:
                async with asyncio.timeout(self._settings.turn_timeout_s):
                    mark = self._clock()
                    history, recalled = await self._context(req, question)
                    recall_ms = (self._clock() - mark) * 1000.0
                    budget = fit_context(question, history, recalled or [], budget=self._context_budget)
                    memories_used = len(budget.memories)
                    pending: list[str] = []
                    context = ToolContext(user_id=req.user_id, channel_id=req.channel_id,
                                          guild_id=req.guild_id, display_name=req.display_name)
                    async for event in self._agent.run(
                        budget.question, context=context, history=budget.history,
                        memories=budget.memories, tools=self._memory_tools.for_turn(pending),
                    ):
                        if not isinstance(event, AnswerDelta):  # live only: traces keep the answer
                            events.append(event)
                        if isinstance(event, RunEnded):
                            end = event
                        await self._emit(on_event, event)
            except TimeoutError:
                raise _TurnFailed("turn_timeout") from None
            if end is None:
                raise _TurnFailed("no_answer")
            trace_id = uuid.uuid4().hex
            mark = self._clock()
            await self._persist_whole(req, question, end, events, trace_id, pending)
            store_ms = (self._clock() - mark) * 1000.0
        except _TurnFailed as failed:
            return self._failure(failed.kind, started, events, memories_used)
        except LLMError as exc:
            log.warning("turn channel=%s user=%s: model failed (%s): %s",
                        req.channel_id, req.user_id, exc.kind, exc)
            return self._failure(exc.kind, started, events, memories_used)
        except MemoryStoreError as exc:
            log.error("turn channel=%s user=%s: store failed: %s", req.channel_id, req.user_id, exc)
            return self._failure("memory_unavailable", started, events, memories_used)
        except Exception:
            log.exception("turn channel=%s user=%s: unexpected failure", req.channel_id, req.user_id)
            return self._failure("internal", started, events, memories_used)

        answered = end.outcome == "answered"
        text = end.answer.strip() or sentence_for(end.outcome)
        return TurnResult(
            ok=answered,
            text=with_memory_notice(text) if answered and recalled is None else text,
            outcome=end.outcome,
            trace_id=trace_id,
            steps=end.steps,
            prompt_tokens=end.usage.prompt_tokens,
            completion_tokens=end.usage.completion_tokens,
            elapsed_ms=(self._clock() - started) * 1000.0,
            error_kind=None if answered else end.outcome,
            memories_used=memories_used,
            recall_ms=recall_ms,
            store_ms=store_ms,
        )

    async def _context(self, req: TurnRequest, question: str) -> tuple[list[dict], list[str] | None]:
        window = self._settings.buffer_window
        recent = await self._buffer.recent(req.channel_id, limit=window) if window else []
        history = [self._history_message(m, req.user_id) for m in recent]
        memories = await self._memory_tools.recall_lines(
            req.user_id, question[:RECALL_QUERY_CHARS], req.guild_id, k=RECALL_K,
            max_chars=MEMORY_LINE_CHARS)  # None: the store is down, answer without memory
        return history, memories

    @staticmethod
    def _history_message(m: BufferedMessage, asker_id: str) -> dict:
        if m.role == "assistant":
            return {"role": "assistant", "content": m.content}
        if m.role == "user" and m.author_id == asker_id:
            return {"role": "user", "content": m.content}
        return {"role": "user", "content": f"[{m.author_name or m.author_id}]: {m.content}"}

    async def _emit(self, on_event: EventCallback | None, event: AgentEvent) -> None:
        if on_event is None:
            return
        try:
            await on_event(event)
        except Exception:
            log.warning("on_event callback failed on %s; the turn goes on", event.type, exc_info=True)

    async def _persist_whole(self, req: TurnRequest, question: str, end: RunEnded,
                             events: Sequence[AgentEvent], trace_id: str, facts: list[str]) -> None:
        """Persist, shielded: a turn cancelled while it is being stored (shutdown) finishes
        the write (or its compensation) before the cancellation goes on."""
        task = asyncio.ensure_future(self._persist(req, question, end, events, trace_id, facts))
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
                       events: Sequence[AgentEvent], trace_id: str, facts: list[str]) -> None:
        answered = end.outcome == "answered"
        answer = end.answer.strip() or sentence_for(end.outcome)
        when = self._now()
        added: list[str] = []
        deferred: list[DeferredItem] = []
        self._storing.add(trace_id)
        try:
            if answered:
                previous = await self._previous_message(req.channel_id, question, when)
                place = scope_for(req.guild_id)
                items = [(req.user_id, text, meta, place)
                         for text, meta in exchange_items(req, question, answer, trace_id, previous=previous)]
                items += [(req.user_id, fact, {"channel_id": req.channel_id, "trace_id": trace_id,
                                               "kind": "fact"}, place)
                          for fact in facts if has_visible_text(fact)]  # an invisible one is refused
                await self._writes.announce(trace_id, req.user_id, when)
                # A failed add stays announced: one that timed out may still land (reconcile).
                try:
                    added = await self._adder.add_many(items)
                except StoreUnavailable as exc:  # the turn is stored, its items kept for later
                    log.warning("turn channel=%s: memory write deferred: %s", req.channel_id, exc)
                    deferred = [DeferredItem(text, meta, place) for _, text, meta, place in items]
            await self._store_turn(req, question, answer, end, events, trace_id, when, added, deferred)
        finally:
            self._storing.discard(trace_id)

    async def _store_turn(self, req: TurnRequest, question: str, answer: str, end: RunEnded,
                          events: Sequence[AgentEvent], trace_id: str, when: datetime,
                          added: list[str], deferred: Sequence[DeferredItem] = ()) -> None:
        """Buffer rows, trace and the settling of the memory write (or its deferred items,
        written later by bot.reconcile): one SQLite transaction."""
        answered = end.outcome == "answered"
        record = TraceRecord(
            trace_id=trace_id, channel_id=req.channel_id, guild_id=req.guild_id,
            user_id=req.user_id, question=question, events=[e.to_dict() for e in events],
            outcome=end.outcome, answer=end.answer, steps=end.steps,
            prompt_tokens=end.usage.prompt_tokens, completion_tokens=end.usage.completion_tokens,
            elapsed_ms=end.elapsed_ms, created_at=when, message_id=None,
            interaction_id=req.interaction_id,
        )
        try:
            async with self._db.transaction():
                if answered:
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
                        await self._writes.defer(trace_id, deferred)
                    else:
                        await self._writes.settle(trace_id)
                await self._traces.save(record)
        except BaseException:
            if answered and await self._undo_memory(req.user_id, added):
                with contextlib.suppress(Exception):  # left announced, the reconcile settles it
                    await self._writes.settle(trace_id)
            raise

    async def _previous_message(self, channel_id: str, question: str, now: datetime) -> str | None:
        """The channel's last message before this turn, for a short message's context
        (read only for short messages, and only if said within CONTEXT_MAX_AGE_S)."""
        if len(question.split()) > SHORT_MESSAGE_WORDS:
            return None
        recent = await self._buffer.recent(channel_id, limit=1)
        if not recent or (now - recent[-1].created_at).total_seconds() > CONTEXT_MAX_AGE_S:
            return None
        return recent[-1].content

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

    def _failure(self, kind: str, started: float, events: Sequence[AgentEvent],
                 memories_used: int) -> TurnResult:
        end = next((e for e in reversed(events) if isinstance(e, RunEnded)), None)
        usage_p = sum(getattr(getattr(e, "usage", None), "prompt_tokens", 0)
                      for e in events if not isinstance(e, RunEnded))
        usage_c = sum(getattr(getattr(e, "usage", None), "completion_tokens", 0)
                      for e in events if not isinstance(e, RunEnded))
        steps = end.steps if end else max((getattr(e, "step", 0) for e in events), default=0)
        return TurnResult(ok=False, text=sentence_for(kind), outcome="error", trace_id=None,
                          steps=steps, prompt_tokens=usage_p, completion_tokens=usage_c,
                          elapsed_ms=(self._clock() - started) * 1000.0, error_kind=kind,
                          memories_used=memories_used)

    def _refusal(self, kind: str, started: float) -> TurnResult:
        outcome = kind if kind in ("empty", "cooldown") else "error"
        return TurnResult(ok=False, text=sentence_for(kind), outcome=outcome, error_kind=kind,
                          elapsed_ms=(self._clock() - started) * 1000.0)

    @contextlib.asynccontextmanager
    async def _channel_lock(self, channel_id: str) -> AsyncIterator[None]:
        """Hold the channel's lock (FIFO); the lock leaves the map with its last user."""
        slot = self._slots.get(channel_id)
        if slot is None:
            slot = self._slots[channel_id] = _ChannelSlot(asyncio.Lock())
        slot.users += 1
        try:
            async with slot.lock:
                yield
        finally:
            slot.users -= 1
            if slot.users == 0 and self._slots.get(channel_id) is slot:
                del self._slots[channel_id]

    def _cooling_down(self, user_id: str, now: float) -> bool:
        cooldown = self._settings.user_cooldown_s
        if cooldown <= 0:
            return False
        last = self._last_turn.get(user_id)
        if last is not None and now - last < cooldown:
            return True
        if len(self._last_turn) > 10_000:
            self._last_turn = {u: t for u, t in self._last_turn.items() if now - t < cooldown}
        self._last_turn[user_id] = now
        return False

    def _manage_scope(self, guild_id: str | None) -> str | None:
        """What a person sees/exports/forgets: in a guild, what recall sees there (that guild,
        or everything with MEMORY_SCOPE=global); in a DM (private to them), everything they
        said anywhere."""
        return None if guild_id is None else self._memory_tools.recall_scope(guild_id)

    # -- lifecycle (graceful shutdown) ----------------------------------------------------

    def stop_accepting(self) -> None:
        """New turns get the "restarting" sentence from now on; running ones finish."""
        self._accepting = False

    async def wait_idle(self, timeout_s: float | None = None) -> bool:
        """Wait until no turn is running or queued; False when ``timeout_s`` ran out first."""
        try:
            async with asyncio.timeout(timeout_s):
                await self._idle.wait()
        except TimeoutError:
            return False
        return True

    def abandon_turns(self) -> int:
        """Shutdown ran out of time: cancel the turns still running or queued. Each returns
        the "restarting" sentence to its caller; one cancelled while storing finishes storing
        first (whole turns only). Returns how many were abandoned."""
        for task in self._turn_tasks:
            self._abandoned.add(task)
            task.cancel()
        return len(self._turn_tasks)

    @property
    def turns_in_flight(self) -> int:
        return self._in_flight

    @property
    def turns_queued(self) -> int:
        """Turns waiting for their channel's earlier turns or for a free slot."""
        return self._in_flight - self._running

    @property
    def storing(self) -> frozenset[str]:
        """Trace ids of the turns storing right now (their memory writes are not left over)."""
        return frozenset(self._storing)

    # -- traces ---------------------------------------------------------------------------

    async def attach_message(self, trace_id: str, message_id: str) -> None:
        """Link a stored trace to the message that carries its answer."""
        await self._traces.attach_message(trace_id, message_id)

    async def trace_for_message(self, message_id: str) -> TraceRecord | None:
        return await self._traces.by_message(message_id)

    async def last_trace(self, user_id: str, channel_id: str) -> TraceRecord | None:
        return await self._traces.last_for(user_id, channel_id)

    async def get_trace(self, trace_id: str) -> TraceRecord | None:
        return await self._traces.get(trace_id)

    # -- channel buffer -------------------------------------------------------------------

    async def reset_channel(self, channel_id: str) -> int:
        """Clear a channel's buffer (after any turn running there); returns messages removed."""
        async with self._channel_lock(channel_id):
            return await self._buffer.clear(channel_id)

    async def record_chatter(self, *, user_id: str, display_name: str, guild_id: str | None,
                             channel_id: str, text: str, message_id: str | None = None) -> bool:
        """Keep another person's message (not addressed to the bot) as channel context, role
        "other" (BUFFER_ALL_MESSAGES). Empty text is ignored; long text is cut. Returns whether
        something was stored."""
        text = text.strip()
        if not text:
            return False
        if len(text) > CHATTER_MAX_CHARS:
            text = text[:CHATTER_MAX_CHARS] + " [...]"
        await self._buffer.append(BufferedMessage(
            channel_id=channel_id, guild_id=guild_id, author_id=user_id, author_name=display_name,
            role="other", content=text, created_at=self._now(), message_id=message_id))
        return True

    # -- the person's memory ----------------------------------------------------------------

    async def memory_items(self, user_id: str, guild_id: str | None) -> list[MemoryHit]:
        """What the bot remembers of this person here, oldest first (see _manage_scope)."""
        return await self._memory.list(user_id, scope=self._manage_scope(guild_id))

    async def memory_export(self, user_id: str, guild_id: str | None) -> list[dict[str, Any]]:
        """The same items as JSON-safe dicts: id, text, scope, created_at (ISO), metadata."""
        return await self._memory.export(user_id, scope=self._manage_scope(guild_id))

    async def memory_forget(self, user_id: str, guild_id: str | None) -> int:
        """Erase what the bot remembers of this person here; returns how many items."""
        return await self._memory.forget(user_id, scope=self._manage_scope(guild_id))
