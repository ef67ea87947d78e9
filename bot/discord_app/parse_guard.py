"""Gateway events that discord.py cannot parse are dropped with a log line instead of ending
the bot.

discord.py parses each dispatch inside the gateway's read loop (``DiscordWebSocket.
received_message`` calls ``ConnectionState.parsers[event]``), and an exception there, from a
payload of a shape it does not expect (an embed colour given as a string, a message without
an author), escapes ``Client.connect``, which reconnects only after network errors: one odd
event would end the process, and every channel's service with it. ``guard_parsers`` wraps
each parser but READY's (without READY the client has no state to go on with, so that one
stays fatal): an exception is logged naming the event, with the traceback the first time for
each event, and the event is dropped. bench/chaos.py (hostile) shows what it catches.

Imports discord.py's types only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, MutableMapping
from typing import Any

__all__ = ["FATAL_EVENTS", "guard_parsers"]

log = logging.getLogger(__name__)

FATAL_EVENTS = frozenset({"READY"})

Parser = Callable[[Any], None]


def guard_parsers(parsers: MutableMapping[str, Parser]) -> None:
    """Wrap, in place, every parser of a ConnectionState's ``parsers`` but FATAL_EVENTS'."""
    traced: set[str] = set()
    for event, parse in list(parsers.items()):
        if event not in FATAL_EVENTS:
            parsers[event] = _guarded(event, parse, traced)


def _guarded(event: str, parse: Parser, traced: set[str]) -> Parser:
    def guarded(data: Any) -> None:
        try:
            parse(data)
        except Exception as exc:  # the far end's payload, not our bug: drop it, keep serving
            first = event not in traced
            traced.add(event)
            log.error("dropped a %s event that discord.py could not parse (%s: %s)", event,
                      type(exc).__name__, exc, exc_info=first)
    guarded.__wrapped__ = parse  # type: ignore[attr-defined]
    return guarded
