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

Before any parser, discord.py decodes each frame with orjson when it is installed (chromadb
installs it), and orjson refuses a lone UTF-16 surrogate escape (``"\\ud800"``, which Python's
json accepts): that frame ended the client too. ``tolerant_json_loads`` wraps discord.py's
decoder (``discord.utils._from_json``, used for gateway frames and REST bodies alike; installed
by bot.discord_app.patches): what orjson refuses is decoded by the standard json module, and each lone
surrogate in its strings becomes U+FFFD, so that the text can be stored and sent back.

Imports nothing of discord.py; bot.discord_app.patches installs both.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, MutableMapping
from typing import Any

__all__ = ["FATAL_EVENTS", "guard_parsers", "tolerant_json_loads"]

log = logging.getLogger(__name__)

FATAL_EVENTS = frozenset({"READY"})

Parser = Callable[[Any], None]
Loads = Callable[[str | bytes], Any]
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # json.loads joins valid pairs; these are lone


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


def _without_lone_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_without_lone_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_without_lone_surrogates(k): _without_lone_surrogates(v) for k, v in value.items()}
    return value


def tolerant_json_loads(loads: Loads) -> Loads:
    """`loads`, and for what it refuses, the standard json module with lone surrogates
    replaced by U+FFFD (anything json refuses too still raises)."""
    def tolerant(data: str | bytes) -> Any:
        try:
            return loads(data)
        except ValueError:  # orjson.JSONDecodeError is a ValueError
            return _without_lone_surrogates(json.loads(data))
    tolerant.__wrapped__ = loads  # type: ignore[attr-defined]
    return tolerant

