"""Reading and erasing a person's semantic memory over a ``bot.turn.privacy.Reach``.

The memory's own API takes one scope (or all of them) per call; a reach of several scopes is
one call per scope, in turn, merged: search hits by their fused score (best first; each scope's ranking
is the memory's own), lists and exports by creation time. "Everything but the private scopes"
(a public reply with MEMORY_SCOPE=global) has no scope to name: it searches all of the person's
items, asking for more than ``k`` and leaving the private ones out, and asks again for more
while private items crowd the public ones out (up to PUBLIC_FETCH_MAX hits; past that a
public reply gets fewer memories, never a private one).

Part of bot/: over memory.semantic's public API .
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.turn.privacy import Reach, is_private_scope
from memory.semantic import MemoryHit, UserMemory

__all__ = ["PUBLIC_FETCH_MAX", "created_of", "export_reach", "forget_reach", "list_reach", "search_reach"]

PUBLIC_OVERFETCH = 4     # a public search over everything asks for this many times k at first
PUBLIC_FETCH_MAX = 400   # and at most this many hits


async def search_reach(memory: UserMemory, user_id: str, query: str, k: int,
                       reach: Reach) -> list[MemoryHit]:
    """The person's ``k`` items best matching ``query`` within ``reach``, best first."""
    if reach.scopes is not None:
        if len(reach.scopes) == 1:
            return await memory.search(user_id, query, k=k, scope=reach.scopes[0])
        # one after the other: the second search finds the query's vector in the memory's
        # cache of recent vectors, where two at once would both embed it
        found = [await memory.search(user_id, query, k=k, scope=scope) for scope in reach.scopes]
        merged = sorted((hit for hits in found for hit in hits), key=lambda hit: hit.score, reverse=True)
        return merged[:k]
    if not reach.public_only:
        return await memory.search(user_id, query, k=k, scope=None)
    want = max(k * PUBLIC_OVERFETCH, k)
    while True:
        hits = await memory.search(user_id, query, k=want, scope=None)
        public = [hit for hit in hits if not is_private_scope(hit.metadata.get("scope"))]
        if len(public) >= k or len(hits) < want or want >= PUBLIC_FETCH_MAX:
            return public[:k]
        want = min(want * PUBLIC_OVERFETCH, PUBLIC_FETCH_MAX)


def created_of(metadata: Mapping[str, object]) -> float | None:
    """When an item was stored (epoch seconds), or None when its metadata does not say."""
    value = metadata.get("created_at")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


async def list_reach(memory: UserMemory, user_id: str, reach: Reach) -> list[MemoryHit]:
    """Every item of the person within ``reach``, oldest first."""
    if reach.scopes is None:
        hits = await memory.list(user_id, scope=None)
        return [h for h in hits if not is_private_scope(h.metadata.get("scope"))] if reach.public_only else hits
    lists = [await memory.list(user_id, scope=scope) for scope in reach.scopes]
    return sorted((hit for hits in lists for hit in hits), key=lambda hit: created_of(hit.metadata) or 0.0)


async def export_reach(memory: UserMemory, user_id: str, reach: Reach) -> list[dict[str, Any]]:
    """The same items as the memory's JSON-safe export dicts, oldest first."""
    if reach.scopes is None:
        items = await memory.export(user_id, scope=None)
        return [i for i in items if not is_private_scope(i.get("scope"))] if reach.public_only else items
    exports = [await memory.export(user_id, scope=scope) for scope in reach.scopes]
    return sorted((item for items in exports for item in items), key=lambda item: str(item.get("created_at", "")))


async def forget_reach(memory: UserMemory, user_id: str, reach: Reach) -> int:
    """Delete the person's items within ``reach``; returns how many. A forget covers whole
    scopes: a ``public_only`` reach (a public reply's) is refused with ValueError."""
    if reach.public_only:
        raise ValueError("a forget covers whole scopes, not the public part of everything")
    if reach.scopes is None:
        return await memory.forget(user_id, scope=None)
    return sum([await memory.forget(user_id, scope=scope) for scope in reach.scopes])
