"""The small interfaces the front ends (the Discord cogs, the console) depend on.

Each is a Protocol of what one command needs: running a turn, reading traces, a person's own
memory, a channel's buffer. bot.turn.pipeline.TurnPipeline and the services of bot.services
implement them; ``FrontEndServices`` bundles one of each for a front end.

Part of bot/: imports only plain data types (requests, trace and memory records).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from agent.events import AgentEvent
from bot.forgetting import Forgotten
from bot.settings.place import PlaceSettings
from bot.turn.requests import TurnRequest, TurnResult
from bot.turn.scheduling import Admission
from memory.stores.guild_settings import SettingValue, StoredSetting
from memory.semantic import MemoryHit
from memory.stores.traces import TraceRecord

__all__ = ["ChannelAdmin", "EventCallback", "FrontEndServices", "PersonMemory", "PlaceSettingsAccess",
           "TraceAccess", "TurnRunner"]

EventCallback = Callable[[AgentEvent], Awaitable[None]]


class TurnRunner(Protocol):
    """Answers one request (see bot.turn.pipeline)."""

    async def handle(self, req: TurnRequest, on_event: EventCallback | None = None, *,
                     admission: Admission | None = None) -> TurnResult: ...
    async def admit(self, user_id: str, guild_id: str | None, place_channels: Sequence[str],
                    lane: str) -> Admission | TurnResult: ...


class TraceAccess(Protocol):
    """The stored traces of answers, and their link to the message carrying the answer;
    ``answering`` is held by a front end while a person's answer there is on its way (their
    ``last_trace`` there waits for it)."""

    def answering(self, user_id: str, channel_id: str) -> AbstractAsyncContextManager[None]: ...
    async def attach_message(self, trace_id: str, message_id: str) -> None: ...
    async def trace_for_message(self, message_id: str) -> TraceRecord | None: ...
    async def last_trace(self, user_id: str, channel_id: str) -> TraceRecord | None: ...
    async def get_trace(self, trace_id: str) -> TraceRecord | None: ...


class PersonMemory(Protocol):
    """A person's own memory, as they may see, export and erase it here (guild id, or None
    for a DM)."""

    async def memory_items(self, user_id: str, guild_id: str | None) -> list[MemoryHit]: ...
    async def memory_export(self, user_id: str, guild_id: str | None) -> list[dict[str, Any]]: ...
    async def memory_forget(self, user_id: str, guild_id: str | None) -> Forgotten: ...


class ChannelAdmin(Protocol):
    """A channel's conversation buffer."""

    async def reset_channel(self, channel_id: str) -> int: ...
    async def record_chatter(self, *, user_id: str, display_name: str, guild_id: str | None,
                             channel_id: str, text: str, message_id: str | None = None) -> bool: ...


class PlaceSettingsAccess(Protocol):
    """A server's and its channels' settings (bot.settings.place.PlaceSettingsService): each
    call names one guild; a refused value raises bot.settings.place.InvalidSetting."""

    def for_place(self, guild_id: str | None, channel_ids: Sequence[str]) -> PlaceSettings: ...
    def rows(self, guild_id: str) -> list[StoredSetting]: ...
    async def set_value(self, guild_id: str, channel_id: str | None, key: str, raw: str,
                        actor_id: str) -> SettingValue: ...
    async def set_tool(self, guild_id: str, channel_id: str | None, name: str, enabled: bool,
                       actor_id: str) -> str: ...
    async def reset(self, guild_id: str, channel_id: str | None, key: str | None,
                    actor_id: str) -> int: ...
    async def mark_bot_thread(self, guild_id: str, thread_id: str, bot_id: str) -> None: ...


@dataclass(frozen=True, slots=True)
class FrontEndServices:
    """What a front end is given: one implementation of each interface."""

    turns: TurnRunner
    traces: TraceAccess
    memory: PersonMemory
    channels: ChannelAdmin
    places: PlaceSettingsAccess
