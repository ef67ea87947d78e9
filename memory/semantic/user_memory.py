"""Per-user semantic memory: what each person told the bot, found by meaning and by words.

**contract** `open_user_memory(path, **options)` returns a `UserMemory` (the call opens the
store at once, so a bad folder or a server that is down fails here with StoreUnavailable
naming the path or host:port; the result may also be awaited or used with `async with`).

Rules, in one place:
- Chroma is the truth. Each person has a collection per scope (`memory.semantic.chroma_backend`), so
  one user's items never appear in another's results, and a search is Chroma's own HNSW over
  only the items it may return. Nothing of a person's items is held in this process.
- Scopes: `scope_for(guild_id)` gives "guild:<id>" or "dm". `search`, `list` and `forget`
  with `scope=None` cover all of the user's items; with a scope, exactly that scope.
  `add(..., scope=None)` stores the item unscoped (scope ""): such items are found only by
  searches and lists with `scope=None` (or `scope=""`), never inside a guild or a DM.
- Text, user ids and metadata are checked by `memory.semantic.validation` (empty text refused, long text
  truncated and marked, metadata values flat; see there). When an item's metadata has a
  `context` str, it is embedded and keyword-indexed by `context + "\\n" + text`; its stored and
  shown text stays `text`.
- Items record `user_id`, `scope`, `created_at` (epoch seconds from `clock`, or the caller's
  own number) and `added_at` (this machine's time when written to Chroma, for other processes'
  keyword indexes: see below), besides the caller's metadata.
- Search: `memory.semantic.ranking` plans the query (search text, time window, recency) with the
  `ranking_config` given at open. Dense candidates are the top max(50, 10k) of the scope's items
  by Chroma's nearest-neighbour query; keyword scores are BM25 over the same scope
  (`memory.semantic.keyword_index`, SQLite); with a time window, the scope's items inside it join them;
  `ranking.fuse` orders them ("hybrid" by default; "dense" and "keyword" baselines). The query
  is embedded beside the keyword side.
- The keyword index is derived from Chroma and brought in step with it before each search of
  a scope: when the scope's count in Chroma differs from the index's, the items Chroma got
  since the newest one indexed (less `CLOCK_MARGIN_S`, for writes in flight and clocks apart)
  are indexed, and if the counts still differ, the index takes Chroma's ids as they are. So
  what another process adds or forgets is seen by the next search. The one change a count
  cannot show (as many items added as deleted since the last search) is seen at once by dense
  search and by the hits (read from Chroma: a deleted item is never returned, and leaves the
  index when met), and by the keyword side at the next search whose counts differ.
- Blocking work (embedding, Chroma, SQLite) runs on this object's thread pool (`memory.semantic.pool`);
  each call is bounded by `op_timeout_s` and a store failure raises StoreUnavailable.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Generator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from memory.semantic import ranking
from memory.semantic.caches import RecentVectors
from memory.semantic.chroma_backend import ChromaStore, StoredItem
from memory.config import MemorySettings
from memory.semantic.embeddings import Embedder, OpenAIEmbedder, embedder_from_settings
from memory.errors import StoreUnavailable
from memory.semantic.keyword_index import Facts, IndexedItem, KeywordIndex
from memory.semantic.pool import WorkerPool
from memory.semantic.validation import (
    ADDED_AT,
    MAX_TEXT_CHARS,
    check_metadata,
    check_scope,
    check_text,
    check_user,
    indexed_text,
    scope_for,
    visible,
)

__all__ = [
    "MAX_TEXT_CHARS",
    "SEARCH_MODES",
    "AddItem",
    "MemoryHit",
    "UserMemory",
    "open_user_memory",
    "scope_for",
]

log = logging.getLogger(__name__)

DEFAULT_COLLECTION = "user_memory"
SEARCH_MODES = ("hybrid", "dense", "keyword")
DENSE_CANDIDATES = 50
# BM25 candidates: the best max(100, 10k) and the lowest (so that their min-max normalisation in
# the fusion is the one over every match); a match past them would need a keyword-only item to
# beat a hundred better ones.
KEYWORD_CANDIDATES = 100
BATCH = 256  # items embedded per call of the model
# Items per Chroma write. The embedded client holds the GIL for the whole of an insert
# (chroma-core/chroma#3873 released it for reads only), so one write's length is a stall of the
# event loop: a few items at a time keep each stall short (docs/decisions/0024-memory-engine.md).
WRITE_BATCH = 8
CLOCK_MARGIN_S = 60.0
AddItem = tuple[str, str, "dict[str, Any] | None", "str | None"]


@dataclass(frozen=True, slots=True)
class MemoryHit:
    """One remembered item: `score` is the fused ranking score of a search (0.0 in lists)."""

    id: str
    text: str
    score: float
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Row:
    """An item ready to be written: its id, stored text, indexed text and metadata."""

    id: str
    text: str
    indexed: str
    metadata: dict[str, Any]

    @property
    def user(self) -> str:
        return str(self.metadata["user_id"])

    @property
    def scope(self) -> str:
        return str(self.metadata["scope"])


def _shown(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """An item's metadata as hits show it: without the memory's own `added_at`."""
    return {key: value for key, value in metadata.items() if key != ADDED_AT}


def _indexed(item: StoredItem) -> IndexedItem:
    meta = item.metadata
    kind = meta.get("kind")
    return IndexedItem(item.id, str(meta.get("user_id", "")), str(meta.get("scope", "")),
                       float(meta.get("created_at", 0.0)), float(meta.get(ADDED_AT, 0.0)),
                       indexed_text(item.text, meta), kind if isinstance(kind, str) else None,
                       ranking.exchange_of(meta))


class UserMemory:
    """A user-partitioned memory over Chroma and a keyword index. Create with open_user_memory."""

    def __init__(self, store: ChromaStore, index: KeywordIndex, embedder: Embedder, *,
                 search_mode: str = "hybrid", clock: Callable[[], float] = time.time,
                 op_timeout_s: float = 30.0, owns_embedder: bool = False, preload: bool = True,
                 ranking_config: ranking.RankingConfig | None = None) -> None:
        if search_mode not in SEARCH_MODES:
            raise ValueError(f"search_mode must be one of {', '.join(SEARCH_MODES)}: {search_mode!r}")
        self._store = store
        self._index = index
        self._embedder = embedder
        self.search_mode = search_mode
        self.ranking_config = ranking_config or ranking.DEFAULT_CONFIG
        self._clock = clock
        self._owns_embedder = owns_embedder
        self._pool = WorkerPool(store.where, op_timeout_s)
        self._recent_vectors = RecentVectors()
        self._syncing: dict[tuple[str, str], threading.Lock] = {}
        self._syncing_lock = threading.Lock()
        load = getattr(embedder, "load", None)
        self._loading: Future[None] | None = self._pool.submit(load) if preload and callable(load) else None

    @property
    def where(self) -> str:
        """The folder or host:port this memory lives in (for messages and logs)."""
        return self._store.where

    # -- lifecycle -----------------------------------------------------------------------

    def __await__(self) -> Generator[Any, None, UserMemory]:
        async def ready() -> UserMemory:
            return self
        return ready().__await__()

    async def __aenter__(self) -> UserMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Stop the worker threads and close the keyword index; idempotent. A shared embedder
        passed in is left open."""
        if self._pool.closed:
            return
        await self._pool.close()
        await asyncio.to_thread(self._index.close)
        if self._owns_embedder and isinstance(self._embedder, OpenAIEmbedder):
            self._embedder.close()

    async def _embedder_ready(self) -> None:
        if self._loading is not None:
            await asyncio.wrap_future(self._loading)
            self._loading = None

    # -- writing -------------------------------------------------------------------------

    def _prepare(self, user_id: str, text: str, metadata: Mapping[str, Any] | None,
                 scope: str | None, now: float) -> _Row:
        check_user(user_id)
        scope = check_scope(scope)
        stored, original = check_text(text)
        meta: dict[str, Any] = check_metadata(metadata)
        created = meta.get("created_at", now)
        if isinstance(created, bool) or not isinstance(created, (int, float)):
            raise ValueError(f"metadata['created_at'] must be epoch seconds, not {created!r}")
        meta.update(user_id=user_id, scope=scope or "", created_at=float(created))
        if original is not None:
            meta["truncated_from"] = original
        return _Row(uuid.uuid4().hex, stored, indexed_text(stored, meta), meta)

    def _prepare_all(self, items: Sequence[AddItem], now: float) -> list[_Row]:
        rows = []
        for n, item in enumerate(items):
            try:
                user_id, text, metadata, scope = item
                rows.append(self._prepare(user_id, text, metadata, scope, now))
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"item {n}: {exc}") from None
        return rows

    async def add(self, user_id: str, text: str, metadata: dict[str, Any] | None = None,
                  scope: str | None = None) -> str:
        """Remember `text` for `user_id` in `scope` (None = unscoped ""); returns the item id."""
        row = self._prepare(user_id, text, metadata, scope, self._clock())
        await self._write([row])
        return row.id

    async def add_many(self, items: Sequence[AddItem]) -> list[str]:
        """Add (user_id, text, metadata, scope) items, embedded and written in batches.

        Every item is validated first (a bad one raises ValueError naming its index and
        nothing is stored); a store failure part-way leaves the earlier batches stored.
        """
        rows = await self._pool.run(self._prepare_all, list(items), self._clock())  # thousands hold the loop
        await self._write(rows)
        return [row.id for row in rows]

    async def _write(self, rows: list[_Row]) -> None:
        """Embed the rows BATCH at a time, then write them to Chroma by person and scope
        WRITE_BATCH at a time, each write followed by its indexing; each call on the pool is
        bounded by `op_timeout_s` on its own."""
        await self._embedder_ready()
        for start in range(0, len(rows), BATCH):
            batch = rows[start:start + BATCH]
            vectors = await self._pool.run(self._vectors, [row.indexed for row in batch])
            groups: dict[tuple[str, str], list[int]] = {}
            for n, row in enumerate(batch):
                groups.setdefault((row.user, row.scope), []).append(n)
            for (user_id, scope), positions in groups.items():
                for first in range(0, len(positions), WRITE_BATCH):
                    part = positions[first:first + WRITE_BATCH]
                    await self._pool.run(self._store_rows, user_id, scope, [batch[n] for n in part], vectors[part])

    def _vectors(self, texts: list[str]) -> np.ndarray:
        """The texts' vectors, reusing those of recent queries (worker thread)."""
        known = [self._recent_vectors.get(text) for text in texts]
        missing = [text for text, vector in zip(texts, known, strict=True) if vector is None]
        fresh = iter(np.asarray(self._embedder.embed(missing), dtype=np.float32) if missing else ())
        return np.vstack([vector if vector is not None else next(fresh) for vector in known])

    def _store_rows(self, user_id: str, scope: str, rows: list[_Row], vectors: np.ndarray) -> None:
        """Write rows of one person's scope to Chroma, then index them (worker thread)."""
        added_at = time.time()
        for row in rows:
            row.metadata[ADDED_AT] = added_at
        self._store.add(user_id, scope, [r.id for r in rows], vectors, [r.text for r in rows],
                        [r.metadata for r in rows])
        self._index.add(_indexed(StoredItem(r.id, r.text, r.metadata)) for r in rows)

    # -- reading -------------------------------------------------------------------------

    def _sync(self, user_id: str, scope: str) -> None:
        """Bring the keyword index of the person's scope in step with Chroma (see the module's
        docstring); one sync of a scope at a time (worker thread)."""
        with self._syncing_lock:
            lock = self._syncing.setdefault((user_id, scope), threading.Lock())
        with lock:
            count = self._store.count(user_id, scope)
            if count == self._index.count(user_id, scope):
                return
            newest = self._index.last_added(user_id, scope)
            if newest is not None:
                recent = self._store.ids(user_id, scope, {ADDED_AT: {"$gte": newest - CLOCK_MARGIN_S}})
                self._index_missing(user_id, scope, recent)
                if count == self._index.count(user_id, scope):
                    return
            present = set(self._store.ids(user_id, scope))
            self._index.remove(user_id, list(self._index.ids(user_id, scope) - present))
            self._index_missing(user_id, scope, present)

    def _index_missing(self, user_id: str, scope: str, ids: Sequence[str] | set[str]) -> None:
        missing = sorted(set(ids) - set(self._index.facts(ids)))
        for start in range(0, len(missing), 1000):
            self._index.add(_indexed(it) for it in self._store.get(user_id, scope, missing[start:start + 1000]))

    def _keyword_side(self, user_id: str, scope: str | None, plan: ranking.QueryPlan, search_text: str,
                      k: int, mode: str) -> tuple[dict[str, float], dict[str, float]]:
        """(BM25 scores, created_at of the items inside the plan's time window) of the scope,
        after bringing the index in step with Chroma (worker thread)."""
        for each in [scope] if scope is not None else self._store.scopes(user_id):
            self._sync(user_id, each)
        best = max(KEYWORD_CANDIDATES, 10 * k)
        keyword = self._index.scores(user_id, search_text, scope, best) if mode != "dense" else {}
        inside: dict[str, float] = {}
        if plan.since is not None or plan.until is not None:
            inside = self._index.between(user_id, scope, plan.since if plan.since is not None else -np.inf,
                                         plan.until if plan.until is not None else np.inf)
        return keyword, inside

    async def _query_vector(self, text: str) -> np.ndarray:
        if (vector := self._recent_vectors.get(text)) is not None:
            return vector
        await self._embedder_ready()
        vector = await self._pool.run(lambda: np.asarray(self._embedder.embed([text])[0], dtype=np.float32))
        self._recent_vectors.put(text, vector)
        return vector

    async def search(self, user_id: str, query: str, k: int = 5, scope: str | None = None) -> list[MemoryHit]:
        """The user's `k` items best matching `query` in `scope` (None = all), best first."""
        check_user(user_id)
        scope = check_scope(scope)
        if not isinstance(query, str):
            raise TypeError(f"query must be a str, not {type(query).__name__}")
        if k <= 0 or not visible(query):
            return []
        now = self._clock()
        plan = ranking.plan_query(visible(query), now, self.ranking_config)
        search_text = visible(plan.search_text) or visible(query)
        mode = self.search_mode
        keyword_side = self._pool.run(self._keyword_side, user_id, scope, plan, search_text, k, mode)
        if mode == "keyword":
            (keyword, inside), vector = await keyword_side, None
        else:
            (keyword, inside), vector = await asyncio.gather(keyword_side, self._query_vector(search_text))
        return await self._pool.run(self._ranked, user_id, scope, plan, vector, keyword, inside, k, now, mode)

    def _ranked(self, user_id: str, scope: str | None, plan: ranking.QueryPlan, vector: np.ndarray | None,
                keyword: dict[str, float], inside: dict[str, float], k: int, now: float,
                mode: str) -> list[MemoryHit]:
        """The dense candidates, then `ranking.fuse` over all candidates, then the hits' texts
        (those not among the dense candidates read from Chroma, the truth) (worker thread)."""
        neighbours = self._store.nearest(user_id, scope, vector, max(DENSE_CANDIDATES, 10 * k)) if vector is not None else []
        items = {n.item.id: n.item for n in neighbours}
        facts = self._index.facts(i for i in {*keyword, *inside} if i not in items)
        for item in items.values():
            kind = item.metadata.get("kind")
            facts[item.id] = Facts(float(item.metadata.get("created_at", 0.0)), kind if isinstance(kind, str) else None,
                                   ranking.exchange_of(item.metadata))
        timed = plan.since is not None or plan.until is not None or plan.recency_weight > 0
        ranked = ranking.fuse(
            plan, dense={n.item.id: n.similarity for n in neighbours}, keyword=keyword,
            created_at={i: f.created_at for i, f in facts.items()} if timed else {}, now=now, k=k, mode=mode,
            config=self.ranking_config, kinds={i: f.kind for i, f in facts.items() if f.kind is not None},
            exchanges={i: f.exchange for i, f in facts.items() if f.exchange is not None})
        unread = [i for i, _ in ranked if i not in items]
        items.update((it.id, it) for it in self._store.get(user_id, scope, unread))
        if gone := [i for i in unread if i not in items]:  # deleted by another process since the sync
            self._index.remove(user_id, gone)
        return [MemoryHit(i, items[i].text, float(score), _shown(items[i].metadata)) for i, score in ranked if i in items]

    async def list(self, user_id: str, scope: str | None = None) -> list[MemoryHit]:
        """All of the user's items in `scope` (None = all), oldest first, score 0.0."""
        check_user(user_id)
        scope = check_scope(scope)
        found = await self._pool.run(self._store.get, user_id, scope)
        found.sort(key=lambda it: (float(it.metadata.get("created_at", 0.0)), it.id))
        return [MemoryHit(it.id, it.text, 0.0, _shown(it.metadata)) for it in found]

    async def export(self, user_id: str, scope: str | None = None) -> list[dict[str, Any]]:
        """The user's items in `scope` (None = all) as JSON-safe dicts, oldest first.

        Each: {"id", "text", "scope", "created_at" (ISO-8601 UTC), "metadata" (the caller's)}.
        """
        out = []
        for hit in await self.list(user_id, scope):
            meta = dict(hit.metadata)
            created = float(meta.pop("created_at", 0.0))
            meta.pop("user_id", None)
            out.append({
                "id": hit.id,
                "text": hit.text,
                "scope": meta.pop("scope", ""),
                "created_at": datetime.fromtimestamp(created, tz=UTC).isoformat(),
                "metadata": meta,
            })
        return out

    # -- forgetting ----------------------------------------------------------------------

    async def delete(self, user_id: str, item_id: str) -> bool:
        """Delete one item of this user; False when the user has no item with that id."""
        check_user(user_id)
        if not isinstance(item_id, str) or not item_id:
            return False

        def delete() -> bool:
            found = self._store.get(user_id, None, [item_id])
            self._store.delete(user_id, [item_id])
            self._index.remove(user_id, [item_id])
            return bool(found)

        return await self._pool.run(delete)

    async def forget(self, user_id: str, scope: str | None = None) -> int:
        """Delete the user's items in `scope` (None = all of them); returns how many."""
        check_user(user_id)
        scope = check_scope(scope)

        def forget() -> int:
            scopes = [scope] if scope is not None else self._store.scopes(user_id)
            erased = sum(self._store.count(user_id, each) for each in scopes)
            self._store.drop(user_id, scope)
            for each in scopes:
                self._index.remove_scope(user_id, each)
            return erased

        return await self._pool.run(forget)


