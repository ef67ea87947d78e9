"""Per-user semantic memory: what each person told the bot, found by meaning and by words.

The contract is `open_user_memory(path, **options)`, which returns a `UserMemory`; the names
below come from `user_memory`. The engine's other modules (`chroma_backend`, `keyword_index`,
`ranking`, `embeddings`, `validation`) are imported from their own names.
"""

from __future__ import annotations

from memory.semantic.user_memory import (
    MAX_TEXT_CHARS,
    AddItem,
    MemoryHit,
    UserMemory,
    open_user_memory,
    scope_for,
)

__all__ = ["MAX_TEXT_CHARS", "AddItem", "MemoryHit", "UserMemory", "open_user_memory", "scope_for"]
