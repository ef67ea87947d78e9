"""Per-user semantic memory on ChromaDB: what each person told the bot, found by meaning.

**contract** `open_user_memory(path, **options)` returns a `UserMemory` (the call opens the
store at once, so a bad folder or a server that is down fails here with StoreUnavailable
naming the path or host:port; the result may also be awaited or used with `async with`).

Rules, in one place:
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
  needs no vector; `last_search` keeps how the last search's time went, part by part.
  Chroma stores the items and vectors; a search reads ONE user's items with their vectors
  (`where user_id`, in pages) instead of asking Chroma for a filtered nearest-neighbour
  query, whose HNSW graph spans every user. Each user's items are then held in this process
  (`memory.semantic.user_items`) in an LRU bounded by bytes (`cache_bytes`, `memory.semantic.caches`): this
  object's adds append to them, its deletes and forgets mark rows dead; nothing is rebuilt
  or reloaded on a timer.
- Snapshots (`memory.semantic.snapshot`): a user with many items is also kept in a file of this
  process (beside the Chroma folder by default), written in the background once
  `snapshot_after` of the user's items are not in it and the user's writes have settled (below)
  (while writes go on, only once a quarter of the user's items, `SNAPSHOT_BACKLOG`, are not in
  it either), after a load that found it stale, and on close. Every write also keeps the user's
  write token in Chroma (`memory.semantic.write_tokens`: a
  mark from this process's first write of the user until it settles them, SETTLE_AFTER_S after
  their last write, before a snapshot and on close; then a new token). A cold load reads the
  token: when it is the snapshot's, the file is used as it is (no id read); otherwise it reads
  the ids Chroma has for the user now, drops the rows Chroma no longer has and fetches only the
  missing items. So a stale snapshot is never served. A delete or forget removes the user's
  file first (and rewrites it from the cached items, without the forgotten ones).
  `last_load` tells how the last load went (`ColdLoad`).
- Other processes sharing a Chroma server: with `share_changes` (on by default with a
  server) every write is also recorded in a change feed (`memory.semantic.change_feed`) that each
  process polls at most once per `feed_interval_s` (1 s) at the start of a search or list,
  applying only the new ids: another process's add, delete or forget is honoured by every
  search that starts at least `feed_interval_s` after that process's call returned.
- Blocking work (embedding, Chroma, the search's numpy work) runs on this object's own
  thread pool (`memory.semantic.pool`); each call is bounded by `op_timeout_s` and a store failure
  raises StoreUnavailable, never hangs. With `chroma_process`, an embedded Chroma runs in a
  worker process (`memory.semantic.chroma_process`), because its bindings hold the GIL. When a Chroma
  server goes away, writes fail at once;
  a search of a user whose items are cached is still answered from the cache, others fail.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from memory.semantic import ranking
from memory.semantic.caches import ItemsCache, RecentVectors
from memory.semantic.change_feed import FEED_SUFFIX, Change, ChangeFeed, Versions
from memory.semantic.chroma_backend import ChromaStore, StoredItem
from memory.semantic.chroma_process import ChromaProcess
from memory.config import MemorySettings
from memory.semantic.item_text import kept_metadata
from memory.semantic.embeddings import Embedder, OpenAIEmbedder, embedder_from_settings
from memory.errors import ConfigError, StoreUnavailable
from memory.semantic.pool import WorkerPool
from memory.semantic.search import SEARCH_MODES, Prepared, finish, prepare
from memory.semantic.search_timing import Laps, SearchTiming
from memory.semantic.snapshot import Snapshots
from memory.semantic.user_items import UserItems, created_of
from memory.semantic.write_tokens import TOKEN_SUFFIX, WriteHold, WriteTokens
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
    "MemoryHit",
    "UserMemory",
    "open_user_memory",
    "scope_for",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_COLLECTION = "user_memory"
DEFAULT_CACHE_BYTES = 512 * 2**20
# Items per Chroma read when loading a user: Chroma converts a page's vectors holding the GIL
# (about 50 ms for 250 on the 2-core target, under load) and pages of 1,000 cost more per item.
LOAD_PAGE = 200
# A user's items are written to a snapshot once this many of them are not in one and their
# writes have settled (SETTLE_AFTER_S): a cold load then fetches at most about this many items
# from Chroma besides reading the snapshot.
SNAPSHOT_AFTER = 500
# While a user's writes go on, the snapshot is rewritten only once SNAPSHOT_AFTER and this share
# of the user's items are not in it: each rewrite copies all of the user's items, so a user
# growing by thousands at a time no longer has them all copied after every batch (a cold load
# after a crash fetches at most that share).
SNAPSHOT_BACKLOG = 0.25
# A user's writes are settled (new write token, mark removed: memory.semantic.write_tokens) once none came
# for this long: until then other processes' cold loads of that user check ids.
SETTLE_AFTER_S = 5.0
AddItem = tuple[str, str, "dict[str, Any] | None", "str | None"]
Row = tuple[str, str, str, dict[str, Any]]  # id, stored text, indexed text, metadata


@dataclass(frozen=True, slots=True)
class MemoryHit:
    """One remembered item: `score` is the fused ranking score of a search (0.0 in lists)."""

    id: str
    text: str
    score: float
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ColdLoad:
    """How the last load of a user's items into this process went (for logs and the bench):
    `route` "token" (the snapshot as it was: its write token is current), "ids" (the snapshot
    checked against the ids Chroma has) or "chroma" (no snapshot), and the time of each step."""

    route: str
    items: int
    token_ms: float
    snapshot_ms: float
    ids_ms: float
    fetch_ms: float


def _where(user_id: str, scope: str | None) -> dict[str, Any]:
    if scope is None:
        return {"user_id": user_id}
    return {"$and": [{"user_id": user_id}, {"scope": scope}]}


class UserMemory:
    """A user-partitioned memory over one Chroma collection. Create with open_user_memory."""

    def __init__(self, store: ChromaStore | ChromaProcess, embedder: Embedder, *, search_mode: str = "hybrid",
                 clock: Callable[[], float] = time.time, op_timeout_s: float = 30.0,
                 cache_bytes: int = DEFAULT_CACHE_BYTES, owns_embedder: bool = False, preload: bool = True,
                 ranking_config: ranking.RankingConfig | None = None, feed: ChangeFeed | None = None,
                 snapshots: Snapshots | None = None, snapshot_after: int = SNAPSHOT_AFTER,
                 tokens: WriteTokens | None = None, sole_writer: bool = False) -> None:
        if search_mode not in SEARCH_MODES:
            raise ValueError(f"search_mode must be one of {', '.join(SEARCH_MODES)}: {search_mode!r}")
        self._store = store
        self._embedder = embedder
        self.search_mode = search_mode
        self.ranking_config = ranking_config or ranking.DEFAULT_CONFIG
        self._clock = clock
        self._cache = ItemsCache(cache_bytes)
        self._versions = Versions()
        self._feed = feed
        self._snapshots = snapshots
        self._snapshot_after = max(1, snapshot_after)
        self._tokens = tokens
        # no other process writes this collection (an embedded Chroma): the cached items may
        # take this process's own new write tokens without reading Chroma's ids
        self._sole_writer = sole_writer and feed is None
        self._settle_timer: asyncio.TimerHandle | None = None
        self._settling: asyncio.Task[list[Future[None] | None]] | None = None
        self.last_load: ColdLoad | None = None
        self.last_search: SearchTiming | None = None  # how the last search's time went
        self._saving: dict[str, Future[None]] = {}  # users whose snapshot is being written (one at a time each)
        self._saving_lock = threading.Lock()
        self._tokenless: set[str] = set()  # users whose last snapshot kept no token (its load checks ids)
        self._next_poll = 0.0
        self._polling: asyncio.Lock | None = None
        self._owns_embedder = owns_embedder
        self._pool = WorkerPool(store.where, op_timeout_s)
        self._recent_vectors = RecentVectors()
        self._batch = min(256, store.max_batch_size())
        load = getattr(embedder, "load", None)
        self._loading: Future[None] | None = self._pool.submit(load) if preload and callable(load) else None

    @property
    def where(self) -> str:
        """The folder or host:port this memory lives in (for messages and logs)."""
        return self._store.where

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
        if self._settle_timer is not None:
            self._settle_timer.cancel()
            self._settle_timer = None
        saves = await self._settle(0.0)
        # a snapshot begun earlier may miss the last rows, or keep no token (writes still ran):
        # let it end, so that its user is saved again below with what is settled now
        await asyncio.gather(*(asyncio.wrap_future(f) for f in list(self._saving.values())), return_exceptions=True)
        # users with many items get a current snapshot, so that the next start loads them fast
        saves += [self._snapshot_later(user_id, entry) for user_id, entry in self._cache.entries()
                  if (entry.unsaved or user_id in self._tokenless) and entry.live >= self._snapshot_after]
        await asyncio.gather(*(asyncio.wrap_future(f) for f in saves if f is not None), return_exceptions=True)
        entries = self._cache.take_all()
        await self._pool.close()
        if self._tokens is not None and self._tokens.sessions():  # writes whose threads ended just now
            try:
                await asyncio.to_thread(self._tokens.settle_idle, 0.0)
            except StoreUnavailable as exc:
                log.warning("semantic memory: cannot settle write tokens in %s: %s", self.where, exc)
        await asyncio.to_thread(entries.clear)  # tens of thousands of objects: freed off the loop
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

    def _embed_and_add(self, rows: list[Row]) -> np.ndarray:
        texts = [r[2] for r in rows]
        known = [self._recent_vectors.get(t) for t in texts]
        missing = [t for t, v in zip(texts, known, strict=True) if v is None]
        fresh = iter(np.asarray(self._embedder.embed(missing), dtype=np.float32) if missing else ())
        vectors = np.vstack([v if v is not None else next(fresh) for v in known])
        by_user: dict[str, list[str]] = {}
        for r in rows:
            by_user.setdefault(r[3]["user_id"], []).append(r[0])
        self._store.add([r[0] for r in rows], vectors, [r[1] for r in rows], [r[3] for r in rows])
        if self._feed is not None:
            for user_id, ids in by_user.items():
                self._feed.publish(user_id, "add", ids)
        return vectors

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
        """Embed and store prepared rows in batches; then each writer's cached items take in
        the new ones (all written) or are dropped (a failure part-way)."""
        await self.loaded()
        batches: list[np.ndarray] = []
        by_user: dict[str, list[int]] = {}
        for n, row in enumerate(rows):
            by_user.setdefault(row[3]["user_id"], []).append(n)
        hold = await self._begin_writes(by_user)
        try:
            for start in range(0, len(rows), self._batch):
                batch = rows[start:start + self._batch]
                batches.append(await self._pool.run_held(hold, lambda batch=batch: self._embed_and_add(batch)))
        except BaseException:
            self._end_writes(hold)
            for user_id in by_user:
                self._versions.bump(user_id)
                self._cache.drop(user_id)
            raise
        updates = []
        for user_id, positions in by_user.items():
            self._versions.bump(user_id)
            entry = self._cache.peek(user_id)
            if entry is not None:
                updates.append((user_id, entry, rows, positions))
        try:
            if updates:
                await self._pool.run_held(hold, lambda: _append_all(updates, batches))
        finally:
            self._end_writes(hold)
        if updates:
            self._free_later(self._cache.resized(user_id for user_id, *_ in updates))
            for user_id in by_user:
                entry = self._cache.peek(user_id)
                if entry is not None and entry.unsaved >= max(self._snapshot_after, SNAPSHOT_BACKLOG * entry.live):
                    self._snapshot_later(user_id, entry)

    # -- reading -------------------------------------------------------------------------

    def _load(self, user_id: str, version: int) -> tuple[UserItems, int | None]:
        """All of the user's items and vectors (worker thread): the ids Chroma has for the user;
        the user's snapshot, less the rows Chroma no longer has; then the missing items from
        Chroma in pages of LOAD_PAGE by id, so that no single Chroma call holds the GIL for long.
        With them, the snapshot generation to write a new snapshot under when this fetched many
        or dropped any (else None): written only once the entry is cached (`_user_items`), so
        that an entry a write overtook while it was read never gets a current token."""
        snapshots = self._snapshots
        started = time.perf_counter()
        generation = snapshots.generation(user_id) if snapshots is not None else 0
        token = self._tokens.current(user_id) if snapshots is not None and self._tokens is not None else None
        read_token = time.perf_counter()
        kept = snapshots.load(user_id, version) if snapshots is not None else None
        read_snapshot = time.perf_counter()
        if kept is not None and token is not None and kept[1] == token:
            entry = kept[0]
            entry.token = token
            self.last_load = ColdLoad("token", entry.live, 1000 * (read_token - started),
                                      1000 * (read_snapshot - read_token), 0.0, 0.0)
            return entry, None
        ids = self._store.ids(where={"user_id": user_id})
        read_ids = time.perf_counter()
        gone = 0
        if kept is None:
            entry, missing = UserItems(version), ids
        else:
            entry = kept[0]
            present = set(ids)
            gone = entry.remove([i for i in entry.ids if i not in present])
            missing = [i for i in ids if i not in entry]
        for start in range(0, len(missing), LOAD_PAGE):
            self._fetch(user_id, entry, missing[start:start + LOAD_PAGE])
        entry.token = token  # checked against the ids read after it
        self.last_load = ColdLoad("chroma" if kept is None else "ids", entry.live, 1000 * (read_token - started),
                                  1000 * (read_snapshot - read_token), 1000 * (read_ids - read_snapshot),
                                  1000 * (time.perf_counter() - read_ids))
        stale = kept is not None and (gone or missing or kept[1] != token)
        if snapshots is not None and (stale or entry.unsaved >= self._snapshot_after):
            return entry, generation
        return entry, None

    def _snapshot_later(self, user_id: str, entry: UserItems, generation: int | None = None) -> Future[None] | None:
        """Write the user's snapshot from `entry` on a worker thread (any thread may call this);
        a forget after `generation` (default: now) was taken discards it. While one is being
        written for the user, another is not started (the rows stay unsaved for the next).

        The snapshot keeps the entry's write token when it is known to hold every write that
        ended before the token was set (`UserItems.token`) when this process is the only writer
        (an embedded Chroma); with other writers possible (a Chroma server), a token read now when the user's ids in
        Chroma are exactly the entry's live ones; else none (its next load checks ids)."""
        snapshots = self._snapshots
        if snapshots is None or self._pool.closed:
            return None

        def save() -> None:
            try:
                token = self._save_token(user_id, entry)
                with entry.lock:
                    columns = entry.columns()
                    if self._sole_writer:
                        entry.token = token
                if not self._sole_writer and token is not None:
                    token = token if self._store_ids(user_id) == set(columns["ids"].tolist()) else None
                if len(columns["ids"]):
                    snapshots.save(user_id, columns, token, taken)
                    (self._tokenless.add if token is None else self._tokenless.discard)(user_id)
                else:
                    snapshots.drop(user_id)
            except (OSError, ValueError, StoreUnavailable) as exc:
                log.warning("semantic memory: cannot write a snapshot in %s: %s", snapshots.folder, exc)
            finally:
                with self._saving_lock:
                    del self._saving[user_id]

        with self._saving_lock:
            if user_id in self._saving:
                return None
            entry.unsaved = 0
            taken = snapshots.generation(user_id) if generation is None else generation
            saving = self._saving[user_id] = self._pool.submit(save)
        return saving

    def _free_later(self, entries: list[UserItems]) -> None:
        """Let evicted users' items go on a worker thread: freeing tens of thousands of objects
        would hold the event loop."""
        if entries and not self._pool.closed:
            self._pool.submit(entries.clear)

    def _save_token(self, user_id: str, entry: UserItems) -> str | None:
        """The token a snapshot of `entry` may keep (worker thread; see `_snapshot_later`): this
        process's writes of the user are settled first when none runs (else None). The only
        writer takes that new token, or the entry's own when there was nothing to settle; with
        other writers possible, the token now (one is set if none), to be checked against Chroma's ids."""
        tokens = self._tokens
        if tokens is None:
            return None
        if tokens.has_session(user_id):
            settled = tokens.settle(user_id)
            if settled is None or self._sole_writer:
                return settled
        elif self._sole_writer:
            return entry.token
        return tokens.current(user_id, create=True)

    def _store_ids(self, user_id: str) -> set[str]:
        return set(self._store.ids(where={"user_id": user_id}))

    async def _begin_writes(self, users: Iterable[str]) -> WriteHold:
        """Before a write of these users: their marks are in Chroma (`memory.semantic.write_tokens`).
        Run the write's thread tasks held by the returned hold, and pass it to `_end_writes`."""
        loop = asyncio.get_running_loop()

        def late(hold: WriteHold) -> None:  # on the thread of a task that outlived its caller
            try:
                loop.call_soon_threadsafe(self._ended_late, hold)
            except RuntimeError:  # the loop is closed: nothing of this process is cached any more
                hold.end()

        hold = WriteHold(self._tokens, users, late)
        try:
            await self._pool.run_held(hold, hold.begin)
        except BaseException:
            self._end_writes(hold)  # a begin that timed out still ends once its thread returns
            raise
        return hold

    def _end_writes(self, hold: WriteHold) -> None:
        """After a write (and after the cached items took it in, if cached), or after it failed;
        its users' sessions end once its thread tasks have returned, and the users are settled
        once no write of theirs came for SETTLE_AFTER_S."""
        hold.release()
        self._settle_soon()

    def _ended_late(self, hold: WriteHold) -> None:
        """A write's thread returned after its caller gave up on it: its users' items may have
        been loaded and cached while it still wrote, without it; drop them before the session
        ends, so that no settle gives such an entry a current token."""
        for user_id in hold.users:
            self._versions.bump(user_id)
            self._cache.drop(user_id)
        hold.end()
        self._settle_soon()

    def _settle_soon(self) -> None:
        if self._tokens is not None and self._settle_timer is None and not self._pool.closed:
            self._settle_timer = asyncio.get_running_loop().call_later(SETTLE_AFTER_S, self._settle_later)

    def _settle_later(self) -> None:
        self._settle_timer = None
        if self._settling is None or self._settling.done():
            self._settling = asyncio.get_running_loop().create_task(self._settle(SETTLE_AFTER_S))

    async def _settle(self, idle_s: float) -> list[Future[None] | None]:
        """Settle the users idle for `idle_s` (new tokens, marks removed); their cached items
        take the new token when this process is the only writer (an embedded Chroma), and those
        with `snapshot_after` items not in their snapshot, or whose snapshot kept no token, get it
        rewritten (the saves started)."""
        tokens = self._tokens
        if tokens is None or self._pool.closed:
            return []
        try:
            settled = await self._pool.run(_settle_and_refresh, tokens, idle_s)
        except StoreUnavailable as exc:
            log.warning("semantic memory: cannot settle write tokens in %s: %s", self.where, exc)
            settled = {}
        saves = []
        for user_id, token in settled.items():
            entry = self._cache.peek(user_id)
            if entry is None:
                continue
            if self._sole_writer:
                entry.token = token
            behind = entry.unsaved >= self._snapshot_after  # what the writes left out of the snapshot
            if behind or (user_id in self._tokenless and entry.live >= self._snapshot_after):
                saves.append(self._snapshot_later(user_id, entry))
        if tokens.sessions():
            self._settle_soon()
        return saves

    def _fetch(self, user_id: str, entry: UserItems, ids: Sequence[str]) -> None:
        """Read these items with their vectors into `entry`; ids of other users are ignored."""
        items, matrix = self._store.get_with_embeddings(where=None, ids=ids)
        mine = [n for n, it in enumerate(items) if it.metadata.get("user_id") == user_id]
        if mine:
            with entry.lock:
                entry.append([items[n] for n in mine], matrix[mine])

    async def _user_items(self, user_id: str) -> UserItems:
        """The user's items: from the cache when there, else read from Chroma (and cached
        unless a write of that user ended while it was read)."""
        await self._sync()
        entry = self._cache.get(user_id)
        if entry is not None:
            return entry
        version = self._versions.of(user_id)
        entry, snapshot_generation = await self._pool.run(self._load, user_id, version)
        if self._versions.of(user_id) == version and not self._pool.closed:
            self._free_later(self._cache.put(user_id, entry))
            if snapshot_generation is not None:
                self._snapshot_later(user_id, entry, snapshot_generation)
        return entry

    async def _sync(self) -> None:
        """Apply what other processes wrote since the last poll of the change feed (at most one
        poll per feed interval; a feed that cannot be read is retried at the next interval)."""
        feed = self._feed
        if feed is None or time.monotonic() < self._next_poll:
            return
        self._polling = self._polling or asyncio.Lock()
        async with self._polling:
            if time.monotonic() < self._next_poll:
                return
            self._next_poll = time.monotonic() + feed.interval_s
            try:
                changes = await self._pool.run(feed.poll)
            except StoreUnavailable as exc:
                log.warning("semantic memory: cannot read the change feed of %s: %s", self.where, exc)
                return
            if changes is None:
                log.warning("semantic memory: change feed of %s unread for too long; cache dropped", self.where)
                self._cache.clear()
                return
            touched: dict[str, list[Change]] = {}
            erased = {change.user_id for change in changes if change.op != "add"}
            if erased and self._snapshots is not None:
                snapshots = self._snapshots
                await self._pool.run(lambda: [snapshots.drop(user_id) for user_id in erased])
            for change in changes:
                self._versions.bump(change.user_id)
                if self._cache.peek(change.user_id) is not None:
                    touched.setdefault(change.user_id, []).append(change)
            for user_id, user_changes in touched.items():
                entry = self._cache.peek(user_id)
                if entry is None:
                    continue
                try:
                    await self._pool.run(self._apply, user_id, entry, user_changes)
                except StoreUnavailable:
                    self._cache.drop(user_id)
                    raise
                if user_id in erased:
                    self._snapshot_later(user_id, entry)
            self._free_later(self._cache.resized(touched))

    def _apply(self, user_id: str, entry: UserItems, changes: list[Change]) -> None:
        """Another process's writes of one cached user, in order (worker thread)."""
        entry.token = None
        for change in changes:
            if change.op == "add":
                self._fetch(user_id, entry, change.item_ids)
            elif change.op == "delete":
                with entry.lock:
                    entry.remove(change.item_ids)
            else:
                with entry.lock:
                    entry.remove_scope(change.scope)

    async def _embed_query(self, text: str, laps: Laps) -> np.ndarray:
        if (vector := self._recent_vectors.get(text)) is not None:
            return vector
        await self.loaded()
        submitted = time.perf_counter()
        ran: list[float] = []

        def embed() -> np.ndarray:
            ran.append(time.perf_counter())
            vector = np.asarray(self._embedder.embed([text])[0], dtype=np.float32)
            ran.append(time.perf_counter())
            return vector

        vector = await self._pool.run(embed)
        laps.between("embed queue", submitted, ran[0])
        laps.between("embed", ran[0], ran[1])
        laps.between("embed handoff", ran[1], time.perf_counter())
        self._recent_vectors.put(text, vector)
        return vector

    async def _prepared(self, user_id: str, plan: ranking.QueryPlan, search_text: str, scope: str | None,
                        laps: Laps) -> tuple[UserItems, Prepared]:
        """The user's items, and the part of the search that needs no query vector
        (`memory.semantic.search.prepare`), timed into `laps` (run beside the query's embedding)."""
        entry = await self._user_items(user_id)
        submitted = laps.lap("items")
        mode = self.search_mode

        def prepared() -> tuple[Prepared, float]:
            inner = Laps()
            laps.between("prepare queue", submitted, inner.skip())
            with entry.lock:
                inner.lap("prepare lock")
                found = prepare(entry, plan, search_text, scope=scope, mode=mode, laps=inner)
            laps.parts.update(inner.parts)
            return found, time.perf_counter()

        found, ended = await self._pool.run(prepared)
        laps.between("prepare handoff", ended, time.perf_counter())
        return entry, found

    async def _query_vector(self, text: str, laps: Laps) -> tuple[np.ndarray, float]:
        vector = await self._embed_query(text, laps)
        return vector, time.perf_counter()

    async def search(self, user_id: str, query: str, k: int = 5, scope: str | None = None) -> list[MemoryHit]:
        """The user's `k` items best matching `query` in `scope` (None = all), best first.

        The query's embedding runs beside reading the user's items and the part of the ranking
        that needs no vector (`memory.semantic.search.prepare`); how the time went is kept in
        `last_search` (`memory.semantic.search_timing.SearchTiming`)."""
        started = time.perf_counter()
        laps = Laps(started)
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
        planned = laps.lap("plan")
        beside = Laps()
        if mode == "keyword":
            entry, prepared = await self._prepared(user_id, plan, search_text, scope, beside)
            vector, embedded = None, planned
        else:
            (entry, prepared), (vector, embedded) = await asyncio.gather(
                self._prepared(user_id, plan, search_text, scope, beside), self._query_vector(search_text, laps))
        submitted = laps.skip()
        laps.between("items and prepare, past the embedding", embedded, submitted)

        def ranked() -> tuple[list[MemoryHit], Laps, float]:
            inner = Laps()
            laps.between("rank queue", submitted, inner.skip())
            with entry.lock:
                inner.lap("lock")
                found = finish(entry, prepared, plan, search_text, vector, k=k, mode=mode, now=now,
                               config=config, laps=inner)
                chosen = [(entry.items[row], score) for row, score in found]
            hits = [MemoryHit(it.id, it.text, float(score), dict(it.metadata)) for it, score in chosen]
            return hits, inner, inner.lap("hits")

        hits, inner, ended = await self._pool.run(ranked)
        finished = time.perf_counter()
        inner.between("rank handoff", ended, finished)
        self.last_search = SearchTiming.of(laps, inner, beside=beside.parts, total_ms=1000.0 * (finished - started))
        return hits

    async def list(self, user_id: str, scope: str | None = None) -> list[MemoryHit]:
        """All of the user's items in `scope` (None = all), oldest first, score 0.0."""
        check_user(user_id)
        scope = check_scope(scope)
        entry = await self._user_items(user_id)

        def listed() -> list[StoredItem]:
            with entry.lock:
                return [entry.items[row] for row in np.flatnonzero(entry.mask(scope)).tolist()]

        chosen = await self._pool.run(listed)
        chosen.sort(key=lambda it: (created_of(it), it.id))
        return [MemoryHit(it.id, it.text, 0.0, dict(it.metadata)) for it in chosen]

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

    async def _forgotten(self, user_id: str, remove: Callable[[UserItems], object],
                         erase: Callable[[], T]) -> T:
        """Run `erase` (the store's delete); then the user's cached items drop the same rows
        (`remove`), or the whole entry goes when the store failed part-way. The user's snapshot
        is removed before and after `erase` (and rewritten from the cached items, if any)."""
        snapshots = self._snapshots

        def erased() -> T:
            if snapshots is not None:
                snapshots.drop(user_id)
            try:
                return erase()
            finally:
                if snapshots is not None:
                    snapshots.drop(user_id)

        hold = await self._begin_writes([user_id])
        try:
            result = await self._pool.run_held(hold, erased)
        except BaseException:
            self._end_writes(hold)
            self._versions.bump(user_id)
            self._cache.drop(user_id)
            raise
        self._versions.bump(user_id)
        entry = self._cache.peek(user_id)
        try:
            if entry is not None:
                def locked() -> None:
                    with entry.lock:
                        remove(entry)
                await self._pool.run_held(hold, locked)
        finally:
            self._end_writes(hold)
        if entry is not None:
            self._snapshot_later(user_id, entry)
        return result

    async def delete(self, user_id: str, item_id: str) -> bool:
        """Delete one item of this user; False when the user has no item with that id."""
        check_user(user_id)
        if not isinstance(item_id, str) or not item_id:
            return False

        def delete() -> bool:
            found = self._store.get(where={"user_id": user_id}, ids=[item_id])
            self._store.delete([it.id for it in found])
            if found and self._feed is not None:
                self._feed.publish(user_id, "delete", [item_id])
            return bool(found)

        return await self._forgotten(user_id, lambda entry: entry.remove([item_id]), delete)

    async def forget(self, user_id: str, scope: str | None = None) -> int:
        """Delete the user's items in `scope` (None = all of them); returns how many."""
        check_user(user_id)
        scope = check_scope(scope)

        def forget() -> int:
            ids = [it.id for it in self._store.get(where=_where(user_id, scope))]
            for start in range(0, len(ids), self._batch):
                self._store.delete(ids[start:start + self._batch])
            if self._feed is not None:
                self._feed.publish(user_id, "forget", scope=scope)
            return len(ids)

        return await self._forgotten(user_id, lambda entry: entry.remove_scope(scope), forget)


