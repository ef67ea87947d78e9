"""The turn pipeline: one person's message in, one answer (or one clear sentence) out.

Platform-free, shared by the console chat and the Discord front end. The path of a turn:

1. Refuse empty text (nothing stored; text of only invisible marks, zero-width or bidi, is
   empty too), a turn while shutting down, and a person who asks again within
   USER_COOLDOWN_S (a polite sentence, not queued; bot.turn.scheduling.Cooldowns).
2. Take the channel's lock, then a slot of the global MAX_CONCURRENT_TURNS semaphore
   (bot.turn.scheduling.TurnScheduler: one channel is answered in order); the turn is tracked for
   graceful shutdown (bot.turn.tracking). A person or server over its daily token budget gets
   one sentence (bot.settings.budgets), read here so that no await precedes the queue.
3. Read the place's settings (bot.settings.place: persona, model, tools, memory scope,
   cooldown; a channel's override its server's), the channel's buffer window (other people's
   messages quoted with who wrote them: bot.turn.history), recall the person's memories where
   bot.turn.privacy's MemoryPolicy allows (a public answer never sees a private item), fit all of
   it to MAX_CONTEXT_TOKENS (bot.turn.context_budget; the channel's running summary, bot.knowledge.summary,
   stands for the messages before the window and is folded after a turn, off its path),
   run the place's agent (bot.turn.agent) with per-turn memory tools and the `remind` tool
   (bot.reminders; the person's time zone in the prompt), streaming every event to
   ``on_event`` (a failing callback is logged, never fatal). The memory search and the agent's
   start pass ``pacer`` (bot.process.pacing): turns woken together start them a time budget's
   worth per loop iteration. A memory store that cannot be reached does not stop the turn: it is answered without memories, and the answer says so in
   one line (bot.errors.with_memory_notice).
4. Persist the whole turn or nothing (bot.turn_store.TurnStore; a memory write the store cannot
   take then is deferred and made later). A model or store failure stores
   nothing and returns one sentence (bot.errors).

Step limit / no usable answer: the agent ends honestly, so the trace IS stored (the person can
open it and see why), but neither the buffer nor semantic memory gets the turn.

The other jobs have their own modules: scheduling (bot.turn.scheduling), shutdown tracking
(bot.turn.tracking), storing with compensation (bot.turn_store), write coalescing
(bot.turn_store.coalescing), the cogs' traces / memory / channel services (bot.services).

Part of bot/: joins agent/ and memory/; knows nothing of Discord.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Protocol
from datetime import UTC, datetime

from agent.errors import LLMError
from agent.events import AgentEvent, AnswerDelta, RunEnded
from agent.loop import Agent
from agent.prompt import build_system_prompt
from agent.tools.clock import zone_names
from agent.tools.registry import ToolContext
from bot.settings.budgets import TokenBudget, TurnCharge
from bot.settings.config import Settings
from bot.turn.context_budget import fit_context
from bot.errors import sentence_for, with_memory_notice
from bot.turn.history import history_messages
from bot.interfaces import EventCallback
from bot.turn.privacy import MemoryPolicy, Reach
from bot.process.health import HealthLog
from bot.process.pacing import LoopPacer
from bot.settings.place import DEFAULTS, PlaceSettings, cooldown_in
from bot.knowledge.docs_tool import DocsTools
from bot.knowledge.summary import RunningSummaries, summary_message
from bot.turn.agent import TurnAgents
from bot.turn.memory_tools import RECALL_QUERY_CHARS, MemoryTools
from bot.reminders.tool import ReminderTools
from bot.turn.requests import TurnRequest, TurnResult
from bot.turn.scheduling import Admission, Cooldowns, TurnScheduler, UserTurns
from bot.turn.tracking import TurnTracker
from bot.turn_store.persistence import TurnStore, has_visible_text
from memory.stores.buffer import ChannelBuffer
from memory.stores.database import Database
from memory.semantic import UserMemory
from memory.stores.traces import Recalled, TraceStore
from memory.errors import MemoryStoreError
from memory.tokens import estimate_tokens
from memory.stores.summaries import ChannelSummary
from memory.stores.write_log import MemoryWriteLog

__all__ = ["EventCallback", "PlaceLookup", "TurnPipeline"]

log = logging.getLogger(__name__)

RECALL_K = 5
MEMORY_LINE_CHARS = 900        # agent.prompt cuts memory lines at 1000 characters
RUN_RESERVE_FRACTION = 0.25     # left for the run's own steps and the answer


class PlaceLookup(Protocol):
    """The settings in force where a turn is asked (bot.settings.place.PlaceSettingsService)."""

    def for_place(self, guild_id: str | None, channel_ids: Sequence[str]) -> PlaceSettings: ...


class _OperatorDefaults:
    """No per-place settings: the operator's everywhere (the console; tests)."""

    def for_place(self, guild_id: str | None, channel_ids: Sequence[str]) -> PlaceSettings:
        return DEFAULTS


