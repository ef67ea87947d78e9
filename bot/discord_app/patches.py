"""Every change this bot makes to discord.py's own objects, in one place.

discord.py offers no hook for any of these, so each replaces a library global or class
attribute (or wraps a client's parsers). Each says the library behaviour it answers and when it
can go: read this module when upgrading discord.py (pinned <3 in pyproject.toml).

- `install_tolerant_json`: discord.py decodes gateway frames and REST bodies with orjson when it
  is installed (`discord.utils._from_json`), and orjson refuses a lone UTF-16 surrogate escape
  that the standard json module accepts: one such frame ended the client. Drop it when
  discord.py decodes with a fallback, or when orjson accepts lone surrogates.
- `guard_event_parsers`: an exception in a gateway event's parser escapes `Client.connect`, which
  reconnects only after network errors, so one odd payload ended the process. Drop it when
  discord.py catches parser errors per event (bot.discord_app.parse_guard holds the wrapper).
- `install_gateway_pacing`: discord.py's gateway reader handles every frame already buffered in
  one loop iteration, so a burst held the loop (and the heartbeat) for the whole burst. Drop it
  when discord.py yields between frames (bot.discord_app.gateway_pacing holds the wrapper).
- `point_rest_at` and `use_gateway`: discord.py has no per-client REST base or gateway URL, and
  its single-connection client dials Discord's gateway even when the REST API is another
  (DISCORD_API_BASE_URL: a relay, a test server). Drop them when discord.py takes both as
  client options. Unset, the library's defaults stand untouched.

The client also overrides `dispatch` (bot.discord_app.client) to dispatch nothing once closing:
discord.py's task that dispatches `ready` outlives `close`.
"""

from __future__ import annotations

from typing import Any

import discord
import yarl

from bot.discord_app.gateway_pacing import paced
from bot.discord_app.parse_guard import guard_parsers, tolerant_json_loads

__all__ = ["guard_event_parsers", "install_gateway_pacing", "install_tolerant_json", "point_rest_at", "use_gateway"]


def install_tolerant_json() -> None:
    """Make discord.py decode with `tolerant_json_loads` (once; idempotent)."""
    if not hasattr(discord.utils._from_json, "__wrapped__"):
        discord.utils._from_json = tolerant_json_loads(discord.utils._from_json)


def guard_event_parsers(client: discord.Client) -> None:
    """Drop (with a log line) the events `client` cannot parse, instead of ending it."""
    connection: Any = client._connection  # type: ignore[attr-defined]
    guard_parsers(connection.parsers)


def install_gateway_pacing() -> None:
    """Make every discord.py gateway connection pace its reads (once; idempotent)."""
    from discord.gateway import DiscordWebSocket

    if not getattr(DiscordWebSocket.received_message, "paced", False):
        DiscordWebSocket.received_message = paced(DiscordWebSocket.received_message)  # type: ignore[method-assign]


def point_rest_at(base_url: str) -> None:
    """discord.py's REST calls go to `base_url` (process-wide: a class attribute)."""
    discord.http.Route.BASE = base_url


def use_gateway(url: str) -> None:
    """discord.py's single-connection client dials `url` (process-wide: a class attribute)."""
    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(url)