def open_user_memory(path: str | os.PathLike[str] | None = None, *, host: str | None = None,
                     port: int | None = None, embedder: Embedder | None = None,
                     collection: str = DEFAULT_COLLECTION, search_mode: str = "hybrid",
                     clock: Callable[[], float] = time.time, settings: MemorySettings | None = None,
                     op_timeout_s: float = 30.0, http_timeout_s: float = 10.0, preload: bool = True,
                     ranking_config: ranking.RankingConfig | None = None,
                     index_dir: str | os.PathLike[str] | None = None) -> UserMemory:
    """**contract** Open the per-user semantic memory.

    `path` is the embedded Chroma folder (default `settings.chroma_path`); `host`/`port`
    (default `settings.chroma_host`/`chroma_port`) use a Chroma server instead. `collection`
    prefixes the names of the people's collections. `embedder` defaults to the one `settings`
    asks for (offline all-MiniLM-L6-v2 without settings); with `preload` a local model starts
    loading in the background now. `clock` returns epoch seconds (for tests and evaluations of
    time questions). `ranking_config` is the ranking every search uses (default
    `ranking.DEFAULT_CONFIG`). The keyword index is a SQLite file per collection in `index_dir`
    (default: beside the Chroma folder, `<path>-keywords`; in memory without a folder, then
    rebuilt from Chroma as people are searched). Raises StoreUnavailable naming the folder or
    host:port when the store cannot be opened, ConfigError when the collection holds vectors of
    another model.
    """
    if search_mode not in SEARCH_MODES:
        raise ValueError(f"search_mode must be one of {', '.join(SEARCH_MODES)}: {search_mode!r}")
    if settings is not None:
        path = path if path is not None else settings.chroma_path
        if host is None and settings.chroma_host:
            host, port = settings.chroma_host, port if port is not None else settings.chroma_port
    owns = embedder is None
    if embedder is None:
        embedder = embedder_from_settings(settings or MemorySettings())
    # an endpoint's dimension is learned from its first answer: opening makes no request
    dimension = embedder.known_dimension if hasattr(embedder, "known_dimension") else embedder.dimension
    store = ChromaStore.open(path=path, host=host, port=port, collection=collection, embedder_name=embedder.name,
                             dimension=dimension, http_timeout_s=http_timeout_s)
    folder = index_dir if index_dir is not None else (f"{path}-keywords" if path is not None else None)
    try:
        index = KeywordIndex(Path(folder) / f"{collection}.sqlite3" if folder is not None else None)
    except (OSError, sqlite3.Error) as exc:
        raise StoreUnavailable(f"keyword index in {str(folder)!r} cannot be used: {exc}") from exc
    return UserMemory(store, index, embedder, search_mode=search_mode, clock=clock, op_timeout_s=op_timeout_s,
                      owns_embedder=owns, preload=preload, ranking_config=ranking_config)