class _TurnFailed(Exception):
    """Internal: a turn ends with one sentence of this kind."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


class TurnPipeline:
    """Runs turns; see the module docstring for the path and its guarantees.

    ``scheduler`` (channel locks) and ``tracker`` (turns in flight, for bot.process.shutdown) are
    shared with the services that need them. ``store`` stores the turns: the runtime's (which
    also settles what cut turns left), else one of the pipeline's own.
    """

    def __init__(self, agent: Agent, buffer: ChannelBuffer, traces: TraceStore, db: Database,
                 user_memory: UserMemory, settings: Settings, *,
                 places: PlaceLookup | None = None, agents: TurnAgents | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 now: Callable[[], datetime] = lambda: datetime.now(UTC),
                 budget: TokenBudget | None = None, policy: MemoryPolicy | None = None,
                 store: TurnStore | None = None, reminders: ReminderTools | None = None,
                 docs: DocsTools | None = None, summaries: RunningSummaries | None = None) -> None:
        self._docs = docs  # search_docs in servers with documents (bot.knowledge.docs_tool)
        self.summaries = summaries  # channels' running summaries (bot.knowledge.summary)
        self._agents = agents or TurnAgents(agent, settings.models, settings.agent)
        self._places = places or _OperatorDefaults()
        self._budget = budget  # daily token budgets (bot.settings.budgets); None: no limits
        self._buffer = buffer
        self._memory = user_memory
        self._settings = settings
        self._clock = clock
        self._now = now  # the date the prompt states, and what the store stamps
        self.policy = policy or MemoryPolicy(operator_global=settings.memory.memory_scope == "global")
        self._memory_tools = MemoryTools(user_memory, policy=self.policy, k=RECALL_K,
                                         timeout_s=settings.agent.tool_timeout_s)
        self._reminder_tools = reminders  # the `remind` tool and people's time zones (bot.reminders)
        self.scheduler = TurnScheduler(settings.max_concurrent_turns)
        self.tracker = TurnTracker()
        self.store = store or TurnStore(buffer, traces, db, user_memory, MemoryWriteLog(db), now=now,
                                        policy=self.policy)
        self._cooldowns = Cooldowns()
        self.user_turns = UserTurns()  # at most MAX_TURNS_PER_USER of one person in flight
        self.health = HealthLog()
        self.pacer = LoopPacer()  # turns woken together start their heavy steps a budget's worth per iteration
        # the agent's own system prompt (tools, persona) without memories: what every run sends
        catalog = agent.tools.merged(self._memory_tools.for_turn([]))
        if reminders is not None:
            catalog = catalog.merged(reminders.for_turn(private=False))
        if docs is not None:
            catalog = catalog.merged(docs.catalog())
        # the person's time zone line with the longest IANA name: a turn's own is never longer
        system_prompt = build_system_prompt(catalog, protocol=agent.protocol, persona=agent.persona,
                                            timezone=max(zone_names().values(), key=len) if reminders is not None else None)
        prompt_tokens = estimate_tokens(system_prompt)
        self._context_budget = int(settings.max_context_tokens * (1 - RUN_RESERVE_FRACTION)) - prompt_tokens

    @property
    def history_token_budget(self) -> int:
        """Tokens a turn's question, history and memories may take (the model's context less
        the system prompt and the run's reserve): what /tldr and the running summary read."""
        return self._context_budget

    @property
    def turns_queued(self) -> int:
        """Turns waiting for their channel's earlier turns or for a free slot."""
        return self.tracker.in_flight - self.scheduler.running

    # -- the turn -------------------------------------------------------------------------

    def _admit_now(self, user_id: str, guild_id: str | None, place_channels: Sequence[str], lane: str,
                   started: float, *, cooldown: bool = True) -> Admission | TurnResult:
        """The checks that need no await: shutting down, the person's turns in flight, the
        place's cooldown (counted only for a turn let in; ``cooldown`` False: not checked)."""
        if not self.tracker.accepting:
            return self._refusal("shutting_down", started)
        place = self._places.for_place(guild_id, place_channels)  # no await: keeps the order
        if not self.user_turns.admits(user_id, lane):
            return self._refusal("busy", started)
        if cooldown and self._cooldowns.cooling_down(user_id, started,
                                                     cooldown_in(place, self._settings.user_cooldown_s)):
            return self._refusal("cooldown", started)
        self.user_turns.try_enter(user_id, lane)
        return Admission(user_id, lane, place, started, self.user_turns)

    async def admit(self, user_id: str, guild_id: str | None, place_channels: Sequence[str],
                    lane: str) -> Admission | TurnResult:
        """Let a turn in before its costly work (downloading images): the checks of `handle`
        (shutting down, turns in flight, cooldown) and the daily budget; a refusal is the
        TurnResult to show. Pass the Admission to `handle`, or `release` it if the turn is
        dropped. ``lane`` is the channel whose lock the turn will take (a new thread's: a key of
        its own). The budget is read again in the channel's turn."""
        admitted = self._admit_now(user_id, guild_id, place_channels, lane, self._clock())
        if isinstance(admitted, Admission) and self._budget is not None:
            if (over := await self._budget.refusal(user_id, guild_id)) is not None:
                admitted.release()
                return TurnResult(ok=False, text=over, outcome="over_budget", error_kind="over_budget",
                                  elapsed_ms=(self._clock() - admitted.started) * 1000.0)
        return admitted

    async def handle(self, req: TurnRequest, on_event: EventCallback | None = None, *,
                     admission: Admission | None = None) -> TurnResult:
        """Answer one request; never raises for model or store failures (only on cancel).
        ``admission`` is the request's from `admit`, taken over (released at the end)."""
        started = self._clock() if admission is None else admission.started
        question = req.text.strip()
        if not has_visible_text(question):
            if admission is not None:
                admission.release()
            return self._refusal("empty", started)
        if admission is None:
            admitted = self._admit_now(req.user_id, req.guild_id, req.place_channels, req.channel_id, started,
                                       cooldown=not req.scheduled)
            if isinstance(admitted, TurnResult):
                return admitted
            admission = admitted
        place = admission.place

        task = self.tracker.enter()
        charge = TurnCharge(self._budget, req.user_id, req.guild_id)
        try:
            async with self.scheduler.turn(req.channel_id):
                queued_ms = (self._clock() - started) * 1000.0
                # The daily budget is read in the channel's turn, not before it is queued: an
                # await there would let a later message of the channel overtake this one, and
                # the channel's earlier turns are charged by now.
                over = None if self._budget is None else await self._budget.refusal(req.user_id, req.guild_id)
                if over is not None:
                    result = TurnResult(ok=False, text=over, outcome="over_budget", error_kind="over_budget",
                                        elapsed_ms=(self._clock() - started) * 1000.0)
                else:
                    result = await self._turn(req, question, place, on_event, started, charge)
            result = dataclasses.replace(result, queued_ms=queued_ms)
            await charge(result.total_tokens)  # unless charged already: before the turn counts as finished
        except asyncio.CancelledError:
            if not self.tracker.abandoned(task):
                raise
            result = self._refusal("shutting_down", started)  # nothing was stored
        finally:
            self.tracker.leave(task)
            admission.release()
        self.health.record(result.error_kind)
        if result.ok and not req.private and self.summaries is not None:  # a private turn buffers nothing
            # folds what left the window, off this turn's path, charged to this person
            self.summaries.after_turn(req.channel_id, req.user_id, req.guild_id)
        log.info("turn channel=%s user=%s steps=%d tokens=%d duration_ms=%.0f queued_ms=%.0f "
                 "recall_ms=%.0f store_ms=%.0f outcome=%s%s", req.channel_id, req.user_id,
                 result.steps, result.total_tokens, result.elapsed_ms, result.queued_ms,
                 result.recall_ms, result.store_ms, result.outcome,
                 f" error={result.error_kind}" if result.error_kind else "")
        log.debug("turn channel=%s question=%r answer=%r", req.channel_id, question, result.text)
        return result

    async def _turn(self, req: TurnRequest, question: str, place: PlaceSettings,
                    on_event: EventCallback | None, started: float, charge: TurnCharge) -> TurnResult:
        events: list[AgentEvent] = []
        end: RunEnded | None = None
        memories_used = 0
        try:
            try:
                async with asyncio.timeout(self._settings.turn_timeout_s):
                    mark = self._clock()
                    remember = self.policy.remembers(place.memory)
                    reach = self.policy.recall(req.guild_id, req.private, place.memory)
                    found: list[Recalled] = []  # the memories this turn recalls, for its trace
                    history, recalled, summary = await self._context(req, question, reach if remember else None,
                                                                     found)
                    recall_ms = (self._clock() - mark) * 1000.0
                    persona_tokens = estimate_tokens(place.persona) if place.persona else 0
                    budget = fit_context(question, history, recalled or [],
                                         budget=self._context_budget - persona_tokens,
                                         summary=summary_message(summary) if summary is not None else None)
                    memories_used = len(budget.memories)
                    pending: list[str] = []
                    context = ToolContext(user_id=req.user_id, channel_id=req.channel_id,
                                          guild_id=req.guild_id, display_name=req.display_name)
                    tools = self._memory_tools.for_turn(pending, reach, found) if remember else None
                    zone = None
                    if self._reminder_tools is not None:
                        zone = (await self._reminder_tools.reminders.zone_of(req.user_id)).key
                        if not req.scheduled:
                            more = self._reminder_tools.for_turn(private=req.private or req.guild_id is None)
                            tools = more if tools is None else tools.merged(more)
                    if self._docs is not None and (docs := self._docs.for_turn(req.guild_id)) is not None:
                        tools = docs if tools is None else tools.merged(docs)
                    await self.pacer.wait()  # the prompt and the first model request (bot.process.pacing)
                    async for event in self._agents.for_turn(place).run(
                        budget.question, context=context, history=budget.history,
                        memories=budget.memories, tools=tools,
                        images=req.images,  # sent as image parts (bot.turn.images)
                        timezone=zone, now=self._now(),
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
            charged = charge.start(end.usage.total_tokens)  # beside storing: the answer's preview may show meanwhile
            trace_id = uuid.uuid4().hex
            mark = self._clock()
            try:
                await self.store.persist(req, question, end, events, trace_id, pending, remember=remember,
                                         recalled=found)
            finally:
                await charged
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

    async def _context(self, req: TurnRequest, question: str, reach: Reach | None,
                       found: list[Recalled]) -> tuple[list[dict], list[str] | None, ChannelSummary | None]:
        """The channel's history (others' messages quoted: bot.turn.history) after its running
        summary, the summary, and the memories ``reach`` allows (None: memory is off here), which
        are added to ``found``."""
        window = self._settings.buffer_window
        recent = await self._buffer.recent(req.channel_id, limit=window) if window else []
        summary = await self.summaries.current(req.channel_id) if self.summaries is not None and window else None
        if summary is not None:
            recent = [m for m in recent if m.created_at > summary.through]
        history = history_messages(recent, req.user_id)
        if reach is None:
            return history, [], summary
        await self.pacer.wait()  # the query's embedding request (bot.process.pacing)
        memories = await self._memory_tools.recall_lines(
            req.user_id, question[:RECALL_QUERY_CHARS], reach, k=RECALL_K,
            max_chars=MEMORY_LINE_CHARS, recalled=found)  # None: the store is down, answer without memory
        return history, memories, summary

    async def _emit(self, on_event: EventCallback | None, event: AgentEvent) -> None:
        if on_event is None:
            return
        try:
            await on_event(event)
        except Exception:
            log.warning("on_event callback failed on %s; the turn goes on", event.type, exc_info=True)

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
        outcome = kind if kind in ("empty", "cooldown", "busy") else "error"
        return TurnResult(ok=False, text=sentence_for(kind), outcome=outcome, error_kind=kind,
                          elapsed_ms=(self._clock() - started) * 1000.0)
