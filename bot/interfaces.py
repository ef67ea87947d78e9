"""What a front end (the Discord client, the console) is given: the services of one runtime.

``FrontEndServices`` bundles the turn pipeline and the services behind the other commands
(traces, a person's own memory, a channel's buffer, the place's settings); each has one
implementation, so they are named by their concrete types. ``EventCallback`` is what a front end
passes to receive a turn's events as they happen.

Part of bot/: imports only plain data types at run time.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent.events import AgentEvent

if TYPE_CHECKING:  # the services import this module's EventCallback
    from bot.knowledge.documents import DocumentsService
    from bot.knowledge.tldr import ChannelDigests
    from bot.services import ChannelService, PersonMemoryService, TraceService
    from bot.settings.place import PlaceSettingsService
    from bot.turn.pipeline import TurnPipeline

__all__ = ["EventCallback", "FrontEndServices"]

EventCallback = Callable[[AgentEvent], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class FrontEndServices:
    """What a front end is given: one of each service."""

    turns: TurnPipeline
    traces: TraceService
    memory: PersonMemoryService
    channels: ChannelService
    places: PlaceSettingsService
    documents: DocumentsService | None = None  # the /docs commands (None: not offered)
    digests: ChannelDigests | None = None  # /tldr (None: not offered)
