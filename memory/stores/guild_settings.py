"""Per-server and per-channel settings of the bot, and the log of who changed them.

A value is stored as JSON under (guild_id, channel_id, key); channel_id None is the server's
own value. Every call names its guild and reads or writes that guild's rows only: a channel id
of another guild given with this guild's id finds nothing of that other guild. What the keys
mean, and which values are valid, is the bot's business (bot.settings.place); this store only
keeps them, each change in the same transaction as its log row.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from memory.stores.database import Database, epoch_us, from_epoch_us, require_id

__all__ = ["GuildSettingsStore", "SettingChange", "SettingValue", "StoredSetting"]

SettingValue = str | bool | int | float
SERVER = ""  # channel_id of a server-wide value in the table


@dataclass(frozen=True, slots=True)
class StoredSetting:
    """One stored value; ``channel_id`` None for the server's own."""

    guild_id: str
    channel_id: str | None
    key: str
    value: SettingValue
    updated_by: str
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class SettingChange:
    """One line of the log; ``value`` None means the value was cleared (back to default)."""

    guild_id: str
    channel_id: str | None
    key: str
    value: SettingValue | None
    actor_id: str
    created_at: datetime


def _stored(r: sqlite3.Row) -> StoredSetting:
    return StoredSetting(r["guild_id"], r["channel_id"] or None, r["key"], json.loads(r["value_json"]),
                         r["updated_by"], from_epoch_us(r["updated_at_us"]))


def _channel(channel_id: str | None) -> str:
    require_id("channel_id", channel_id, optional=True)
    return SERVER if channel_id is None else channel_id


class GuildSettingsStore:
    """The guild_settings and guild_settings_log tables of a Database."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def everything(self) -> list[StoredSetting]:
        """Every stored value of every guild in this file (read once at start-up)."""
        rows = await self._db.fetchall(
            "SELECT guild_id, channel_id, key, value_json, updated_by, updated_at_us "
            "FROM guild_settings ORDER BY guild_id, channel_id, key")
        return [_stored(r) for r in rows]

    async def for_guild(self, guild_id: str) -> list[StoredSetting]:
        """Every value of one guild (its own and its channels')."""
        require_id("guild_id", guild_id)
        rows = await self._db.fetchall(
            "SELECT guild_id, channel_id, key, value_json, updated_by, updated_at_us "
            "FROM guild_settings WHERE guild_id = ? ORDER BY channel_id, key", (guild_id,))
        return [_stored(r) for r in rows]

    async def put(self, guild_id: str, channel_id: str | None, key: str, value: SettingValue,
                  actor_id: str, when: datetime) -> None:
        """Set one value (replacing the one there) and log it."""
        require_id("guild_id", guild_id)
        require_id("key", key)
        require_id("actor_id", actor_id)
        place, data, at = _channel(channel_id), json.dumps(value), epoch_us(when)
        async with self._db.transaction():
            await self._db.execute(
                "INSERT INTO guild_settings (guild_id, channel_id, key, value_json, updated_by, "
                "updated_at_us) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (guild_id, channel_id, key) "
                "DO UPDATE SET value_json = excluded.value_json, updated_by = excluded.updated_by, "
                "updated_at_us = excluded.updated_at_us",
                (guild_id, place, key, data, actor_id, at))
            await self._log(guild_id, place, key, data, actor_id, at)

    async def clear(self, guild_id: str, channel_id: str | None, keys: Sequence[str] | None,
                    actor_id: str, when: datetime) -> int:
        """Remove the values of ``keys`` (None: every key) at one level; logs each one removed
        and returns how many there were."""
        require_id("guild_id", guild_id)
        require_id("actor_id", actor_id)
        place, at = _channel(channel_id), epoch_us(when)
        async with self._db.transaction():
            rows = await self._db.fetchall(
                "SELECT key FROM guild_settings WHERE guild_id = ? AND channel_id = ?", (guild_id, place))
            gone = [r["key"] for r in rows if keys is None or r["key"] in keys]
            for key in gone:
                await self._db.execute(
                    "DELETE FROM guild_settings WHERE guild_id = ? AND channel_id = ? AND key = ?",
                    (guild_id, place, key))
                await self._log(guild_id, place, key, None, actor_id, at)
        return len(gone)

    async def history(self, guild_id: str, limit: int = 20) -> list[SettingChange]:
        """The guild's latest changes, newest first."""
        require_id("guild_id", guild_id)
        rows = await self._db.fetchall(
            "SELECT guild_id, channel_id, key, value_json, actor_id, created_at_us FROM "
            "guild_settings_log WHERE guild_id = ? ORDER BY created_at_us DESC, id DESC LIMIT ?",
            (guild_id, limit))
        return [SettingChange(r["guild_id"], r["channel_id"] or None, r["key"],
                              None if r["value_json"] is None else json.loads(r["value_json"]),
                              r["actor_id"], from_epoch_us(r["created_at_us"])) for r in rows]

    async def _log(self, guild_id: str, place: str, key: str, data: str | None, actor_id: str,
                   at: int) -> None:
        await self._db.execute(
            "INSERT INTO guild_settings_log (guild_id, channel_id, key, value_json, actor_id, "
            "created_at_us) VALUES (?, ?, ?, ?, ?, ?)", (guild_id, place, key, data, actor_id, at))
