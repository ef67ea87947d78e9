"""Per-user semantic memory on ChromaDB: what each person told the bot, found by meaning.

**contract** `open_user_memory(path, **options)` returns a `UserMemory` (the call opens the
store at once, so a bad folder or a server that is down fails here with StoreUnavailable
naming the path or host:port; the result may also be awaited or used with `async with`).

The contract's rules, in one place (how this process keeps users' items: `memory.semantic.copies`):
- Every Chroma read and delete is filtered by `user_id`: one user's items never appear in
  another's results, and `delete(user_id, item_id)` cannot remove someone else's item.
- Scopes: `scope_for(guild_id)` gives "guild:<id>" or "dm". `search`, `list` and `forget`
  with `scope=None` cover all of the user's items; with a scope, exactly that scope.
  `add(..., scope=None)` stores the item unscoped (scope ""): such items are found only by
  searches and lists with `scope=None` (or `scope=""`), never inside a guild or a DM.
- Text: empty or whitespace-only text (after removing invisible format characters such as
  zero-width spaces and bidi marks) is refused on add with ValueError, and a search for it
  returns []. Text longer than MAX_TEXT_CHARS (8,000 characters) is TRUNCATED at a word
  boundary, not chunked, and the item's metadata records `truncated_from` (the original
  length): a memory is one exchange, and the embedding model reads only its first 256 tokens
  anyway. Stored text keeps the caller's characters; the embedded text drops invisible
  format characters (zero-width, bidi controls) so they do not change what matches.
- User ids: any non-empty string of at most 128 characters without control characters (a
  Discord snowflake, or the console's local user); anything else is refused with ValueError
  in every method alike.
- Metadata: items record `user_id`, `scope`, `created_at` (epoch seconds from `clock`, or
  the caller's own `created_at` number, for imports and evaluations) and the caller's
  metadata (channel_id, trace_id, kind, ...), whose values must be str, int, float or bool (None is dropped, a datetime becomes ISO-8601 text); nested values, other
  types, non-finite floats and the reserved keys are refused with ValueError.
- Context: when an item's metadata has a `context` str (e.g. the turn before a short reply
  such as "Yes! It was amazing"), the item is embedded and keyword-indexed by
  `context + "\n" + text`; its stored and shown text stays `text`. An `index_only_context`
  str (another person's message before a short reply) is embedded and keyword-indexed the
  same way but never stored: the item keeps only its terms' hashes (`context_terms_hashed`,
  `memory.semantic.keyword_index.hidden_terms`), which the keyword index reads on every load.
- Search (`memory.semantic.search`): `memory.semantic.ranking` plans the query (search text, time window,
  recency) with the `ranking_config` given at open (default `ranking.DEFAULT_CONFIG`); dense
  candidates are the top max(50, 10k) of the user's items in the scope by exact cosine
  similarity, keyword scores come from an incremental BM25 index (`memory.semantic.keyword_index`),
  and `ranking.fuse` orders them ("hybrid" by default; "dense" and "keyword" baselines). The
  query's embedding runs beside reading the user's items and the part of the ranking that
  needs no vector.
  Chroma stores the items and vectors; a search reads ONE user's items with their vectors
  (`where user_id`, in pages) instead of asking Chroma for a filtered nearest-neighbour
  query, whose HNSW graph spans every user.
- The store is the truth: every write of a user's items puts a new random version in the
  user's record in Chroma before and after it (`memory.semantic.versions`), and every search,
  list, get and export reads the user's items through `memory.semantic.copies`, which reads that
  record FIRST and trusts this process's copy (cached, or a snapshot file) only when it was
  made under that version. So processes sharing a Chroma server see each other's adds,
  deletes and forgets at the next search, with nothing to poll. `last_load` tells how the
  last load of a user's items went (`ColdLoad`).
- Blocking work (embedding, Chroma, the search's numpy work) runs on this object's own
  thread pool (`memory.semantic.pool`); each call is bounded by `op_timeout_s` and a store failure
  raises StoreUnavailable, never hangs. With `chroma_process`, an embedded Chroma runs in a
  worker process (`memory.semantic.chroma_process`), because its bindings hold the GIL. When a Chroma
  server goes away, writes fail at once; a search of a user whose items are cached is still
  answered from the cache (a warning logged), others fail.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import os
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
from memory.config import MemorySettings
from memory.errors import ConfigError, StoreUnavailable
from memory.semantic.caches import RecentVectors
from memory.semantic.chroma_backend import ChromaStore, StoredItem
from memory.semantic.chroma_process import ChromaProcess
from memory.semantic.copies import SNAPSHOT_AFTER, ColdLoad, Copies
from memory.semantic.embeddings import Embedder, OpenAIEmbedder, embedder_from_settings
from memory.semantic.item_text import kept_metadata
from memory.semantic.pool import WorkerPool
from memory.semantic.search import SEARCH_MODES, Prepared, finish, prepare
from memory.semantic.snapshot import Snapshots
from memory.semantic.user_items import UserItems, created_of
from memory.semantic.versions import VERSION_SUFFIX, VersionRecords, Written
from memory.semantic.validation import (
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
    "SNAPSHOT_AFTER",
    "MemoryHit",
    "UserMemory",
    "open_user_memory",
    "scope_for",
]

log = logging.getLogger(__name__)

DEFAULT_COLLECTION = "user_memory"
DEFAULT_CACHE_BYTES = 512 * 2**20
# Sibling collections of older versions (0010's change feed, 0014's write tokens): their records
# hold plain user ids, which a forget does not reach; opening a memory deletes them.
RETIRED_SUFFIXES = ("__changes", "__tokens")
AddItem = tuple[str, str, "dict[str, Any] | None", "str | None"]
Row = tuple[str, str, str, dict[str, Any]]  # id, stored text, indexed text, metadata


@dataclass(frozen=True, slots=True)
class MemoryHit:
    """One remembered item: `score` is the fused ranking score of a search (0.0 in lists)."""

    id: str
    text: str
    score: float
    metadata: dict[str, Any] = field(default_factory=dict)


def _where(user_id: str, scope: str | None) -> dict[str, Any]:
    if scope is None:
        return {"user_id": user_id}
    return {"$and": [{"user_id": user_id}, {"scope": scope}]}


class UserMemory:
    """A user-partitioned memory over one Chroma collection. Create with open_user_memory."""

    def __init__(self, store: ChromaStore | ChromaProcess, embedder: Embedder, *, versions: VersionRecords,
                 search_mode: str = "hybrid", clock: Callable[[], float] = time.time, op_timeout_s: float = 30.0,
                 cache_bytes: int = DEFAULT_CACHE_BYTES, owns_embedder: bool = False, preload: bool = True,
                 ranking_config: ranking.RankingConfig | None = None, snapshots: Snapshots | None = None,
                 snapshot_after: int = SNAPSHOT_AFTER) -> None:
        if search_mode not in SEARCH_MODES:
            raise ValueError(f"search_mode must be one of {', '.join(SEARCH_MODES)}: {search_mode!r}")
        self._store = store
        self._embedder = embedder
        self.search_mode = search_mode
        self.ranking_config = ranking_config or ranking.DEFAULT_CONFIG
        self._clock = clock
        self._versions = versions
        self._owns_embedder = owns_embedder
        self._pool = WorkerPool(store.where, op_timeout_s)
        self._copies = Copies(store, versions, self._pool, cache_bytes=cache_bytes, snapshots=snapshots,
                              snapshot_after=snapshot_after)
        self._recent_vectors = RecentVectors()
        self._batch = min(256, store.max_batch_size())
        load = getattr(embedder, "load", None)
        self._loading: Future[None] | None = self._pool.submit(load) if preload and callable(load) else None

    @property
    def where(self) -> str:
        """The folder or host:port this memory lives in (for messages and logs)."""
        return self._store.where

    @property
    def last_load(self) -> ColdLoad | None:
        """How the last load of a user's items into this process went (`memory.semantic.copies`)."""
        return self._copies.last_load

    @property
    def embedder(self) -> Embedder:
        """The embedder of this memory, for other stores of the same process to share
        (memory.documents): one model loaded once. Closed with this memory if it owns it."""
        return self._embedder

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
        """Write the snapshots of cached users with many items not in one yet, then stop the
        worker threads; idempotent. A shared embedder passed in is left open."""
        if self._pool.closed:
            return
        await self._copies.close()
        await self._pool.close()
        await asyncio.to_thread(self._store.close)
        if self._owns_embedder and isinstance(self._embedder, OpenAIEmbedder):
            self._embedder.close()

    @property
    def loading(self) -> bool:
        """Whether the local embedding model is still loading (a front end says so meanwhile)."""
        return self._loading is not None and not self._loading.done()

    async def loaded(self) -> None:
        """Wait until the embedding model has loaded (at once when it has, or was not preloaded)."""
        if self._loading is not None:
            await asyncio.wrap_future(self._loading)
            self._loading = None

    # -- writing -------------------------------------------------------------------------

    def _prepare(self, user_id: str, text: str, metadata: Mapping[str, Any] | None,
                 scope: str | None, now: float) -> Row:
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
        return uuid.uuid4().hex, stored, indexed_text(stored, meta), kept_metadata(meta)

    def _prepare_all(self, items: Sequence[AddItem], now: float) -> list[Row]:
        rows = []
        for n, item in enumerate(items):
            try:
                user_id, text, metadata, scope = item
                rows.append(self._prepare(user_id, text, metadata, scope, now))
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"item {n}: {exc}") from None
        return rows

    def _embedded(self, rows: list[Row]) -> np.ndarray:
        texts = [r[2] for r in rows]
        known = [self._recent_vectors.get(t) for t in texts]
        missing = [t for t, v in zip(texts, known, strict=True) if v is None]
        fresh = iter(np.asarray(self._embedder.embed(missing), dtype=np.float32) if missing else ())
        return np.vstack([v if v is not None else next(fresh) for v in known])

    def _embed_and_add(self, rows: list[Row]) -> tuple[np.ndarray, Written]:
        """Embed and store a batch of rows (worker thread), between its users' version bumps."""
        vectors = self._embedded(rows)
        users = {r[3]["user_id"] for r in rows}
        _, written = self._versions.write(
            users, lambda: self._store.add([r[0] for r in rows], vectors, [r[1] for r in rows], [r[3] for r in rows]))
        return vectors, written

    async def add(self, user_id: str, text: str, metadata: dict[str, Any] | None = None,
                  scope: str | None = None) -> str:
        """Remember `text` for `user_id` in `scope` (None = unscoped ""); returns the item id."""
        row = self._prepare(user_id, text, metadata, scope, self._clock())
        await self._write([row])
        return row[0]

    async def add_many(self, items: Sequence[AddItem]) -> list[str]:
        """Add (user_id, text, metadata, scope) items, embedded and written in batches.

        Every item is validated first (a bad one raises ValueError naming its index and
        nothing is stored); a store failure part-way leaves the earlier batches stored.
        """
        now = self._clock()
        items = list(items)
        # validated on a worker thread: thousands of items hold the event loop for tens of ms
        rows = await self._pool.run(self._prepare_all, items, now) if len(items) > 16 else self._prepare_all(items, now)
        if rows:
            await self._write(rows)
        return [r[0] for r in rows]

    async def _write(self, rows: list[Row]) -> None:
        """Embed and store prepared rows in batches; after each batch, each writer's cached items
        take in its new rows (or are dropped, when a batch failed)."""
        await self.loaded()
        users = list(dict.fromkeys(row[3]["user_id"] for row in rows))
        try:
            for start in range(0, len(rows), self._batch):
                batch = rows[start:start + self._batch]
                vectors, written = await self._pool.run(self._embed_and_add, batch)
                await self._copies.taken_in([StoredItem(row[0], row[1], row[3]) for row in batch], vectors, written)
        except BaseException:
            self._copies.failed(users)
            raise
        self._copies.written(users)

    # -- reading -------------------------------------------------------------------------

    async def _embed_query(self, text: str) -> np.ndarray:
        if (vector := self._recent_vectors.get(text)) is not None:
            return vector
        await self.loaded()
        vector = await self._pool.run(lambda: np.asarray(self._embedder.embed([text])[0], dtype=np.float32))
        self._recent_vectors.put(text, vector)
        return vector

    async def _prepared(self, user_id: str, plan: ranking.QueryPlan, search_text: str,
                        scope: str | None) -> tuple[UserItems, Prepared]:
        """The user's items, and the part of the search that needs no query vector
        (`memory.semantic.search.prepare`; run beside the query's embedding). A cached user's
        items are prepared while their version is read: when that read finds another process's
        writes, the check changes their rows and `finish` prepares again."""
        mode = self.search_mode

        def prepared(entry: UserItems) -> Prepared:
            with entry.lock:
                return prepare(entry, plan, search_text, scope=scope, mode=mode)

        cached = self._copies.peek(user_id)
        if cached is None:
            entry = await self._copies.items(user_id)
            return entry, await self._pool.run(prepared, entry)
        checked, early = await asyncio.gather(self._copies.items(user_id), self._pool.run(prepared, cached),
                                              return_exceptions=True)
        if isinstance(checked, BaseException):
            raise checked
        if isinstance(early, BaseException):
            raise early
        if checked is not cached:  # evicted and loaded again meanwhile
            return checked, await self._pool.run(prepared, checked)
        return checked, early

    async def search(self, user_id: str, query: str, k: int = 5, scope: str | None = None) -> list[MemoryHit]:
        """The user's `k` items best matching `query` in `scope` (None = all), best first.

        The query's embedding runs beside reading the user's items and the part of the ranking
        that needs no vector (`memory.semantic.search.prepare`)."""
        check_user(user_id)
        scope = check_scope(scope)
        if not isinstance(query, str):
            raise TypeError(f"query must be a str, not {type(query).__name__}")
        if k <= 0 or not visible(query):
            return []
        now = self._clock()
        config = self.ranking_config
        plan = ranking.plan_query(visible(query), now, config)
        search_text = visible(plan.search_text) or visible(query)
        mode = self.search_mode
        vector: np.ndarray | None = None
        if mode == "keyword":
            entry, prepared = await self._prepared(user_id, plan, search_text, scope)
        else:
            (entry, prepared), vector = await asyncio.gather(self._prepared(user_id, plan, search_text, scope),
                                                             self._embed_query(search_text))

        def ranked() -> list[MemoryHit]:
            with entry.lock:
                found = finish(entry, prepared, plan, search_text, vector, k=k, mode=mode, now=now, config=config)
                chosen = [(entry.items[row], score) for row, score in found]
            return [MemoryHit(it.id, it.text, float(score), dict(it.metadata)) for it, score in chosen]

        return await self._pool.run(ranked)

    async def list(self, user_id: str, scope: str | None = None) -> list[MemoryHit]:
        """All of the user's items in `scope` (None = all), oldest first, score 0.0."""
        check_user(user_id)
        scope = check_scope(scope)
        entry = await self._copies.items(user_id)

        def listed() -> list[MemoryHit]:  # in a worker: a heavy user's sort and copies would hold up the loop
            with entry.lock:
                chosen = [entry.items[row] for row in np.flatnonzero(entry.mask(scope)).tolist()]
            chosen.sort(key=lambda it: (created_of(it), it.id))
            return [MemoryHit(it.id, it.text, 0.0, dict(it.metadata)) for it in chosen]

        return await self._pool.run(listed)

    async def get(self, user_id: str, item_ids: Sequence[str]) -> builtins.list[MemoryHit]:
        """The user's items of these ids (any scope), in the order asked, score 0.0; an id that
        is not one of theirs, or no longer stored, is left out."""
        check_user(user_id)
        entry = await self._copies.items(user_id)

        def found() -> list[MemoryHit]:
            with entry.lock:
                chosen = [entry.items[entry.row(i)] for i in dict.fromkeys(item_ids) if i in entry]
            return [MemoryHit(it.id, it.text, 0.0, dict(it.metadata)) for it in chosen]

        return await self._pool.run(found)

    async def export(self, user_id: str, scope: str | None = None) -> builtins.list[dict[str, Any]]:
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
            found = self._store.get(where={"user_id": user_id}, ids=[item_id])
            self._store.delete([it.id for it in found])
            return bool(found)

        return await self._copies.forgotten(user_id, lambda entry: entry.remove([item_id]), delete)

    async def forget(self, user_id: str, scope: str | None = None) -> int:
        """Delete the user's items in `scope` (None = all of them); returns how many."""
        check_user(user_id)
        scope = check_scope(scope)

        def forget() -> int:
            ids = [it.id for it in self._store.get(where=_where(user_id, scope))]
            for start in range(0, len(ids), self._batch):
                self._store.delete(ids[start:start + self._batch])
            return len(ids)

        return await self._copies.forgotten(user_id, lambda entry: entry.remove_scope(scope), forget)


