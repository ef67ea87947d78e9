"""memory/: channel buffers and traces in SQLite, settings and errors.

The per-user semantic memory lives in memory.semantic (open_user_memory) and is not imported
here, so that `import memory` stays fast (no chromadb or torch).

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

from memory.stores.buffer import BufferedMessage, ChannelBuffer
from memory.config import MemorySettings, load_memory_settings
from memory.stores.database import Database
from memory.errors import ConfigError, MemoryStoreError, SchemaVersionError, StoreUnavailable
from memory.stores.migrations import SCHEMA_VERSION
from memory.tokens import estimate_tokens, truncate_to_tokens
from memory.stores.traces import TraceRecord, TraceStore

__all__ = [
    "SCHEMA_VERSION",
    "BufferedMessage",
    "ChannelBuffer",
    "ConfigError",
    "Database",
    "MemorySettings",
    "MemoryStoreError",
    "SchemaVersionError",
    "StoreUnavailable",
    "TraceRecord",
    "TraceStore",
    "estimate_tokens",
    "load_memory_settings",
    "truncate_to_tokens",
]
