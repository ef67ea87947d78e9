"""Runtime: everything a front end needs, built from Settings and closed in reverse order.

    async with Runtime(settings) as rt:
        result = await rt.pipeline.handle(TurnRequest(...), on_event=...)

Opens, in order: the SQLite Database (DATA_DIR/bot.sqlite3) with its ChannelBuffer and
TraceStore; the per-user semantic memory (embedded Chroma under DATA_DIR/chroma, in a child
process with CHROMA_PROCESS, or the Chroma server of CHROMA_HOST/CHROMA_PORT; MEMORY_CACHE_MB
of people's items kept here); the servers' documents (memory.documents: vectors under
DATA_DIR/documents, in a child process of their own with CHROMA_PROCESS, or on the Chroma
server, sharing the memory's embedder); an httpx.AsyncClient for the tools; the ToolRegistry with the
built-in tools and the tools of the MCP servers of MCP_CONFIG (agent.tools.mcp: each
server started, listed and kept connected in the background; one that fails is logged and left
out, and joins when it comes up; every stdio child is stopped on close); the LLMClient; the
Agent and the per-turn agents (bot.turn.agent: a model client per LLM_MODELS entry used);
the per-server settings (bot.settings.place); people's reminders (bot.reminders: the front
end runs their delivery); the TurnPipeline and the front ends' services (bot.services, as
FrontEndServices). When a server's tool list changes (it came up, or it sent
notifications/tools/list_changed) the agent's registry is rebuilt: built-ins, then MCP tools
(the pipeline's context budget keeps the catalog size it had at start-up). A store that cannot
open raises memory's StoreUnavailable / SchemaVersionError (one clear line, shown by
bot.__main__), after closing whatever was already open. Used by the console chat and the Discord client alike.
With BUFFER_RETENTION_DAYS > 0, channel messages older than that (and with
TRACE_RETENTION_DAYS > 0, traces older than that) are pruned at start-up and then once a day
by a background task (stopped on close). Memory writes whose turn was never stored (a crash
mid-turn) are undone, and writes deferred while the memory store was down are made, at start-up
and by the turn store's sweeps (bot.turn_store.TurnStore). While turns fail or queue up, or the
event loop stalls, one health line a minute at most (bot.process.health). One clock, ``now``,
dates what the runtime stores and counts (budgets, settings, buffer, sweeps).

Part of bot/.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from contextlib import AsyncExitStack
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import httpx

from agent.llm import LLMClient
from agent.loop import Agent
from agent.tools.builtin import register_builtin_tools
from agent.tools.registry import ToolRegistry
from bot.settings.budgets import TokenBudget
from bot.settings.config import Settings
from bot.process.health import HEALTH_INTERVAL_S, LoopLag
from bot.interfaces import FrontEndServices
from bot.turn.privacy import MemoryPolicy
from httptls import tls_context
from bot.settings.place import PlaceSettingsService, SettingRules
from bot.knowledge.docs_tool import DocsTools
from bot.knowledge.documents import DocumentsService
from bot.knowledge.summary import RunningSummaries
from bot.knowledge.tldr import ChannelDigests
from bot.turn.pipeline import TurnPipeline
from bot.turn_store.persistence import TurnStore
from bot.services import ChannelService, PersonMemoryService, TraceService
from bot.turn.agent import TurnAgents
from bot.reminders.service import Reminders
from bot.reminders.tool import ReminderTools
from memory.stores.erasure import PersonErasure
from memory.stores.buffer import ChannelBuffer
from memory.stores.database import Database
from memory.config import OP_TIMEOUT_S
from memory.errors import StoreUnavailable
from memory.stores.guild_settings import GuildSettingsStore
from memory.documents import ServerDocuments, open_server_documents
from memory.stores.summaries import ChannelSummaries
from memory.semantic import UserMemory, open_user_memory
from memory.stores.reminders import ReminderStore
from memory.stores.traces import TraceStore
from memory.stores.usage import TokenUsageStore
from memory.stores.write_log import MemoryWriteLog

if TYPE_CHECKING:
    from agent.tools.mcp import McpTools

__all__ = ["Runtime"]

log = logging.getLogger(__name__)

TOOL_HTTP_TIMEOUT_S = 10.0
PRUNE_INTERVAL_S = 24 * 3600.0


class Runtime:
    """Owns the stores, clients and the pipeline for the life of a front end.

    ``embedder`` and ``llm`` may be given (tests, benches) instead of the ones the settings ask
    for; a given embedder or LLM client is not closed by the runtime. ``now`` is the runtime's
    one clock (tests move it to the next day for the daily token budgets).
    """

    def __init__(self, settings: Settings, *, embedder: Any = None, llm: Any = None,
                 prune_interval_s: float = PRUNE_INTERVAL_S,
                 health_interval_s: float = HEALTH_INTERVAL_S,
                 now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.settings = settings
        self._now = now
        self._prune_interval_s = prune_interval_s
        self._health_interval_s = health_interval_s
        self._embedder = embedder
        self._llm_given = llm
        self._stack: AsyncExitStack | None = None
        self.db: Database
        self.buffer: ChannelBuffer
        self.traces: TraceStore
        self.user_memory: UserMemory
        self.documents: ServerDocuments
        self.summaries: ChannelSummaries
        self.http: httpx.AsyncClient
        self.tools: ToolRegistry
        self.mcp: McpTools | None = None  # only with MCP_CONFIG set
        self._builtin_tools: ToolRegistry
        self.llm: Any
        self.agent: Agent
        self.pipeline: TurnPipeline
        self.agents: TurnAgents
        self.places: PlaceSettingsService
        self.services: FrontEndServices
        self.budget: TokenBudget
        self.reminders: Reminders
        self.writes: MemoryWriteLog
        self.turn_store: TurnStore
        self.loop_lag = LoopLag()

    async def __aenter__(self) -> Runtime:
        s = self.settings
        stack = AsyncExitStack()
        await stack.__aenter__()
        try:
            try:
                s.memory.data_dir.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreUnavailable(
                    f"DATA_DIR {str(s.memory.data_dir)!r} cannot be created: {exc.strerror or exc}"
                ) from None
            self.db = await stack.enter_async_context(Database.open(s.memory.sqlite_path))
            self.buffer = ChannelBuffer(self.db)
            self.traces = TraceStore(self.db)
            self.user_memory = await asyncio.to_thread(
                open_user_memory, settings=s.memory, embedder=self._embedder, op_timeout_s=OP_TIMEOUT_S)
            stack.push_async_callback(self.user_memory.close)
            self.documents = await asyncio.to_thread(
                open_server_documents, self.db, self.user_memory.embedder, path=s.memory.data_dir / "documents",
                host=s.memory.chroma_host, port=s.memory.chroma_port,
                auth_token=s.memory.chroma_auth_token or None, limits=s.features.knowledge.documents,
                chroma_process=s.memory.chroma_process, op_timeout_s=OP_TIMEOUT_S)
            stack.push_async_callback(self.documents.close)
            await self.documents.load()
            self.http = await stack.enter_async_context(
                httpx.AsyncClient(timeout=TOOL_HTTP_TIMEOUT_S, follow_redirects=True, verify=tls_context()))
            self._builtin_tools = ToolRegistry(default_timeout_s=s.agent.tool_timeout_s)
            register_builtin_tools(self._builtin_tools, s.agent, self.http)
            self.tools = self._builtin_tools
            if s.mcp.configured:
                from agent.tools.mcp import McpTools  # the mcp SDK is imported only by a bot that uses it

                self.mcp = await stack.enter_async_context(McpTools(
                    s.mcp, default_timeout_s=s.agent.tool_timeout_s,
                    max_observation_chars=self._builtin_tools.max_observation_chars,
                    on_change=self._mcp_tools_changed, stderr_dir=s.memory.data_dir / "mcp-logs"))
                self.tools = self._builtin_tools.merged(self.mcp.registry())
            if self._llm_given is not None:
                self.llm = self._llm_given
            else:
                self.llm = LLMClient.from_settings(s.agent)
                stack.push_async_callback(self.llm.aclose)
            self.agent = Agent(self.llm, self.tools, protocol=s.agent.protocol,
                               max_steps=s.agent.max_steps)
            self.agents = TurnAgents(self.agent, s.models, s.agent)
            stack.push_async_callback(self.agents.aclose)
            policy = MemoryPolicy(operator_global=s.memory.memory_scope == "global")
            rules = SettingRules(s.models, tool_names=lambda: self.tools.names(),
                                 mcp_servers=[server.name for server in s.mcp.servers],
                                 operator_global_memory=policy.operator_global,
                                 cooldown_floor_s=s.user_cooldown_s)
            self.places = PlaceSettingsService(GuildSettingsStore(self.db), rules, now=self._now)
            await self.places.load()
            self.budget = TokenBudget(TokenUsageStore(self.db), user_daily=s.features.user_daily_tokens,
                                      guild_daily=s.features.guild_daily_tokens, now=self._now)
            self.writes = MemoryWriteLog(self.db)
            self.turn_store = await stack.enter_async_context(TurnStore(
                self.buffer, self.traces, self.db, self.user_memory, self.writes, now=self._now,
                policy=policy))
            self.reminders = Reminders(ReminderStore(self.db), s.reminders, now=self._now)
            self.summaries = summaries = ChannelSummaries(self.db)
            self.pipeline = TurnPipeline(self.agent, self.buffer, self.traces, self.db,
                                         self.user_memory, s, places=self.places, agents=self.agents,
                                         budget=self.budget, policy=policy, now=self._now,
                                         store=self.turn_store,
                                         reminders=ReminderTools(self.reminders, timeout_s=s.agent.tool_timeout_s),
                                         docs=DocsTools(self.documents, timeout_s=s.agent.tool_timeout_s),
                                         summaries=RunningSummaries(
                                             self.buffer, summaries, self.llm,
                                             every=s.features.knowledge.summary_every, window=s.buffer_window,
                                             history_tokens=lambda: self.pipeline.history_token_budget,
                                             budget=self.budget))
            stack.push_async_callback(self.pipeline.summaries.aclose)
            self.services = FrontEndServices(
                turns=self.pipeline, traces=TraceService(self.traces),
                memory=PersonMemoryService(self.user_memory, policy=policy,
                                           places=self.places, rows=PersonErasure(self.db)),
                channels=ChannelService(self.buffer, self.pipeline.scheduler, now=self._now,
                                        summaries=summaries),
                places=self.places, documents=DocumentsService(self.documents, self.http),
                digests=ChannelDigests(self.buffer, self.llm, whole_channel=s.buffer_all_messages,
                                       max_messages=s.features.knowledge.tldr_max_messages,
                                       token_budget=self.pipeline.history_token_budget,
                                       now=self._now, budget=self.budget))
            lag = asyncio.create_task(self.loop_lag.run(), name="loop-lag")
            stack.push_async_callback(_cancel, lag)
            health = asyncio.create_task(self._log_health(), name="health-line")
            stack.push_async_callback(_cancel, health)
            if s.memory.buffer_retention_days > 0 or s.memory.trace_retention_days > 0:
                await self.prune_old()
                pruner = asyncio.create_task(self._prune_daily(), name="retention")
                stack.push_async_callback(_cancel, pruner)
        except BaseException:
            await stack.aclose()
            raise
        self._stack = stack
        log.info("runtime ready: data in %s, memory in %s, model %s (%s protocol), tools: %s",
                 s.memory.data_dir, self.user_memory.where, s.agent.model, s.agent.protocol,
                 ", ".join(self.tools.names()))
        return self

    def _mcp_tools_changed(self) -> None:
        """A server came up or changed its tools: the agent's next runs see the new list."""
        assert self.mcp is not None  # only McpTools calls this
        self.tools = self._builtin_tools.merged(self.mcp.registry())
        if hasattr(self, "agent"):  # not yet while the runtime opens
            self.agent.tools = self.tools
        log.info("tools now: %s", ", ".join(self.tools.names()))

    async def prune_old(self) -> int:
        """Delete channel messages older than BUFFER_RETENTION_DAYS (and running summaries
        that cover only such messages) and traces older than TRACE_RETENTION_DAYS (0: keep
        all); how many rows."""
        now = self._now()
        pruned = 0
        if (days := self.settings.memory.buffer_retention_days) > 0:
            pruned += await self.buffer.prune(now - timedelta(days=days))
            pruned += await self.summaries.prune(now - timedelta(days=days))
        if (days := self.settings.memory.trace_retention_days) > 0:
            pruned += await self.traces.prune(now - timedelta(days=days))
        return pruned

    async def _prune_daily(self) -> None:
        while True:
            await asyncio.sleep(self._prune_interval_s)
            try:
                await self.prune_old()
            except Exception:
                log.exception("pruning old messages and traces failed; trying again next time")

    async def _log_health(self) -> None:
        while True:
            await asyncio.sleep(self._health_interval_s)
            p = self.pipeline
            if text := p.health.line(queued=p.turns_queued, in_flight=p.tracker.in_flight,
                                     loop_lag_s=self.loop_lag.take_worst()):
                log.warning("%s", text)

    async def __aexit__(self, *exc: object) -> None:
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()


async def _cancel(task: asyncio.Task[Any]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