def open_user_memory(path: str | os.PathLike[str] | None = None, *, host: str | None = None,
                     port: int | None = None, embedder: Embedder | None = None,
                     collection: str = DEFAULT_COLLECTION, search_mode: str = "hybrid",
                     clock: Callable[[], float] = time.time, settings: MemorySettings | None = None,
                     op_timeout_s: float = 30.0, http_timeout_s: float = 10.0,
                     cache_bytes: int | None = None, preload: bool = True,
                     ranking_config: ranking.RankingConfig | None = None,
                     snapshot_dir: str | os.PathLike[str] | None = None, snapshots: bool = True,
                     snapshot_after: int = SNAPSHOT_AFTER, chroma_process: bool | None = None) -> UserMemory:
    """**contract** Open the per-user semantic memory.

    `path` is the embedded Chroma folder (default `settings.chroma_path`); `host`/`port`
    (default `settings.chroma_host`/`chroma_port`) use a Chroma server instead. `embedder`
    defaults to the one `settings` asks for (offline all-MiniLM-L6-v2 without settings);
    with `preload` a local model starts loading in the background now. `clock` returns
    epoch seconds (for tests and evaluations of time questions). `ranking_config` is the
    ranking every search uses (default `ranking.DEFAULT_CONFIG`). `cache_bytes` bounds the
    users' items held in this process (default `settings.memory_cache_bytes`, else 512 MiB). With `snapshots`, users' items are also kept in per-user files
    (`memory.semantic.snapshot`) under `snapshot_dir` (default: beside the Chroma folder, `<path>-snapshots`;
    none with a server unless `path` or `settings` name a folder), rewritten once
    `snapshot_after` of a user's items are not in the file. `chroma_process` runs an embedded
    Chroma in a child process (`memory.semantic.chroma_process`), so that its work never holds this
    process's event loop (default `settings.chroma_process`; off without settings: the child
    takes seconds to start). Raises StoreUnavailable naming the folder or host:port when the
    store cannot be opened, ConfigError when the collection holds vectors of another model.
    """
    if search_mode not in SEARCH_MODES:
        raise ValueError(f"search_mode must be one of {', '.join(SEARCH_MODES)}: {search_mode!r}")
    if settings is not None:
        path = path if path is not None else settings.chroma_path
        if host is None and settings.chroma_host:
            host, port = settings.chroma_host, port if port is not None else settings.chroma_port
        cache_bytes = settings.memory_cache_bytes if cache_bytes is None else cache_bytes
        chroma_process = settings.chroma_process if chroma_process is None else chroma_process
    owns = embedder is None
    if embedder is None:
        embedder = embedder_from_settings(settings or MemorySettings())
    # an endpoint's dimension is learned from its first answer: opening makes no request
    dimension = embedder.known_dimension if hasattr(embedder, "known_dimension") else embedder.dimension
    options = {"path": path, "host": host, "port": port, "collection": collection,
               "embedder_name": embedder.name, "dimension": dimension, "http_timeout_s": http_timeout_s}
    if host and settings is not None and settings.chroma_auth_token:  # CHROMA_AUTH_TOKEN, to a server only
        options["auth_token"] = settings.chroma_auth_token
    store: ChromaStore | ChromaProcess
    if chroma_process and not host:
        if path is None:
            raise ConfigError("semantic memory needs a Chroma folder (DATA_DIR) or CHROMA_HOST")
        store = ChromaProcess.open(call_timeout_s=op_timeout_s, **options)
    else:
        store = ChromaStore.open(**options)
    versions = VersionRecords(store.log(VERSION_SUFFIX))
    for name in store.delete_siblings(RETIRED_SUFFIXES):
        log.info("semantic memory: deleted the unused collection %r in %s (an older version's, holding user ids)",
                 name, store.where)
    folder = snapshot_dir if snapshot_dir is not None else (
        Path(path).with_name(Path(path).name + "-snapshots") if path is not None else None)
    kept = None
    if snapshots and folder is not None:
        try:
            kept = Snapshots(Path(folder) / collection, embedder=embedder.name)
        except OSError as exc:
            raise StoreUnavailable(f"snapshot folder {str(folder)!r} cannot be used: {exc}") from exc
    return UserMemory(store, embedder, versions=versions, search_mode=search_mode, clock=clock,
                      op_timeout_s=op_timeout_s, cache_bytes=DEFAULT_CACHE_BYTES if cache_bytes is None else cache_bytes,
                      owns_embedder=owns, preload=preload, ranking_config=ranking_config, snapshots=kept,
                      snapshot_after=snapshot_after)
