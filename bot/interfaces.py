"""The small interfaces the front ends (the Discord cogs, the console) depend on.

Each is a Protocol of what one command needs: running a turn, reading traces, a person's own
memory, a channel's buffer. bot.pipeline.TurnPipeline and the services of bot.services
implement them; ``FrontEndServices`` bundles one of each for a front end.

Part of bot/: imports only plain data types (requests, trace and memory records).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from agent.events import AgentEvent
from bot.requests import TurnRequest, TurnResult
from memory.semantic import MemoryHit
from memory.traces import TraceRecord

__all__ = ["ChannelAdmin", "EventCallback", "FrontEndServices", "PersonMemory", "TraceAccess",
           "TurnRunner"]

EventCallback = Callable[[AgentEvent], Awaitable[None]]


class TurnRunner(Protocol):
    """Answers one request (see bot.pipeline)."""

    async def handle(self, req: TurnRequest, on_event: EventCallback | None = None) -> TurnResult: ...


class TraceAccess(Protocol):
    """The stored traces of answers, and their link to the message carrying the answer."""

    async def attach_message(self, trace_id: str, message_id: str) -> None: ...
    async def trace_for_message(self, message_id: str) -> TraceRecord | None: ...
    async def last_trace(self, user_id: str, channel_id: str) -> TraceRecord | None: ...
    async def get_trace(self, trace_id: str) -> TraceRecord | None: ...


class PersonMemory(Protocol):
    """A person's own memory, as they may see, export and erase it here (guild id, or None
    for a DM)."""

    async def memory_items(self, user_id: str, guild_id: str | None) -> list[MemoryHit]: ...
    async def memory_export(self, user_id: str, guild_id: str | None) -> list[dict[str, Any]]: ...
    async def memory_forget(self, user_id: str, guild_id: str | None) -> int: ...


class ChannelAdmin(Protocol):
    """A channel's conversation buffer."""

    async def reset_channel(self, channel_id: str) -> int: ...
    async def record_chatter(self, *, user_id: str, display_name: str, guild_id: str | None,
                             channel_id: str, text: str, message_id: str | None = None) -> bool: ...


@dataclass(frozen=True, slots=True)
class FrontEndServices:
    """What a front end is given: one implementation of each interface."""

    turns: TurnRunner
    traces: TraceAccess
    memory: PersonMemory
    channels: ChannelAdmin
