"""Per-user semantic memory on ChromaDB: what each person told the bot, found by meaning.

The contract is `open_user_memory(path, **options)`, which returns a `UserMemory`; the names
below come from `user_memory`. The engine's other modules (`search`, `ranking`, `embeddings`,
the Chroma seam, the caches) are imported from their own names.

The names are loaded on first use (PEP 562), not at import: memory.config imports one of this
package's modules, and `user_memory` imports memory.config.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memory.semantic.user_memory import (
        MAX_TEXT_CHARS,
        SNAPSHOT_AFTER,
        AddItem,
        MemoryHit,
        UserMemory,
        open_user_memory,
        scope_for,
    )

__all__ = ["MAX_TEXT_CHARS", "SNAPSHOT_AFTER", "AddItem", "MemoryHit", "UserMemory", "open_user_memory",
           "scope_for"]


def __getattr__(name: str) -> object:
    if name in __all__:
        return getattr(import_module("memory.semantic.user_memory"), name)
    raise AttributeError(f"module 'memory.semantic' has no attribute {name!r}")
