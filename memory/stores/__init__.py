"""The SQLite stores: one database file holding channel buffers, traces, place settings, token
use and the memory write log, with its numbered migrations.

- `database`: Database, opening, migrating, transactions, backup.
- `migrations`: SCHEMA_VERSION and the migrations.
- `buffer`: ChannelBuffer, what was just said in each channel.
- `traces`: TraceStore, the steps of each answered turn.
- `guild_settings`: GuildSettingsStore, per-server and per-channel settings and their log.
- `usage`: TokenUsageStore, token use per UTC day, person and place.
- `write_log`: MemoryWriteLog, a turn's semantic-memory write announced before it is made.
- `erasure`: PersonErasure, a person's rows deleted from every table (a forget).
"""

from __future__ import annotations

from memory.stores.buffer import BufferedMessage, ChannelBuffer
from memory.stores.database import Database
from memory.stores.guild_settings import GuildSettingsStore, SettingValue, StoredSetting
from memory.stores.migrations import SCHEMA_VERSION
from memory.stores.traces import TraceRecord, TraceStore
from memory.stores.usage import TokenUsageStore, UserTokens
from memory.stores.write_log import DeferredItem, MemoryWrite, MemoryWriteLog

__all__ = ["SCHEMA_VERSION", "BufferedMessage", "ChannelBuffer", "Database", "DeferredItem",
           "GuildSettingsStore", "MemoryWrite", "MemoryWriteLog", "SettingValue", "StoredSetting",
           "TokenUsageStore", "TraceRecord", "TraceStore", "UserTokens"]
