"""memory/: channel buffers and traces in SQLite, settings and errors.

The per-user semantic memory lives in memory.semantic (open_user_memory) and is not imported
here, so that `import memory` stays fast (no chromadb or torch).

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

from memory.config import MemorySettings, load_memory_settings
from memory.errors import ConfigError, MemoryStoreError, SchemaVersionError, StoreUnavailable

__all__ = [
    "ConfigError",
    "MemorySettings",
    "MemoryStoreError",
    "SchemaVersionError",
    "StoreUnavailable",
    "load_memory_settings",
]
