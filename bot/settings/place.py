"""Per-server and per-channel settings: what each one means, how a value is checked, and the
settings of one place (a channel's value overrides its server's, the operator's are the
defaults).

Keys (stored by memory.stores.guild_settings, one value per server or channel):
    persona        the system prompt's persona, up to PERSONA_MAX_CHARS characters
    model          a name from the operator's LLM_MODELS (bot.settings.model_catalog); default LLM_MODEL
    memory         "server" (recall what the person said in this server), "off" (neither
                   recall nor remember here), or "global" (everything the person said
                   anywhere; only when the operator set MEMORY_SCOPE=global)
    free_response  every message from a person is a turn, no mention needed
    auto_thread    a mention or /ask in a text channel opens a thread for the answer
    cooldown       seconds between two turns of one person (the operator's USER_COOLDOWN_S,
                   a floor no server goes below, to COOLDOWN_MAX_S)
    tool:<name>    a tool on (true) or off (false): built-in names, or MCP `<server>__<tool>`
    bot_thread     (the bot's own, on a thread it opened for an answer: follow-ups there need
                   no mention; kept here so that it survives a restart)

A value given by a person is checked by ``SettingRules`` and refused with a short sentence
(InvalidSetting) written for them. ``PlaceSettingsService`` holds every row of the file in
memory, read once at start-up (``load``) and re-read for a guild after each change made through
it (shards never share a file, so no other process changes them): reading a place's settings
is synchronous, so it puts no await between a message's arrival and its place in the channel's
queue (which would let a later message of the channel overtake it).
Nothing here reads or writes another guild's rows: every call names one guild.

Part of bot/: knows memory's settings store; nothing of Discord.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from bot.settings.model_catalog import ModelCatalog
from memory.stores.guild_settings import GuildSettingsStore, SettingValue, StoredSetting

__all__ = ["CHOICE_KEYS", "InvalidSetting", "cooldown_in", "PlaceSettings", "PlaceSettingsService", "SettingRules",
           "resolve"]

log = logging.getLogger(__name__)

PERSONA_MAX_CHARS = 4000      # a Discord modal's text input holds at most 4,000 characters
COOLDOWN_MAX_S = 3600.0
TOOL_PREFIX = "tool:"
MEMORY_CHOICES = ("server", "off", "global")
CHOICE_KEYS = ("model", "memory", "free_response", "auto_thread", "cooldown")  # /settings set
ALL_KEYS = ("persona", *CHOICE_KEYS)
_TRUE = ("true", "on", "yes", "1")
_FALSE = ("false", "off", "no", "0")


class InvalidSetting(ValueError):
    """A value refused; str() is the sentence to show the person."""


@dataclass(frozen=True, slots=True)
class PlaceSettings:
    """The settings in force in one place; None means the operator's default. ``sources``
    says for each key set whether it came from the "server" or the "channel"."""

    persona: str | None = None
    model: str | None = None
    memory: str | None = None
    free_response: bool = False
    auto_thread: bool = False
    cooldown_s: float | None = None
    tools_off: frozenset[str] = frozenset()
    bot_thread: bool = False
    sources: Mapping[str, str] = field(default_factory=dict)


DEFAULTS = PlaceSettings()


def resolve(rows: Iterable[StoredSetting], channel_ids: Sequence[str]) -> PlaceSettings:
    """The settings of a place from its guild's rows: the server's values, overridden by those
    of ``channel_ids`` in order (a thread's parent, then the thread). Other channels' rows
    are ignored."""
    rank = {None: 0, **{cid: i + 1 for i, cid in enumerate(channel_ids)}}
    chosen: dict[str, StoredSetting] = {}
    for row in sorted((r for r in rows if r.channel_id in rank), key=lambda r: rank[r.channel_id]):
        chosen[row.key] = row
    values = {k: r.value for k, r in chosen.items()}
    tools_off = frozenset(k[len(TOOL_PREFIX):] for k, v in values.items()
                          if k.startswith(TOOL_PREFIX) and v is False)
    cooldown = values.get("cooldown")
    return PlaceSettings(
        persona=_str_or_none(values.get("persona")),
        model=_str_or_none(values.get("model")),
        memory=_str_or_none(values.get("memory")),
        free_response=values.get("free_response") is True,
        auto_thread=values.get("auto_thread") is True,
        cooldown_s=float(cooldown) if isinstance(cooldown, (int, float)) and not isinstance(cooldown, bool) else None,
        tools_off=tools_off,
        bot_thread=values.get("bot_thread") is True,
        sources={k: "server" if r.channel_id is None else "channel" for k, r in chosen.items()},
    )


def cooldown_in(place: PlaceSettings, floor_s: float) -> float:
    """The cooldown in force in ``place``: its own, never below the operator's USER_COOLDOWN_S
    (``floor_s``), which also holds where the place sets none. A value stored before the
    operator raised the floor is lifted to it."""
    return floor_s if place.cooldown_s is None else max(place.cooldown_s, floor_s)


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


class SettingRules:
    """What values are valid: models of the catalogue, tools that exist (or MCP tools of a
    configured server, which may be down right now), memory scopes the operator allows."""

    def __init__(self, models: ModelCatalog, *, tool_names: Callable[[], Iterable[str]],
                 mcp_servers: Iterable[str], operator_global_memory: bool,
                 cooldown_floor_s: float = 0.0) -> None:
        self._models = models
        self._cooldown_floor_s = cooldown_floor_s  # USER_COOLDOWN_S: a server may only raise it
        self._tool_names = tool_names
        self._mcp_servers = frozenset(mcp_servers)
        self._global = operator_global_memory

    def parse(self, key: str, raw: str) -> SettingValue:
        """The value to store for ``key`` given as text; InvalidSetting saying why not."""
        text = raw.strip()
        if key == "persona":
            return self.persona(raw)
        if key == "model":
            if self._models.get(text) is None:
                raise InvalidSetting(f"Unknown model {text[:100]!r}. Choose one of: "
                                     f"{', '.join(self._models.names())}.")
            return text
        if key == "memory":
            choice = text.lower()
            if choice not in MEMORY_CHOICES:
                raise InvalidSetting("Memory must be one of: server, off, global.")
            if choice == "global" and not self._global:
                raise InvalidSetting("The operator keeps memories per server, so `global` is not "
                                     "available; use `server` or `off`.")
            return choice
        if key in ("free_response", "auto_thread"):
            return _bool(key, text)
        if key == "cooldown":
            try:
                seconds = float(text)
            except ValueError:
                raise InvalidSetting(f"Cooldown must be a number of seconds (0 to {COOLDOWN_MAX_S:.0f}).") from None
            floor = self._cooldown_floor_s
            if not math.isfinite(seconds) or not floor <= seconds <= max(floor, COOLDOWN_MAX_S):
                if floor > 0:
                    raise InvalidSetting(f"Cooldown must be between {floor:g} seconds (the operator's "
                                         f"minimum) and {max(floor, COOLDOWN_MAX_S):.0f} seconds.")
                raise InvalidSetting(f"Cooldown must be between 0 and {COOLDOWN_MAX_S:.0f} seconds.")
            return seconds
        raise InvalidSetting(f"Unknown setting {key[:50]!r}; settings are: {', '.join(ALL_KEYS)}, tools.")

    def persona(self, text: str) -> str:
        """A persona as stored (stripped; empty means none)."""
        persona = text.strip()
        if len(persona) > PERSONA_MAX_CHARS:
            raise InvalidSetting(f"The persona is {len(persona)} characters; at most {PERSONA_MAX_CHARS}.")
        return persona

    def tool_key(self, name: str) -> str:
        """The key of a tool's on/off value; InvalidSetting for a tool that does not exist."""
        name = name.strip()
        known = set(self._tool_names())
        server, sep, _ = name.partition("__")
        if name in known or (sep and server in self._mcp_servers and name != f"{server}__"):
            return TOOL_PREFIX + name
        shown = ", ".join(sorted(known)) or "none"
        raise InvalidSetting(f"Unknown tool {name[:100]!r}. Tools: {shown}"[:1900])


def _bool(key: str, text: str) -> bool:
    if text.lower() in _TRUE:
        return True
    if text.lower() in _FALSE:
        return False
    raise InvalidSetting(f"{key.replace('_', '-')} must be on or off (true or false).")


class PlaceSettingsService:
    """Reads a place's settings (held in memory, see the module docstring) and changes them,
    logging who did."""

    def __init__(self, store: GuildSettingsStore, rules: SettingRules, *,
                 now: Callable[[], datetime]) -> None:
        self._store = store
        self.rules = rules
        self._now = now
        self._rows: dict[str, list[StoredSetting]] = {}

    async def load(self) -> None:
        """Read every stored value (at start-up)."""
        rows: dict[str, list[StoredSetting]] = {}
        for row in await self._store.everything():
            rows.setdefault(row.guild_id, []).append(row)
        self._rows = rows

    def rows(self, guild_id: str) -> list[StoredSetting]:
        """Every stored value of one guild."""
        return list(self._rows.get(guild_id, ()))

    def for_place(self, guild_id: str | None, channel_ids: Sequence[str]) -> PlaceSettings:
        """The settings in a guild's channel (a DM has only the operator's defaults)."""
        if guild_id is None:
            return DEFAULTS
        return resolve(self._rows.get(guild_id, ()), channel_ids)

    async def _reread(self, guild_id: str) -> None:
        self._rows[guild_id] = await self._store.for_guild(guild_id)

    async def set_value(self, guild_id: str, channel_id: str | None, key: str, raw: str,
                        actor_id: str) -> SettingValue:
        """Check and store a value of a CHOICE_KEYS or "persona" key; returns what was stored."""
        value = self.rules.parse(key, raw)
        if key == "persona" and value == "":
            await self.reset(guild_id, channel_id, "persona", actor_id)
            return value
        await self._put(guild_id, channel_id, key, value, actor_id)
        return value

    async def set_tool(self, guild_id: str, channel_id: str | None, name: str, enabled: bool,
                       actor_id: str) -> str:
        """Switch a tool on or off; returns the tool's name."""
        key = self.rules.tool_key(name)
        await self._put(guild_id, channel_id, key, enabled, actor_id)
        return key[len(TOOL_PREFIX):]

    async def reset(self, guild_id: str, channel_id: str | None, key: str | None,
                    actor_id: str) -> int:
        """Back to the defaults: one key ("tools": every tool value) or all at this level."""
        if key is None:
            keys = None
        elif key == "tools":
            keys = [r.key for r in self.rows(guild_id)
                    if r.key.startswith(TOOL_PREFIX) and r.channel_id == channel_id]
        else:
            keys = [key]
        removed = await self._store.clear(guild_id, channel_id, keys, actor_id, self._now())
        await self._reread(guild_id)
        log.info("settings guild=%s channel=%s reset %s (%d value(s)) by user=%s", guild_id,
                 channel_id or "-", key or "everything", removed, actor_id)
        return removed

    async def mark_bot_thread(self, guild_id: str, thread_id: str, bot_id: str) -> None:
        """Remember that the bot opened ``thread_id`` for an answer."""
        await self._put(guild_id, thread_id, "bot_thread", True, bot_id)

    async def _put(self, guild_id: str, channel_id: str | None, key: str, value: SettingValue,
                   actor_id: str) -> None:
        await self._store.put(guild_id, channel_id, key, value, actor_id, self._now())
        await self._reread(guild_id)
        shown = f"{len(value)} characters" if key == "persona" and isinstance(value, str) else repr(value)
        log.info("settings guild=%s channel=%s %s=%s by user=%s", guild_id, channel_id or "-",
                 key, shown, actor_id)