def _settle_and_refresh(tokens: WriteTokens, idle_s: float) -> dict[str, str]:
    try:
        return tokens.settle_idle(idle_s)
    finally:
        tokens.refresh()  # the marks of writes still running, or not settled yet


def _append_all(updates: list[tuple[str, UserItems, list[Row], list[int]]], batches: list[np.ndarray]) -> None:
    """Each cached writer's new rows (at `positions` of the written `rows`) into its items, with
    their vectors from the written batches (on a worker thread: a bulk write's vectors are
    megabytes to join and copy, which held the event loop when done there)."""
    matrix = np.vstack(batches)
    for _, entry, rows, positions in updates:
        items = [StoredItem(rows[n][0], rows[n][1], rows[n][3]) for n in positions]
        with entry.lock:
            entry.append(items, matrix[positions])


def open_user_memory(path: str | os.PathLike[str] | None = None, *, host: str | None = None,
                     port: int | None = None, embedder: Embedder | None = None,
                     collection: str = DEFAULT_COLLECTION, search_mode: str = "hybrid",
                     clock: Callable[[], float] = time.time, settings: MemorySettings | None = None,
                     op_timeout_s: float = 30.0, http_timeout_s: float = 10.0,
                     cache_bytes: int | None = None, preload: bool = True,
                     ranking_config: ranking.RankingConfig | None = None,
                     share_changes: bool | None = None, feed_interval_s: float = 1.0,
                     snapshot_dir: str | os.PathLike[str] | None = None, snapshots: bool = True,
                     snapshot_after: int = SNAPSHOT_AFTER, chroma_process: bool | None = None) -> UserMemory:
    """**contract** Open the per-user semantic memory.

    `path` is the embedded Chroma folder (default `settings.chroma_path`); `host`/`port`
    (default `settings.chroma_host`/`chroma_port`) use a Chroma server instead. `embedder`
    defaults to the one `settings` asks for (offline all-MiniLM-L6-v2 without settings);
    with `preload` a local model starts loading in the background now. `clock` returns
    epoch seconds (for tests and evaluations of time questions). `ranking_config` is the
    ranking every search uses (default `ranking.DEFAULT_CONFIG`). `cache_bytes` bounds the
    users' items held in this process (default `settings.memory_cache_bytes`, else 512 MiB). `share_changes` (default: on with a server) records
    and polls the change feed every `feed_interval_s`, so that processes sharing the server
    see each other's writes. With `snapshots`, users' items are also kept in per-user files
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
    shared = bool(host) if share_changes is None else share_changes
    feed = ChangeFeed(store.log(FEED_SUFFIX), interval_s=feed_interval_s) if shared else None
    tokens = WriteTokens(store.log(TOKEN_SUFFIX))
    folder = snapshot_dir if snapshot_dir is not None else (
        Path(path).with_name(Path(path).name + "-snapshots") if path is not None else None)
    kept = None
    if snapshots and folder is not None:
        try:
            kept = Snapshots(Path(folder) / collection, embedder=embedder.name)
        except OSError as exc:
            raise StoreUnavailable(f"snapshot folder {str(folder)!r} cannot be used: {exc}") from exc
    return UserMemory(store, embedder, search_mode=search_mode, clock=clock, op_timeout_s=op_timeout_s,
                      cache_bytes=DEFAULT_CACHE_BYTES if cache_bytes is None else cache_bytes,
                      owns_embedder=owns, preload=preload,
                      ranking_config=ranking_config, feed=feed, snapshots=kept, snapshot_after=snapshot_after,
                      tokens=tokens, sole_writer=not host)
